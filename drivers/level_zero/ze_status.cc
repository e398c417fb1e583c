#include "drivers/level_zero/ze_status.h"

#include <cstdarg>
#include <cstdio>
#include <string>

#include "drivers/gpu/gpu_api_error.h"

namespace hal::level_zero {

namespace {
gpu::FaultHookSlot& Hook() {
  static auto* slot = new gpu::FaultHookSlot();
  return *slot;
}
}  // namespace

const char* ZeResultName(ze_result_t result) {
  switch (result) {
#define HAL_ZE_RESULT(name) \
  case name:                \
    return #name;
    HAL_ZE_RESULT(ZE_RESULT_SUCCESS)
    HAL_ZE_RESULT(ZE_RESULT_NOT_READY)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_LOST)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
    HAL_ZE_RESULT(ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX)
    HAL_ZE_RESULT(ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE)
    HAL_ZE_RESULT(ZE_RESULT_EXP_ERROR_REMOTE_DEVICE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_NOT_AVAILABLE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
    HAL_ZE_RESULT(ZE_RESULT_WARNING_DROPPED_DATA)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_UNINITIALIZED)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_SIZE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_ENUMERATION)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
    HAL_ZE_RESULT(ZE_RESULT_WARNING_ACTION_REQUIRED)
    HAL_ZE_RESULT(ZE_RESULT_ERROR_UNKNOWN)
#undef HAL_ZE_RESULT
    default:
      return "ZE_RESULT_<unknown>";
  }
}

StatusCode ZeResultCode(ze_result_t result) {
  switch (result) {
    case ZE_RESULT_SUCCESS:
      return StatusCode::kOk;
    case ZE_RESULT_NOT_READY:
      return StatusCode::kDeadlineExceeded;
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
      return StatusCode::kResourceExhausted;
    // The device's state is gone: every later call fails too.
    case ZE_RESULT_ERROR_DEVICE_LOST:
    case ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET:
      return StatusCode::kDataLoss;
    case ZE_RESULT_ERROR_UNINITIALIZED:
    case ZE_RESULT_ERROR_NOT_AVAILABLE:
    case ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE:
    case ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE:
      return StatusCode::kUnavailable;
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION:
    case ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT:
      return StatusCode::kUnimplemented;
    case ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE:
    case ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED:
      return StatusCode::kFailedPrecondition;
    case ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS:
      return StatusCode::kPermissionDenied;
    case ZE_RESULT_ERROR_UNKNOWN:
      return StatusCode::kInternal;
    default:
      // The remaining ZE_RESULT_ERROR_INVALID_* and UNSUPPORTED_SIZE/
      // ALIGNMENT, module build failures: the caller's input.
      return StatusCode::kInvalidArgument;
  }
}

Status ZeResultToStatus(ze_result_t result, const char* call,
                        const char* format, ...) {
  char code[16];
  std::snprintf(code, sizeof(code), "0x%x", static_cast<unsigned>(result));
  va_list args;
  va_start(args, format);
  std::string message =
      gpu::ApiErrorMessage(std::string(ZeResultName(result)) + " " + code,
                           nullptr, call, format, args);
  va_end(args);
  return Status(ZeResultCode(result), std::move(message));
}

void SetZeFaultHook(ZeFaultHook hook) {
  if (!hook) return Hook().Set(nullptr);
  Hook().Set([hook = std::move(hook)](std::string_view call) {
    return static_cast<int>(hook(call));
  });
}

ze_result_t ZeInjectedResult(const char* call) {
  return static_cast<ze_result_t>(Hook().Injected(call));
}

}  // namespace hal::level_zero
