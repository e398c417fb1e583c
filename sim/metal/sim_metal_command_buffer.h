// HalSimMTLCommandBuffer: a MTLCommandBuffer. It checks the encoding rules:
// one active encoder per command buffer; endEncoding before the next
// encoder, an encoded event, or commit; nothing encoded after commit;
// commit once. It becomes engine ops on its queue's engine queue at commit:
// encoded event waits, blits and dispatches, encoded event signals, then its
// completion (status, then handlers on the callback thread). Objective-C++
// only (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from sim/metal/*.mm"
#endif

#import "Metal/Metal.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/metal/sim_metal_object.h"

@class HalSimMTLCommandQueue;

namespace hal::sim::metal {

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

}  // namespace hal::sim::metal

@interface HalSimMTLCommandBuffer : HalSimMTLObject <MTLCommandBuffer> {
 @public
  HalSimMTLCommandQueue* queue_;  // retained
  hal::sim::metal::CommandBufferState* state_;
}
- (BOOL)simCanEncode:(const char*)what;
- (void)simEncoderEnded:(id)encoder;
- (void)simAddOp:(hal::sim::engine::Op)op retaining:(id)resource also:(id)other;
- (void)simRetain:(id)resource;
@end
