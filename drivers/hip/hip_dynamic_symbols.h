// libamdhip64, opened at run time and resolved with dlsym.
//
// The library is found in this order: the device URI's `library=` parameter,
// the HAL_HIP_LIBRARY environment variable, then "libamdhip64.so.5" and
// "libamdhip64.so" on the loader's path. Pointing either at the HIP API
// simulator (build/<preset>/lib/libhalsim_hip.so) runs the driver without a
// GPU.
//
// Thread safety: Load may be called from any thread; a loaded table is
// immutable and shared by every device that uses the library.
#pragma once

#include <hip/hip_runtime_api.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "hal/status.h"

namespace hal::hip {

struct HipSymbols {
  std::string library_path;
  int driver_version = 0;

#define HAL_HIP_REQUIRED_SYMBOL(name) decltype(&::name) name = nullptr;
#define HAL_HIP_OPTIONAL_SYMBOL(name) decltype(&::name) name = nullptr;
#define HAL_HIP_OPTIONAL_SYMBOL_TYPED(name, ...) \
  std::type_identity_t<__VA_ARGS__> name = nullptr;
#include "drivers/hip/hip_symbols.inc"
#undef HAL_HIP_REQUIRED_SYMBOL
#undef HAL_HIP_OPTIONAL_SYMBOL
#undef HAL_HIP_OPTIONAL_SYMBOL_TYPED
};

// The libraries Load tries for `uri_library` (empty: none given), in order.
std::vector<std::string> HipLibraryCandidates(const std::string& uri_library);

// Opens the library and resolves every symbol, without initializing HIP.
// UNAVAILABLE, with a hint, when no candidate loads or a required symbol is
// missing. For the symbols test; devices use LoadHipSymbols.
StatusOr<std::shared_ptr<HipSymbols>> ResolveHipSymbols(
    const std::vector<std::string>& candidates);

// ResolveHipSymbols (once per library per process), then hipInit(0) and
// hipDriverGetVersion. UNAVAILABLE, with a hint, when that fails (no AMD GPU
// or driver).
StatusOr<std::shared_ptr<const HipSymbols>> LoadHipSymbols(
    const std::string& uri_library);

}  // namespace hal::hip
