// AMDGPU code objects (EM_AMDGPU ELF, as lld writes them for HSACO and the
// AMDGPU code-object format): the kernel descriptors a simulated vendor
// library needs to run a kernel as the native build of the same kernel.
//
// One parser for every AMD skin: sim/hsa uses it; sim/hip still has its own
// copy of the same walk (sim_libhip_module.cc) and can switch to this one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hal::sim::engine {

// EF_AMDGPU_MACH_AMDGCN_GFX90A: the ISA every simulated AMD device reports.
constexpr unsigned kAmdgpuGfx90aMach = 0x3f;

// A 64-byte kernel descriptor `NAME.kd` (the first three u32 of it).
struct AmdgpuKernelDescriptor {
  std::string name;  // NAME, without ".kd"
  uint32_t group_segment_size = 0;
  uint32_t private_segment_size = 0;
  uint32_t kernarg_size = 0;
};

// Reads the kernel descriptors of `image`. `size` bounds every read (0: the
// size is read from the ELF header, as HIP's hipModuleLoadDataEx must).
// False, with the reason in `*error`, for anything that is not a 64-bit
// little-endian EM_AMDGPU ELF for gfx90a holding at least one descriptor.
bool ParseAmdgpuCodeObject(const uint8_t* image, size_t size,
                           std::vector<AmdgpuKernelDescriptor>* out,
                           std::string* error);

}  // namespace hal::sim::engine
