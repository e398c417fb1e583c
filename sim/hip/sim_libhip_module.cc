// The HIP skin's modules and kernel launches (sim/skin/skin_module.cc).
//
// A module is an HSACO code object: an EM_AMDGPU ELF for the device's ISA
// (gfx90a). hipModuleLoadDataEx checks the ELF header and reads its symbol
// table: every 64-byte kernel descriptor `NAME.kd` is a kernel NAME, and its
// kernarg_size (bytes 8-11 of the descriptor) the size of its argument
// block. NAME runs as the native build of the same test kernel (compiled in
// as HALSIM_KERNEL_MODULES_DIR; HALSIM_KERNEL_DIR overrides it); the
// AMDGPU code itself is never executed.
#include <elf.h>

#include <cstring>
#include <string>

#include "sim/hip/sim_libhip_internal.h"

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

namespace {

// The bytes [offset, offset + size) of the image, or null when outside it.
const uint8_t* At(const uint8_t* image, size_t image_size, uint64_t offset,
                  uint64_t size) {
  if (offset > image_size || size > image_size - offset) return nullptr;
  return image + offset;
}

// Reads the kernels of an HSACO image. The image size is not passed to
// hipModuleLoadDataEx (as in HIP), so it is read from the ELF header: the
// section headers are the last thing lld writes.
hipError_t ParseHsaco(const uint8_t* image, skin::Module* module) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, image, sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_AMDGPU) {
    std::fprintf(stderr,
                 "halsim_hip: hipModuleLoadDataEx: not an HSACO code object "
                 "(a 64-bit little-endian EM_AMDGPU ELF)\n");
    return hipErrorInvalidImage;
  }
  if ((eh.e_flags & 0xff) != kGfx90aMach) {
    std::fprintf(stderr,
                 "halsim_hip: hipModuleLoadDataEx: the code object is for "
                 "AMDGPU machine 0x%x; the simulated device is gfx90a "
                 "(0x%x)\n",
                 eh.e_flags & 0xff, kGfx90aMach);
    return hipErrorNoBinaryForGpu;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) {
    return hipErrorInvalidImage;
  }
  const size_t size = eh.e_shoff + size_t{eh.e_shnum} * sizeof(Elf64_Shdr);
  if (eh.e_shoff < sizeof(eh) || size < eh.e_shoff) return hipErrorInvalidImage;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), image + eh.e_shoff,
              sections.size() * sizeof(Elf64_Shdr));
  bool found_symbols = false;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_link >= sections.size() || sh.sh_entsize != sizeof(Elf64_Sym)) {
      return hipErrorInvalidImage;
    }
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    const uint8_t* syms = At(image, size, sh.sh_offset, sh.sh_size);
    const uint8_t* strs = At(image, size, strtab.sh_offset, strtab.sh_size);
    if (!syms || !strs) return hipErrorInvalidImage;
    found_symbols = true;
    for (uint64_t i = 0; i < sh.sh_size / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym sym;
      std::memcpy(&sym, syms + i * sizeof(Elf64_Sym), sizeof(sym));
      if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_size != 64 ||
          sym.st_name >= strtab.sh_size || sym.st_shndx >= sections.size()) {
        continue;
      }
      const char* name = reinterpret_cast<const char*>(strs) + sym.st_name;
      size_t len = strnlen(name, strtab.sh_size - sym.st_name);
      if (len <= 3 || len == strtab.sh_size - sym.st_name ||
          std::strcmp(name + len - 3, ".kd") != 0) {
        continue;
      }
      // The descriptor's bytes, through the section that holds it.
      const Elf64_Shdr& holder = sections[sym.st_shndx];
      if (holder.sh_size < 64 || sym.st_value < holder.sh_addr ||
          sym.st_value - holder.sh_addr > holder.sh_size - 64) {
        return hipErrorInvalidImage;
      }
      const uint8_t* kd = At(
          image, size, holder.sh_offset + (sym.st_value - holder.sh_addr), 64);
      if (!kd) return hipErrorInvalidImage;
      skin::Function* f =
          skin::AddFunction(L(), module, std::string(name, len - 3));
      std::memcpy(&f->kernarg_size, kd + 8, 4);
    }
  }
  if (!found_symbols || module->functions.empty()) {
    std::fprintf(stderr,
                 "halsim_hip: hipModuleLoadDataEx: the code object has no "
                 "kernel descriptors (NAME.kd symbols)\n");
    return hipErrorInvalidImage;
  }
  return hipSuccess;
}

}  // namespace

