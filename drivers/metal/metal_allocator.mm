// MetalAllocator (metal_allocator.h): memory types on storage modes, and
// host imports.
#include "drivers/metal/metal_allocator.h"

#include <unistd.h>

#include <algorithm>

#include "drivers/metal/metal_buffer.h"

namespace hal::metal {
namespace {

constexpr DeviceSize kDefaultAlignment = 256;

// What an import's deallocator block holds: the HAL release callback, run
// once when Metal deallocates the MTLBuffer (after the last command buffer
// that used it completed), on whichever thread releases it last.
struct ImportRelease {
  Allocator::ReleaseCallback release;
};

DeviceSize HostPageSize() {
  static const DeviceSize page = static_cast<DeviceSize>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

MetalAllocator::MetalAllocator(id<MTLDevice> device, bool managed)
    : device_([device retain]), managed_(managed) {}

MetalAllocator::~MetalAllocator() { [device_ release]; }

StatusOr<Ref<Buffer>> MetalAllocator::Reserve(const BufferParams& params,
                                              DeviceSize size) {
  HAL_RETURN_IF_ERROR(
      CheckAllocationSize(params, size, [device_ recommendedMaxWorkingSetSize],
                          /*host_backed=*/false));
  Buffer::Params p = MakeBufferParams(params, size, BufferState::kReserved);
  return Ref<Buffer>::Adopt(
      new MetalBuffer(p, device_, params.min_alignment, managed_));
}

BufferCompatibility MetalAllocator::QueryCompatibilityImpl(
    const BufferParams& params, DeviceSize size, BufferParams* out_resolved) {
  BufferParams r = params;
  // Shared storage is what the host sees: coherent on Apple silicon. On a
  // managed device, host-visible memory is Managed storage, coherent only
  // when asked for (the driver announces and synchronizes for it).
  const bool host_visible = AllOf(r.type, MemoryType::kHostVisible);
  if (host_visible && !managed_) r.type |= MemoryType::kHostCoherent;
  r.type |= MemoryType::kDeviceVisible;
  if (r.min_alignment < kDefaultAlignment) r.min_alignment = kDefaultAlignment;
  *out_resolved = r;
  // Host memory imports as Shared storage (newBufferWithBytesNoCopy:).
  return host_visible ? BufferCompatibility::kAllocatable |
                            BufferCompatibility::kImportable
                      : BufferCompatibility::kAllocatable;
}

StatusOr<Ref<Buffer>> MetalAllocator::AllocateBufferImpl(
    const BufferParams& params, DeviceSize size) {
  HAL_ASSIGN_OR_RETURN(Ref<Buffer> buffer, Reserve(params, size));
  HAL_RETURN_IF_ERROR(static_cast<MetalBuffer*>(buffer.get())->Commit());
  buffer->TransitionState(BufferState::kReserved, BufferState::kLive);
  return buffer;
}

StatusOr<Ref<Buffer>> MetalAllocator::ImportHostAllocationImpl(
    const BufferParams& params, void* ptr, DeviceSize size,
    ReleaseCallback release) {
  BufferParams p = params;
  p.type |= MemoryType::kHostCoherent;  // Shared storage
  p.min_alignment = std::max<DeviceSize>(p.min_alignment, kDefaultAlignment);
  Buffer::Params bp = MakeBufferParams(p, size, BufferState::kLive);
  const DeviceSize page = HostPageSize();
  if (size == 0) {
    // Metal has no empty no-copy buffer: an empty Shared one, as an empty
    // allocation gets; the memory (none) is released with the buffer.
    auto* buffer =
        new MetalBuffer(bp, device_, p.min_alignment, /*managed=*/false);
    Ref<Buffer> ref = Ref<Buffer>::Adopt(buffer);
    id<MTLBuffer> empty;
    @autoreleasepool {
      empty = [device_ newBufferWithLength:0
                                   options:MTLResourceStorageModeShared];
    }
    if (!empty)
      return ResourceExhaustedError(
          "Metal: newBufferWithLength:0 returned nil");
    buffer->AdoptImported(empty);
    buffer->set_release(std::move(release));
    RecordImport();
    return ref;
  }
  if (reinterpret_cast<uintptr_t>(ptr) % page != 0 || size % page != 0) {
    return InvalidArgumentError("Metal: host import wraps whole pages "
                                "(newBufferWithBytesNoCopy:): the pointer and "
                                "the length must be multiples of the %llu-byte "
                                "page; got %p + %llu bytes",
                                (unsigned long long)page, ptr,
                                (unsigned long long)size);
  }
  auto* state = new ImportRelease{std::move(release)};
  id<MTLBuffer> wrapped;
  @autoreleasepool {
    wrapped = [device_ newBufferWithBytesNoCopy:ptr
                                         length:(NSUInteger)size
                                        options:MTLResourceStorageModeShared
                                    deallocator:^(void*, NSUInteger) {
                                      if (state->release) state->release();
                                      delete state;
                                    }];
  }
  if (!wrapped) {
    // No buffer, no deallocator call: the caller keeps the memory.
    delete state;
    return InvalidArgumentError(
        "Metal: newBufferWithBytesNoCopy:%p length:%llu returned nil", ptr,
        (unsigned long long)size);
  }
  auto* buffer =
      new MetalBuffer(bp, device_, p.min_alignment, /*managed=*/false);
  buffer->AdoptImported(wrapped);
  RecordImport();
  return Ref<Buffer>::Adopt(buffer);
}

}  // namespace hal::metal
