// libcuda, opened at run time and resolved through cuGetProcAddress.
//
// The library is found in this order: the device URI's `library=` parameter,
// the HAL_CUDA_LIBRARY environment variable, then "libcuda.so.1" on the
// loader's path. Pointing either at the CUDA API simulator
// (build/<preset>/lib/libhalsim_cuda.so) runs the driver without a GPU.
//
// Thread safety: Load may be called from any thread; a loaded table is
// immutable and shared by every device that uses the library.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "hal/status.h"

namespace hal::cuda {

// The oldest driver we accept: cuGetProcAddress_v2 (with its query result)
// appeared in CUDA 12.0.
inline constexpr int kMinDriverVersion = 12000;

struct CudaSymbols {
  std::string library_path;
  int driver_version = 0;

#define HAL_CUDA_REQUIRED_SYMBOL(name) decltype(&::name) name = nullptr;
#define HAL_CUDA_OPTIONAL_SYMBOL(name) decltype(&::name) name = nullptr;
#include "drivers/cuda/cuda_symbols.inc"
#undef HAL_CUDA_REQUIRED_SYMBOL
#undef HAL_CUDA_OPTIONAL_SYMBOL
};

// The library path Load would use for `uri_library` (empty: none given).
std::string CudaLibraryPath(const std::string& uri_library);

// Opens the library (once per path per process), resolves every symbol and
// calls cuInit(0). UNAVAILABLE, with a hint, when the library is missing,
// lacks cuGetProcAddress_v2, is older than kMinDriverVersion, lacks a
// required symbol, or cuInit fails.
StatusOr<std::shared_ptr<const CudaSymbols>> LoadCudaSymbols(
    const std::string& uri_library);

}  // namespace hal::cuda
