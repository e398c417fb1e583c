// HalSimMTLBuffer: a MTLBuffer. `contents` of a Private buffer is NULL. A
// Managed buffer has two copies, as on a Mac with its own GPU memory:
// `contents` is the CPU's, GPU commands use the GPU's; didModifyRange:
// copies CPU -> GPU, a blit synchronizeResource: GPU -> CPU. A GPU command
// that reads bytes the CPU changed since they were last synchronized is a
// violation (the buffer keeps a snapshot of the CPU copy as of the last
// synchronization and compares it when the command runs); a CPU read of GPU
// writes without synchronizeResource: cannot be seen here, but reads the
// stale copy, as real hardware does. Made by the device
// (sim_metal_device.mm). Objective-C++ only (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from sim/metal/*.mm"
#endif

#import "Metal/Metal.h"

#include <cstdint>
#include <mutex>
#include <vector>

#include "sim/metal/sim_metal_object.h"

@interface HalSimMTLBuffer : HalSimMTLObject <MTLBuffer> {
 @public
  id<MTLDevice> device_;  // retained
  uint8_t* base_;         // what GPU commands use (the GPU's copy)
  NSUInteger length_;
  MTLStorageMode mode_;
  // Managed: the CPU's copy (`contents`), and the CPU copy as of the last
  // synchronization in either direction; both under `sync_`.
  uint8_t* host_;
  std::vector<uint8_t>* synced_;
  std::mutex* sync_;
  // newBufferWithBytesNoCopy: the caller's memory (base_ or host_),
  // registered with the engine when GPU commands use it, and the
  // deallocator (Block_copy'd, may be nil).
  BOOL no_copy_;
  void (^deallocator_)(void*, NSUInteger);
}
- (void)simCheckGpuRead:(NSUInteger)offset
                 length:(NSUInteger)length
                   what:(const char*)what;
- (void)simSynchronize;
@end
