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
  // The plan is the device's (URI): off for the liveness phase; the next
  // test's device has its own.
  b.faults_on = [](Device* device, bool on) {
    if (device && !on) sim::SimSetFaults(device, {}).IgnoreError();
  };
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
