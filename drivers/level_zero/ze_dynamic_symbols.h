// The Level Zero loader (libze_loader.so.1), opened at run time and
// resolved with dlsym; the driver never links it.
//
// The library is found in this order: the `library` argument (a device
// URI's `library=` parameter), the HAL_LEVEL_ZERO_LIBRARY environment
// variable, then "libze_loader.so.1" and "libze_loader.so" on the loader's
// path. Behind the loader, the GPU driver is the loader's choice: Intel's
// by default, or the simulated driver (build/<preset>/lib/libhalsim_ze.so)
// with ZE_ENABLE_ALT_DRIVERS=<its absolute path>. HAL_LEVEL_ZERO_SIM_LIBRARY
// =<that path> does the same (LoadZeSymbols sets ZE_ENABLE_ALT_DRIVERS from
// it before zeInit when it is unset), and lets the shared tools find the
// simulator's controls (sim/core/halsim_control_loader.h).
//
// zeInit runs once per process inside the loader (std::call_once): its
// result, success or not, is this process's for good, so LoadZeSymbols
// caches it too.
//
// Thread safety: Load may be called from any thread; a loaded table is
// immutable and shared by every device that uses the loader.
#pragma once

#include <level_zero/ze_api.h>

#include <memory>
#include <string>
#include <vector>

#include "hal/status.h"

namespace hal::level_zero {

struct ZeSymbols {
  std::string library_path;
  // The drivers behind the loader (after zeInit); empty before.
  std::vector<ze_driver_handle_t> drivers;

#define HAL_ZE_REQUIRED_SYMBOL(name) decltype(&::name) name = nullptr;
#define HAL_ZE_OPTIONAL_SYMBOL(name) decltype(&::name) name = nullptr;
#include "drivers/level_zero/ze_symbols.inc"
#undef HAL_ZE_REQUIRED_SYMBOL
#undef HAL_ZE_OPTIONAL_SYMBOL
};

// The libraries Load tries for `library` (empty: none given), in order.
std::vector<std::string> ZeLibraryCandidates(const std::string& library);

// Opens the loader and resolves every symbol, without zeInit. UNAVAILABLE,
// with a hint, when no candidate loads or a required symbol is missing. For
// the symbols test; devices use LoadZeSymbols.
StatusOr<std::shared_ptr<ZeSymbols>> ResolveZeSymbols(
    const std::vector<std::string>& candidates);

// ResolveZeSymbols, then zeInit(ZE_INIT_FLAG_GPU_ONLY) and zeDriverGet,
// once per library per process. UNAVAILABLE, with a hint, when zeInit fails
// or no driver is behind the loader (no Intel GPU driver, and no
// ZE_ENABLE_ALT_DRIVERS).
StatusOr<std::shared_ptr<const ZeSymbols>> LoadZeSymbols(
    const std::string& library);

}  // namespace hal::level_zero
