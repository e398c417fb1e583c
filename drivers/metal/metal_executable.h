// Executables: MSL source (the metal-msl format), a MTLLibrary per module
// and a MTLComputePipelineState per export. Objective-C++ only: included
// from drivers/metal/*.mm, never from plain C++.
#pragma once

#ifndef __OBJC__
#error "Objective-C++ only: include it from drivers/metal/*.mm"
#endif

#include <cstdint>
#include <vector>

#import "Metal/Metal.h"
#include "hal/executable.h"

namespace hal::metal {

class MetalExecutable final : public Executable {
 public:
  MetalExecutable(ExecutableData& data, std::vector<uint32_t> constants);
  // One per export, in export order.
  std::vector<id<MTLComputePipelineState>> pipelines;  // retained

 protected:
  ~MetalExecutable() override;
};

// Prepares metal-msl executables. PrepareImpl: INVALID_ARGUMENT for a
// module Metal rejects or an export it lacks; UNIMPLEMENTED for
// specialization constants.
class MetalExecutableCache final : public ExecutableCache {
 public:
  explicit MetalExecutableCache(id<MTLDevice> device);

 protected:
  ~MetalExecutableCache() override;
  bool CanPrepareFormatImpl(ExecutableFormat format) const override;
  StatusOr<Ref<Executable>> PrepareImpl(
      ExecutableData data, std::vector<uint32_t> constants) override;

 private:
  id<MTLDevice> device_;  // retained
};

}  // namespace hal::metal
