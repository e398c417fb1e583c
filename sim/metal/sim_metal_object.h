// HalSimMTLObject: the base of every object of the simulated Metal
// framework: explicit reference counting with over-release detection, and
// live-object accounting by class (sim_metal_internal.h). Released objects
// are kept as zombies (never freed; bounded) so that an over-release is
// reported instead of touching freed memory. Objective-C++ only
// (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from sim/metal/*.mm"
#endif

#import <Foundation/Foundation.h>

#include <atomic>

#include "sim/engine/engine.h"
#include "sim/metal/sim_metal_internal.h"

// Every framework method a host thread calls that may block on a lock (the
// engine's, or one a callback holds) runs inside an engine HostCall, as every
// entry point of the other simulated libraries does (the settle rule,
// engine.h). Without it, a driver thread blocked on the engine's lock while
// the engine scanned the process's threads (it holds that lock) looked
// blocked, and the engine stepped in the middle of the driver's sequence.
// Not around a wait for the device (waitUntilCompleted), which must let the
// engine step.
#define HALSIM_METAL_ENTER()                               \
  ::hal::sim::engine::Engine::HostCall halsim_metal_call_( \
      ::hal::sim::metal::E())

@interface HalSimMTLObject : NSObject {
 @public
  std::atomic<long>* refs_;
  BOOL zombie_;
}
- (void)simTeardown;  // releases what the object holds
@end
