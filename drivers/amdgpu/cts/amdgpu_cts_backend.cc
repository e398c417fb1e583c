// Opts the AMDGPU driver into the conformance suite. Without a
// libhsa-runtime64 (real, or the HSA simulator through HAL_AMDGPU_LIBRARY)
// device creation is UNAVAILABLE: hal-check says so in one line and exits 3.
#include "hal/cts/cts.h"
#include "sim/core/halsim_control_loader.h"

namespace hal::cts {

void RegisterAmdgpuCtsBackend() {
  Backend b;
  b.name = "amdgpu";
  b.default_uri = "amdgpu";
  b.tags = {kTagFiles,      kTagImport,
            kTagAlloca,     kTagHostCall,
            kTagMultiQueue, kTagDeviceOnlyMemory,
            kTagDispatch,   kTagHostCallRunsOwnQueue};
  // No dispatch_bounds_checks: a real GPU leaves accesses outside a binding
  // undefined (the HSA simulator only bounds them by the allocation).
  // Through the HSA simulator: its trace hash, for hal-check's run trace
  // hash (sim/core/halsim_control.h).
  b.trace_hash = [](Device*) -> StatusOr<uint64_t> {
    const sim::HalsimControl& control = sim::FindHalsimControl("amdgpu");
    if (!control.trace_hash) {
      return UnavailableError("not the HSA simulator");
    }
    return control.trace_hash();
  };
  b.oracle_counters = [] {
    return sim::HalsimOracleCounters(sim::FindHalsimControl("amdgpu"));
  };
  b.swarm_faults = {"op_fail_ppm", "alloc_fail_ppm", "slow_ppm",
                    "late_signal_ppm", "lose_device_at"};
  b.faults_on = [](Device*, bool on) {
    sim::HalsimFaultsOn(sim::FindHalsimControl("amdgpu"), on);
  };
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
