// The CUDA skin's modules and kernel launches (sim/skin/skin_module.cc).
//
// A PTX module's kernels run as the native (sim-format) build of the same
// test kernel: cuModuleLoadDataEx reads each `.entry NAME(...)` and its
// parameter list from the PTX text, and looks NAME up in the native kernel
// modules (compiled in as HALSIM_KERNEL_MODULES_DIR; HALSIM_KERNEL_DIR,
// alias HALSIM_CUDA_KERNEL_DIR, overrides it). The PTX is never executed.
#include <cstring>
#include <string>
#include <vector>

#include "hal/formats/ptx_reader.h"
#include "sim/cuda/sim_libcuda_internal.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

namespace {

// A PTX parameter type's bytes: 8 or 4, or 0 for a type the kernel ABI
// does not have (only pointers and uint32).
int ParamBytes(const std::string& t) {
  if (t == ".u64" || t == ".b64" || t == ".s64") return 8;
  if (t == ".u32" || t == ".b32" || t == ".s32") return 4;
  return 0;
}

// Reads the `.entry NAME(<params>)` blocks (hal/formats/ptx_reader.h). False
// for text that is not PTX the simulator understands.
bool ParsePtx(const std::string& ptx, skin::Module* module) {
  if (ptx.find(".version") == std::string::npos ||
      ptx.find(".target") == std::string::npos) {
    return false;
  }
  std::vector<hal::formats::PtxEntry> entries;
  std::string error;
  if (!hal::formats::ReadPtxEntries(ptx, &entries, &error)) return false;
  for (const hal::formats::PtxEntry& entry : entries) {
    skin::Function* f = skin::AddFunction(L(), module, entry.name);
    for (const std::string& type : entry.param_types) {
      int bytes = ParamBytes(type);
      if (bytes == 0) return false;
      f->param_bytes.push_back(bytes);
    }
  }
  return true;
}

// Real CUDA writes the JIT error to CU_JIT_ERROR_LOG_BUFFER.
void WriteJitError(unsigned num_options, CUjit_option* options,
                   void** option_values) {
  char* log = nullptr;
  size_t size = 0;
  for (unsigned i = 0; i < num_options; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) {
      log = static_cast<char*>(option_values[i]);
    } else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
      size = reinterpret_cast<uintptr_t>(option_values[i]);
    }
  }
  if (log && size) {
    std::snprintf(log, size,
                  "halsim_cuda: not PTX the simulator understands (.version, "
                  ".target and .entry with .u64/.u32 parameters)");
  }
}

}  // namespace

HALSIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image,
                                          unsigned int num_options,
                                          CUjit_option* options,
                                          void** option_values) {
  HALSIM_ENTER_CONTEXT("cuModuleLoadDataEx", ctx);
  if (!module || !image || (num_options && (!options || !option_values))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char* text = static_cast<const char*>(image);
  if (std::strncmp(text, "\177ELF", 4) == 0) {
    std::fprintf(stderr,
                 "halsim_cuda: cuModuleLoadDataEx: cubin/ELF images are not "
                 "simulated; only PTX\n");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  skin::Module parsed{ctx};
  if (!ParsePtx(text, &parsed) || parsed.functions.empty()) {
    WriteJitError(num_options, options, option_values);
    return CUDA_ERROR_INVALID_PTX;
  }
  return Cu(skin::Hand(L().New<skin::Module>(std::move(parsed)), module));
}

HALSIM_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  HALSIM_ENTER_INIT("cuModuleUnload");
  return Cu(L().Destroy<skin::Module>(hmod));
}

HALSIM_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod,
                                           const char* name) {
  HALSIM_ENTER_CONTEXT("cuModuleGetFunction", ctx);
  if (!hfunc) return CUDA_ERROR_INVALID_VALUE;
  skin::Function* f = nullptr;
  CUresult r = Cu(skin::GetFunction(L(), hmod, name, "PTX", &f));
  if (r != CUDA_SUCCESS) return r;
  // The PTX signature must be the kernel ABI's: the native build's bindings
  // as pointers, then its constants.
  if (!hal::sim::engine::SignatureMatches(f->kernel, f->param_bytes)) {
    std::fprintf(stderr,
                 "halsim_cuda: PTX kernel '%s' has %zu parameters that do not "
                 "match its native build (%u bindings, %u constants)\n",
                 name, f->param_bytes.size(), f->kernel.info->binding_count,
                 f->kernel.info->constant_count);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  return Cu(skin::Hand(f, hfunc));
}

namespace hal::sim::cuda {

CUresult KernelOp(skin::Scope* ctx, CUfunction hfunc, const uint32_t grid[3],
                  const uint32_t block[3], unsigned int shared_bytes,
                  void** kernel_params, void** extra, skin::KernelLaunch* out) {
  auto* f = reinterpret_cast<const skin::Function*>(hfunc);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (extra) return CUDA_ERROR_INVALID_VALUE;
  // CUDA's limits: grid x < 2^31, y and z <= 65535; 1024 threads per block,
  // 48 KiB of dynamic shared memory without an opt-in attribute.
  static constexpr skin::LaunchLimits kLimits = {
      {0x7FFFFFFFu, 65535, 65535}, 0, 1024, 48 * 1024};
  return Cu(skin::LaunchWork(L(), kLimits, ctx, f, grid, block, shared_bytes,
                             kernel_params, out));
}

}  // namespace hal::sim::cuda

HALSIM_EXPORT CUresult
cuLaunchKernel(CUfunction hfunc, unsigned int grid_x, unsigned int grid_y,
               unsigned int grid_z, unsigned int block_x, unsigned int block_y,
               unsigned int block_z, unsigned int shared_bytes,
               CUstream hstream, void** kernel_params, void** extra) {
  HALSIM_ENTER_CONTEXT("cuLaunchKernel", ctx);
  skin::Stream* stream = AsStream(hstream);
  if (!hfunc || !stream) return CUDA_ERROR_INVALID_HANDLE;
  const uint32_t grid[3] = {grid_x, grid_y, grid_z};
  const uint32_t block[3] = {block_x, block_y, block_z};
  hal::sim::skin::KernelLaunch launch;
  CUresult r = KernelOp(ctx, hfunc, grid, block, shared_bytes, kernel_params,
                        extra, &launch);
  if (r != CUDA_SUCCESS) return r;
  return Cu(skin::EnqueueKernel(L(), stream, std::move(launch)));
}
