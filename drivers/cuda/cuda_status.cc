#include "drivers/cuda/cuda_status.h"

#include <cstdarg>
#include <string>

#include "drivers/gpu/gpu_api_error.h"

namespace hal::cuda {

namespace {
gpu::FaultHookSlot& Hook() {
  static auto* slot = new gpu::FaultHookSlot();
  return *slot;
}
}  // namespace

StatusCode CudaResultCode(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return StatusCode::kOk;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_NOT_FOUND:
      return StatusCode::kInvalidArgument;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return StatusCode::kResourceExhausted;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
      return StatusCode::kUnavailable;
    case CUDA_ERROR_NOT_READY:
      return StatusCode::kDeadlineExceeded;
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_ILLEGAL_STATE:
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
      return StatusCode::kFailedPrecondition;
    case CUDA_ERROR_NOT_SUPPORTED:
      return StatusCode::kUnimplemented;
    // Errors that corrupt the context: every later call fails too, as when a
    // device is lost.
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ASSERT:
      return StatusCode::kDataLoss;
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return StatusCode::kAborted;
    default:
      return StatusCode::kInternal;
  }
}

Status CudaResultToStatus(const CudaSymbols* syms, CUresult result,
                          const char* call, const char* format, ...) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (syms && syms->cuGetErrorName) syms->cuGetErrorName(result, &name);
  if (syms && syms->cuGetErrorString) syms->cuGetErrorString(result, &text);
  va_list args;
  va_start(args, format);
  std::string message = gpu::ApiErrorMessage(
      name ? std::string(name) : "CUDA error " + std::to_string(int(result)),
      text, call, format, args);
  va_end(args);
  return Status(CudaResultCode(result), std::move(message));
}

void SetCudaFaultHook(CudaFaultHook hook) {
  if (!hook) return Hook().Set(nullptr);
  Hook().Set([hook = std::move(hook)](std::string_view call) {
    return static_cast<int>(hook(call));
  });
}

CUresult CudaInjectedResult(const char* call) {
  return static_cast<CUresult>(Hook().Injected(call));
}

}  // namespace hal::cuda
