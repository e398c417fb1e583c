// The simulated Metal framework: Objective-C classes over the shared engine
// (sim/engine/) that answer to the protocols of Metal/Metal.h
// (sim/metal/include/), and check the Metal rules real hardware punishes (each
// violation reported with the seed, sim_metal_internal.h):
//   * one active encoder per command buffer; endEncoding before the next
//     encoder, an encoded event, or commit; nothing encoded after commit;
//     commit once; encoder calls after endEncoding;
//   * `contents` of a Private buffer is NULL;
//   * a Managed buffer has two copies, as on a Mac with its own GPU memory:
//     `contents` is the CPU's, GPU commands use the GPU's; didModifyRange:
//     copies CPU -> GPU, a blit synchronizeResource: GPU -> CPU. A GPU
//     command that reads bytes the CPU changed since they were last
//     synchronized is a violation (the framework keeps a snapshot of the
//     CPU copy as of the last synchronization and compares it when the
//     command runs); a CPU read of GPU writes without synchronizeResource:
//     cannot be seen here, but reads the stale copy, as real hardware does;
//   * newBufferWithBytesNoCopy: a page-aligned pointer and a nonzero length
//     that is a multiple of the page (4 KiB here); the deallocator runs when
//     the buffer is deallocated;
//   * blit fill: a nonempty range inside the buffer whose start and length
//     are multiples of 4 (macOS); blit copy: nonempty, inside both buffers;
//   * retain/release balance: a release past zero (or a retain of a
//     released object) is reported, and objects alive at exit are reported
//     as leaks, by class.
// A command buffer becomes engine ops on its queue's engine queue at commit:
// encoded event waits, blits, encoded event signals, then its completion
// (status, then handlers on the callback thread). Shared events are engine
// signals; listener blocks run on the callback thread.
// The library exports the control ABI (sim/core/halsim_control.h) over its
// engine. Faults: fail_alloc/alloc_fail_ppm make newBufferWithLength: return
// nil; fail_op/op_fail_ppm fail a blit or dispatch, and so its command buffer
// (MTLCommandBufferStatusError, no later encoded signal); slow_ppm; and
// late_signal_* delay an encoded event signal. lose_device_at is refused.
//
// Released objects are kept as zombies (never freed; bounded) so that an
// over-release is reported instead of touching freed memory.
//
// One concept per file: sim_metal_object (the base: reference counting,
// zombies), sim_metal_buffer, sim_metal_shared_event (with the listener),
// sim_metal_library (library, function, pipeline state),
// sim_metal_command_queue, sim_metal_command_buffer,
// sim_metal_blit_encoder, sim_metal_compute_encoder, and this file: the
// device and MTLCreateSystemDefaultDevice. sim_metal_runtime.mm has the
// shared state (sim_metal_internal.h).
#import "Metal/Metal.h"

#include <Block.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sim/metal/sim_metal_buffer.h"
#include "sim/metal/sim_metal_command_queue.h"
#include "sim/metal/sim_metal_internal.h"
#include "sim/metal/sim_metal_library.h"
#include "sim/metal/sim_metal_object.h"
#include "sim/metal/sim_metal_shared_event.h"

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

namespace {
// MTLBuffers start on a page (4 KiB on Intel Macs, 16 KiB on Apple silicon).
constexpr size_t kBufferAlignment = 4096;
// Shared storage is one copy both sides use; Private and the GPU's copy of
// Managed storage are device memory.
engine::Error Alloc(size_t n, MTLStorageMode mode, void** out) {
  engine::MemoryKind kind = mode == MTLStorageModeShared
                                ? engine::MemoryKind::kManaged
                                : engine::MemoryKind::kDevice;
  return E().Allocate(n, kind, kBufferAlignment, out);
}
}  // namespace

// ---------------------------------------------------------------------------
// The device.

@interface HalSimMTLDevice : HalSimMTLObject <MTLDevice>
@end

