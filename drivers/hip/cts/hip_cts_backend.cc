// Opts the HIP driver into the conformance suite. Without a libamdhip64
// (real, or the HIP API simulator through HAL_HIP_LIBRARY) device creation
// is UNAVAILABLE: hal-check says so in one line and exits 3.
#include "hal/cts/cts.h"
#include "sim/core/halsim_control_loader.h"

namespace hal::cts {

void RegisterHipCtsBackend() {
  Backend b;
  b.name = "hip";
  b.default_uri = "hip";
  b.tags = {kTagFiles,      kTagImport,
            kTagAlloca,     kTagHostCall,
            kTagMultiQueue, kTagDeviceOnlyMemory,
            kTagDispatch,   kTagHostCallRunsOwnQueue};
  // No dispatch_bounds_checks: a real GPU leaves accesses outside a binding
  // undefined (the HIP API simulator only bounds them by the allocation).
  // Through the HIP API simulator: its trace hash, for hal-check's run
  // trace hash (sim/core/halsim_control.h).
  b.trace_hash = [](Device*) -> StatusOr<uint64_t> {
    const sim::HalsimControl& control = sim::FindHalsimControl("hip");
    if (!control.trace_hash) {
      return UnavailableError("not the HIP API simulator");
    }
    return control.trace_hash();
  };
  b.oracle_counters = [] {
    return sim::HalsimOracleCounters(sim::FindHalsimControl("hip"));
  };
  b.swarm_faults = {"op_fail_ppm", "alloc_fail_ppm", "slow_ppm",
                    "late_signal_ppm"};
  b.faults_on = [](Device*, bool on) {
    sim::HalsimFaultsOn(sim::FindHalsimControl("hip"), on);
  };
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
