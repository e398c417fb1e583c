#include "drivers/gpu/gpu_api_error.h"

#include <cstdio>

namespace hal::gpu {

namespace {
std::string_view CallName(std::string_view call) {
  if (auto paren = call.find('('); paren != std::string_view::npos) {
    call = call.substr(0, paren);
  }
  return call;
}
}  // namespace

void FaultHookSlot::Set(Hook hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  hook_ = std::move(hook);
  set_.store(static_cast<bool>(hook_), std::memory_order_release);
}

int FaultHookSlot::Injected(const char* call) {
  if (!set_.load(std::memory_order_acquire)) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  return hook_ ? hook_(CallName(call)) : 0;
}

std::string ApiErrorMessage(const std::string& error_name, const char* text,
                            const char* call, const char* format,
                            va_list args) {
  char context[512];
  std::vsnprintf(context, sizeof(context), format, args);
  std::string message = error_name + " (" + (text ? text : "no description") +
                        ") in " + std::string(CallName(call));
  if (context[0]) message += std::string(": ") + context;
  return message;
}

}  // namespace hal::gpu