@implementation HalSimMTLDevice
- (NSString*)name {
  return @"Simulated Metal device (halsim_metal)";
}
- (uint64_t)registryID {
  return 1;
}
- (uint64_t)recommendedMaxWorkingSetSize {
  return uint64_t{4} << 30;
}
- (MTLSize)maxThreadsPerThreadgroup {
  return MTLSizeMake(1024, 1024, 64);
}
- (id<MTLCommandQueue>)newCommandQueue {
  HALSIM_METAL_ENTER();
  HalSimMTLCommandQueue* q = [[HalSimMTLCommandQueue alloc] init];
  q->device_ = [self retain];
  q->queue_ = E().CreateQueue();
  return q;
}
- (BOOL)hasUnifiedMemory {
  // Apple silicon; Managed storage still has two copies here (as on a Mac
  // with a discrete GPU), so that a driver that selects it is checked.
  return YES;
}
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length
                             options:(MTLResourceOptions)options {
  MTLStorageMode mode =
      (MTLStorageMode)((options >> MTLResourceStorageModeShift) & 0xf);
  if (mode > MTLStorageModePrivate) {
    Violation("newBufferWithLength: storage mode %lu is not for buffers",
              (unsigned long)mode);
    return nil;
  }
  void* p = nullptr;
  void* host = nullptr;
  if (length > 0) {
    engine::Engine::HostCall call(E());
    if (Alloc(length, mode, &p) != engine::Error::kOk) return nil;
    if (mode == MTLStorageModeManaged &&
        E().Allocate(length, engine::MemoryKind::kHost, kBufferAlignment,
                     &host) != engine::Error::kOk) {
      E().Free(reinterpret_cast<uintptr_t>(p), /*host=*/false);
      return nil;
    }
  }
  HalSimMTLBuffer* b = [[HalSimMTLBuffer alloc] init];
  b->device_ = [self retain];
  b->base_ = static_cast<uint8_t*>(p);
  b->length_ = length;
  b->mode_ = mode;
  if (mode == MTLStorageModeManaged) {
    // Both copies start as the engine fills new memory (0xCD).
    b->host_ = static_cast<uint8_t*>(host);
    b->synced_ = new std::vector<uint8_t>(b->host_, b->host_ + length);
    b->sync_ = new std::mutex();
    if (length) std::memcpy(b->base_, b->host_, length);
  }
  return b;
}
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void*)pointer
                                   length:(NSUInteger)length
                                  options:(MTLResourceOptions)options
                              deallocator:
                                  (void (^)(void*, NSUInteger))deallocator {
  MTLStorageMode mode =
      (MTLStorageMode)((options >> MTLResourceStorageModeShift) & 0xf);
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  if (mode != MTLStorageModeShared && mode != MTLStorageModeManaged) {
    Violation(
        "newBufferWithBytesNoCopy: storage mode %lu (Shared or Managed only)",
        (unsigned long)mode);
    return nil;
  }
  if (!pointer || length == 0 || address % kBufferAlignment != 0 ||
      length % kBufferAlignment != 0) {
    Violation("newBufferWithBytesNoCopy: %p + %lu bytes: the pointer must be "
              "page aligned and "
              "the length a nonzero multiple of the page (%zu bytes)",
              pointer, (unsigned long)length, kBufferAlignment);
    return nil;
  }
  void* gpu = pointer;
  {
    engine::Engine::HostCall call(E());
    if (mode == MTLStorageModeManaged) {
      // The caller's memory is the CPU's copy; the GPU's is the engine's.
      if (Alloc(length, mode, &gpu) != engine::Error::kOk) return nil;
      std::memcpy(gpu, pointer, length);
    } else if (E().Register(address, length) != engine::Error::kOk) {
      // Already wrapped by another live buffer: not modelled here.
      std::fprintf(stderr,
                   "halsim_metal: newBufferWithBytesNoCopy: %p is already "
                   "wrapped by a live "
                   "buffer (the simulated framework wraps memory once)\n",
                   pointer);
      return nil;
    }
  }
  HalSimMTLBuffer* b = [[HalSimMTLBuffer alloc] init];
  b->device_ = [self retain];
  b->base_ = static_cast<uint8_t*>(gpu);
  b->length_ = length;
  b->mode_ = mode;
  b->no_copy_ = YES;
  if (deallocator) b->deallocator_ = Block_copy(deallocator);
  if (mode == MTLStorageModeManaged) {
    b->host_ = static_cast<uint8_t*>(pointer);
    b->synced_ = new std::vector<uint8_t>(b->host_, b->host_ + length);
    b->sync_ = new std::mutex();
  }
  return b;
}
- (id<MTLSharedEvent>)newSharedEvent {
  HALSIM_METAL_ENTER();
  HalSimMTLSharedEvent* e = [[HalSimMTLSharedEvent alloc] init];
  e->device_ = [self retain];
  e->signal_ = new engine::SignalPtr(E().CreateSignal(0));
  e->mutex_ = new std::mutex();
  e->notifies_ = new std::vector<PendingNotify>();
  return e;
}
- (id<MTLLibrary>)newLibraryWithSource:(NSString*)source
                               options:(id)options
                                 error:(NSError**)error {
  HALSIM_METAL_ENTER();
  const char* text = [source UTF8String];
  auto kernels = std::make_unique<std::vector<engine::Kernel>>();
  static const char kKernel[] = "kernel void ";
  for (const char* p = std::strstr(text, kKernel); p;
       p = std::strstr(p + 1, kKernel)) {
    const char* name = p + sizeof(kKernel) - 1;
    const char* end = name;
    while ((*end >= 'a' && *end <= 'z') || (*end >= 'A' && *end <= 'Z') ||
           (*end >= '0' && *end <= '9') || *end == '_') {
      ++end;
    }
    if (end == name || *end != '(') continue;  // not a kernel definition
    engine::Kernel k;
    const std::string n(name, end);
    if (!Kernels().Find(n, &k)) {
      if (error) {
        *error = MakeError(@"MTLLibraryErrorDomain",
                           "halsim_metal: kernel '" + n +
                               "' has no native build in '" + Kernels().dir() +
                               "' (HALSIM_KERNEL_DIR)");
      }
      return nil;
    }
    kernels->push_back(k);
  }
  HalSimMTLLibrary* library = [[HalSimMTLLibrary alloc] init];
  library->kernels_ = kernels.release();
  return library;
}
- (id<MTLComputePipelineState>)
    newComputePipelineStateWithFunction:(id<MTLFunction>)function
                                  error:(NSError**)error {
  HALSIM_METAL_ENTER();
  if (!function) {
    if (error) *error = MakeError(@"MTLLibraryErrorDomain", "no function");
    return nil;
  }
  HalSimMTLPipeline* pipeline = [[HalSimMTLPipeline alloc] init];
  pipeline->kernel_ =
      new engine::Kernel(*((HalSimMTLFunction*)function)->kernel_);
  return pipeline;
}
@end

extern "C" __attribute__((visibility("default"))) id<MTLDevice>
MTLCreateSystemDefaultDevice(void) {
  if (ConfigurationFailed()) return nil;  // configures the engine first
  return [[HalSimMTLDevice alloc] init];
}
