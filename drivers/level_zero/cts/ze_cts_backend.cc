// Opts the Level Zero driver into the conformance suite. Without the loader,
// or with no driver behind it (ZE_ENABLE_ALT_DRIVERS names the simulated
// libhalsim_ze.so in CI), device creation is UNAVAILABLE: hal-check says so
// in one line and exits 3.
#include "hal/cts/cts.h"
#include "sim/core/halsim_control_loader.h"

namespace hal::cts {

void RegisterLevelZeroCtsBackend() {
  Backend b;
  b.name = "level_zero";
  b.default_uri = "level_zero";
  // No kTagImport: Level Zero 1.4 cannot register host memory.
  b.tags = {kTagFiles,
            kTagAlloca,
            kTagHostCall,
            kTagMultiQueue,
            kTagDeviceOnlyMemory,
            kTagDispatch,
            kTagHostCallRunsOwnQueue};
  // zeCommandListAppendLaunchKernelIndirect reads the count on the device,
  // which applies only its own group-count limits: the HAL's
  // kMaxWorkgroupCount is not checked there (no device-side patch kernel as
  // the AMDGPU driver has; a host check would be the round trip the device
  // launch avoids).
  b.expected_failures["Dispatch.IndirectCountAboveTheLimitFails"] =
      "the device reads the indirect count and does not check the HAL's "
      "kMaxWorkgroupCount (docs/drivers/level_zero.md)";
  // Through the simulated driver: its trace hash (sim/core/halsim_control.h).
  b.trace_hash = [](Device*) -> StatusOr<uint64_t> {
    const sim::HalsimControl& control = sim::FindHalsimControl("level_zero");
    if (!control.trace_hash) {
      return UnavailableError("not the simulated Level Zero driver");
    }
    return control.trace_hash();
  };
  b.oracle_counters = [] {
    return sim::HalsimOracleCounters(sim::FindHalsimControl("level_zero"));
  };
  b.swarm_faults = {"op_fail_ppm", "alloc_fail_ppm", "slow_ppm",
                    "late_signal_ppm"};
  b.faults_on = [](Device*, bool on) {
    sim::HalsimFaultsOn(sim::FindHalsimControl("level_zero"), on);
  };
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
