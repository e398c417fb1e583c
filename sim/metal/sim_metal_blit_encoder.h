// HalSimMTLBlitEncoder: a MTLBlitCommandEncoder. Blit fill: a nonempty
// range inside the buffer whose start and length are multiples of 4
// (macOS); blit copy: nonempty, inside both buffers; no call after
// endEncoding. Objective-C++ only (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from sim/metal/*.mm"
#endif

#import "Metal/Metal.h"

#include "sim/metal/sim_metal_object.h"

@class HalSimMTLCommandBuffer;

@interface HalSimMTLBlitEncoder : HalSimMTLObject <MTLBlitCommandEncoder> {
 @public
  HalSimMTLCommandBuffer* buffer_;  // retained
  BOOL ended_;
}
@end
