// The simulated Metal framework: Objective-C classes over the shared engine
// (sim/engine/) that answer to the protocols of drivers/metal/Metal/Metal.h,
// and check the Metal rules real hardware punishes (each violation reported
// with the seed, sim_metal_internal.h):
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
#import "Metal/Metal.h"

#include <Block.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sim/engine/engine_control.h"
#include "sim/engine/engine_kernels.h"
#include "sim/metal/sim_metal_internal.h"

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

// Every framework method a host thread calls that may block on a lock (the
// engine's, or one a callback holds) runs inside an engine HostCall, as every
// entry point of the other simulated libraries does (the settle rule,
// engine.h). Without it, a driver thread blocked on the engine's lock while
// the engine scanned the process's threads (it holds that lock) looked
// blocked, and the engine stepped in the middle of the driver's sequence.
// Not around a wait for the device (waitUntilCompleted), which must let the
// engine step.
#define HALSIM_METAL_ENTER() engine::Engine::HostCall halsim_metal_call_(E())

// ---------------------------------------------------------------------------
// The base: explicit reference counting with over-release detection.

@interface HalSimMTLObject : NSObject {
 @public
  std::atomic<long>* refs_;
  BOOL zombie_;
}
- (void)simTeardown;  // releases what the object holds
@end

namespace {
constexpr size_t kMaxZombies = 4096;
std::mutex& ZombieMutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::deque<HalSimMTLObject*>& Zombies() {
  static auto* z = new std::deque<HalSimMTLObject*>();
  return *z;
}
}  // namespace

@implementation HalSimMTLObject
- (instancetype)init {
  if ((self = [super init])) {
    refs_ = new std::atomic<long>(1);
    CountAlloc(object_getClassName(self));
  }
  return self;
}
- (id)retain {
  if (zombie_) {
    Violation("retain of a released %s", object_getClassName(self));
    return self;
  }
  refs_->fetch_add(1);
  return self;
}
- (NSUInteger)retainCount {
  return zombie_ ? 0 : (NSUInteger)refs_->load();
}
- (oneway void)release {
  if (zombie_) {
    Violation("over-release of a %s (released more often than retained)",
              object_getClassName(self));
    return;
  }
  if (refs_->fetch_sub(1) != 1) return;
  // The teardown frees memory or a queue through the engine.
  HALSIM_METAL_ENTER();
  zombie_ = YES;
  CountFree(object_getClassName(self));
  [self simTeardown];
  HalSimMTLObject* evict = nil;
  {
    std::lock_guard<std::mutex> lock(ZombieMutex());
    Zombies().push_back(self);
    if (Zombies().size() > kMaxZombies) {
      evict = Zombies().front();
      Zombies().pop_front();
    }
  }
  if (evict) [evict simFree];
}
- (void)simFree {
  delete refs_;
  refs_ = nullptr;
  [super release];
}
- (void)simTeardown {
}
@end

// ---------------------------------------------------------------------------
// Forward declarations.

@class HalSimMTLDevice;
@class HalSimMTLCommandBuffer;

namespace {
// MTLBuffers start on a page (4 KiB on Intel Macs, 16 KiB on Apple silicon).
constexpr size_t kBufferAlignment = 4096;
// Shared storage is one copy both sides use; Private and the GPU's copy of
// Managed storage are device memory.
engine::Error Alloc(size_t n, MTLStorageMode mode, void** out) {
  engine::MemoryKind kind =
      mode == MTLStorageModeShared ? engine::MemoryKind::kManaged : engine::MemoryKind::kDevice;
  return E().Allocate(n, kind, kBufferAlignment, out);
}
}  // namespace

