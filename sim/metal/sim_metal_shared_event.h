// HalSimMTLSharedEvent: a MTLSharedEvent over an engine signal; listener
// blocks (notifyListener:atValue:block:) run on the callback thread
// (sim_metal_internal.h). MTLSharedEventListener is implemented beside it.
// Objective-C++ only (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from sim/metal/*.mm"
#endif

#import "Metal/Metal.h"

#include <cstdint>
#include <mutex>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/metal/sim_metal_object.h"

namespace hal::sim::metal {

// A listener block waiting for its value.
struct PendingNotify {
  uint64_t value;
  MTLSharedEventNotificationBlock block;  // Block_copy'd
  MTLSharedEventListener* listener;       // retained
};

}  // namespace hal::sim::metal

@interface HalSimMTLSharedEvent : HalSimMTLObject <MTLSharedEvent> {
 @public
  id<MTLDevice> device_;  // retained
  hal::sim::engine::SignalPtr* signal_;
  std::mutex* mutex_;
  std::vector<hal::sim::metal::PendingNotify>* notifies_;
}
- (void)simRaiseTo:(uint64_t)value;
@end
