// HalSimMTLSharedEvent and MTLSharedEventListener
// (sim_metal_shared_event.h).
#include "sim/metal/sim_metal_shared_event.h"

#include <Block.h>

using namespace hal::sim::metal;  // NOLINT
namespace engine = hal::sim::engine;

@interface MTLSharedEventListener ()
@end
@implementation MTLSharedEventListener
- (instancetype)init {
  return [super init];
}
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
