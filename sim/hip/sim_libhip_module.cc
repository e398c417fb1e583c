// The HIP skin's modules and kernel launches.
//
// A module is an HSACO code object: an EM_AMDGPU ELF for the device's ISA
// (gfx90a). hipModuleLoadDataEx checks the ELF header and reads its symbol
// table: every 64-byte kernel descriptor `NAME.kd` is a kernel NAME, and its
// kernarg_size (bytes 8-11 of the descriptor) the size of its argument
// block. NAME is looked up in the native kernel modules the build produces
// (build/<preset>/kernels/modules/*.sim.so, compiled in as
// HALSIM_HIP_KERNEL_MODULES_DIR; HALSIM_KERNEL_DIR overrides it); the
// AMDGPU code itself is never executed. hipModuleLaunchKernel runs every
// block of the grid as engine kernel work, with each pointer parameter
// bounded by the allocation it points into: an access outside it is
// hipErrorIllegalAddress (sticky), as a GPU's memory fault.
#include <elf.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "sim/engine/engine_control.h"
#include "sim/engine/engine_kernels.h"
#include "sim/hip/sim_libhip_internal.h"

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

namespace {

engine::KernelLibrary& Kernels() {
  static engine::KernelLibrary* kernels = [] {
    std::string dir;
    if (const char* env = engine::GetControlEnv("KERNEL_DIR", "HALSIM_");
        env && *env) {
      dir = env;
    } else {
#ifdef HALSIM_HIP_KERNEL_MODULES_DIR
      dir = HALSIM_HIP_KERNEL_MODULES_DIR;
#endif
    }
    return new engine::KernelLibrary(dir, "HALSIM_KERNEL_DIR", "halsim_hip");
  }();
  return *kernels;
}

struct Function {
  std::string name;
  uint32_t kernarg_size = 0;  // from the kernel descriptor
  bool native = false;        // false: no native build
  engine::Kernel kernel;
};

struct Module {
  Device* device = nullptr;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

// The bytes [offset, offset + size) of the image, or null when outside it.
const uint8_t* At(const uint8_t* image, size_t image_size, uint64_t offset,
                  uint64_t size) {
  if (offset > image_size || size > image_size - offset) return nullptr;
  return image + offset;
}

// Reads the kernels of an HSACO image. The image size is not passed to
// hipModuleLoadDataEx (as in HIP), so it is read from the ELF header: the
// section headers are the last thing lld writes.
hipError_t ParseHsaco(const uint8_t* image, Module* module) {
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
      auto f = std::make_unique<Function>();
      f->name.assign(name, len - 3);
      std::memcpy(&f->kernarg_size, kd + 8, 4);
      f->native = Kernels().Find(f->name, &f->kernel);
      std::string key = f->name;
      module->functions[key] = std::move(f);
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
  HALSIM_ENTER("hipModuleLoadDataEx");
  HALSIM_NEED_DEVICE(dev);
  if (!module || !image || (num_options && (!options || !option_values))) {
    return hipErrorInvalidValue;
  }
  auto m = std::make_unique<Module>();
  m->device = dev;
  hipError_t r = ParseHsaco(static_cast<const uint8_t*>(image), m.get());
  if (r != hipSuccess) return r;
  *module = reinterpret_cast<hipModule_t>(m.release());
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipModuleUnload(hipModule_t hmod) {
  HALSIM_ENTER("hipModuleUnload");
  HALSIM_NEED_INIT();
  if (!hmod) return hipErrorInvalidHandle;
  delete reinterpret_cast<Module*>(hmod);
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* out,
                                              hipModule_t hmod,
                                              const char* name) {
  HALSIM_ENTER("hipModuleGetFunction");
  HALSIM_NEED_DEVICE(dev);
  if (!out || !hmod || !name) return hipErrorInvalidValue;
  auto* m = reinterpret_cast<Module*>(hmod);
  auto it = m->functions.find(name);
  if (it == m->functions.end()) return hipErrorNotFound;
  Function* f = it->second.get();
  if (!f->native) {
    std::fprintf(stderr,
                 "halsim_hip: HSACO kernel '%s' has no native build in the "
                 "test-kernel modules (%s); the simulator cannot run it\n",
                 name, Kernels().dir().c_str());
    return hipErrorNotFound;
  }
  // The code object has no argument list the simulator reads (that is in
  // its msgpack metadata), so the kernel ABI's parameters (the native
  // build's bindings as pointers, then its constants) must at least fit in
  // the kernel's argument block.
  const hal_sim_kernel_info* info = f->kernel.info;
  std::vector<int> params(info->binding_count, 8);
  params.insert(params.end(), info->constant_count, 4);
  const uint32_t explicit_bytes =
      8 * info->binding_count + 4 * info->constant_count;
  if (!engine::SignatureMatches(f->kernel, params) ||
      f->kernarg_size < explicit_bytes) {
    std::fprintf(stderr,
                 "halsim_hip: HSACO kernel '%s' takes %u bytes of arguments; "
                 "its native build needs %u (%u bindings, %u constants)\n",
                 name, f->kernarg_size, explicit_bytes, info->binding_count,
                 info->constant_count);
    return hipErrorInvalidImage;
  }
  *out = reinterpret_cast<hipFunction_t>(f);
  return hipSuccess;
}

namespace hal::sim::hip {

hipError_t KernelOp(Device* device, hipFunction_t hfunc, const uint32_t grid[3],
                    const uint32_t block[3], unsigned int shared_bytes,
                    void** kernel_params, void** extra, engine::Work* out) {
  auto* f = reinterpret_cast<Function*>(hfunc);
  if (!f) return hipErrorInvalidHandle;
  if (extra) {
    std::fprintf(stderr,
                 "halsim_hip: kernel arguments through `extra` "
                 "(HIP_LAUNCH_PARAM_*) are not simulated; use kernelParams\n");
    return hipErrorNotSupported;
  }
  // AMD's limits: 1024 work-items per block, 64 KiB of LDS, and a grid of
  // at most 2^32 - 1 work-items in each dimension.
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0 ||
        uint64_t{grid[i]} * block[i] > 0xFFFFFFFFu) {
      return hipErrorInvalidValue;
    }
  }
  if (uint64_t{block[0]} * block[1] * block[2] > 1024 ||
      shared_bytes > 64 * 1024 ||
      (f->kernel.info->binding_count + f->kernel.info->constant_count &&
       !kernel_params)) {
    return hipErrorInvalidValue;
  }
  const hal_sim_kernel_info* info = f->kernel.info;
  // The native build was compiled for one block size.
  if (block[0] != info->workgroup_size[0] ||
      block[1] != info->workgroup_size[1] ||
      block[2] != info->workgroup_size[2]) {
    std::fprintf(stderr,
                 "halsim_hip: '%s' launched with blocks [%u, %u, %u]; its "
                 "native build runs [%u, %u, %u]\n",
                 f->name.c_str(), block[0], block[1], block[2],
                 info->workgroup_size[0], info->workgroup_size[1],
                 info->workgroup_size[2]);
    return hipErrorInvalidValue;
  }
  // Parameters are read during the call, as HIP does.
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  engine::ReadLaunchParams(f->kernel, kernel_params, &pointers, &constants);
  *out = E().KernelWork(&device->domain, &f->kernel, grid, std::move(pointers),
                        std::move(constants));
  return hipSuccess;
}

}  // namespace hal::sim::hip

HALSIM_EXPORT hipError_t hipModuleLaunchKernel(
    hipFunction_t f, unsigned int grid_x, unsigned int grid_y,
    unsigned int grid_z, unsigned int block_x, unsigned int block_y,
    unsigned int block_z, unsigned int shared_bytes, hipStream_t hstream,
    void** kernel_params, void** extra) {
  HALSIM_ENTER("hipModuleLaunchKernel");
  HALSIM_NEED_DEVICE(dev);
  if (!f) return hipErrorInvalidHandle;
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return hipErrorInvalidHandle;  // no null stream
  const uint32_t grid[3] = {grid_x, grid_y, grid_z};
  const uint32_t block[3] = {block_x, block_y, block_z};
  engine::Op op;
  op.name = "kernel";
  hipError_t r = KernelOp(stream->device, f, grid, block, shared_bytes,
                          kernel_params, extra, &op.run);
  if (r != hipSuccess) return r;
  return ToHipError(E().Enqueue(stream->queue, std::move(op)));
}
