// Opts the Metal driver into the conformance suite. On Linux it runs over
// the simulated Metal framework (sim/metal/), seeded by HALSIM_SEED.
#include <dlfcn.h>

#include "hal/cts/cts.h"
#include "sim/core/halsim_control_loader.h"

namespace hal::cts {
namespace {

// The simulated framework's controls: through HAL_METAL_SIM_LIBRARY like the
// other drivers, else from the library that defines the
// MTLCreateSystemDefaultDevice the driver links (libhalsim_metal.so on
// Linux; on macOS Apple's framework, which has none).
const sim::HalsimControl& MetalControl() {
  static const sim::HalsimControl* control = []() -> const sim::HalsimControl* {
    const sim::HalsimControl& named = sim::FindHalsimControl("metal");
    if (named.trace_hash) return &named;
    auto* linked = new sim::HalsimControl();
    Dl_info info;
    void* create = dlsym(RTLD_DEFAULT, "MTLCreateSystemDefaultDevice");
    if (!create || !dladdr(create, &info) || !info.dli_fname) return linked;
    // Already loaded (RTLD_NOLOAD); kept open, as FindHalsimControl does.
    void* handle = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (handle) sim::LoadHalsimControl(handle, linked);
    return linked;
  }();
  return *control;
}

}  // namespace

void RegisterMetalCtsBackend() {
  Backend b;
  b.name = "metal";
  b.default_uri = "metal://?queues=4";
  // No dispatch bounds checks (Metal binds a buffer with no length).
  // Host import wraps whole pages (newBufferWithBytesNoCopy:); the import
  // tests use page-aligned memory.
  b.tags = {kTagFiles,      kTagImport,
            kTagAlloca,     kTagHostCall,
            kTagMultiQueue, kTagDeviceOnlyMemory,
            kTagDispatch,   kTagHostCallRunsOwnQueue};
  // dispatchThreadgroupsWithIndirectBuffer: has the GPU read the count;
  // Metal checks no limit the HAL's kMaxWorkgroupCount could map to, and
  // there is no device-side patch kernel here (the AMDGPU driver has one).
  b.unsupported["QueueTransfer.FillsAHostImportAtAMisalignedAddress"] =
      "Metal imports whole pages only (newBufferWithBytesNoCopy:), so an "
      "import cannot start at a misaligned address";
  b.expected_failures["Dispatch.IndirectCountAboveTheLimitFails"] =
      "the GPU reads the indirect count and nothing checks the HAL's "
      "kMaxWorkgroupCount (docs/drivers/metal.md)";
  // Through the simulated Metal framework: its trace hash, for hal-check's
  // run trace hash (sim/core/halsim_control.h).
  b.trace_hash = [](Device*) -> StatusOr<uint64_t> {
    const sim::HalsimControl& control = MetalControl();
    if (!control.trace_hash)
      return UnavailableError("not the simulated Metal framework");
    return control.trace_hash();
  };
  b.oracle_counters = [] { return sim::HalsimOracleCounters(MetalControl()); };
  b.swarm_faults = {"op_fail_ppm", "alloc_fail_ppm", "slow_ppm",
                    "late_signal_ppm"};
  b.faults_on = [](Device*, bool on) {
    sim::HalsimFaultsOn(MetalControl(), on);
  };
  RegisterBackend(std::move(b));
}

}  // namespace hal::cts
