// The CUDA skin's modules and kernel launches.
//
// A PTX module's kernels run as the native (sim-format) build of the same
// test kernel: cuModuleLoadDataEx reads each `.entry NAME(...)` and its
// parameter list from the PTX text, and looks NAME up in the native kernel
// modules the build produces (build/<preset>/kernels/modules/*.sim.so,
// compiled in as HALSIM_CUDA_KERNEL_MODULES_DIR; HALSIM_KERNEL_DIR, alias
// HALSIM_CUDA_KERNEL_DIR, overrides it). The PTX itself is never executed.
// cuLaunchKernel runs every block of the grid as engine kernel work, with
// each pointer parameter bounded by the allocation it points into: an access
// outside it is CUDA_ERROR_ILLEGAL_ADDRESS (sticky), as a GPU's memory fault.
#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "sim/cuda/sim_libcuda_internal.h"
#include "sim/engine/engine_control.h"
#include "sim/engine/engine_kernels.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

namespace hal::sim::cuda {

engine::KernelLibrary& Kernels() {
  static engine::KernelLibrary* kernels = [] {
    std::string dir;
    if (const char* env = engine::GetControlEnv("KERNEL_DIR", "HALSIM_CUDA_");
        env && *env) {
      dir = env;
    } else {
#ifdef HALSIM_CUDA_KERNEL_MODULES_DIR
      dir = HALSIM_CUDA_KERNEL_MODULES_DIR;
#endif
    }
    return new engine::KernelLibrary(dir, "HALSIM_KERNEL_DIR", "halsim_cuda");
  }();
  return *kernels;
}

}  // namespace hal::sim::cuda

