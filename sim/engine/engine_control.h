// The halsim_control.h exports over one engine: engine_control.cc is
// compiled into each simulated vendor library, which defines
// ControlEngine() (its static engine at the C ABI edge).
#pragma once

#include "sim/engine/engine.h"

namespace hal::sim::engine {

// The library's engine. Defined by each simulated vendor library.
Engine& ControlEngine();

// Reads HALSIM_<name>, then the library's alias (e.g. HALSIM_CUDA_<name>);
// sets `*used` to the variable that was set. Null when neither is.
const char* GetControlEnv(const char* name, const char* vendor_prefix,
                          std::string* used = nullptr);

// Applies HALSIM_SEED/FAULTS/TRACE/RACES/SETTLE_US (and the aliases with
// `vendor_prefix`, e.g. "HALSIM_CUDA_") to the engine, at the vendor's init
// call. The seed is left alone when halsim_reset_schedule came first. False
// (and a line on stderr) for a malformed fault plan.
bool ConfigureFromEnvironment(Engine& engine, const char* vendor_prefix);

}  // namespace hal::sim::engine
