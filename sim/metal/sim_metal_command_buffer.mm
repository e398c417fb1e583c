// HalSimMTLCommandBuffer (sim_metal_command_buffer.h): encoding, commit
// and completion.
#include "sim/metal/sim_metal_command_buffer.h"

#include <Block.h>

#include "sim/metal/sim_metal_blit_encoder.h"
#include "sim/metal/sim_metal_command_queue.h"
#include "sim/metal/sim_metal_compute_encoder.h"
#include "sim/metal/sim_metal_shared_event.h"

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

@implementation HalSimMTLCommandBuffer
- (MTLCommandBufferStatus)status {
  HALSIM_METAL_ENTER();
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->status;
}
- (NSError*)error {
  if ([self status] != MTLCommandBufferStatusError) return nil;
  return [NSError errorWithDomain:@"MTLCommandBufferErrorDomain"
                             code:1
                         userInfo:nil];
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
  E().EnqueueHostFunction(queue_->queue_,
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
    state_->status = state_->domain->failed() ? MTLCommandBufferStatusError
                                              : MTLCommandBufferStatusCompleted;
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
