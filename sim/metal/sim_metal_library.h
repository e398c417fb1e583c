// Libraries, functions and pipelines. MSL is not compiled here: each
// `kernel void NAME(` of the source runs as the native (sim-format) build of
// the same test kernel (build/<preset>/kernels/modules/*.sim.so, or
// HALSIM_KERNEL_DIR), found by NAME. A kernel without a native build is a
// library error, as a compile error would be. The device makes libraries
// and pipelines (sim_metal_device.mm). Objective-C++ only (sim/metal/*.mm).
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from sim/metal/*.mm"
#endif

#import "Metal/Metal.h"

#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/engine_kernels.h"
#include "sim/metal/sim_metal_object.h"

namespace hal::sim::metal {

// The native builds of the kernels, found as said above; loaded on first
// use, never freed.
engine::KernelLibrary& Kernels();
// An NSError (autoreleased) of `domain` whose description is `text`.
NSError* MakeError(NSString* domain, const std::string& text);

}  // namespace hal::sim::metal

@interface HalSimMTLFunction : HalSimMTLObject <MTLFunction> {
 @public
  hal::sim::engine::Kernel* kernel_;
}
@end

@interface HalSimMTLLibrary : HalSimMTLObject <MTLLibrary> {
 @public
  std::vector<hal::sim::engine::Kernel>* kernels_;
}
@end

@interface HalSimMTLPipeline : HalSimMTLObject <MTLComputePipelineState> {
 @public
  hal::sim::engine::Kernel* kernel_;
}
@end
