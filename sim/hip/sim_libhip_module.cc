// The HIP skin's modules and kernel launches (sim/skin/skin_module.cc).
//
// A module is an HSACO code object: an EM_AMDGPU ELF for the device's ISA
// (gfx90a). hipModuleLoadDataEx checks the ELF header and reads its symbol
// table (sim/engine/engine_amdgpu_elf.h, as the simulated HSA does): every
// 64-byte kernel descriptor `NAME.kd` is a kernel NAME, and its
// kernarg_size (bytes 8-11 of the descriptor) the size of its argument
// block. NAME runs as the native build of the same test kernel (compiled in
// as HALSIM_KERNEL_MODULES_DIR; HALSIM_KERNEL_DIR overrides it); the
// AMDGPU code itself is never executed.
#include <cstring>
#include <string>

#include "hal/formats/elf_reader.h"
#include "sim/engine/engine_amdgpu_elf.h"
#include "sim/hip/sim_libhip_internal.h"

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

namespace {

// Reads the kernels of an HSACO image. The image size is not passed to
// hipModuleLoadDataEx (as in HIP), so it is read from the ELF header: the
// section headers are the last thing lld writes.
hipError_t ParseHsaco(const uint8_t* image, skin::Module* module) {
  namespace formats = hal::formats;
  // The header first, for HIP's own errors (hipErrorNoBinaryForGpu).
  formats::ElfHeader eh;
  if (formats::ReadElfHeader({image, formats::kElf64HeaderSize}, &eh) !=
          formats::ElfError::kOk ||
      eh.machine != formats::kElfMachineAmdgpu) {
    std::fprintf(stderr,
                 "halsim_hip: hipModuleLoadDataEx: not an HSACO code object "
                 "(a 64-bit little-endian EM_AMDGPU ELF)\n");
    return hipErrorInvalidImage;
  }
  if ((eh.flags & 0xff) != kGfx90aMach) {
    std::fprintf(stderr,
                 "halsim_hip: hipModuleLoadDataEx: the code object is for "
                 "AMDGPU machine 0x%x; the simulated device is gfx90a "
                 "(0x%x)\n",
                 eh.flags & 0xff, kGfx90aMach);
    return hipErrorNoBinaryForGpu;
  }
  std::vector<hal::sim::engine::AmdgpuKernelDescriptor> kernels;
  std::string error;
  hal::sim::engine::AmdgpuCodeObjectError kind;
  if (!hal::sim::engine::ParseAmdgpuCodeObject(image, 0, &kernels, &error,
                                               &kind)) {
    if (kind == hal::sim::engine::AmdgpuCodeObjectError::kNoKernels) {
      std::fprintf(stderr,
                   "halsim_hip: hipModuleLoadDataEx: the code object has no "
                   "kernel descriptors (NAME.kd symbols)\n");
    }
    return hipErrorInvalidImage;
  }
  for (const hal::sim::engine::AmdgpuKernelDescriptor& k : kernels) {
    skin::AddFunction(L(), module, k.name)->kernarg_size = k.kernarg_size;
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
                    void** extra, skin::KernelLaunch* out) {
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
  hal::sim::skin::KernelLaunch launch;
  hipError_t r = KernelOp(stream->scope, f, grid, block, shared_bytes,
                          kernel_params, extra, &launch);
  if (r != hipSuccess) return r;
  return ToHip(skin::EnqueueKernel(L(), stream, std::move(launch)));
}
