// HalSimMTLBuffer (sim_metal_buffer.h): the two copies of Managed storage
// and the buffer's memory.
#include "sim/metal/sim_metal_buffer.h"

#include <Block.h>

#include <algorithm>
#include <cstring>

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

@implementation HalSimMTLBuffer
- (id<MTLDevice>)device {
  return device_;
}
- (MTLStorageMode)storageMode {
  return mode_;
}
- (NSUInteger)length {
  return length_;
}
- (void*)contents {
  if (mode_ == MTLStorageModePrivate) return nullptr;
  return mode_ == MTLStorageModeManaged ? host_ : base_;
}
- (void)didModifyRange:(NSRange)range {
  if (mode_ != MTLStorageModeManaged) {
    Violation("didModifyRange: on a buffer that is not Managed");
  } else if (range.location > length_ ||
             range.length > length_ - range.location) {
    Violation("didModifyRange: range [%lu, +%lu) outside a %lu-byte buffer",
              (unsigned long)range.location, (unsigned long)range.length,
              (unsigned long)length_);
  } else if (range.length) {
    std::lock_guard<std::mutex> lock(*sync_);
    std::memcpy(base_ + range.location, host_ + range.location, range.length);
    std::memcpy(synced_->data() + range.location, host_ + range.location,
                range.length);
  }
}
// Runs in a GPU command, before it reads [offset, +length) of the buffer.
- (void)simCheckGpuRead:(NSUInteger)offset
                 length:(NSUInteger)length
                   what:(const char*)what {
  if (mode_ != MTLStorageModeManaged || offset >= length_) return;
  length = std::min<NSUInteger>(length, length_ - offset);
  std::lock_guard<std::mutex> lock(*sync_);
  for (NSUInteger i = offset; i < offset + length; ++i) {
    if (host_[i] != (*synced_)[i]) {
      Violation(
          "%s reads byte %lu of a Managed buffer that the CPU wrote without "
          "didModifyRange: (the GPU reads its own, stale copy)",
          what, (unsigned long)i);
      return;
    }
  }
}
// The GPU's copy to the CPU's (a blit synchronizeResource: when it runs).
- (void)simSynchronize {
  if (mode_ != MTLStorageModeManaged || length_ == 0) return;
  std::lock_guard<std::mutex> lock(*sync_);
  std::memcpy(host_, base_, length_);
  std::memcpy(synced_->data(), base_, length_);
}
- (void)simTeardown {
  const bool gpu_is_caller_memory = no_copy_ && mode_ != MTLStorageModeManaged;
  if (base_) {
    // Caller memory is unregistered, engine memory freed.
    if (gpu_is_caller_memory) {
      E().Unregister(reinterpret_cast<uintptr_t>(base_));
    } else {
      E().Free(reinterpret_cast<uintptr_t>(base_), /*host=*/false);
    }
  }
  if (host_ && !no_copy_)
    E().Free(reinterpret_cast<uintptr_t>(host_), /*host=*/true);
  delete synced_;
  delete sync_;
  if (deallocator_) {
    deallocator_(
        no_copy_ ? (mode_ == MTLStorageModeManaged ? host_ : base_) : nullptr,
        length_);
    Block_release(deallocator_);
  }
  [device_ release];
}
@end
