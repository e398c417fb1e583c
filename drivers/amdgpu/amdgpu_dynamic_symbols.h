// libhsa-runtime64 (ROCr), opened at run time and resolved with dlsym.
//
// The library is found in this order: the device URI's `library=` parameter,
// the HAL_AMDGPU_LIBRARY environment variable, then "libhsa-runtime64.so.1"
// and "libhsa-runtime64.so" on the loader's path. Pointing either at the
// HSA simulator (build/<preset>/lib/libhalsim_hsa.so) runs the driver
// without a GPU.
//
// Thread safety: Load may be called from any thread; a loaded table is
// immutable and shared by every device that uses the library.
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <memory>
#include <string>
#include <vector>

#include "hal/status.h"

namespace hal::amdgpu {

struct HsaSymbols {
  std::string library_path;

#define HAL_HSA_REQUIRED_SYMBOL(name) decltype(&::name) name = nullptr;
#define HAL_HSA_OPTIONAL_SYMBOL(name) decltype(&::name) name = nullptr;
#include "drivers/amdgpu/hsa_symbols.inc"
#undef HAL_HSA_REQUIRED_SYMBOL
#undef HAL_HSA_OPTIONAL_SYMBOL
};

// The libraries Load tries for `uri_library` (empty: none given), in order.
std::vector<std::string> HsaLibraryCandidates(const std::string& uri_library);

// Opens the library and resolves every symbol, without initializing HSA.
// UNAVAILABLE, with a hint, when no candidate loads or a required symbol is
// missing. For the symbols test; devices use LoadHsaSymbols.
StatusOr<std::shared_ptr<HsaSymbols>> ResolveHsaSymbols(
    const std::vector<std::string>& candidates);

// ResolveHsaSymbols (once per library per process), then hsa_init.
// UNAVAILABLE, with a hint, when that fails (no AMD GPU or /dev/kfd).
StatusOr<std::shared_ptr<const HsaSymbols>> LoadHsaSymbols(
    const std::string& uri_library);

// What the messages say about getting a usable library.
extern const char kHsaHint[];

}  // namespace hal::amdgpu
