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

// Whether a vendor kernel's signature (the bytes of each parameter, in
// order) is the kernel ABI's for `kernel`: its bindings as 8-byte pointers,
// then its 4-byte constants, and the ABI version this engine runs.
bool SignatureMatches(const Kernel& kernel,
                      const std::vector<int>& param_bytes);

// Reads launch parameters given as an array of pointers to each value (the
// CUDA and HIP convention): the bindings' pointers, then the constants.
// Copies them now, as those APIs do.
void ReadLaunchParams(const Kernel& kernel, void* const* params,
                      std::vector<uintptr_t>* pointers,
                      std::vector<uint32_t>* constants);

class KernelLibrary {
 public:
  // `dir` holds the *.sim.so modules; `hint` names the variable that
  // overrides it (printed when the directory has none). When `dir` does not
  // exist (a library installed away from its build tree), the modules are
  // looked for in the install instead: `installed_subdir` of the package's
  // data folder (share/gpuhal), found relative to the shared library this
  // code is linked into, so an installed libhalsim_*.so needs no variable.
  KernelLibrary(std::string dir, std::string hint, const char* log_prefix,
                const char* installed_subdir = "kernels/modules");
  ~KernelLibrary() = default;  // modules stay loaded: kernels may still run

  // The kernel exported as `name` (and its `name`__hal_sim_info), or false.
  // Loads the modules on first use. Thread-safe.
  bool Find(const std::string& name, Kernel* out);
  const std::string& dir() const { return dir_; }

 private:
  std::mutex mutex_;
  std::string dir_;
  const std::string hint_;
  const char* log_prefix_;
  const char* installed_subdir_;
  bool loaded_ = false;
  std::vector<void*> handles_;  // never closed
};

}  // namespace hal::sim::engine
