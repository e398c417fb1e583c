// HSA results become Status here, in one place: the HSA status name and
// text, the call that failed, and what it was doing go into the message.
//
//   HAL_HSA_RETURN_IF_ERROR(syms, hsa_queue_create(...), "queue %d", i);
//
// calls syms->hsa_queue_create(...) unless the fault hook injects a result
// for "hsa_queue_create" first (tests make any call fail this way, on a
// real GPU too).
#pragma once

#include <hsa/hsa.h>

#include <functional>
#include <string_view>

#include "drivers/amdgpu/amdgpu_dynamic_symbols.h"
#include "hal/status.h"

namespace hal::amdgpu {

// The status code an HSA status maps to (RESOURCE_EXHAUSTED for out of
// resources, DATA_LOSS for errors that lose the device's state, ...).
StatusCode HsaStatusCode(hsa_status_t status);

// "HSA_STATUS_ERROR_OUT_OF_RESOURCES 0x1008 (...) in hsa_...: <context>".
Status HsaStatusToStatus(const HsaSymbols* syms, hsa_status_t status,
                         const char* call, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

// A hook that may return a status other than HSA_STATUS_SUCCESS for a call
// named by its API name ("hsa_queue_create"); that status is used instead
// of calling HSA. Process-wide; set to null to remove. For tests.
using HsaFaultHook = std::function<hsa_status_t(std::string_view call)>;
void SetHsaFaultHook(HsaFaultHook hook);
// HSA_STATUS_SUCCESS unless the hook injects a fault for `call`.
hsa_status_t HsaInjectedError(const char* call);

}  // namespace hal::amdgpu

#define HAL_HSA_RETURN_IF_ERROR(syms, expr, ...)                               \
  do {                                                                         \
    const char* _hal_hsa_call = #expr;                                         \
    hsa_status_t _hal_hsa_status =                                             \
        ::hal::amdgpu::HsaInjectedError(_hal_hsa_call);                        \
    if (_hal_hsa_status == HSA_STATUS_SUCCESS) _hal_hsa_status = (syms)->expr; \
    if (_hal_hsa_status != HSA_STATUS_SUCCESS &&                               \
        _hal_hsa_status != HSA_STATUS_INFO_BREAK) {                            \
      return ::hal::amdgpu::HsaStatusToStatus((syms), _hal_hsa_status,         \
                                              _hal_hsa_call, __VA_ARGS__);     \
    }                                                                          \
  } while (false)
