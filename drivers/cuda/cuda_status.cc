#include "drivers/cuda/cuda_status.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

namespace hal::cuda {

namespace {
std::mutex& HookMutex() {
  static std::mutex mutex;
  return mutex;
}
CudaFaultHook& Hook() {
  static auto* hook = new CudaFaultHook();
  return *hook;
}
std::atomic<bool> g_hook_set{false};
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
  char context[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(context, sizeof(context), format, args);
  va_end(args);
  std::string call_name(call);
  if (auto paren = call_name.find('('); paren != std::string::npos) {
    call_name.resize(paren);
  }
  std::string message =
      (name ? std::string(name) : "CUDA error " + std::to_string(int(result))) +
      " (" + (text ? text : "no description") + ") in " + call_name;
  if (context[0]) message += std::string(": ") + context;
  return Status(CudaResultCode(result), std::move(message));
}

void SetCudaFaultHook(CudaFaultHook hook) {
  std::lock_guard<std::mutex> lock(HookMutex());
  Hook() = std::move(hook);
  g_hook_set.store(static_cast<bool>(Hook()), std::memory_order_release);
}

CUresult CudaInjectedResult(const char* call) {
  if (!g_hook_set.load(std::memory_order_acquire)) return CUDA_SUCCESS;
  std::string_view name(call);
  if (auto paren = name.find('('); paren != std::string_view::npos) {
    name = name.substr(0, paren);
  }
  std::lock_guard<std::mutex> lock(HookMutex());
  return Hook() ? Hook()(name) : CUDA_SUCCESS;
}

}  // namespace hal::cuda