namespace {

struct Function {
  std::string name;
  std::vector<int> param_bytes;  // per PTX parameter: 8 (.u64) or 4
  bool native = false;           // false: no native build
  engine::Kernel kernel;
};

struct Module {
  Context* context = nullptr;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

// Parses `.entry NAME(<params>)` blocks. False for text that is not PTX.
bool ParsePtx(const std::string& ptx, Module* module) {
  if (ptx.find(".version") == std::string::npos ||
      ptx.find(".target") == std::string::npos) {
    return false;
  }
  size_t pos = 0;
  while ((pos = ptx.find(".entry", pos)) != std::string::npos) {
    pos += 6;
    size_t start = ptx.find_first_not_of(" \t\r\n", pos);
    if (start == std::string::npos) return false;
    size_t end = start;
    while (end < ptx.size() &&
           (std::isalnum(static_cast<unsigned char>(ptx[end])) ||
            ptx[end] == '_' || ptx[end] == '$')) {
      ++end;
    }
    if (end == start) return false;
    auto f = std::make_unique<Function>();
    f->name = ptx.substr(start, end - start);
    size_t open = ptx.find_first_not_of(" \t\r\n", end);
    if (open != std::string::npos && ptx[open] == '(') {
      size_t close = ptx.find(')', open);
      if (close == std::string::npos) return false;
      std::string params = ptx.substr(open + 1, close - open - 1);
      size_t p = 0;
      while ((p = params.find(".param", p)) != std::string::npos) {
        p += 6;
        size_t type = params.find_first_not_of(" \t\r\n", p);
        if (type == std::string::npos) return false;
        if (params.compare(type, 4, ".u64") == 0 ||
            params.compare(type, 4, ".b64") == 0 ||
            params.compare(type, 4, ".s64") == 0) {
          f->param_bytes.push_back(8);
        } else if (params.compare(type, 4, ".u32") == 0 ||
                   params.compare(type, 4, ".b32") == 0 ||
                   params.compare(type, 4, ".s32") == 0) {
          f->param_bytes.push_back(4);
        } else {
          return false;  // the kernel ABI has only pointers and uint32
        }
      }
      pos = close;
    }
    f->native = Kernels().Find(f->name, &f->kernel);
    std::string name = f->name;
    module->functions[name] = std::move(f);
  }
  return true;
}

}  // namespace

HALSIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image,
                                          unsigned int num_options,
                                          CUjit_option* options,
                                          void** option_values) {
  HALSIM_ENTER("cuModuleLoadDataEx");
  HALSIM_NEED_CONTEXT(ctx);
  if (!module || !image || (num_options && (!options || !option_values))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char* text = static_cast<const char*>(image);
  if (std::strncmp(text,
                   "\x7f"
                   "ELF",
                   4) == 0) {
    std::fprintf(stderr,
                 "halsim_cuda: cuModuleLoadDataEx: cubin/ELF images are not "
                 "simulated; only PTX\n");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  auto m = std::make_unique<Module>();
  m->context = ctx;
  if (!ParsePtx(text, m.get()) || m->functions.empty()) {
    // Real CUDA writes the JIT error to CU_JIT_ERROR_LOG_BUFFER.
    for (unsigned i = 0; i < num_options; ++i) {
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER) {
        size_t size = 0;
        for (unsigned j = 0; j < num_options; ++j) {
          if (options[j] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
            size = reinterpret_cast<uintptr_t>(option_values[j]);
          }
        }
        if (size) {
          std::snprintf(static_cast<char*>(option_values[i]), size,
                        "halsim_cuda: not PTX the simulator understands "
                        "(.version, .target and .entry with .u64/.u32 "
                        "parameters)");
        }
      }
    }
    return CUDA_ERROR_INVALID_PTX;
  }
  *module = reinterpret_cast<CUmodule>(m.release());
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  HALSIM_ENTER("cuModuleUnload");
  HALSIM_NEED_INIT();
  if (!hmod) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Module*>(hmod);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod,
                                           const char* name) {
  HALSIM_ENTER("cuModuleGetFunction");
  HALSIM_NEED_CONTEXT(ctx);
  if (!hfunc || !hmod || !name) return CUDA_ERROR_INVALID_VALUE;
  auto* m = reinterpret_cast<Module*>(hmod);
  auto it = m->functions.find(name);
  if (it == m->functions.end()) return CUDA_ERROR_NOT_FOUND;
  Function* f = it->second.get();
  if (!f->native) {
    std::fprintf(stderr,
                 "halsim_cuda: PTX kernel '%s' has no native build in the "
                 "test-kernel modules (%s); the simulator cannot run it\n",
                 name, Kernels().dir().c_str());
    return CUDA_ERROR_NOT_FOUND;
  }
  // The PTX signature must be the kernel ABI's: the native build's bindings
  // as pointers, then its constants.
  if (!engine::SignatureMatches(f->kernel, f->param_bytes)) {
    std::fprintf(stderr,
                 "halsim_cuda: PTX kernel '%s' has %zu parameters that do not "
                 "match its native build (%u bindings, %u constants)\n",
                 name, f->param_bytes.size(), f->kernel.info->binding_count,
                 f->kernel.info->constant_count);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *hfunc = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}

namespace hal::sim::cuda {

CUresult KernelOp(Context* ctx, CUfunction hfunc, unsigned int grid_x,
                  unsigned int grid_y, unsigned int grid_z,
                  unsigned int block_x, unsigned int block_y,
                  unsigned int block_z, unsigned int shared_bytes,
                  void** kernel_params, void** extra,
                  hal::sim::engine::Work* out) {
  auto* f = reinterpret_cast<Function*>(hfunc);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  // CUDA's limits: grid x < 2^31, y and z <= 65535; 1024 threads per block,
  // 48 KiB of dynamic shared memory without an opt-in attribute.
  if (grid_x == 0 || grid_y == 0 || grid_z == 0 || grid_x > 0x7FFFFFFFu ||
      grid_y > 65535 || grid_z > 65535 || block_x == 0 || block_y == 0 ||
      block_z == 0 || uint64_t{block_x} * block_y * block_z > 1024 ||
      shared_bytes > 48 * 1024 || extra ||
      (!f->param_bytes.empty() && !kernel_params)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const hal_sim_kernel_info* info = f->kernel.info;
  // The native build was compiled for one block size.
  if (block_x != info->workgroup_size[0] ||
      block_y != info->workgroup_size[1] ||
      block_z != info->workgroup_size[2]) {
    std::fprintf(stderr,
                 "halsim_cuda: '%s' launched with blocks [%u, %u, %u]; its "
                 "native build runs [%u, %u, %u]\n",
                 f->name.c_str(), block_x, block_y, block_z,
                 info->workgroup_size[0], info->workgroup_size[1],
                 info->workgroup_size[2]);
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Parameters are read during the call, as CUDA does.
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  engine::ReadLaunchParams(f->kernel, kernel_params, &pointers, &constants);
  uint32_t grid[3] = {grid_x, grid_y, grid_z};
  *out = E().KernelWork(&ctx->domain, &f->kernel, grid, std::move(pointers),
                        std::move(constants));
  return CUDA_SUCCESS;
}

}  // namespace hal::sim::cuda

HALSIM_EXPORT CUresult
cuLaunchKernel(CUfunction hfunc, unsigned int grid_x, unsigned int grid_y,
               unsigned int grid_z, unsigned int block_x, unsigned int block_y,
               unsigned int block_z, unsigned int shared_bytes,
               CUstream hstream, void** kernel_params, void** extra) {
  HALSIM_ENTER("cuLaunchKernel");
  HALSIM_NEED_CONTEXT(ctx);
  if (!hfunc) return CUDA_ERROR_INVALID_HANDLE;
  if (!hstream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  auto* stream = reinterpret_cast<Stream*>(hstream);
  engine::Op op;
  op.name = "kernel";
  CUresult r = KernelOp(ctx, hfunc, grid_x, grid_y, grid_z, block_x, block_y,
                        block_z, shared_bytes, kernel_params, extra, &op.run);
  if (r != CUDA_SUCCESS) return r;
  return ToCuResult(E().Enqueue(stream->queue, std::move(op)));
}
