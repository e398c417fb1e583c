// Opts the CUDA driver into the conformance suite. Without a libcuda (real,
// or the CUDA API simulator through HAL_CUDA_LIBRARY) device creation is
// UNAVAILABLE and every test skips.
#include "hal/cts/cts.h"

namespace hal::cts {

void RegisterCudaCtsBackend() {
  Backend b;
  b.name = "cuda";
  b.default_uri = "cuda";
  b.tags = {kTagFiles,    kTagImport,     kTagAlloca,
            kTagHostCall, kTagMultiQueue, kTagDeviceOnlyMemory};
  // No dispatch tag: the CUDA executable cache (PTX through
  // cuModuleLoadDataEx) is not written yet, so every test that needs it
  // skips on the tag (docs/drivers/cuda.md, "What is missing").
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
