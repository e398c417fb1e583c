#include "drivers/level_zero/ze_dynamic_symbols.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "drivers/gpu/gpu_dynamic_library.h"
#include "drivers/level_zero/ze_status.h"

namespace hal::level_zero {

namespace {

constexpr char kHint[] =
    "install the Level Zero loader (Debian: libze1) and a Level Zero GPU "
    "driver (Intel: intel-level-zero-gpu), or run over the simulated driver "
    "with ZE_ENABLE_ALT_DRIVERS=<absolute path to libhalsim_ze.so: "
    "build/<preset>/lib/ in a build tree, lib/ of an install>; "
    "HAL_LEVEL_ZERO_LIBRARY or the URI "
    "parameter library=PATH selects the loader";

}  // namespace

std::vector<std::string> ZeLibraryCandidates(const std::string& library) {
  if (!library.empty()) return {library};
  if (const char* env = std::getenv("HAL_LEVEL_ZERO_LIBRARY"); env && *env) {
    return {env};
  }
  return {"libze_loader.so.1", "libze_loader.so"};
}

StatusOr<std::shared_ptr<ZeSymbols>> ResolveZeSymbols(
    const std::vector<std::string>& candidates) {
  HAL_ASSIGN_OR_RETURN(
      gpu::DynamicLibrary library,
      gpu::DynamicLibrary::Open(candidates, "Level Zero", kHint));
  auto symbols = std::make_shared<ZeSymbols>();
  symbols->library_path = library.path();
  std::string missing_required;
#define HAL_ZE_REQUIRED_SYMBOL(name)                                     \
  library.Resolve(#name, reinterpret_cast<void**>(&symbols->name), true, \
                  &missing_required);
#define HAL_ZE_OPTIONAL_SYMBOL(name)                                      \
  library.Resolve(#name, reinterpret_cast<void**>(&symbols->name), false, \
                  &missing_required);
#include "drivers/level_zero/ze_symbols.inc"
#undef HAL_ZE_REQUIRED_SYMBOL
#undef HAL_ZE_OPTIONAL_SYMBOL
  if (!missing_required.empty()) {
    return UnavailableError(
        "Level Zero: '%s' lacks required entry points: %s; install loader "
        "1.8 or newer (%s)",
        library.path().c_str(), missing_required.c_str(), kHint);
  }
  return symbols;
}

namespace {

StatusOr<std::shared_ptr<const ZeSymbols>> LoadUncached(
    const std::vector<std::string>& candidates) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<ZeSymbols> symbols,
                       ResolveZeSymbols(candidates));
  // HAL_LEVEL_ZERO_SIM_LIBRARY names the simulated driver: the loader
  // reads ZE_ENABLE_ALT_DRIVERS in zeInit, so it is set here (unless the
  // caller set it), and one variable is all a replay line needs.
  if (const char* sim = std::getenv("HAL_LEVEL_ZERO_SIM_LIBRARY");
      sim && *sim) {
    setenv("ZE_ENABLE_ALT_DRIVERS", sim, /*overwrite=*/0);
  }
  ze_result_t init = symbols->zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (init != ZE_RESULT_SUCCESS) {
    return UnavailableError(
        "Level Zero: zeInit failed with %s (0x%x) in '%s': no Level Zero GPU "
        "driver behind the loader; %s",
        ZeResultName(init), static_cast<unsigned>(init),
        symbols->library_path.c_str(), kHint);
  }
  uint32_t count = 0;
  ze_result_t get = symbols->zeDriverGet(&count, nullptr);
  if (get == ZE_RESULT_SUCCESS && count > 0) {
    symbols->drivers.resize(count);
    get = symbols->zeDriverGet(&count, symbols->drivers.data());
    symbols->drivers.resize(count);
  }
  if (get != ZE_RESULT_SUCCESS || symbols->drivers.empty()) {
    return UnavailableError(
        "Level Zero: no driver behind the loader '%s' (zeDriverGet: %s, %u "
        "drivers); %s",
        symbols->library_path.c_str(), ZeResultName(get), count, kHint);
  }
  return std::shared_ptr<const ZeSymbols>(std::move(symbols));
}

}  // namespace

StatusOr<std::shared_ptr<const ZeSymbols>> LoadZeSymbols(
    const std::string& library) {
  std::vector<std::string> candidates = ZeLibraryCandidates(library);
  // One result per loader for the life of the process, failures included:
  // the loader runs zeInit once, so a retry could not succeed.
  static std::mutex mutex;
  static auto* loaded =
      new std::map<std::vector<std::string>,
                   StatusOr<std::shared_ptr<const ZeSymbols>>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded->find(candidates); it != loaded->end()) {
    return it->second;
  }
  StatusOr<std::shared_ptr<const ZeSymbols>> result = LoadUncached(candidates);
  loaded->emplace(candidates, result);
  return result;
}

}  // namespace hal::level_zero
