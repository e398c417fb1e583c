#include "drivers/amdgpu/amdgpu_status.h"

#include <cstdarg>
#include <cstring>
#include <string>

#include "drivers/gpu/gpu_api_error.h"

namespace hal::amdgpu {

namespace {
gpu::FaultHookSlot& Hook() {
  static auto* slot = new gpu::FaultHookSlot();
  return *slot;
}
}  // namespace

StatusCode HsaStatusCode(hsa_status_t status) {
  switch (static_cast<int>(status)) {
    case HSA_STATUS_SUCCESS:
    case HSA_STATUS_INFO_BREAK:
      return StatusCode::kOk;
    case HSA_STATUS_ERROR_INVALID_ARGUMENT:
    case HSA_STATUS_ERROR_INVALID_AGENT:
    case HSA_STATUS_ERROR_INVALID_REGION:
    case HSA_STATUS_ERROR_INVALID_SIGNAL:
    case HSA_STATUS_ERROR_INVALID_QUEUE:
    case HSA_STATUS_ERROR_INVALID_QUEUE_CREATION:
    case HSA_STATUS_ERROR_INVALID_ALLOCATION:
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT:
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER:
    case HSA_STATUS_ERROR_INVALID_EXECUTABLE:
    case HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL:
    case HSA_STATUS_ERROR_INVALID_SYMBOL_NAME:
    case HSA_STATUS_ERROR_INVALID_ISA:
    case HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS:
    case HSA_STATUS_ERROR_VARIABLE_UNDEFINED:
      return StatusCode::kInvalidArgument;
    case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
      return StatusCode::kResourceExhausted;
    case HSA_STATUS_ERROR_NOT_INITIALIZED:
      return StatusCode::kUnavailable;
    case HSA_STATUS_ERROR_FROZEN_EXECUTABLE:
    case HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED:
      return StatusCode::kFailedPrecondition;
    // Errors that lose the device's (queue's) state.
    case HSA_STATUS_ERROR_INVALID_PACKET_FORMAT:
    case HSA_STATUS_ERROR_EXCEPTION:
    case HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION:
    case HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION:
    case HSA_STATUS_ERROR_MEMORY_FAULT:
    // Not recoverable: what a lost device (a GPU hang or reset) reports.
    case HSA_STATUS_ERROR_FATAL:
      return StatusCode::kDataLoss;
    default:
      return StatusCode::kInternal;
  }
}

Status HsaStatusToStatus(const HsaSymbols* syms, hsa_status_t status,
                         const char* call, const char* format, ...) {
  // hsa_status_string's text starts with the status name in ROCr
  // ("HSA_STATUS_ERROR_...: text"); the name is the part before ':'.
  const char* text = nullptr;
  if (!syms || !syms->hsa_status_string ||
      syms->hsa_status_string(status, &text) != HSA_STATUS_SUCCESS) {
    text = nullptr;
  }
  std::string name = "HSA status";
  std::string detail = text ? text : "";
  if (const char* colon = text ? std::strchr(text, ':') : nullptr) {
    name.assign(text, colon - text);
    detail = colon + 1;
    while (!detail.empty() && detail[0] == ' ') detail.erase(0, 1);
  }
  char code[16];
  std::snprintf(code, sizeof(code), "0x%x", static_cast<unsigned>(status));
  va_list args;
  va_start(args, format);
  std::string message = gpu::ApiErrorMessage(
      name + " " + code, detail.empty() ? nullptr : detail.c_str(), call,
      format, args);
  va_end(args);
  return Status(HsaStatusCode(status), std::move(message));
}

void SetHsaFaultHook(HsaFaultHook hook) {
  if (!hook) return Hook().Set(nullptr);
  Hook().Set([hook = std::move(hook)](std::string_view call) {
    return static_cast<int>(hook(call));
  });
}

hsa_status_t HsaInjectedError(const char* call) {
  return static_cast<hsa_status_t>(Hook().Injected(call));
}

}  // namespace hal::amdgpu
