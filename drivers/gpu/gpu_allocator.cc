#include "drivers/gpu/gpu_allocator.h"

#include "hal/utils/buffer_ref_resolve.h"

namespace hal::gpu {

StatusOr<GpuRange> ResolveGpuRange(const BufferRef& ref, BindingTable table,
                                   DeviceSize length, const char* what) {
  HAL_ASSIGN_OR_RETURN(ResolvedRef r,
                       utils::ResolveBufferRef(ref, table, length, what));
  auto* buffer = dynamic_cast<GpuBuffer*>(r.buffer);
  if (!buffer) {
    return InvalidArgumentError("%s: buffer does not belong to a GPU device",
                                what);
  }
  HAL_RETURN_IF_ERROR(utils::CheckCommitted(r, buffer->committed(), what));
  return GpuRange{buffer->device_ptr() + r.offset, r.length};
}

namespace {
// What the APIs guarantee for every allocation (CUDA and HIP: 256 bytes for
// device memory, a page for host memory). Larger alignments are padded.
constexpr DeviceSize kNativeAlignment = 256;

GpuMemoryKind KindFor(MemoryType type) {
  if (!AllOf(type, MemoryType::kDeviceLocal)) return GpuMemoryKind::kHost;
  if (AllOf(type, MemoryType::kHostVisible)) return GpuMemoryKind::kManaged;
  return GpuMemoryKind::kDevice;
}
}  // namespace

GpuBuffer::GpuBuffer(const Params& params, std::shared_ptr<GpuApi> api,
                     GpuMemoryKind kind, DeviceSize alignment)
    : Buffer(params),
      api_(std::move(api)),
      kind_(kind),
      alignment_(alignment) {}

GpuBuffer::~GpuBuffer() { ReleaseMemory(); }

void GpuBuffer::ReleaseMemory() {
  if (kind_ == GpuMemoryKind::kImported) {
    if (host_ptr_ && byte_length() > 0) {
      api_->MemHostUnregister(host_ptr_).IgnoreError();
    }
    if (release_) release_();
    return;
  }
  Decommit();
}

StatusOr<size_t> GpuBuffer::PaddedSize() const {
  DeviceSize padded = byte_length();
  size_t bytes = 0;
  if ((alignment_ > kNativeAlignment &&
       !CheckedAdd(padded, alignment_, &padded)) ||
      !CheckedHostSize(padded, &bytes)) {
    return ResourceExhaustedError(
        "allocation of %llu bytes aligned to %llu does not fit the API's "
        "size type",
        (unsigned long long)byte_length(), (unsigned long long)alignment_);
  }
  return bytes;
}

Status GpuBuffer::Commit() {
  if (committed()) return OkStatus();
  if (byte_length() > 0) {
    HAL_ASSIGN_OR_RETURN(size_t padded, PaddedSize());
    switch (kind_) {
      case GpuMemoryKind::kDevice:
        HAL_RETURN_IF_ERROR(
            api_->MemAllocDeviceFor(padded, queue_affinity(), &base_));
        break;
      case GpuMemoryKind::kManaged:
        HAL_RETURN_IF_ERROR(api_->MemAllocManaged(padded, &base_));
        break;
      case GpuMemoryKind::kHost: {
        void* p = nullptr;
        HAL_RETURN_IF_ERROR(api_->MemAllocHost(padded, &p));
        GpuDevicePtr device = 0;
        Status s = api_->HostDevicePointer(p, &device);
        if (!s.ok()) {
          api_->MemFreeHost(p).IgnoreError();
          return s;
        }
        base_ = reinterpret_cast<uint64_t>(p);
        // Pinned host memory has one address on both sides with unified
        // addressing; the device pointer is offset the same way.
        host_ptr_ = reinterpret_cast<uint8_t*>(Align(base_));
        device_ptr_.store(device + (Align(base_) - base_));
        break;
      }
      case GpuMemoryKind::kImported:
        return FailedPreconditionError("imported buffers are always committed");
    }
    if (kind_ != GpuMemoryKind::kHost) {
      device_ptr_.store(Align(base_));
      // Managed memory is addressable from the host at the same address.
      if (kind_ == GpuMemoryKind::kManaged) {
        host_ptr_ = reinterpret_cast<uint8_t*>(Align(base_));
      }
    }
  }
  async_ = false;
  committed_.store(true, std::memory_order_release);
  allocator()->RecordAllocate(memory_type(), byte_length());
  return OkStatus();
}

Status GpuBuffer::CommitAsync(GpuStream stream) {
  if (committed()) return OkStatus();
  if (kind_ != GpuMemoryKind::kDevice || byte_length() == 0) return Commit();
  HAL_ASSIGN_OR_RETURN(size_t padded, PaddedSize());
  HAL_RETURN_IF_ERROR(api_->MemAllocAsync(padded, stream, &base_));
  device_ptr_.store(Align(base_));
  async_ = true;
  committed_.store(true, std::memory_order_release);
  allocator()->RecordAllocate(memory_type(), byte_length());
  return OkStatus();
}

void GpuBuffer::Decommit() {
  if (!committed() || kind_ == GpuMemoryKind::kImported) return;
  if (byte_length() > 0) {
    if (kind_ == GpuMemoryKind::kHost) {
      api_->MemFreeHost(reinterpret_cast<void*>(base_)).IgnoreError();
    } else {
      // cuMemFree also frees pool memory, synchronizing first.
      api_->MemFreeDevice(base_).IgnoreError();
    }
  }
  base_ = 0;
  host_ptr_ = nullptr;
  device_ptr_.store(0);
  committed_.store(false, std::memory_order_release);
  allocator()->RecordFree(memory_type(), byte_length());
}

Status GpuBuffer::DecommitAsync(GpuStream stream) {
  if (!committed()) return OkStatus();
  if (!async_) {
    // Memory from a synchronous allocation: freed when the dealloca
    // completes (by the caller), not stream-ordered.
    return OkStatus();
  }
  HAL_RETURN_IF_ERROR(api_->MemFreeAsync(base_, stream));
  base_ = 0;
  device_ptr_.store(0);
  committed_.store(false, std::memory_order_release);
  allocator()->RecordFree(memory_type(), byte_length());
  return OkStatus();
}

StatusOr<uint8_t*> GpuBuffer::MapImpl(DeviceSize offset, DeviceSize length,
                                      MemoryAccess /*access*/) {
  if (byte_length() == 0) return static_cast<uint8_t*>(nullptr);
  if (!host_ptr_) {
    return FailedPreconditionError("map: buffer memory is not committed");
  }
  return host_ptr_ + offset;
}

Ref<GpuAllocator> GpuAllocator::Create(std::shared_ptr<GpuApi> api,
                                       DeviceSize device_memory_bytes) {
  return Ref<GpuAllocator>::Adopt(
      new GpuAllocator(std::move(api), device_memory_bytes));
}

BufferCompatibility GpuAllocator::QueryCompatibilityImpl(
    const BufferParams& params, DeviceSize size, BufferParams* out_resolved) {
  BufferParams r = params;
  // Pinned and managed memory are coherent; everything is reachable from
  // the device.
  if (AllOf(r.type, MemoryType::kHostVisible))
    r.type |= MemoryType::kHostCoherent;
  r.type |= MemoryType::kDeviceVisible;
  if (r.min_alignment < kNativeAlignment) r.min_alignment = kNativeAlignment;
  *out_resolved = r;
  // Sizes are checked when memory is reserved (CheckAllocationSize), so
  // that a size larger than the memory is RESOURCE_EXHAUSTED.
  BufferCompatibility c = BufferCompatibility::kAllocatable;
  if (AllOf(r.type, MemoryType::kHostVisible) &&
      !AllOf(r.type, MemoryType::kDeviceLocal)) {
    c |= BufferCompatibility::kImportable;
  }
  return c;
}

StatusOr<Ref<GpuBuffer>> GpuAllocator::CreateReserved(
    const BufferParams& params, DeviceSize size) {
  // Pinned host memory cannot be larger than the host's memory; managed
  // memory is bounded by the device's (it is DEVICE_LOCAL).
  const GpuMemoryKind kind = KindFor(params.type);
  HAL_RETURN_IF_ERROR(CheckAllocationSize(params, size, device_memory_bytes_,
                                          kind == GpuMemoryKind::kHost));
  Buffer::Params p = MakeBufferParams(params, size, BufferState::kReserved);
  auto buffer =
      Ref<GpuBuffer>::Adopt(new GpuBuffer(p, api_, kind, params.min_alignment));
  // The padded size is what the API is asked for: check it now, not when
  // queue_alloca's waits are reached.
  HAL_RETURN_IF_ERROR(buffer->PaddedSize().status());
  return buffer;
}

StatusOr<Ref<Buffer>> GpuAllocator::AllocateBufferImpl(
    const BufferParams& params, DeviceSize size) {
  HAL_ASSIGN_OR_RETURN(Ref<GpuBuffer> buffer, CreateReserved(params, size));
  HAL_RETURN_IF_ERROR(buffer->Commit());
  buffer->TransitionState(BufferState::kReserved, BufferState::kLive);
  return Ref<Buffer>(std::move(buffer));
}

StatusOr<Ref<Buffer>> GpuAllocator::ImportHostAllocationImpl(
    const BufferParams& params, void* ptr, DeviceSize size,
    ReleaseCallback release) {
  GpuDevicePtr device = 0;
  if (size > 0) {
    // The base checked that [ptr, ptr+size) fits the address space.
    HAL_RETURN_IF_ERROR(api_->MemHostRegister(ptr, static_cast<size_t>(size)));
    Status s = api_->HostDevicePointer(ptr, &device);
    if (!s.ok()) {
      api_->MemHostUnregister(ptr).IgnoreError();
      return s;
    }
  }
  Buffer::Params p = MakeBufferParams(params, size, BufferState::kLive);
  auto* buffer = new GpuBuffer(p, api_, GpuMemoryKind::kImported, 1);
  buffer->host_ptr_ = static_cast<uint8_t*>(ptr);
  buffer->device_ptr_.store(device);
  buffer->committed_.store(true);
  // An imported buffer always counts as imported, even with no callback.
  buffer->release_ = release ? std::move(release) : [] {};
  RecordImport();
  return Ref<Buffer>::Adopt(buffer);
}

}  // namespace hal::gpu
