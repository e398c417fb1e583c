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

namespace hal::sim {

struct HalsimControl {
  int (*reset_schedule)(uint64_t seed) = nullptr;
  int (*set_faults)(const char* plan) = nullptr;
  uint64_t (*seed)(void) = nullptr;
  uint64_t (*trace_hash)(void) = nullptr;
  uint64_t (*races)(void) = nullptr;
  // Whether the driver runs over a simulated vendor library.
  explicit operator bool() const { return reset_schedule != nullptr; }
};

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
  HalsimControl& c = it->second;
  c.reset_schedule = reinterpret_cast<int (*)(uint64_t)>(
      dlsym(handle, "halsim_reset_schedule"));
  c.set_faults = reinterpret_cast<int (*)(const char*)>(
      dlsym(handle, "halsim_set_faults"));
  c.seed = reinterpret_cast<uint64_t (*)()>(dlsym(handle, "halsim_seed"));
  c.trace_hash =
      reinterpret_cast<uint64_t (*)()>(dlsym(handle, "halsim_trace_hash"));
  c.races = reinterpret_cast<uint64_t (*)()>(dlsym(handle, "halsim_races"));
  return c;
}

}  // namespace hal::sim
