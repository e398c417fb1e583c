// What the vendor error funnels (cuda_status.h, hip_status.h) share: the
// fault hook slot that lets a test make any API call fail, and the message
// every converted error has. Each funnel keeps its own result type and
// status-code mapping.
#pragma once

#include <atomic>
#include <cstdarg>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace hal::gpu {

// A process-wide hook, per API, that may return a nonzero vendor result for
// a call named by its API name ("cuMemAlloc", "hipMalloc"). Thread-safe;
// free when unset (one atomic load).
class FaultHookSlot {
 public:
  using Hook = std::function<int(std::string_view call)>;
  void Set(Hook hook);
  // 0 unless the hook injects a result for `call` ("name(args...)" or
  // "name").
  int Injected(const char* call);

 private:
  std::mutex mutex_;
  Hook hook_;
  std::atomic<bool> set_{false};
};

// "<error name> (<error text>) in <call name>[: <context>]", where the call
// name is `call` up to its first '(' and the context is printf(format, args).
std::string ApiErrorMessage(const std::string& error_name, const char* text,
                            const char* call, const char* format, va_list args);

}  // namespace hal::gpu
