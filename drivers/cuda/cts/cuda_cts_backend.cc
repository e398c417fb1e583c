// Opts the CUDA driver into the conformance suite. Without a libcuda (real,
// or the CUDA API simulator through HAL_CUDA_LIBRARY) device creation is
// UNAVAILABLE: hal-check says so in one line and exits 3.
#include "hal/cts/cts.h"
#include "sim/core/halsim_control_loader.h"

namespace hal::cts {

void RegisterCudaCtsBackend() {
  Backend b;
  b.name = "cuda";
  b.default_uri = "cuda";
  b.tags = {kTagFiles,      kTagImport,
            kTagAlloca,     kTagHostCall,
            kTagMultiQueue, kTagDeviceOnlyMemory,
            kTagDispatch,   kTagHostCallRunsOwnQueue};
  // No dispatch_bounds_checks: a real GPU leaves accesses outside a binding
  // undefined (the CUDA API simulator only bounds them by the allocation,
  // and reports CUDA_ERROR_ILLEGAL_ADDRESS past it), and no read-only
  // binding is enforced by CUDA.
  // Through the CUDA API simulator (HAL_CUDA_LIBRARY): its trace hash
  // (sim/core/halsim_control.h), for
  // hal-check's run trace hash. It covers the whole process so far, which is
  // as deterministic as the schedule (docs/drivers/cuda.md).
  b.trace_hash = [](Device*) -> StatusOr<uint64_t> {
    const sim::HalsimControl& control = sim::FindHalsimControl("cuda");
    if (!control.trace_hash) {
      return UnavailableError("not the CUDA API simulator");
    }
    return control.trace_hash();
  };
  b.oracle_counters = [] {
    return sim::HalsimOracleCounters(sim::FindHalsimControl("cuda"));
  };
  b.swarm_faults = {"op_fail_ppm", "alloc_fail_ppm", "slow_ppm",
                    "late_signal_ppm"};
  b.faults_on = [](Device*, bool on) {
    sim::HalsimFaultsOn(sim::FindHalsimControl("cuda"), on);
  };
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
