#include "drivers/amdgpu/amdgpu_dynamic_symbols.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "drivers/gpu/gpu_dynamic_library.h"

namespace hal::amdgpu {

const char kHsaHint[] =
    "install ROCm's HSA runtime (Debian: libhsa-runtime64-1) and an AMD GPU "
    "with the amdgpu kernel driver (/dev/kfd), or point HAL_AMDGPU_LIBRARY or "
    "the URI parameter amdgpu://?library=PATH at a libhsa-runtime64; the HSA "
    "simulator is libhalsim_hsa.so (build/<preset>/lib/ in a build tree, "
    "lib/ of an install)";

std::vector<std::string> HsaLibraryCandidates(const std::string& uri_library) {
  if (!uri_library.empty()) return {uri_library};
  if (const char* env = std::getenv("HAL_AMDGPU_LIBRARY"); env && *env) {
    return {env};
  }
  return {"libhsa-runtime64.so.1", "libhsa-runtime64.so"};
}

StatusOr<std::shared_ptr<HsaSymbols>> ResolveHsaSymbols(
    const std::vector<std::string>& candidates) {
  HAL_ASSIGN_OR_RETURN(gpu::DynamicLibrary library,
                       gpu::DynamicLibrary::Open(candidates, "HSA", kHsaHint));
  auto symbols = std::make_shared<HsaSymbols>();
  symbols->library_path = library.path();
  std::string missing_required;
#define HAL_HSA_REQUIRED_SYMBOL(name)                                    \
  library.Resolve(#name, reinterpret_cast<void**>(&symbols->name), true, \
                  &missing_required);
#define HAL_HSA_OPTIONAL_SYMBOL(name)                                     \
  library.Resolve(#name, reinterpret_cast<void**>(&symbols->name), false, \
                  &missing_required);
#include "drivers/amdgpu/hsa_symbols.inc"
#undef HAL_HSA_REQUIRED_SYMBOL
#undef HAL_HSA_OPTIONAL_SYMBOL
  if (!missing_required.empty()) {
    return UnavailableError(
        "HSA: '%s' lacks required entry points: %s; install ROCm 5.2 or newer "
        "(%s)",
        library.path().c_str(), missing_required.c_str(), kHsaHint);
  }
  return symbols;
}

namespace {

StatusOr<std::shared_ptr<const HsaSymbols>> LoadUncached(
    const std::vector<std::string>& candidates) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<HsaSymbols> symbols,
                       ResolveHsaSymbols(candidates));
  hsa_status_t init = symbols->hsa_init();
  if (init != HSA_STATUS_SUCCESS) {
    const char* text = nullptr;
    if (symbols->hsa_status_string(init, &text) != HSA_STATUS_SUCCESS) {
      text = nullptr;
    }
    return UnavailableError(
        "HSA: hsa_init failed with 0x%x (%s) in '%s': no usable AMD GPU or "
        "driver; %s",
        static_cast<unsigned>(init), text ? text : "unknown status",
        symbols->library_path.c_str(), kHsaHint);
  }
  // Never shut down: HSA is initialized once per process per library, and
  // its reference count is not ours to drop while devices may live on.
  return std::shared_ptr<const HsaSymbols>(std::move(symbols));
}

}  // namespace

StatusOr<std::shared_ptr<const HsaSymbols>> LoadHsaSymbols(
    const std::string& uri_library) {
  std::vector<std::string> candidates = HsaLibraryCandidates(uri_library);
  static std::mutex mutex;
  static auto* loaded = new std::map<std::vector<std::string>,
                                     std::shared_ptr<const HsaSymbols>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded->find(candidates); it != loaded->end()) {
    return it->second;
  }
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const HsaSymbols> symbols,
                       LoadUncached(candidates));
  loaded->emplace(candidates, symbols);
  return symbols;
}

}  // namespace hal::amdgpu
