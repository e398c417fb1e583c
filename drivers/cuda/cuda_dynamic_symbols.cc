#include "drivers/cuda/cuda_dynamic_symbols.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "drivers/gpu/gpu_dynamic_library.h"

namespace hal::cuda {

namespace {

constexpr char kDefaultLibrary[] = "libcuda.so.1";
constexpr char kHint[] =
    "install the NVIDIA driver (libcuda.so.1), or point HAL_CUDA_LIBRARY or "
    "the URI parameter cuda://?library=PATH at a libcuda; the CUDA API "
    "simulator is libhalsim_cuda.so (build/<preset>/lib/ in a build tree, "
    "lib/ of an install)";

using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

StatusOr<std::shared_ptr<const CudaSymbols>> LoadUncached(
    const std::string& path) {
  HAL_ASSIGN_OR_RETURN(gpu::DynamicLibrary library,
                       gpu::DynamicLibrary::Open({path}, "CUDA", kHint));
  auto get_proc =
      reinterpret_cast<GetProcAddressFn>(library.Symbol("cuGetProcAddress_v2"));
  if (!get_proc) {
    return UnavailableError(
        "CUDA: '%s' has no cuGetProcAddress_v2: the driver is older than CUDA "
        "12.0; update the NVIDIA driver (%s)",
        path.c_str(), kHint);
  }
  auto symbols = std::make_shared<CudaSymbols>();
  symbols->library_path = path;

  // Ask for the driver's version first, then resolve every symbol for the
  // older of the driver's version and the headers' (we were compiled against
  // the headers' signatures).
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get_proc("cuDriverGetVersion", &fn, kMinDriverVersion,
               CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
      !fn) {
    return UnavailableError(
        "CUDA: '%s' does not resolve cuDriverGetVersion; %s", path.c_str(),
        kHint);
  }
  int version = 0;
  if (reinterpret_cast<decltype(&::cuDriverGetVersion)>(fn)(&version) !=
          CUDA_SUCCESS ||
      version < kMinDriverVersion) {
    return UnavailableError(
        "CUDA: driver version %d.%d in '%s' is too old; CUDA %d.%d or newer "
        "is needed: update the NVIDIA driver",
        version / 1000, (version % 1000) / 10, path.c_str(),
        kMinDriverVersion / 1000, (kMinDriverVersion % 1000) / 10);
  }
  symbols->driver_version = version;
  const int request = std::min(version, CUDA_VERSION);

  std::string missing_required;
  auto resolve = [&](const char* name, void** slot, bool required) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult result =
        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r =
        get_proc(name, &p, request, CU_GET_PROC_ADDRESS_DEFAULT, &result);
    if (r != CUDA_SUCCESS || result != CU_GET_PROC_ADDRESS_SUCCESS) p = nullptr;
    *slot = p;
    if (!p && required) {
      if (!missing_required.empty()) missing_required += ", ";
      missing_required += name;
    }
  };
#define HAL_CUDA_REQUIRED_SYMBOL(name) \
  resolve(#name, reinterpret_cast<void**>(&symbols->name), true);
#define HAL_CUDA_OPTIONAL_SYMBOL(name) \
  resolve(#name, reinterpret_cast<void**>(&symbols->name), false);
#include "drivers/cuda/cuda_symbols.inc"
#undef HAL_CUDA_REQUIRED_SYMBOL
#undef HAL_CUDA_OPTIONAL_SYMBOL
  if (!missing_required.empty()) {
    return UnavailableError(
        "CUDA: '%s' (driver %d) lacks required entry points: %s; update the "
        "NVIDIA driver",
        path.c_str(), version, missing_required.c_str());
  }
  CUresult init = symbols->cuInit(0);
  if (init != CUDA_SUCCESS) {
    const char* name = nullptr;
    symbols->cuGetErrorName(init, &name);
    return UnavailableError(
        "CUDA: cuInit failed with %s (no usable GPU or driver)",
        name ? name : "an unknown error");
  }
  return std::shared_ptr<const CudaSymbols>(std::move(symbols));
}

}  // namespace

std::string CudaLibraryPath(const std::string& uri_library) {
  if (!uri_library.empty()) return uri_library;
  if (const char* env = std::getenv("HAL_CUDA_LIBRARY"); env && *env)
    return env;
  return kDefaultLibrary;
}

StatusOr<std::shared_ptr<const CudaSymbols>> LoadCudaSymbols(
    const std::string& uri_library) {
  std::string path = CudaLibraryPath(uri_library);
  // One table per library for the life of the process: libcuda cannot be
  // unloaded safely, and every device of one library shares its state.
  static std::mutex mutex;
  static auto* loaded =
      new std::map<std::string, std::shared_ptr<const CudaSymbols>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded->find(path); it != loaded->end()) return it->second;
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const CudaSymbols> symbols,
                       LoadUncached(path));
  loaded->emplace(path, symbols);
  return symbols;
}

}  // namespace hal::cuda
