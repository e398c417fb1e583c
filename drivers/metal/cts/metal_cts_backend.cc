// Opts the Metal driver into the conformance suite. On Linux it runs over
// the simulated Metal framework (sim/metal/), seeded by HALSIM_SEED.
#include "hal/cts/cts.h"

namespace hal::cts {

void RegisterMetalCtsBackend() {
  Backend b;
  b.name = "metal";
  b.default_uri = "metal://?queues=4";
  // No dispatch bounds checks (Metal binds a buffer with no length).
  // Host import wraps whole pages (newBufferWithBytesNoCopy:); the import
  // tests use page-aligned memory.
  b.tags = {kTagFiles,      kTagImport,           kTagAlloca,  kTagHostCall,
            kTagMultiQueue, kTagDeviceOnlyMemory, kTagDispatch};
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
