// MetalBuffer: a HAL buffer over one MTLBuffer, Shared (or Managed) storage
// for host-visible memory, Private for device-only memory. Objective-C++
// only: included from drivers/metal/*.mm, never from plain C++.
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from drivers/metal/*.mm"
#endif

#include <mutex>
#include <set>
#include <utility>

#import "Metal/Metal.h"
#include "hal/allocator.h"
#include "hal/buffer.h"

namespace hal::metal {

class MetalBuffer final : public Buffer {
 public:
  // A buffer without memory yet (Commit makes its MTLBuffer). `managed`:
  // host-visible memory is Managed storage (two copies) instead of Shared.
  MetalBuffer(const Params& params, id<MTLDevice> device, DeviceSize alignment,
              bool managed);

  // Makes the MTLBuffer: Shared (or Managed) storage for host-visible
  // memory, Private for device-only memory. Above a page (where every
  // MTLBuffer starts), the host address tells where the aligned start is; a
  // Private buffer has none (its GPU address is not declared here), so it
  // stays page aligned (docs/drivers/metal.md). Does nothing when committed
  // already. RESOURCE_EXHAUSTED when Metal returns nil.
  Status Commit();
  // An imported MTLBuffer (+1, taken over): live, not counted as allocated.
  void AdoptImported(id<MTLBuffer> buffer);
  // The MTLBuffer (autoreleased: call inside @autoreleasepool), or nil
  // before the commit and after a queue_dealloca released it.
  id<MTLBuffer> mtl() const;
  DeviceSize offset() const;
  bool managed() const { return managed_; }
  // An empty import's release callback, run when the buffer goes.
  void set_release(Allocator::ReleaseCallback release) {
    release_ = std::move(release);
  }
  // Before a command buffer that uses a Managed, HOST_COHERENT buffer is
  // committed: the bytes of write mappings still open may hold host writes
  // the GPU must see (coherent memory is never flushed), so they are
  // announced with didModifyRange:. Closed mappings were announced when
  // they were unmapped.
  void AnnounceOpenWrites();
  // queue_dealloca: releases the MTLBuffer (command buffers that use it
  // keep it until they complete, as Metal does).
  void Decommit();

 protected:
  ~MetalBuffer() override;
  StatusOr<uint8_t*> MapImpl(DeviceSize offset, DeviceSize length,
                             MemoryAccess access) override;
  // Managed and coherent: the host's writes are announced when the mapping
  // ends (non-coherent memory was flushed by Buffer::Unmap already).
  Status UnmapImpl(DeviceSize offset, DeviceSize length,
                   MemoryAccess access) override;
  // Shared storage is coherent: nothing to flush or invalidate. Managed
  // storage: a flush announces the host's writes; nothing to invalidate,
  // because every command buffer that writes a Managed buffer ends with a
  // synchronizeResource: of it (Encoder::SynchronizeManaged), so the host
  // copy is current once the work completed.
  Status FlushImpl(DeviceSize offset, DeviceSize length) override;
  Status InvalidateImpl(DeviceSize, DeviceSize) override { return OkStatus(); }

 private:
  id<MTLDevice> device_;  // retained
  const DeviceSize alignment_;
  const bool managed_, coherent_;
  mutable std::mutex mutex_;
  id<MTLBuffer> buffer_ = nil;  // retained; nil before Commit, after Decommit
  DeviceSize offset_ = 0;
  bool imported_ = false;
  // Managed: the (offset, length) of the write mappings open now.
  std::multiset<std::pair<DeviceSize, DeviceSize>> open_writes_;
  Allocator::ReleaseCallback release_;
};

}  // namespace hal::metal
