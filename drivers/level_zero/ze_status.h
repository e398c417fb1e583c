// Level Zero results become Status here, in one place: the result's name,
// the call that failed, and what it was doing go into the message.
//
//   HAL_ZE_RETURN_IF_ERROR(syms, zeMemAllocDevice(ctx, &d, n, 64, dev, &p),
//                          "allocating %zu bytes", n);
//
// calls syms->zeMemAllocDevice(...) unless the fault hook injects a result
// for "zeMemAllocDevice" first (tests make any call fail this way, through
// the real loader too). Level Zero has no error-string entry point, so the
// names come from this file's table of ze_api.h's ze_result_t.
#pragma once

#include <level_zero/ze_api.h>

#include <functional>
#include <string_view>

#include "hal/status.h"

namespace hal::level_zero {

// "ZE_RESULT_ERROR_DEVICE_LOST"; "ZE_RESULT_<unknown>" for other values.
const char* ZeResultName(ze_result_t result);

// The status code a result maps to (RESOURCE_EXHAUSTED for out of memory,
// DATA_LOSS for a lost device, ...).
StatusCode ZeResultCode(ze_result_t result);

// "ZE_RESULT_ERROR_DEVICE_LOST 0x70000001 in zeCommandQueueSynchronize:
// <context>".
Status ZeResultToStatus(ze_result_t result, const char* call,
                        const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// A hook that may return a result other than ZE_RESULT_SUCCESS for a call
// named by its API name ("zeMemAllocDevice"); that result is used instead of
// calling Level Zero. Process-wide; set to null to remove. For tests.
using ZeFaultHook = std::function<ze_result_t(std::string_view call)>;
void SetZeFaultHook(ZeFaultHook hook);
// ZE_RESULT_SUCCESS unless the hook injects a fault for `call`.
ze_result_t ZeInjectedResult(const char* call);

}  // namespace hal::level_zero

#define HAL_ZE_RETURN_IF_ERROR(syms, expr, ...)                                \
  do {                                                                         \
    const char* _hal_ze_call = #expr; /* unexpanded: "zeMemFree(...)" */       \
    ze_result_t _hal_ze_result =                                               \
        ::hal::level_zero::ZeInjectedResult(_hal_ze_call);                     \
    if (_hal_ze_result == ZE_RESULT_SUCCESS) _hal_ze_result = (syms)->expr;    \
    if (_hal_ze_result != ZE_RESULT_SUCCESS) {                                 \
      return ::hal::level_zero::ZeResultToStatus(_hal_ze_result, _hal_ze_call, \
                                                 __VA_ARGS__);                 \
    }                                                                          \
  } while (false)
