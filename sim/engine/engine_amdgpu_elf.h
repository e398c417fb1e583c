// AMDGPU code objects (EM_AMDGPU ELF, as lld writes them for HSACO and the
// AMDGPU code-object format): the kernel descriptors a simulated vendor
// library needs to run a kernel as the native build of the same kernel.
//
// One parser for every AMD skin (sim/hsa, sim/hip), over the tree's one ELF
// reader (hal/formats/elf_reader.h).
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

// Why ParseAmdgpuCodeObject failed, for a skin whose vendor errors tell the
// cases apart (HIP: hipErrorNoBinaryForGpu for another machine).
enum class AmdgpuCodeObjectError {
  kNone,
  kNotAmdgpu,     // shorter than an ELF header, or not a 64-bit
                  // little-endian EM_AMDGPU ELF
  kWrongMachine,  // an AMDGPU ELF for another machine than gfx90a
  kMalformed,     // a section header table, symbol table or kernel
                  // descriptor that is malformed or outside the image
  kNoKernels,     // no NAME.kd descriptor
};

// Reads the kernel descriptors of `image`, in symbol-table order (a name in
// both .symtab and .dynsym once, as first seen). `size` bounds every read
// (0: the size is read from the ELF header, as HIP's hipModuleLoadDataEx
// must; the first 64 bytes must then be readable). False, with the reason
// in `*error` (and in `*kind` when not null), for anything that is not a
// 64-bit little-endian EM_AMDGPU ELF for gfx90a holding at least one
// descriptor.
bool ParseAmdgpuCodeObject(const uint8_t* image, size_t size,
                           std::vector<AmdgpuKernelDescriptor>* out,
                           std::string* error,
                           AmdgpuCodeObjectError* kind = nullptr);

}  // namespace hal::sim::engine
