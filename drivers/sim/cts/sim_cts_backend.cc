// Opts the simulator into the conformance suite.
#include "drivers/sim/sim_device.h"
#include "hal/cts/cts.h"

namespace hal::cts {

void RegisterSimCtsBackend() {
  Backend b;
  b.name = "sim";
  b.default_uri = "sim://?queues=4";
  b.tags = {kTagFiles,      kTagImport,
            kTagAlloca,     kTagHostCall,
            kTagMultiQueue, kTagDeviceOnlyMemory,
            kTagDispatch,   kTagDispatchBoundsChecks,
            kTagDispatchCap};
  b.seed_param = "seed";
  b.trace_hash = [](Device* device) { return sim::SimTraceHash(device); };
  b.swarm_faults = {"op_fail_ppm", "alloc_fail_ppm", "slow_ppm",
                    "lose_device_at"};
  b.trace_param = "trace";
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
