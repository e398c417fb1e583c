// HIP results become Status here, in one place: the HIP error name and
// string, the call that failed, and what it was doing go into the message.
//
//   HAL_HIP_RETURN_IF_ERROR(syms, hipMalloc(&p, n), "allocating %zu bytes",
//   n);
//
// calls syms->hipMalloc(&p, n) unless the fault hook injects a result for
// "hipMalloc" first (tests make any call fail this way, on a real GPU too).
#pragma once

#include <hip/hip_runtime_api.h>

#include <functional>
#include <string_view>

#include "drivers/hip/hip_dynamic_symbols.h"
#include "hal/status.h"

namespace hal::hip {

// The status code a HIP error maps to (RESOURCE_EXHAUSTED for out of
// memory, DATA_LOSS for errors that lose the device's state, ...).
StatusCode HipErrorCode(hipError_t error);

// "hipErrorOutOfMemory 2 (out of memory) in hipMalloc: <context>".
Status HipErrorToStatus(const HipSymbols* syms, hipError_t error,
                        const char* call, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

// A hook that may return an error other than hipSuccess for a call named by
// its API name ("hipMalloc"); that error is used instead of calling HIP.
// Process-wide; set to null to remove. For tests.
using HipFaultHook = std::function<hipError_t(std::string_view call)>;
void SetHipFaultHook(HipFaultHook hook);
// hipSuccess unless the hook injects a fault for `call`.
hipError_t HipInjectedError(const char* call);

}  // namespace hal::hip

#define HAL_HIP_RETURN_IF_ERROR(syms, expr, ...)                             \
  do {                                                                       \
    const char* _hal_hip_call = #expr; /* unexpanded: "hipMalloc(...)" */    \
    hipError_t _hal_hip_error = ::hal::hip::HipInjectedError(_hal_hip_call); \
    if (_hal_hip_error == hipSuccess) _hal_hip_error = (syms)->expr;         \
    if (_hal_hip_error != hipSuccess) {                                      \
      return ::hal::hip::HipErrorToStatus((syms), _hal_hip_error,            \
                                          _hal_hip_call, __VA_ARGS__);       \
    }                                                                        \
  } while (false)
