// Opts the CUDA driver into the conformance suite. Without a libcuda (real,
// or the CUDA API simulator through HAL_CUDA_LIBRARY) device creation is
// UNAVAILABLE: hal-check says so in one line and exits 3.
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
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
