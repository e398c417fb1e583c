#include "drivers/hip/hip_status.h"

#include <cstdarg>
#include <string>

#include "drivers/gpu/gpu_api_error.h"

namespace hal::hip {

namespace {
gpu::FaultHookSlot& Hook() {
  static auto* slot = new gpu::FaultHookSlot();
  return *slot;
}
}  // namespace

StatusCode HipErrorCode(hipError_t error) {
  switch (error) {
    case hipSuccess:
      return StatusCode::kOk;
    case hipErrorInvalidValue:
    case hipErrorInvalidHandle:
    case hipErrorInvalidImage:
    case hipErrorInvalidKernelFile:
    case hipErrorNoBinaryForGpu:
    case hipErrorInvalidDeviceFunction:
    case hipErrorNotFound:
      return StatusCode::kInvalidArgument;
    case hipErrorOutOfMemory:
      return StatusCode::kResourceExhausted;
    case hipErrorNotInitialized:
    case hipErrorDeinitialized:
    case hipErrorNoDevice:
    case hipErrorInvalidDevice:
    case hipErrorInsufficientDriver:
      return StatusCode::kUnavailable;
    case hipErrorNotReady:
      return StatusCode::kDeadlineExceeded;
    case hipErrorIllegalState:
    case hipErrorHostMemoryAlreadyRegistered:
    case hipErrorHostMemoryNotRegistered:
    case hipErrorStreamCaptureUnsupported:
      return StatusCode::kFailedPrecondition;
    case hipErrorNotSupported:
      return StatusCode::kUnimplemented;
    // Errors that lose the device's state: every later call fails too, as
    // when a device is lost.
    case hipErrorLaunchFailure:
    case hipErrorIllegalAddress:
    case hipErrorAssert:
    case hipErrorContextIsDestroyed:
      return StatusCode::kDataLoss;
    case hipErrorLaunchTimeOut:
      return StatusCode::kAborted;
    default:
      return StatusCode::kInternal;
  }
}

Status HipErrorToStatus(const HipSymbols* syms, hipError_t error,
                        const char* call, const char* format, ...) {
  // hipGetErrorName gives "hipErrorUnknown" for codes it does not know.
  const char* name =
      syms && syms->hipGetErrorName ? syms->hipGetErrorName(error) : nullptr;
  const char* text = syms && syms->hipGetErrorString
                         ? syms->hipGetErrorString(error)
                         : nullptr;
  va_list args;
  va_start(args, format);
  std::string message = gpu::ApiErrorMessage(
      (name ? std::string(name) : std::string("HIP error")) + " " +
          std::to_string(static_cast<int>(error)),
      text, call, format, args);
  va_end(args);
  return Status(HipErrorCode(error), std::move(message));
}

void SetHipFaultHook(HipFaultHook hook) {
  if (!hook) return Hook().Set(nullptr);
  Hook().Set([hook = std::move(hook)](std::string_view call) {
    return static_cast<int>(hook(call));
  });
}

hipError_t HipInjectedError(const char* call) {
  return static_cast<hipError_t>(Hook().Injected(call));
}

}  // namespace hal::hip
