// CUDA results become Status here, in one place: the CUDA error name and
// string, the call that failed, and what it was doing go into the message.
//
//   HAL_CUDA_RETURN_IF_ERROR(syms, cuMemAlloc(&p, n), "allocating %zu bytes",
//   n);
//
// calls syms->cuMemAlloc(&p, n) unless the fault hook injects a result for
// "cuMemAlloc" first (tests make any call fail this way, on a real driver
// too).
#pragma once

#include <cuda.h>

#include <functional>
#include <string_view>

#include "drivers/cuda/cuda_dynamic_symbols.h"
#include "hal/status.h"

namespace hal::cuda {

// The status code a CUDA result maps to (RESOURCE_EXHAUSTED for out of
// memory, DATA_LOSS for errors that lose the context, ...).
StatusCode CudaResultCode(CUresult result);

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory) in cuMemAlloc: <context>".
Status CudaResultToStatus(const CudaSymbols* syms, CUresult result,
                          const char* call, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

// A hook that may return a result other than CUDA_SUCCESS for a call named
// by its API name ("cuMemAlloc"); that result is used instead of calling
// CUDA. Process-wide; set to null to remove. For tests.
using CudaFaultHook = std::function<CUresult(std::string_view call)>;
void SetCudaFaultHook(CudaFaultHook hook);
// CUDA_SUCCESS unless the hook injects a fault for `call`.
CUresult CudaInjectedResult(const char* call);

}  // namespace hal::cuda

#define HAL_CUDA_RETURN_IF_ERROR(syms, expr, ...)                           \
  do {                                                                      \
    const char* _hal_cuda_call = #expr; /* unexpanded: "cuMemAlloc(...)" */ \
    CUresult _hal_cuda_result =                                             \
        ::hal::cuda::CudaInjectedResult(_hal_cuda_call);                    \
    if (_hal_cuda_result == CUDA_SUCCESS) _hal_cuda_result = (syms)->expr;  \
    if (_hal_cuda_result != CUDA_SUCCESS) {                                 \
      return ::hal::cuda::CudaResultToStatus((syms), _hal_cuda_result,      \
                                             _hal_cuda_call, __VA_ARGS__);  \
    }                                                                       \
  } while (false)
