// HalSimMTLComputeEncoder: a MTLComputeCommandEncoder whose dispatches run
// the pipeline's native kernel; the threadgroup size, the bound buffers and
// the constants (setBytes at index 30) are checked against the kernel.
// Objective-C++ only (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from sim/metal/*.mm"
#endif

#import "Metal/Metal.h"

#include <cstdint>
#include <vector>

#include "sim/metal/sim_metal_object.h"

@class HalSimMTLBuffer;
@class HalSimMTLCommandBuffer;
@class HalSimMTLPipeline;

@interface HalSimMTLComputeEncoder
    : HalSimMTLObject <MTLComputeCommandEncoder> {
 @public
  HalSimMTLCommandBuffer* buffer_;  // retained
  BOOL ended_;
  HalSimMTLPipeline* pipeline_;   // retained
  HalSimMTLBuffer* buffers_[31];  // retained
  NSUInteger offsets_[31];
  std::vector<uint32_t>* bytes_;  // setBytes at index 30 (the constants)
}
@end
