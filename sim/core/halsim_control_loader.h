// Finds the halsim_control.h entry points of the simulated vendor library
// a driver runs over, for shared tools (property tests, fuzzers) that must
// name no driver: the library is the one HAL_<DRIVER>_SIM_LIBRARY names, or
// else HAL_<DRIVER>_LIBRARY (the drivers' convention for their vendor
// library's path), opened once and kept loaded; dlopen of the same path
// returns the handle the driver (or the vendor loader) got.
#pragma once

#include <dlfcn.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hal::sim {

struct HalsimControl {
  int (*reset_schedule)(uint64_t seed) = nullptr;
  int (*set_faults)(const char* plan) = nullptr;
  uint64_t (*seed)(void) = nullptr;
  uint64_t (*trace_hash)(void) = nullptr;
  uint64_t (*races)(void) = nullptr;
  uint64_t (*rule_violations)(void) = nullptr;
  uint64_t (*api_violations)(void) = nullptr;
  uint64_t (*unsignalled_waits)(void) = nullptr;
  uint64_t (*api_calls)(void) = nullptr;
  // Whether the driver runs over a simulated vendor library.
  explicit operator bool() const { return reset_schedule != nullptr; }
};

// The entry points of the simulated library loaded as `handle` (null ones
// for a library that is not a simulator).
inline void LoadHalsimControl(void* handle, HalsimControl* c) {
  auto counter = [handle](const char* name) {
    return reinterpret_cast<uint64_t (*)()>(dlsym(handle, name));
  };
  c->reset_schedule = reinterpret_cast<int (*)(uint64_t)>(
      dlsym(handle, "halsim_reset_schedule"));
  c->set_faults = reinterpret_cast<int (*)(const char*)>(
      dlsym(handle, "halsim_set_faults"));
  c->seed = counter("halsim_seed");
  c->trace_hash = counter("halsim_trace_hash");
  c->races = counter("halsim_races");
  c->rule_violations = counter("halsim_rule_violations");
  c->api_violations = counter("halsim_api_violations");
  c->unsignalled_waits = counter("halsim_unsignalled_waits");
  c->api_calls = counter("halsim_api_calls");
}

// The simulator's own checks, as counters that only grow: races, broken
// vendor rules (object reuse, lifetime, ...), API calls from host
// callbacks, waits on never-recorded events. Any growth during a test is a
// failure of that test (the CTS checks it; Backend::oracle_counters). Empty
// for a library that is not a simulator.
inline std::vector<std::pair<std::string, uint64_t>> HalsimOracleCounters(
    const HalsimControl& c) {
  std::vector<std::pair<std::string, uint64_t>> out;
  auto add = [&out](const char* name, uint64_t (*counter)()) {
    if (counter) out.emplace_back(name, counter());
  };
  add("races", c.races);
  add("rule_violations", c.rule_violations);
  add("api_violations", c.api_violations);
  add("unsignalled_waits", c.unsignalled_waits);
  return out;
}

// Turns the library's fault plan off (`on` false), or back to the run's
// (`on` true: HALSIM_FAULTS, which restarts its counters and stream). Only
// where HALSIM_FAULTS is set: a run without faults is left alone. The
// CTS's liveness phase (Backend::faults_on).
inline void HalsimFaultsOn(const HalsimControl& c, bool on) {
  const char* plan = std::getenv("HALSIM_FAULTS");
  if (!c.set_faults || !plan || !*plan) return;
  c.set_faults(on ? plan : "");
}

// The controls for `driver` (a device URI's driver name), or empty ones when
// its library is not a simulator (or not named in the environment).
inline const HalsimControl& FindHalsimControl(std::string_view driver) {
  static std::mutex mutex;
  static auto* found = new std::map<std::string, HalsimControl>();
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = found->try_emplace(std::string(driver));
  if (!inserted) return it->second;
  std::string var = "HAL_";
  for (char c : driver) {
    var += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  // HAL_<DRIVER>_SIM_LIBRARY names the simulated library when the driver
  // opens another library that loads it (a Level Zero loader loads its
  // drivers itself); else the driver's own library is the simulator.
  const char* library = std::getenv((var + "_SIM_LIBRARY").c_str());
  if (!library || !*library) library = std::getenv((var + "_LIBRARY").c_str());
  if (!library || !*library) return it->second;
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);  // never closed
  if (!handle) return it->second;
  LoadHalsimControl(handle, &it->second);
  return it->second;
}

}  // namespace hal::sim
