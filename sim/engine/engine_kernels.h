// Native kernels by export name: the simulated vendor libraries run a
// vendor kernel (PTX, HSACO, SPIR-V, ...) as the native (sim-format) build of
// the same test kernel, found by its export name in the kernel modules the
// build produces (build/<preset>/kernels/modules/*.sim.so).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "sim/engine/engine.h"

namespace hal::sim::engine {

class KernelLibrary {
 public:
  // `dir` holds the *.sim.so modules; `hint` names the variable that
  // overrides it (printed when the directory has none).
  KernelLibrary(std::string dir, std::string hint, const char* log_prefix);
  ~KernelLibrary() = default;  // modules stay loaded: kernels may still run

  // The kernel exported as `name` (and its `name`__hal_sim_info), or false.
  // Loads the modules on first use. Thread-safe.
  bool Find(const std::string& name, Kernel* out);
  const std::string& dir() const { return dir_; }

 private:
  std::mutex mutex_;
  const std::string dir_, hint_;
  const char* log_prefix_;
  bool loaded_ = false;
  std::vector<void*> handles_;  // never closed
};

}  // namespace hal::sim::engine
