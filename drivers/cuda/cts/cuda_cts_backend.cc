// Opts the CUDA driver into the conformance suite. Without a libcuda (real,
// or the CUDA API simulator through HAL_CUDA_LIBRARY) device creation is
// UNAVAILABLE: hal-check says so in one line and exits 3.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>

#include "hal/cts/cts.h"

namespace hal::cts {

void RegisterCudaCtsBackend() {
  Backend b;
  b.name = "cuda";
  b.default_uri = "cuda";
  b.tags = {kTagFiles,      kTagImport,           kTagAlloca,  kTagHostCall,
            kTagMultiQueue, kTagDeviceOnlyMemory, kTagDispatch};
  // No dispatch_bounds_checks: a real GPU leaves accesses outside a binding
  // undefined (the CUDA API simulator only bounds them by the allocation,
  // and reports CUDA_ERROR_ILLEGAL_ADDRESS past it), and no read-only
  // binding is enforced by CUDA.
  // Through the CUDA API simulator (HAL_CUDA_LIBRARY): its trace hash
  // (sim/core/halsim_control.h), for
  // hal-check's run trace hash. It covers the whole process so far, which is
  // as deterministic as the schedule (docs/drivers/cuda.md).
  b.trace_hash = [](Device*) -> StatusOr<uint64_t> {
    const char* path = std::getenv("HAL_CUDA_LIBRARY");
    void* lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (!lib) return UnavailableError("not the CUDA API simulator");
    auto* hash =
        reinterpret_cast<uint64_t (*)()>(dlsym(lib, "halsim_trace_hash"));
    StatusOr<uint64_t> result =
        hash ? StatusOr<uint64_t>(hash())
             : UnavailableError("not the CUDA API simulator");
    dlclose(lib);
    return result;
  };
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
