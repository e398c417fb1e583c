// Shared state of the simulated Metal framework (sim/metal/): the engine,
// rule reports, object accounting and the callback thread. Objective-C++
// only (sim/metal/*.mm).
#pragma once

#include <cstdint>
#include <functional>

#include "sim/engine/engine.h"
#include "sim/skin/skin_library.h"

namespace hal::sim::metal {

// The framework's edge (sim/skin/skin_library.h) and its one engine, configured
// from HALSIM_* / HALSIM_METAL_* (seed, settle, races, trace, faults) on first
// use.
skin::Library& L();
engine::Engine& E();
// Whether the environment's configuration was refused (a malformed
// HALSIM_FAULTS, said on stderr): MTLCreateSystemDefaultDevice then returns
// nil, as the other simulated libraries fail their init call.
bool ConfigurationFailed();

// Reports a broken Metal rule on stderr ("halsim_metal: Metal rule
// violated: ...; seed=N (rerun with HALSIM_SEED=N)") and counts it.
// printf-style.
void Violation(const char* format, ...) __attribute__((format(printf, 1, 2)));
uint64_t ViolationCount();

// Live-object accounting per class, as the library's kinds (leaks are
// reported at exit).
void CountAlloc(const char* class_name);
void CountFree(const char* class_name);

// Runs `fn` on the framework's callback thread (completion handlers and
// shared-event listener blocks), inside an engine HostCall, in order.
void RunOnCallbackThread(std::function<void()> fn);

}  // namespace hal::sim::metal