// ---------------------------------------------------------------------------
// Buffers.

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
- (void)simCheckGpuRead:(NSUInteger)offset length:(NSUInteger)length what:(const char*)what;
- (void)simSynchronize;
@end

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
  } else if (range.location > length_ || range.length > length_ - range.location) {
    Violation("didModifyRange: range [%lu, +%lu) outside a %lu-byte buffer",
              (unsigned long)range.location, (unsigned long)range.length, (unsigned long)length_);
  } else if (range.length) {
    std::lock_guard<std::mutex> lock(*sync_);
    std::memcpy(base_ + range.location, host_ + range.location, range.length);
    std::memcpy(synced_->data() + range.location, host_ + range.location, range.length);
  }
}
// Runs in a GPU command, before it reads [offset, +length) of the buffer.
- (void)simCheckGpuRead:(NSUInteger)offset length:(NSUInteger)length what:(const char*)what {
  if (mode_ != MTLStorageModeManaged || offset >= length_) return;
  length = std::min<NSUInteger>(length, length_ - offset);
  std::lock_guard<std::mutex> lock(*sync_);
  for (NSUInteger i = offset; i < offset + length; ++i) {
    if (host_[i] != (*synced_)[i]) {
      Violation("%s reads byte %lu of a Managed buffer that the CPU wrote without "
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
  if (host_ && !no_copy_) E().Free(reinterpret_cast<uintptr_t>(host_), /*host=*/true);
  delete synced_;
  delete sync_;
  if (deallocator_) {
    deallocator_(no_copy_ ? (mode_ == MTLStorageModeManaged ? host_ : base_) : nullptr, length_);
    Block_release(deallocator_);
  }
  [device_ release];
}
@end

// ---------------------------------------------------------------------------
// Shared events and listeners.

@interface MTLSharedEventListener ()
@end
@implementation MTLSharedEventListener
- (instancetype)init {
  return [super init];
}
@end

namespace {
struct PendingNotify {
  uint64_t value;
  MTLSharedEventNotificationBlock block;  // Block_copy'd
  MTLSharedEventListener* listener;       // retained
};
}  // namespace

@interface HalSimMTLSharedEvent : HalSimMTLObject <MTLSharedEvent> {
 @public
  id<MTLDevice> device_;  // retained
  engine::SignalPtr* signal_;
  std::mutex* mutex_;
  std::vector<PendingNotify>* notifies_;
}
- (void)simRaiseTo:(uint64_t)value;
@end

@implementation HalSimMTLSharedEvent
- (id<MTLDevice>)device {
  return device_;
}
- (uint64_t)signaledValue {
  HALSIM_METAL_ENTER();
  return E().SignalValue(*signal_);
}
- (void)setSignaledValue:(uint64_t)value {
  HALSIM_METAL_ENTER();
  [self simRaiseTo:value];
}
// Raises the value (an event never goes down here: the driver only raises
// them) and posts the listener blocks it satisfies, in registration order.
- (void)simRaiseTo:(uint64_t)value {
  E().UpdateSignal(*signal_, engine::SignalOp::kMax, value);
  uint64_t now = E().SignalValue(*signal_);
  std::vector<PendingNotify> ready;
  {
    std::lock_guard<std::mutex> lock(*mutex_);
    auto& all = *notifies_;
    for (size_t i = 0; i < all.size();) {
      if (all[i].value <= now) {
        ready.push_back(all[i]);
        all.erase(all.begin() + i);
      } else {
        ++i;
      }
    }
  }
  if (ready.empty()) return;
  [self retain];
  RunOnCallbackThread([self, ready, now] {
    for (const PendingNotify& n : ready) {
      n.block(self, now);
      Block_release(n.block);
      [n.listener release];
    }
    [self release];
  });
}
- (void)notifyListener:(MTLSharedEventListener*)listener
               atValue:(uint64_t)value
                 block:(MTLSharedEventNotificationBlock)block {
  HALSIM_METAL_ENTER();
  if (!listener || !block) {
    Violation("notifyListener:atValue:block: with a nil listener or block");
    return;
  }
  {
    std::lock_guard<std::mutex> lock(*mutex_);
    notifies_->push_back({value, Block_copy(block), [listener retain]});
  }
  [self simRaiseTo:0];  // fires at once when already reached
}
- (void)simTeardown {
  for (PendingNotify& n : *notifies_) {
    Block_release(n.block);
    [n.listener release];
  }
  delete notifies_;
  delete mutex_;
  delete signal_;
  [device_ release];
}
@end

// ---------------------------------------------------------------------------
// Libraries, functions and pipelines. MSL is not compiled here: each
// `kernel void NAME(` of the source runs as the native (sim-format) build of
// the same test kernel (build/<preset>/kernels/modules/*.sim.so, or
// HALSIM_KERNEL_DIR), found by NAME. A kernel without a native build is a
// library error, as a compile error would be.

namespace {
engine::KernelLibrary& Kernels() {
  static engine::KernelLibrary* kernels = [] {
    std::string dir;
    const char* env = engine::GetControlEnv("KERNEL_DIR", "HALSIM_METAL_");
    if (env && *env) {
      dir = env;
    } else {
#ifdef HALSIM_METAL_KERNEL_MODULES_DIR
      dir = HALSIM_METAL_KERNEL_MODULES_DIR;
#endif
    }
    return new engine::KernelLibrary(dir, "HALSIM_KERNEL_DIR", "halsim_metal");
  }();
  return *kernels;
}

NSError* MakeError(NSString* domain, const std::string& text) {
  NSString* message = [NSString stringWithUTF8String:text.c_str()];
  return [NSError errorWithDomain:domain
                             code:1
                         userInfo:[NSDictionary dictionaryWithObject:message
                                                              forKey:NSLocalizedDescriptionKey]];
}
}  // namespace

@interface HalSimMTLFunction : HalSimMTLObject <MTLFunction> {
 @public
  engine::Kernel* kernel_;
}
@end

@implementation HalSimMTLFunction
- (NSString*)name {
  return [NSString stringWithUTF8String:kernel_->name.c_str()];
}
- (void)simTeardown {
  delete kernel_;
}
@end

@interface HalSimMTLLibrary : HalSimMTLObject <MTLLibrary> {
 @public
  std::vector<engine::Kernel>* kernels_;
}
@end

@implementation HalSimMTLLibrary
- (NSArray<NSString*>*)functionNames {
  NSMutableArray* names = [NSMutableArray array];
  for (const engine::Kernel& k : *kernels_) {
    [names addObject:[NSString stringWithUTF8String:k.name.c_str()]];
  }
  return names;
}
- (id<MTLFunction>)newFunctionWithName:(NSString*)name {
  HALSIM_METAL_ENTER();
  const char* want = [name UTF8String];
  for (const engine::Kernel& k : *kernels_) {
    if (k.name == want) {
      HalSimMTLFunction* f = [[HalSimMTLFunction alloc] init];
      f->kernel_ = new engine::Kernel(k);
      return f;
    }
  }
  return nil;
}
- (void)simTeardown {
  delete kernels_;
}
@end

@interface HalSimMTLPipeline : HalSimMTLObject <MTLComputePipelineState> {
 @public
  engine::Kernel* kernel_;
}
@end

@implementation HalSimMTLPipeline
- (NSUInteger)maxTotalThreadsPerThreadgroup {
  return 1024;
}
- (NSUInteger)threadExecutionWidth {
  return 32;
}
- (void)simTeardown {
  delete kernel_;
}
@end

// ---------------------------------------------------------------------------
// Command buffers and encoders.

namespace {
struct CommandBufferState {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<engine::Op> ops;
  std::vector<id> resources;                      // retained until completion
  std::vector<MTLCommandBufferHandler> handlers;  // Block_copy'd
  std::shared_ptr<engine::Domain> domain = std::make_shared<engine::Domain>();
  MTLCommandBufferStatus status = MTLCommandBufferStatusNotEnqueued;
  id active_encoder = nil;  // not retained
};
}  // namespace

@interface HalSimMTLCommandQueue : HalSimMTLObject <MTLCommandQueue> {
 @public
  id<MTLDevice> device_;  // retained
  engine::Queue* queue_;
}
@end

@interface HalSimMTLCommandBuffer : HalSimMTLObject <MTLCommandBuffer> {
 @public
  HalSimMTLCommandQueue* queue_;  // retained
  CommandBufferState* state_;
}
- (BOOL)simCanEncode:(const char*)what;
- (void)simEncoderEnded:(id)encoder;
- (void)simAddOp:(engine::Op)op retaining:(id)resource also:(id)other;
- (void)simRetain:(id)resource;
@end

@interface HalSimMTLBlitEncoder : HalSimMTLObject <MTLBlitCommandEncoder> {
 @public
  HalSimMTLCommandBuffer* buffer_;  // retained
  BOOL ended_;
}
@end

@implementation HalSimMTLBlitEncoder
- (BOOL)simLive:(const char*)what {
  if (ended_) {
    Violation("%s on a blit encoder after endEncoding", what);
    return NO;
  }
  return YES;
}
- (void)fillBuffer:(id<MTLBuffer>)buffer range:(NSRange)range value:(uint8_t)value {
  if (![self simLive:"fillBuffer:range:value:"]) return;
  auto* b = (HalSimMTLBuffer*)buffer;
  if (range.length == 0 || range.location % 4 != 0 || range.length % 4 != 0) {
    Violation("fillBuffer: range [%lu, +%lu): the start and length must be "
              "nonzero multiples of 4 on macOS",
              (unsigned long)range.location, (unsigned long)range.length);
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  if (range.location > b->length_ || range.length > b->length_ - range.location) {
    Violation("fillBuffer: range [%lu, +%lu) outside a %lu-byte buffer",
              (unsigned long)range.location, (unsigned long)range.length,
              (unsigned long)b->length_);
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  engine::Op op;
  op.name = "mtl.fill";
  op.bytes = range.length;
  // For the race checker: unordered work of another queue on these bytes.
  op.write =
      hal::sim::Range::Of(reinterpret_cast<uintptr_t>(b->base_) + range.location, range.length);
  op.run =
      E().FillWork(buffer_->state_->domain.get(),
                   reinterpret_cast<uintptr_t>(b->base_) + range.location, value, 1, range.length);
  [buffer_ simAddOp:std::move(op) retaining:buffer also:nil];
}
- (void)copyFromBuffer:(id<MTLBuffer>)source
          sourceOffset:(NSUInteger)source_offset
              toBuffer:(id<MTLBuffer>)target
     destinationOffset:(NSUInteger)target_offset
                  size:(NSUInteger)size {
  if (![self simLive:"copyFromBuffer:"]) return;
  auto* s = (HalSimMTLBuffer*)source;
  auto* t = (HalSimMTLBuffer*)target;
  if (size == 0 || source_offset > s->length_ || size > s->length_ - source_offset ||
      target_offset > t->length_ || size > t->length_ - target_offset) {
    Violation("copyFromBuffer: %lu bytes from offset %lu of a %lu-byte "
              "buffer to offset %lu of a %lu-byte buffer",
              (unsigned long)size, (unsigned long)source_offset, (unsigned long)s->length_,
              (unsigned long)target_offset, (unsigned long)t->length_);
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  engine::Op op;
  op.name = "mtl.copy";
  op.bytes = size;
  op.write = hal::sim::Range::Of(reinterpret_cast<uintptr_t>(t->base_) + target_offset, size);
  op.read = hal::sim::Range::Of(reinterpret_cast<uintptr_t>(s->base_) + source_offset, size);
  op.run = [s, source_offset, size,
            copy = E().CopyWork(buffer_->state_->domain.get(),
                                reinterpret_cast<uintptr_t>(t->base_) + target_offset,
                                reinterpret_cast<uintptr_t>(s->base_) + source_offset, size)] {
    [s simCheckGpuRead:source_offset length:size what:"a blit copy"];
    copy();
  };
  [buffer_ simAddOp:std::move(op) retaining:source also:target];
}
- (void)synchronizeResource:(id<MTLResource>)resource {
  if (![self simLive:"synchronizeResource:"]) return;
  auto* b = (HalSimMTLBuffer*)resource;
  if (!b || b->mode_ != MTLStorageModeManaged) {
    // Apple: "does nothing" for other storage modes; a driver that issues
    // it for them wastes a blit, which is not an error.
    return;
  }
  engine::Op op;
  op.name = "mtl.synchronize";
  op.bytes = b->length_;
  op.read = hal::sim::Range::Of(reinterpret_cast<uintptr_t>(b->base_), b->length_);
  engine::Domain* domain = buffer_->state_->domain.get();
  op.run = [b, domain] {
    if (!domain->failed()) [b simSynchronize];
  };
  [buffer_ simAddOp:std::move(op) retaining:resource also:nil];
}
- (void)endEncoding {
  if (![self simLive:"endEncoding"]) return;
  ended_ = YES;
  [buffer_ simEncoderEnded:self];
}
- (void)simTeardown {
  if (!ended_) {
    Violation("a blit encoder was released without endEncoding");
    [buffer_ simEncoderEnded:self];
  }
  [buffer_ release];
}
@end

@interface HalSimMTLComputeEncoder : HalSimMTLObject <MTLComputeCommandEncoder> {
 @public
  HalSimMTLCommandBuffer* buffer_;  // retained
  BOOL ended_;
  HalSimMTLPipeline* pipeline_;   // retained
  HalSimMTLBuffer* buffers_[31];  // retained
  NSUInteger offsets_[31];
  std::vector<uint32_t>* bytes_;  // setBytes at index 30 (the constants)
}
@end

@implementation HalSimMTLComputeEncoder
- (BOOL)simLive:(const char*)what {
  if (ended_) {
    Violation("%s on a compute encoder after endEncoding", what);
    return NO;
  }
  return YES;
}
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state {
  if (![self simLive:"setComputePipelineState:"]) return;
  [state retain];
  [pipeline_ release];
  pipeline_ = (HalSimMTLPipeline*)state;
}
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index {
  if (![self simLive:"setBuffer:offset:atIndex:"]) return;
  if (index >= 31) {
    Violation("setBuffer: index %lu is past the 31 buffer slots", (unsigned long)index);
    return;
  }
  [buffer retain];
  [buffers_[index] release];
  buffers_[index] = (HalSimMTLBuffer*)buffer;
  offsets_[index] = offset;
}
- (void)setBytes:(const void*)bytes length:(NSUInteger)length atIndex:(NSUInteger)index {
  if (![self simLive:"setBytes:length:atIndex:"]) return;
  if (index != 30 || length % 4 != 0 || length > 4096) {
    Violation("setBytes: %lu bytes at index %lu (the simulated kernels take "
              "their constants as uints at index 30; at most 4 KiB)",
              (unsigned long)length, (unsigned long)index);
    return;
  }
  const auto* words = static_cast<const uint32_t*>(bytes);
  bytes_->assign(words, words + length / 4);
}
// The checks and the arguments of one dispatch; false when it cannot run.
// `ranges`: what the race checker sees of each binding. Metal binds a buffer
// with an offset and no length or access mode, so the kernel may write
// anywhere from the offset to the buffer's end; that is the binding's range
// (a write).
- (BOOL)simPrepare:(MTLSize)threads
          pointers:(std::vector<uintptr_t>*)pointers
         constants:(std::vector<uint32_t>*)constants
            ranges:(std::vector<hal::sim::Range>*)ranges {
  if (!pipeline_) {
    Violation("a dispatch with no compute pipeline state set");
    return NO;
  }
  const engine::Kernel* k = pipeline_->kernel_;
  const hal_sim_kernel_info* info = k->info;
  if (threads.width != info->workgroup_size[0] || threads.height != info->workgroup_size[1] ||
      threads.depth != info->workgroup_size[2]) {
    Violation("dispatch of '%s' with threadsPerThreadgroup %lux%lux%lu; the "
              "kernel was built for %ux%ux%u",
              k->name.c_str(), (unsigned long)threads.width, (unsigned long)threads.height,
              (unsigned long)threads.depth, info->workgroup_size[0], info->workgroup_size[1],
              info->workgroup_size[2]);
    return NO;
  }
  for (uint32_t i = 0; i < info->binding_count; ++i) {
    HalSimMTLBuffer* b = buffers_[i];
    if (!b || offsets_[i] > b->length_) {
      Violation("dispatch of '%s': buffer %u is %s", k->name.c_str(), i,
                b ? "set past its end" : "not set");
      return NO;
    }
    pointers->push_back(reinterpret_cast<uintptr_t>(b->base_) + offsets_[i]);
    ranges->push_back(hal::sim::Range::Of(pointers->back(), b->length_ - offsets_[i]));
  }
  if (bytes_->size() < info->constant_count) {
    Violation("dispatch of '%s': %zu constants set at index 30, the kernel "
              "reads %u",
              k->name.c_str(), bytes_->size(), info->constant_count);
    return NO;
  }
  constants->assign(bytes_->begin(), bytes_->begin() + info->constant_count);
  return YES;
}
- (void)dispatchThreadgroups:(MTLSize)groups threadsPerThreadgroup:(MTLSize)threads {
  if (![self simLive:"dispatchThreadgroups:"]) return;
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  std::vector<hal::sim::Range> ranges;
  if (![self simPrepare:threads pointers:&pointers constants:&constants ranges:&ranges]) {
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  const uint32_t grid[3] = {(uint32_t)groups.width, (uint32_t)groups.height,
                            (uint32_t)groups.depth};
  engine::Op op;
  op.name = "mtl.dispatch";
  op.more_writes = std::move(ranges);
  op.run = [reads = [self simManagedReads],
            work = E().KernelWork(buffer_->state_->domain.get(), pipeline_->kernel_, grid,
                                  std::move(pointers), std::move(constants))] {
    for (const auto& [b, offset] : reads)
      [b simCheckGpuRead:offset length:b->length_ what:"a dispatch"];
    work();
  };
  [self simAdd:std::move(op)];
}
- (void)dispatchThreadgroupsWithIndirectBuffer:(id<MTLBuffer>)indirect
                          indirectBufferOffset:(NSUInteger)offset
                         threadsPerThreadgroup:(MTLSize)threads {
  if (![self simLive:"dispatchThreadgroupsWithIndirectBuffer:"]) return;
  auto* ib = (HalSimMTLBuffer*)indirect;
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  std::vector<hal::sim::Range> ranges;
  if (!ib || offset % 4 != 0 || offset > ib->length_ || ib->length_ - offset < 12) {
    Violation("dispatchThreadgroupsWithIndirectBuffer: 12 bytes at offset "
              "%lu of a %lu-byte buffer (4-byte aligned)",
              (unsigned long)offset, (unsigned long)(ib ? ib->length_ : 0));
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  if (![self simPrepare:threads pointers:&pointers constants:&constants ranges:&ranges]) {
    buffer_->state_->domain->Fail(engine::Error::kInvalidValue);
    return;
  }
  engine::Op op;
  op.name = "mtl.dispatch_indirect";
  op.more_writes = std::move(ranges);
  op.read = hal::sim::Range::Of(reinterpret_cast<uintptr_t>(ib->base_) + offset, 12);
  engine::Domain* domain = buffer_->state_->domain.get();
  const engine::Kernel* kernel = pipeline_->kernel_;
  const uint8_t* counts = ib->base_ + offset;
  op.run = [domain, kernel, counts, pointers = std::move(pointers),
            constants = std::move(constants), reads = [self simManagedReads], ib, offset] {
    [ib simCheckGpuRead:offset length:12 what:"an indirect dispatch's workgroup count"];
    for (const auto& [b, o] : reads) [b simCheckGpuRead:o length:b->length_ what:"a dispatch"];
    uint32_t grid[3];
    std::memcpy(grid, counts, sizeof(grid));
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return;
    E().KernelWork(domain, kernel, grid, pointers, constants)();
  };
  [buffer_ simAddOp:std::move(op) retaining:indirect also:nil];
  [self simRetainBindings];
}
// The Managed buffers the dispatch binds, from their offsets (the kernel
// may read any byte past it; the command buffer retains them).
- (std::vector<std::pair<HalSimMTLBuffer*, NSUInteger>>)simManagedReads {
  std::vector<std::pair<HalSimMTLBuffer*, NSUInteger>> reads;
  for (uint32_t i = 0; i < pipeline_->kernel_->info->binding_count; ++i) {
    HalSimMTLBuffer* b = buffers_[i];
    if (b && b->mode_ == MTLStorageModeManaged) reads.emplace_back(b, offsets_[i]);
  }
  return reads;
}
- (void)simAdd:(engine::Op)op {
  [buffer_ simAddOp:std::move(op) retaining:nil also:nil];
  [self simRetainBindings];
}
// The command buffer keeps the pipeline and the bound buffers until it
// completes (their memory is read when the dispatch runs).
- (void)simRetainBindings {
  [buffer_ simRetain:pipeline_];
  for (uint32_t i = 0; i < pipeline_->kernel_->info->binding_count; ++i) {
    [buffer_ simRetain:buffers_[i]];
  }
}
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope {
  // Dispatches of one encoder run in order here (the default serial
  // dispatch type); nothing to do.
  [self simLive:"memoryBarrierWithScope:"];
}
- (void)endEncoding {
  if (![self simLive:"endEncoding"]) return;
  ended_ = YES;
  [buffer_ simEncoderEnded:self];
}
- (void)simTeardown {
  if (!ended_) {
    Violation("a compute encoder was released without endEncoding");
    [buffer_ simEncoderEnded:self];
  }
  for (HalSimMTLBuffer* b : buffers_) [b release];
  [pipeline_ release];
  delete bytes_;
  [buffer_ release];
}
@end

@implementation HalSimMTLCommandBuffer
- (MTLCommandBufferStatus)status {
  HALSIM_METAL_ENTER();
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->status;
}
- (NSError*)error {
  if ([self status] != MTLCommandBufferStatusError) return nil;
  return [NSError errorWithDomain:@"MTLCommandBufferErrorDomain" code:1 userInfo:nil];
}
- (BOOL)simCanEncode:(const char*)what {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->status != MTLCommandBufferStatusNotEnqueued) {
    Violation("%s on a command buffer after commit", what);
    return NO;
  }
  if (state_->active_encoder) {
    Violation("%s while an encoder of the command buffer is active (call "
              "endEncoding first)",
              what);
    return NO;
  }
  return YES;
}
- (void)simEncoderEnded:(id)encoder {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->active_encoder == encoder) state_->active_encoder = nil;
}
- (void)simAddOp:(engine::Op)op retaining:(id)resource also:(id)other {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->status != MTLCommandBufferStatusNotEnqueued) {
    Violation("a command encoded after commit");
    return;
  }
  if (resource) state_->resources.push_back([resource retain]);
  if (other) state_->resources.push_back([other retain]);
  state_->ops.push_back(std::move(op));
}
- (void)simRetain:(id)resource {
  if (!resource) return;
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->resources.push_back([resource retain]);
}
- (id<MTLBlitCommandEncoder>)blitCommandEncoder {
  HALSIM_METAL_ENTER();
  if (![self simCanEncode:"blitCommandEncoder"]) return nil;
  HalSimMTLBlitEncoder* encoder = [[HalSimMTLBlitEncoder alloc] init];
  encoder->buffer_ = [self retain];
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->active_encoder = encoder;
  }
  return [encoder autorelease];
}
- (id<MTLComputeCommandEncoder>)computeCommandEncoder {
  HALSIM_METAL_ENTER();
  if (![self simCanEncode:"computeCommandEncoder"]) return nil;
  HalSimMTLComputeEncoder* encoder = [[HalSimMTLComputeEncoder alloc] init];
  encoder->buffer_ = [self retain];
  encoder->bytes_ = new std::vector<uint32_t>();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->active_encoder = encoder;
  }
  return [encoder autorelease];
}
- (void)encodeWaitForEvent:(id<MTLEvent>)event value:(uint64_t)value {
  HALSIM_METAL_ENTER();
  if (![self simCanEncode:"encodeWaitForEvent:value:"]) return;
  auto* e = (HalSimMTLSharedEvent*)event;
  engine::Op op;
  op.name = "mtl.wait_event";
  op.zero_time = true;
  op.waits.push_back({*e->signal_, engine::Cond::kGe, value});
  [self simAddOp:std::move(op) retaining:event also:nil];
}
- (void)encodeSignalEvent:(id<MTLEvent>)event value:(uint64_t)value {
  HALSIM_METAL_ENTER();
  if (![self simCanEncode:"encodeSignalEvent:value:"]) return;
  auto* e = (HalSimMTLSharedEvent*)event;
  engine::Op op;
  // A late-signal fault (HALSIM_FAULTS late_signal_us/late_signal_ppm)
  // delays the event, as it delays a CUDA event record.
  const uint64_t late_ns = E().DrawLateSignalNs();
  op.name = late_ns ? "mtl.signal_event(late)" : "mtl.signal_event";
  op.zero_time = true;
  op.extra_ns = late_ns;
  // Through the event, so that its listeners hear of it. A command buffer
  // that failed stops there: its later signals never happen.
  engine::Domain* domain = state_->domain.get();
  op.run = [e, value, domain] {
    if (!domain->failed()) [e simRaiseTo:value];
  };
  [self simAddOp:std::move(op) retaining:event also:nil];
}
- (void)addCompletedHandler:(MTLCommandBufferHandler)block {
  HALSIM_METAL_ENTER();
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->status != MTLCommandBufferStatusNotEnqueued) {
    Violation("addCompletedHandler: after commit");
    return;
  }
  state_->handlers.push_back(Block_copy(block));
}
- (void)commit {
  HALSIM_METAL_ENTER();
  std::vector<engine::Op> ops;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->status != MTLCommandBufferStatusNotEnqueued) {
      Violation("commit of a command buffer committed already");
      return;
    }
    if (state_->active_encoder) {
      Violation("commit while an encoder is active (endEncoding first)");
    }
    state_->status = MTLCommandBufferStatusCommitted;
    ops.swap(state_->ops);
  }
  for (engine::Op& op : ops) E().Enqueue(queue_->queue_, std::move(op));
  // In flight, the command buffer keeps itself alive.
  [self retain];
  // The handlers run on the callback thread once the completion op left
  // the engine queue (`left` is raised as it goes), so that a caller who
  // saw the command buffer complete finds no work of it on the queue
  // (halsim_reset_schedule refuses while a queue has work).
  engine::SignalPtr left = E().CreateSignal(0);
  E().EnqueueHostFunction(
      queue_->queue_,
      [self, left] {
        RunOnCallbackThread([self, left] {
          E().WaitSignal(left, engine::Cond::kGe, 1);
          [self simComplete];
        });
      },
      {{left, engine::SignalOp::kSet, 1}});
}
- (void)simComplete {
  std::vector<MTLCommandBufferHandler> handlers;
  std::vector<id> resources;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->status =
        state_->domain->failed() ? MTLCommandBufferStatusError : MTLCommandBufferStatusCompleted;
    handlers.swap(state_->handlers);
    resources.swap(state_->resources);
  }
  for (id r : resources) [r release];
  for (MTLCommandBufferHandler h : handlers) {
    h(self);
    Block_release(h);
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->cv.notify_all();
  }
  [self release];
}
- (void)waitUntilCompleted {
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (state_->status == MTLCommandBufferStatusNotEnqueued) {
    Violation("waitUntilCompleted on a command buffer never committed");
    return;
  }
  state_->cv.wait(lock, [&] {
    return state_->status == MTLCommandBufferStatusCompleted ||
           state_->status == MTLCommandBufferStatusError;
  });
}
- (void)simTeardown {
  if (state_->status == MTLCommandBufferStatusNotEnqueued) {
    for (id r : state_->resources) [r release];
    for (MTLCommandBufferHandler h : state_->handlers) Block_release(h);
  }
  delete state_;
  [queue_ release];
}
@end

