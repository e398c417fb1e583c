// HalSimMTLCommandQueue: a MTLCommandQueue over one engine queue.
// Objective-C++ only (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from sim/metal/*.mm"
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
