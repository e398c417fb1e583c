// Modules and kernel launches for every skin. A vendor kernel (PTX, HSACO)
// runs as the native (sim-format) build of the same test kernel, looked up
// by name in the kernel modules the build produces
// (build/<preset>/kernels/modules/*.sim.so; HALSIM_KERNEL_DIR overrides
// it); the vendor code itself is never executed. A launch runs every block
// of the grid as engine kernel work, with each pointer parameter bounded by
// the allocation it points into: an access outside it is kIllegalAddress
// (sticky), as a GPU's memory fault.
#include <cstdio>

#include "sim/skin/skin_stream.h"

namespace hal::sim::skin {

Function* AddFunction(StreamLibrary& lib, Module* module,
                      const std::string& name) {
  auto f = std::make_unique<Function>();
  f->name = name;
  f->native = lib.kernels().Find(name, &f->kernel);
  Function* raw = f.get();
  module->functions[name] = std::move(f);
  return raw;
}

Code GetFunction(StreamLibrary& lib, const void* handle, const char* name,
                 const char* format, Function** out) {
  Module* module = lib.Find<Module>(handle);
  if (!out || !module || !name) return Code::kInvalidValue;
  auto it = module->functions.find(name);
  if (it == module->functions.end()) return Code::kNotFound;
  if (!it->second->native) {
    std::fprintf(stderr,
                 "%s: %s kernel '%s' has no native build in the test-kernel "
                 "modules (%s); the simulator cannot run it\n",
                 lib.options().log_prefix, format, name,
                 lib.kernels().dir().c_str());
    return Code::kNotFound;
  }
  *out = it->second.get();
  return Code::kOk;
}

Code LaunchWork(StreamLibrary& lib, const LaunchLimits& limits, Scope* scope,
                const Function* f, const uint32_t grid[3],
                const uint32_t block[3], unsigned shared_bytes, void** params,
                KernelLaunch* out) {
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0 || grid[i] > limits.max_grid[i] ||
        (limits.max_grid_items &&
         uint64_t{grid[i]} * block[i] > limits.max_grid_items)) {
      return Code::kInvalidValue;
    }
  }
  const hal_sim_kernel_info* info = f->kernel.info;
  if (uint64_t{block[0]} * block[1] * block[2] > limits.max_block_threads ||
      shared_bytes > limits.max_shared_bytes ||
      (info->binding_count + info->constant_count && !params)) {
    return Code::kInvalidValue;
  }
  const uint32_t* native = info->workgroup_size;
  if (block[0] != native[0] || block[1] != native[1] || block[2] != native[2]) {
    // The native build was compiled for one block size.
    std::fprintf(stderr,
                 "%s: '%s' launched with blocks [%u, %u, %u]; its native "
                 "build runs [%u, %u, %u]\n",
                 lib.options().log_prefix, f->name.c_str(), block[0], block[1],
                 block[2], native[0], native[1], native[2]);
    return Code::kInvalidValue;
  }
  // Parameters are read during the call, as CUDA and HIP do.
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  engine::ReadLaunchParams(f->kernel, params, &pointers, &constants);
  out->writes = lib.engine().KernelBindingRanges(pointers);
  out->work =
      lib.engine().KernelWork(&scope->domain, &f->kernel, grid,
                              std::move(pointers), std::move(constants));
  return Code::kOk;
}

Code EnqueueKernel(StreamLibrary& lib, Stream* stream, KernelLaunch launch) {
  if (!stream) return Code::kInvalidHandle;  // no legacy default stream
  engine::Op op;
  op.name = "kernel";
  op.run = std::move(launch.work);
  op.more_writes = std::move(launch.writes);
  return FromEngine(lib.engine().Enqueue(stream->queue, std::move(op)));
}

}  // namespace hal::sim::skin