@implementation HalSimMTLCommandQueue
- (id<MTLDevice>)device {
  return device_;
}
- (id<MTLCommandBuffer>)commandBuffer {
  HALSIM_METAL_ENTER();
  HalSimMTLCommandBuffer* cb = [[HalSimMTLCommandBuffer alloc] init];
  cb->queue_ = [self retain];
  cb->state_ = new CommandBufferState();
  return [cb autorelease];
}
- (void)simTeardown {
  E().DestroyQueue(queue_);
  [device_ release];
}
@end

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
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options {
  MTLStorageMode mode = (MTLStorageMode)((options >> MTLResourceStorageModeShift) & 0xf);
  if (mode > MTLStorageModePrivate) {
    Violation("newBufferWithLength: storage mode %lu is not for buffers", (unsigned long)mode);
    return nil;
  }
  void* p = nullptr;
  void* host = nullptr;
  if (length > 0) {
    engine::Engine::HostCall call(E());
    if (Alloc(length, mode, &p) != engine::Error::kOk) return nil;
    if (mode == MTLStorageModeManaged &&
        E().Allocate(length, engine::MemoryKind::kHost, kBufferAlignment, &host) !=
            engine::Error::kOk) {
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
                              deallocator:(void (^)(void*, NSUInteger))deallocator {
  MTLStorageMode mode = (MTLStorageMode)((options >> MTLResourceStorageModeShift) & 0xf);
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  if (mode != MTLStorageModeShared && mode != MTLStorageModeManaged) {
    Violation("newBufferWithBytesNoCopy: storage mode %lu (Shared or Managed only)",
              (unsigned long)mode);
    return nil;
  }
  if (!pointer || length == 0 || address % kBufferAlignment != 0 ||
      length % kBufferAlignment != 0) {
    Violation("newBufferWithBytesNoCopy: %p + %lu bytes: the pointer must be page aligned and "
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
                   "halsim_metal: newBufferWithBytesNoCopy: %p is already wrapped by a live "
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
  for (const char* p = std::strstr(text, kKernel); p; p = std::strstr(p + 1, kKernel)) {
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
        *error = MakeError(@"MTLLibraryErrorDomain", "halsim_metal: kernel '" + n +
                                                         "' has no native build in '" +
                                                         Kernels().dir() + "' (HALSIM_KERNEL_DIR)");
      }
      return nil;
    }
    kernels->push_back(k);
  }
  HalSimMTLLibrary* library = [[HalSimMTLLibrary alloc] init];
  library->kernels_ = kernels.release();
  return library;
}
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)function
                                                             error:(NSError**)error {
  HALSIM_METAL_ENTER();
  if (!function) {
    if (error) *error = MakeError(@"MTLLibraryErrorDomain", "no function");
    return nil;
  }
  HalSimMTLPipeline* pipeline = [[HalSimMTLPipeline alloc] init];
  pipeline->kernel_ = new engine::Kernel(*((HalSimMTLFunction*)function)->kernel_);
  return pipeline;
}
@end

extern "C" __attribute__((visibility("default"))) id<MTLDevice> MTLCreateSystemDefaultDevice(void) {
  if (ConfigurationFailed()) return nil;  // configures the engine first
  return [[HalSimMTLDevice alloc] init];
}
