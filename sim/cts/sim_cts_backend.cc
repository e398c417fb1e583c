// Opts the simulator into the conformance suite.
#include "hal/cts/cts.h"

namespace hal::cts {

void RegisterSimCtsBackend() {
  Backend b;
  b.name = "sim";
  b.default_uri = "sim://?queues=4";
  b.tags = {kTagFiles,     kTagImport,     kTagAlloca,
            kTagHostCall,  kTagMultiQueue, kTagDeviceOnlyMemory,
            kTagDispatch,  kTagDispatchBoundsChecks};
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
