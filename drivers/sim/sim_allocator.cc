#include "drivers/sim/sim_allocator.h"

#include <cstdlib>
#include <cstring>

namespace hal::sim {

namespace {
constexpr DeviceSize kDefaultAlignment = 64;

bool MapsForWrite(MemoryAccess access) {
  return Any(access & (MemoryAccess::kWrite | MemoryAccess::kDiscard));
}
}  // namespace

SimBuffer::SimBuffer(const Params& params, uint64_t id, DeviceSize alignment,
                     void* imported, Allocator::ReleaseCallback release)
    : Buffer(params),
      id_(id),
      alignment_(alignment),
      storage_(static_cast<uint8_t*>(imported)),
      imported_(imported != nullptr || release != nullptr),
      release_(std::move(release)) {
  if (imported_) committed_empty_ = true;
}

SimBuffer::~SimBuffer() {
  if (imported_) {
    if (release_) release_();
    return;
  }
  Decommit();
}

Status SimBuffer::Commit() {
  if (committed()) return OkStatus();
  auto* alloc = static_cast<SimAllocator*>(allocator());
  DeviceSize size = byte_length();
  {
    std::lock_guard<std::mutex> lock(alloc->context().mutex());
    HAL_RETURN_IF_ERROR(alloc->context().OnAllocate(size));
  }
  if (!alloc->Charge(memory_type(), size)) {
    return ResourceExhaustedError(
        "simulated device memory exhausted allocating %llu bytes",
        (unsigned long long)size);
  }
  if (size == 0) {
    committed_empty_ = true;
  } else {
    // Round up: aligned_alloc wants a multiple of the alignment. The
    // reservation checked the size; this guards the arithmetic itself.
    DeviceSize rounded = 0;
    size_t host_size = 0;
    void* p = nullptr;
    if (CheckedAlignUp(size, alignment_, &rounded) &&
        CheckedHostSize(rounded, &host_size)) {
      p = std::aligned_alloc(alignment_, host_size);
    }
    if (!p) {
      alloc->Uncharge(memory_type(), size);
      return ResourceExhaustedError("host allocation of %llu bytes failed",
                                    (unsigned long long)size);
    }
    // Fresh device memory holds garbage on a GPU; a fixed pattern here makes
    // reads of uninitialized memory reproducible.
    std::memset(p, 0xCD, host_size);
    storage_.store(static_cast<uint8_t*>(p), std::memory_order_release);
  }
  alloc->RecordAllocate(memory_type(), size);
  return OkStatus();
}

void SimBuffer::Decommit() {
  if (imported_ || !committed()) return;
  uint8_t* p = storage_.exchange(nullptr, std::memory_order_acq_rel);
  committed_empty_ = false;
  std::free(p);
  auto* alloc = static_cast<SimAllocator*>(allocator());
  alloc->Uncharge(memory_type(), byte_length());
  alloc->RecordFree(memory_type(), byte_length());
}

StatusOr<uint8_t*> SimBuffer::MapImpl(DeviceSize offset, DeviceSize length,
                                      MemoryAccess access) {
  uint8_t* p = host_storage();
  if (!p && byte_length() != 0) {
    return FailedPreconditionError("map: buffer memory is not committed");
  }
  // The checker holds the range until UnmapImpl; a conflict fails the op
  // it conflicts with, not the mapping.
  auto& ctx = static_cast<SimAllocator*>(allocator())->context();
  std::lock_guard<std::mutex> lock(ctx.mutex());
  ctx.BeginHostAccess(id_, offset, length, MapsForWrite(access));
  return p ? p + offset : nullptr;
}

Status SimBuffer::UnmapImpl(DeviceSize offset, DeviceSize length,
                            MemoryAccess access) {
  auto& ctx = static_cast<SimAllocator*>(allocator())->context();
  std::lock_guard<std::mutex> lock(ctx.mutex());
  ctx.EndHostAccess(id_, offset, length, MapsForWrite(access));
  return OkStatus();
}

Ref<SimAllocator> SimAllocator::Create(DeviceSize device_memory_limit,
                                       std::shared_ptr<SimContext> context) {
  return Ref<SimAllocator>::Adopt(
      new SimAllocator(device_memory_limit, std::move(context)));
}

uint64_t SimAllocator::NextBufferId() {
  std::lock_guard<std::mutex> lock(context_->mutex());
  return context_->NextBufferId();
}

bool SimAllocator::Charge(MemoryType type, DeviceSize size) {
  if (!AllOf(type, MemoryType::kDeviceLocal)) return true;
  DeviceSize used = device_used_.load();
  do {
    if (size > device_limit_ || used > device_limit_ - size) return false;
  } while (!device_used_.compare_exchange_weak(used, used + size));
  return true;
}

void SimAllocator::Uncharge(MemoryType type, DeviceSize size) {
  if (AllOf(type, MemoryType::kDeviceLocal)) device_used_.fetch_sub(size);
}

BufferCompatibility SimAllocator::QueryCompatibilityImpl(
    const BufferParams& params, DeviceSize size, BufferParams* out_resolved) {
  BufferParams r = params;
  // Everything here is host memory the "device" can reach.
  r.type |= MemoryType::kDeviceVisible;
  if (r.min_alignment == 0) r.min_alignment = kDefaultAlignment;
  if (r.min_alignment < kDefaultAlignment) r.min_alignment = kDefaultAlignment;
  *out_resolved = r;
  // Sizes are checked when memory is reserved (CheckAllocationSize), so
  // that a size larger than the memory is RESOURCE_EXHAUSTED.
  BufferCompatibility c = BufferCompatibility::kAllocatable;
  if (AllOf(r.type, MemoryType::kHostVisible))
    c |= BufferCompatibility::kImportable;
  return c;
}

StatusOr<Ref<SimBuffer>> SimAllocator::CreateReserved(
    const BufferParams& params, DeviceSize size) {
  // Every memory type is host memory here.
  HAL_RETURN_IF_ERROR(
      CheckAllocationSize(params, size, device_limit_, /*host_backed=*/true));
  Buffer::Params p = MakeBufferParams(params, size, BufferState::kReserved);
  return Ref<SimBuffer>::Adopt(
      new SimBuffer(p, NextBufferId(), params.min_alignment, nullptr, nullptr));
}

StatusOr<Ref<Buffer>> SimAllocator::AllocateBufferImpl(
    const BufferParams& params, DeviceSize size) {
  HAL_ASSIGN_OR_RETURN(Ref<SimBuffer> buffer, CreateReserved(params, size));
  HAL_RETURN_IF_ERROR(buffer->Commit());
  buffer->TransitionState(BufferState::kReserved, BufferState::kLive);
  return Ref<Buffer>(std::move(buffer));
}

StatusOr<Ref<Buffer>> SimAllocator::ImportHostAllocationImpl(
    const BufferParams& params, void* ptr, DeviceSize size,
    ReleaseCallback release) {
  Buffer::Params p = MakeBufferParams(params, size, BufferState::kLive);
  // An imported buffer always counts as imported, even with no callback.
  if (!release) release = [] {};
  RecordImport();
  return Ref<Buffer>::Adopt(
      new SimBuffer(p, NextBufferId(), 1, ptr, std::move(release)));
}

uint64_t SimBufferId(Buffer* allocated) {
  auto* b = dynamic_cast<SimBuffer*>(allocated);
  return b ? b->id() : 0;
}

}  // namespace hal::sim
