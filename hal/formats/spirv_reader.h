// The kernels of a SPIR-V module as Level Zero sees them: every OpEntryPoint
// with the Kernel execution model, with the byte size of each parameter
// (pointers 8 bytes under Physical64 addressing, integers and floats their
// width, -1 for a type it does not size). Level Zero 1.4 has no query for
// argument sizes, and zeKernelSetArgumentValue needs them: the driver reads
// them here from the module it loads (drivers/level_zero/ze_api.cc), and the
// simulated driver (sim/level_zero/sim_ze_module.cc) checks them against the
// native build with the same reader. Reads untrusted bytes: never reads
// outside `module`. No global state: any thread may call it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hal::formats {

// The first word of every SPIR-V module (its header is 5 words).
inline constexpr uint32_t kSpirvMagic = 0x07230203;

struct SpirvKernel {
  std::string name;
  std::vector<int> param_bytes;
};

// False, with the reason in `*error`, for bytes that are not a SPIR-V
// module with at least one kernel entry point.
bool ParseSpirvKernels(std::span<const uint8_t> module,
                       std::vector<SpirvKernel>* out, std::string* error);

}  // namespace hal::formats