HALSIM_EXPORT hipError_t hipModuleLoadDataEx(hipModule_t* module,
                                             const void* image,
                                             unsigned int num_options,
                                             hipJitOption* options,
                                             void** option_values) {
  HALSIM_ENTER_DEVICE("hipModuleLoadDataEx", dev);
  if (!module || !image || (num_options && (!options || !option_values))) {
    return hipErrorInvalidValue;
  }
  skin::Module parsed(dev);
  hipError_t r = ParseHsaco(static_cast<const uint8_t*>(image), &parsed);
  if (r != hipSuccess) return r;
  return ToHip(skin::Hand(L().New<skin::Module>(std::move(parsed)), module));
}

HALSIM_EXPORT hipError_t hipModuleUnload(hipModule_t hmod) {
  HALSIM_ENTER_INIT("hipModuleUnload");
  return ToHip(L().Destroy<skin::Module>(hmod));
}

HALSIM_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* out,
                                              hipModule_t hmod,
                                              const char* name) {
  HALSIM_ENTER_DEVICE("hipModuleGetFunction", dev);
  if (!out) return hipErrorInvalidValue;
  skin::Function* f = nullptr;
  hipError_t r = ToHip(skin::GetFunction(L(), hmod, name, "HSACO", &f));
  if (r != hipSuccess) return r;
  // The code object has no argument list the simulator reads (that is in
  // its msgpack metadata), so the kernel ABI's parameters (the native
  // build's bindings as pointers, then its constants) must at least fit in
  // the kernel's argument block.
  const hal_sim_kernel_info* info = f->kernel.info;
  std::vector<int> params(info->binding_count, 8);
  params.insert(params.end(), info->constant_count, 4);
  const uint32_t explicit_bytes =
      8 * info->binding_count + 4 * info->constant_count;
  if (!hal::sim::engine::SignatureMatches(f->kernel, params) ||
      f->kernarg_size < explicit_bytes) {
    std::fprintf(stderr,
                 "halsim_hip: HSACO kernel '%s' takes %u bytes of arguments; "
                 "its native build needs %u (%u bindings, %u constants)\n",
                 name, f->kernarg_size, explicit_bytes, info->binding_count,
                 info->constant_count);
    return hipErrorInvalidImage;
  }
  return ToHip(skin::Hand(f, out));
}

namespace hal::sim::hip {

hipError_t KernelOp(skin::Scope* device, hipFunction_t hfunc,
                    const uint32_t grid[3], const uint32_t block[3],
                    unsigned int shared_bytes, void** kernel_params,
                    void** extra, engine::Work* out) {
  auto* f = reinterpret_cast<const skin::Function*>(hfunc);
  if (!f) return hipErrorInvalidHandle;
  if (extra) {
    std::fprintf(stderr,
                 "halsim_hip: kernel arguments through `extra` "
                 "(HIP_LAUNCH_PARAM_*) are not simulated; use kernelParams\n");
    return hipErrorNotSupported;
  }
  // AMD's limits: 1024 work-items per block, 64 KiB of LDS, and a grid of
  // at most 2^32 - 1 work-items in each dimension.
  static constexpr skin::LaunchLimits kLimits = {
      {UINT32_MAX, UINT32_MAX, UINT32_MAX}, 0xFFFFFFFFu, 1024, 64 * 1024};
  return ToHip(skin::LaunchWork(L(), kLimits, device, f, grid, block,
                                shared_bytes, kernel_params, out));
}

}  // namespace hal::sim::hip

HALSIM_EXPORT hipError_t hipModuleLaunchKernel(
    hipFunction_t f, unsigned int grid_x, unsigned int grid_y,
    unsigned int grid_z, unsigned int block_x, unsigned int block_y,
    unsigned int block_z, unsigned int shared_bytes, hipStream_t hstream,
    void** kernel_params, void** extra) {
  HALSIM_ENTER_DEVICE("hipModuleLaunchKernel", dev);
  skin::Stream* stream = AsStream(hstream);
  if (!f || !stream) return hipErrorInvalidHandle;  // no null stream
  const uint32_t grid[3] = {grid_x, grid_y, grid_z};
  const uint32_t block[3] = {block_x, block_y, block_z};
  hal::sim::engine::Work work;
  hipError_t r = KernelOp(stream->scope, f, grid, block, shared_bytes,
                          kernel_params, extra, &work);
  if (r != hipSuccess) return r;
  return ToHip(skin::EnqueueKernel(L(), stream, std::move(work)));
}
