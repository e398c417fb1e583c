// HalSimMTLCommandQueue: a MTLCommandQueue over one engine queue.
// Objective-C++ only (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "sim/metal/sim_metal_command_queue.h is Objective-C++: include it from sim/metal/*.mm"
#endif

#import "Metal/Metal.h"

#include "sim/engine/engine.h"
#include "sim/metal/sim_metal_object.h"

@interface HalSimMTLCommandQueue : HalSimMTLObject <MTLCommandQueue> {
 @public
  id<MTLDevice> device_;  // retained
  hal::sim::engine::Queue* queue_;
}
@end
