// The control ABI (sim/core/halsim_control.h) over a simulated library's
// Library (sim/skin/skin_library.h). A vendor library instantiates the
// exports once, in its main file, naming the function that returns its
// library:
//
//   HALSIM_DEFINE_CONTROL_EXPORTS(::hal::sim::cuda::L)
//
// so the exports act on that library's engine and counters; nothing below
// the vendor calls up into it.
#pragma once

#include <cstdint>

#include "sim/skin/skin_library.h"

namespace hal::sim::skin::control {

int ResetSchedule(Library& library, uint64_t seed);
int SetFaults(Library& library, const char* plan);
void PauseHostFunctions(Library& library, int paused);

}  // namespace hal::sim::skin::control

// Defines every halsim_* export of sim/core/halsim_control.h over `get()`
// (a function returning the vendor's skin::Library&).
#define HALSIM_CONTROL_COUNTER_(export_name, expr) \
  HALSIM_EXPORT uint64_t export_name(void) { return expr; }
#define HALSIM_DEFINE_CONTROL_EXPORTS(get)                                    \
  HALSIM_EXPORT int halsim_reset_schedule(uint64_t seed) {                    \
    return ::hal::sim::skin::control::ResetSchedule(get(), seed);             \
  }                                                                           \
  HALSIM_EXPORT int halsim_set_faults(const char* plan) {                     \
    return ::hal::sim::skin::control::SetFaults(get(), plan);                 \
  }                                                                           \
  HALSIM_EXPORT void halsim_pause_host_functions(int paused) {                \
    ::hal::sim::skin::control::PauseHostFunctions(get(), paused);             \
  }                                                                           \
  HALSIM_CONTROL_COUNTER_(halsim_seed, get().engine().seed())                 \
  HALSIM_CONTROL_COUNTER_(halsim_trace_hash, get().engine().trace_hash())     \
  HALSIM_CONTROL_COUNTER_(halsim_trace_length, get().engine().trace_length()) \
  HALSIM_CONTROL_COUNTER_(halsim_virtual_time_ns,                             \
                          get().engine().virtual_time_ns())                   \
  HALSIM_CONTROL_COUNTER_(halsim_races, get().engine().counters().races)      \
  HALSIM_CONTROL_COUNTER_(halsim_host_functions_launched,                     \
                          get().engine().counters().host_functions_launched)  \
  HALSIM_CONTROL_COUNTER_(halsim_host_functions_run,                          \
                          get().engine().counters().host_functions_run)       \
  HALSIM_CONTROL_COUNTER_(halsim_api_violations,                              \
                          get().engine().counters().host_callback_violations) \
  HALSIM_CONTROL_COUNTER_(halsim_work_done,                                   \
                          get().engine().counters().work_done)                \
  HALSIM_CONTROL_COUNTER_(halsim_kernels_run,                                 \
                          get().engine().counters().kernels_run)              \
  HALSIM_CONTROL_COUNTER_(halsim_graphs_run,                                  \
                          get().engine().counters().graphs_run)               \
  HALSIM_CONTROL_COUNTER_(halsim_unsignalled_waits,                           \
                          get().engine().counters().unsignalled_waits)        \
  HALSIM_CONTROL_COUNTER_(halsim_steps, get().engine().counters().steps)      \
  HALSIM_CONTROL_COUNTER_(halsim_api_calls, get().engine().api_calls())       \
  HALSIM_CONTROL_COUNTER_(halsim_unsettled_steps,                             \
                          get().engine().counters().unsettled_steps)          \
  HALSIM_CONTROL_COUNTER_(halsim_rule_violations, get().violations())         \
  HALSIM_CONTROL_COUNTER_(halsim_live_objects, get().live_objects())
