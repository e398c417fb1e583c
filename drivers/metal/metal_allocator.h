// MetalAllocator: HAL buffers on Metal storage modes, and host imports
// (newBufferWithBytesNoCopy:). Objective-C++ only: included from
// drivers/metal/*.mm, never from plain C++.
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from drivers/metal/*.mm"
#endif

#import "Metal/Metal.h"
#include "hal/allocator.h"
#include "hal/buffer.h"

namespace hal::metal {

class MetalAllocator final : public Allocator {
 public:
  // `managed`: host-visible memory is Managed storage instead of Shared.
  MetalAllocator(id<MTLDevice> device, bool managed);
  ~MetalAllocator() override;

  // A MetalBuffer in the kReserved state, without memory (queue_alloca);
  // MetalBuffer::Commit makes its MTLBuffer. RESOURCE_EXHAUSTED above the
  // device's recommendedMaxWorkingSetSize.
  StatusOr<Ref<Buffer>> Reserve(const BufferParams& params, DeviceSize size);

 protected:
  BufferCompatibility QueryCompatibilityImpl(
      const BufferParams& params, DeviceSize size,
      BufferParams* out_resolved) override;
  StatusOr<Ref<Buffer>> AllocateBufferImpl(const BufferParams& params,
                                           DeviceSize size) override;
  // newBufferWithBytesNoCopy: wraps whole pages, so the pointer and the
  // length must be page aligned (INVALID_ARGUMENT otherwise); the release
  // callback becomes the deallocator, which Metal runs when the MTLBuffer
  // is deallocated (not when the HAL buffer goes: command buffers in flight
  // keep it).
  StatusOr<Ref<Buffer>> ImportHostAllocationImpl(
      const BufferParams& params, void* ptr, DeviceSize size,
      ReleaseCallback release) override;

 private:
  id<MTLDevice> device_;  // retained
  const bool managed_;
};

}  // namespace hal::metal
