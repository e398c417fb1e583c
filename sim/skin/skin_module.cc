// Modules and kernel launches for every skin. A vendor kernel (PTX, HSACO)
// runs as the native (sim-format) build of the same test kernel, looked up
// by name in the kernel modules the build produces
// (build/<preset>/kernels/modules/*.sim.so; HALSIM_KERNEL_DIR overrides
// it); the vendor code itself is never executed. A launch runs every block
// of the grid as engine kernel work, with each pointer parameter bounded by
// the allocation it points into: an access outside it is kIllegalAddress
// (sticky), as a GPU's memory fault.
#include <cstdio>

#include "sim/skin/skin.h"

namespace hal::sim::skin {

Function* AddFunction(Library& lib, Module* module, const std::string& name) {
  auto f = std::make_unique<Function>();
  f->name = name;
  f->native = lib.kernels().Find(name, &f->kernel);
  Function* raw = f.get();
  module->functions[name] = std::move(f);
  return raw;
}

Code GetFunction(Library& lib, const void* handle, const char* name,
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

Code CheckBlock(Library& lib, const Function* f, const uint32_t block[3]) {
  const uint32_t* native = f->kernel.info->workgroup_size;
  if (block[0] == native[0] && block[1] == native[1] && block[2] == native[2]) {
    return Code::kOk;
  }
  // The native build was compiled for one block size.
  std::fprintf(stderr,
               "%s: '%s' launched with blocks [%u, %u, %u]; its native build "
               "runs [%u, %u, %u]\n",
               lib.options().log_prefix, f->name.c_str(), block[0], block[1],
               block[2], native[0], native[1], native[2]);
  return Code::kInvalidValue;
}

engine::Work KernelWork(Library& lib, Scope* scope, const Function* f,
                        const uint32_t grid[3], void** params) {
  // Parameters are read during the call, as CUDA and HIP do.
  std::vector<uintptr_t> pointers;
  std::vector<uint32_t> constants;
  engine::ReadLaunchParams(f->kernel, params, &pointers, &constants);
  return lib.engine().KernelWork(&scope->domain, &f->kernel, grid,
                                 std::move(pointers), std::move(constants));
}

Code EnqueueKernel(Library& lib, Stream* stream, engine::Work work) {
  if (!stream) return Code::kInvalidHandle;  // no legacy default stream
  engine::Op op;
  op.name = "kernel";
  op.run = std::move(work);
  return FromEngine(lib.engine().Enqueue(stream->queue, std::move(op)));
}

}  // namespace hal::sim::skin
