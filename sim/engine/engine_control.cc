// The halsim_control.h exports, compiled into each simulated vendor library
// (not into halsim_engine: a static library's unreferenced objects would be
// dropped from the shared library).
#include "sim/engine/engine_control.h"

#include <cstdlib>
#include <cstring>

#include "sim/core/halsim_control.h"

#define HALSIM_CONTROL_EXPORT extern "C" __attribute__((visibility("default")))

namespace hal::sim::engine {

const char* GetControlEnv(const char* name, const char* vendor_prefix,
                          std::string* used) {
  for (std::string var :
       {std::string("HALSIM_") + name, std::string(vendor_prefix) + name}) {
    if (const char* value = std::getenv(var.c_str())) {
      if (used) *used = var;
      return value;
    }
  }
  return nullptr;
}

bool ConfigureFromEnvironment(Engine& engine, const char* vendor_prefix) {
  const char* prefix = engine.log_prefix();
  if (!engine.schedule_was_reset()) {
    const char* seed = GetControlEnv("SEED", vendor_prefix);
    engine.ResetSchedule(seed ? std::strtoull(seed, nullptr, 10) : 0);
  }
  if (const char* settle = GetControlEnv("SETTLE_US", vendor_prefix)) {
    engine.SetSettleNs(std::atoll(settle) * 1000);
  }
  if (const char* races = GetControlEnv("RACES", vendor_prefix)) {
    engine.SetAbortOnRace(std::strcmp(races, "abort") == 0);
  }
  if (const char* trace = GetControlEnv("TRACE", vendor_prefix);
      trace && *trace && !engine.SetTraceFile(trace)) {
    std::fprintf(stderr, "%s: cannot write the trace to %s\n", prefix, trace);
  }
  std::string var;
  if (const char* faults = GetControlEnv("FAULTS", vendor_prefix, &var)) {
    FaultPlan plan;
    std::string error;
    if (!FaultPlan::Parse(faults, &plan, &error) ||
        !engine.SetFaults(plan, &error)) {
      std::fprintf(stderr, "%s: malformed %s '%s': %s\n", prefix, var.c_str(),
                   faults, error.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace hal::sim::engine

using hal::sim::engine::ControlEngine;

HALSIM_CONTROL_EXPORT int halsim_reset_schedule(uint64_t seed) {
  return ControlEngine().ResetSchedule(seed) == hal::sim::engine::Error::kOk
             ? 0
             : -1;
}

HALSIM_CONTROL_EXPORT int halsim_set_faults(const char* plan) {
  hal::sim::FaultPlan parsed;
  std::string error;
  if (!hal::sim::FaultPlan::Parse(plan ? plan : "", &parsed, &error) ||
      !ControlEngine().SetFaults(parsed, &error)) {
    std::fprintf(stderr, "%s: fault plan '%s' refused: %s\n",
                 ControlEngine().log_prefix(), plan ? plan : "", error.c_str());
    return -1;
  }
  return 0;
}

HALSIM_CONTROL_EXPORT uint64_t halsim_seed(void) {
  return ControlEngine().seed();
}
HALSIM_CONTROL_EXPORT uint64_t halsim_trace_hash(void) {
  return ControlEngine().trace_hash();
}
HALSIM_CONTROL_EXPORT uint64_t halsim_trace_length(void) {
  return ControlEngine().trace_length();
}
HALSIM_CONTROL_EXPORT uint64_t halsim_virtual_time_ns(void) {
  return ControlEngine().virtual_time_ns();
}

#define HALSIM_COUNTER(export_name, field)           \
  HALSIM_CONTROL_EXPORT uint64_t export_name(void) { \
    return ControlEngine().counters().field;         \
  }
HALSIM_COUNTER(halsim_races, races)
HALSIM_COUNTER(halsim_host_functions_launched, host_functions_launched)
HALSIM_COUNTER(halsim_host_functions_run, host_functions_run)
HALSIM_COUNTER(halsim_api_violations, host_callback_violations)
HALSIM_COUNTER(halsim_work_done, work_done)
HALSIM_COUNTER(halsim_kernels_run, kernels_run)
HALSIM_COUNTER(halsim_graphs_run, graphs_run)
HALSIM_COUNTER(halsim_unsignalled_waits, unsignalled_waits)
HALSIM_COUNTER(halsim_steps, steps)
HALSIM_COUNTER(halsim_unsettled_steps, unsettled_steps)
#undef HALSIM_COUNTER

HALSIM_CONTROL_EXPORT void halsim_pause_host_functions(int paused) {
  ControlEngine().PauseHostFunctions(paused != 0);
}
