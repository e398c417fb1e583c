// The simulated Metal framework's shared state: the engine, rule reports,
// object accounting and the callback thread (sim_metal_internal.h).
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

#include "sim/engine/engine_control.h"
#include "sim/metal/sim_metal_internal.h"

namespace hal::sim::metal {
namespace {

std::atomic<bool> g_configuration_failed{false};

struct Accounting {
  std::mutex mutex;
  std::map<std::string, int64_t> live;
  std::atomic<uint64_t> violations{0};
};
Accounting& Acct() {
  static Accounting* a = new Accounting();
  return *a;
}

void DrainCallbacks();

void ReportAtExit() {
  // Objects are released at the end of completion handlers: let the ones
  // already posted finish, so that a command buffer whose last handler is
  // still returning is not counted as leaked.
  DrainCallbacks();
  std::string list;
  int64_t total = 0;
  {
    std::lock_guard<std::mutex> lock(Acct().mutex);
    for (const auto& [name, n] : Acct().live) {
      if (n == 0) continue;
      total += n;
      if (!list.empty()) list += ", ";
      list += std::to_string(n) + " " + name;
    }
  }
  if (total > 0) {
    std::fprintf(stderr,
                 "halsim_metal: %lld Metal objects leaked at exit (%s); "
                 "seed=%llu\n",
                 (long long)total, list.c_str(), (unsigned long long)E().seed());
  }
}

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

engine::Engine& E() {
  static engine::Engine* engine = [] {
    engine::Options options;
    options.log_prefix = "halsim_metal";
    auto* e = new engine::Engine(options);
    // The shared variables and their HALSIM_METAL_ aliases, read the same
    // way as every other simulated library (engine_control.h). A malformed
    // fault plan leaves the engine without faults and makes
    // MTLCreateSystemDefaultDevice return nil (ConfigurationFailed()).
    if (!engine::ConfigureFromEnvironment(*e, "HALSIM_METAL_")) {
      g_configuration_failed.store(true);
    }
    std::atexit(ReportAtExit);
    return e;
  }();
  return *engine;
}

bool ConfigurationFailed() {
  E();
  return g_configuration_failed.load();
}

void Violation(const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  Acct().violations.fetch_add(1);
  std::fprintf(stderr, "halsim_metal: Metal rule violated: %s; seed=%llu\n", text,
               (unsigned long long)E().seed());
}

uint64_t ViolationCount() { return Acct().violations.load(); }

void CountAlloc(const char* class_name) {
  std::lock_guard<std::mutex> lock(Acct().mutex);
  ++Acct().live[class_name];
}

void CountFree(const char* class_name) {
  std::lock_guard<std::mutex> lock(Acct().mutex);
  --Acct().live[class_name];
}

void RunOnCallbackThread(std::function<void()> fn) { Callbacks().Post(std::move(fn)); }

}  // namespace hal::sim::metal

// The halsim_control.h exports (engine_control.cc) act on this engine.
namespace hal::sim::engine {
Engine& ControlEngine() { return metal::E(); }
}  // namespace hal::sim::engine
