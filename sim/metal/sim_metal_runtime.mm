// The simulated Metal framework's edge (sim/skin/skin_library.h: the engine,
// configuration, rule reports, object accounting, the leak report) and its
// callback thread (sim_metal_internal.h).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "sim/metal/sim_metal_internal.h"
#include "sim/skin/skin_control.h"

namespace hal::sim::metal {
namespace {

std::atomic<bool> g_configuration_failed{false};

void DrainCallbacks();

class CallbackThread {
 public:
  void Post(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_) {
      started_ = true;
      std::thread([this] { Main(); }).detach();
    }
    queue_.push_back(std::move(fn));
    ++pending_;
    cv_.notify_all();
  }
  // Waits (at most `timeout`) until every posted callback has returned.
  void Drain(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return pending_ == 0; });
  }

 private:
  void Main() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      {
        engine::Engine::HostCall call(E());
        fn();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      --pending_;
      cv_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool started_ = false;
  int pending_ = 0;  // posted and not yet returned
};

CallbackThread& Callbacks() {
  static CallbackThread* thread = new CallbackThread();
  return *thread;
}

void DrainCallbacks() { Callbacks().Drain(std::chrono::seconds(5)); }

}  // namespace

skin::Library& L() {
  static skin::Library* library = [] {
    auto* l = new skin::Library({
        .log_prefix = "halsim_metal",
        .api = "Metal",
        .env_alias = "HALSIM_METAL_",
        .devices_env = nullptr,
        .kernel_dir = HALSIM_KERNEL_MODULES_DIR,
        .callback_rule = nullptr,
        .kinds = {},
        .device_memory_bytes = size_t{16} << 30,
        // Objects are released at the end of completion handlers: let the
        // ones already posted finish, so that a command buffer whose last
        // handler is still returning is not counted as leaked.
        .before_leak_report = &DrainCallbacks,
    });
    // Metal has no init call: the shared variables and their HALSIM_METAL_
    // aliases are read on first use. A malformed fault plan leaves the
    // engine without faults and makes MTLCreateSystemDefaultDevice return
    // nil (ConfigurationFailed()).
    if (!l->ApplyEnvironment()) g_configuration_failed.store(true);
    return l;
  }();
  return *library;
}

engine::Engine& E() { return L().engine(); }

bool ConfigurationFailed() {
  L();
  return g_configuration_failed.load();
}

void Violation(const char* format, ...) {
  va_list args;
  va_start(args, format);
  L().ViolationV(nullptr, format, args);
  va_end(args);
}

uint64_t ViolationCount() { return L().violations(); }

void CountAlloc(const char* class_name) {
  L().CountCreated(L().KindId(class_name));
}

void CountFree(const char* class_name) {
  L().CountDestroyed(L().KindId(class_name));
}

void RunOnCallbackThread(std::function<void()> fn) {
  Callbacks().Post(std::move(fn));
}

}  // namespace hal::sim::metal

HALSIM_DEFINE_CONTROL_EXPORTS(::hal::sim::metal::L)
