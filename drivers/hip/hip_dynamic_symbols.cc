#include "drivers/hip/hip_dynamic_symbols.h"

#include <cstdlib>
#include <map>
#include <mutex>

#include "drivers/gpu/gpu_dynamic_library.h"

namespace hal::hip {

namespace {

constexpr char kHint[] =
    "install ROCm's HIP runtime (Debian: libamdhip64-5) and an AMD GPU with "
    "the amdgpu kernel driver (/dev/kfd), or point HAL_HIP_LIBRARY or the URI "
    "parameter hip://?library=PATH at a libamdhip64; the HIP API simulator is "
    "libhalsim_hip.so (build/<preset>/lib/ in a build tree, lib/ of an "
    "install)";

// The spelled-out types are the header's: static_cast picks the overload of
// that type, and fails to compile when the header has none.
#define HAL_HIP_REQUIRED_SYMBOL(name)
#define HAL_HIP_OPTIONAL_SYMBOL(name)
#define HAL_HIP_OPTIONAL_SYMBOL_TYPED(name, ...)               \
  [[maybe_unused]] constexpr std::type_identity_t<__VA_ARGS__> \
      kHeaderType_##name = static_cast<__VA_ARGS__>(&::name);
#include "drivers/hip/hip_symbols.inc"
#undef HAL_HIP_REQUIRED_SYMBOL
#undef HAL_HIP_OPTIONAL_SYMBOL
#undef HAL_HIP_OPTIONAL_SYMBOL_TYPED

}  // namespace

std::vector<std::string> HipLibraryCandidates(const std::string& uri_library) {
  if (!uri_library.empty()) return {uri_library};
  if (const char* env = std::getenv("HAL_HIP_LIBRARY"); env && *env) {
    return {env};
  }
  return {"libamdhip64.so.5", "libamdhip64.so"};
}

StatusOr<std::shared_ptr<HipSymbols>> ResolveHipSymbols(
    const std::vector<std::string>& candidates) {
  HAL_ASSIGN_OR_RETURN(gpu::DynamicLibrary library,
                       gpu::DynamicLibrary::Open(candidates, "HIP", kHint));
  auto symbols = std::make_shared<HipSymbols>();
  symbols->library_path = library.path();
  std::string missing_required;
#define HAL_HIP_REQUIRED_SYMBOL(name)                                    \
  library.Resolve(#name, reinterpret_cast<void**>(&symbols->name), true, \
                  &missing_required);
#define HAL_HIP_OPTIONAL_SYMBOL(name)                                     \
  library.Resolve(#name, reinterpret_cast<void**>(&symbols->name), false, \
                  &missing_required);
#include "drivers/hip/hip_symbols.inc"
#undef HAL_HIP_REQUIRED_SYMBOL
#undef HAL_HIP_OPTIONAL_SYMBOL
  if (!missing_required.empty()) {
    return UnavailableError(
        "HIP: '%s' lacks required entry points: %s; install HIP 5.2 or newer "
        "(%s)",
        library.path().c_str(), missing_required.c_str(), kHint);
  }
  return symbols;
}

namespace {

StatusOr<std::shared_ptr<const HipSymbols>> LoadUncached(
    const std::vector<std::string>& candidates) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<HipSymbols> symbols,
                       ResolveHipSymbols(candidates));
  hipError_t init = symbols->hipInit(0);
  if (init != hipSuccess) {
    return UnavailableError(
        "HIP: hipInit failed with %s (%d) in '%s': no usable AMD GPU or "
        "driver; %s",
        symbols->hipGetErrorName(init), static_cast<int>(init),
        symbols->library_path.c_str(), kHint);
  }
  hipError_t version = symbols->hipDriverGetVersion(&symbols->driver_version);
  if (version != hipSuccess) {
    return UnavailableError("HIP: hipDriverGetVersion failed with %s in '%s'",
                            symbols->hipGetErrorName(version),
                            symbols->library_path.c_str());
  }
  return std::shared_ptr<const HipSymbols>(std::move(symbols));
}

}  // namespace

StatusOr<std::shared_ptr<const HipSymbols>> LoadHipSymbols(
    const std::string& uri_library) {
  std::vector<std::string> candidates = HipLibraryCandidates(uri_library);
  // One table per library for the life of the process: the HIP runtime
  // cannot be unloaded safely, and every device of one library shares it.
  static std::mutex mutex;
  static auto* loaded = new std::map<std::vector<std::string>,
                                     std::shared_ptr<const HipSymbols>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded->find(candidates); it != loaded->end()) {
    return it->second;
  }
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const HipSymbols> symbols,
                       LoadUncached(candidates));
  loaded->emplace(candidates, symbols);
  return symbols;
}

}  // namespace hal::hip
