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

#include "sim/metal/sim_metal_internal.h"

namespace hal::sim::metal {
namespace {

const char* Env(const char* name) {
  std::string vendor = std::string("HALSIM_METAL_") + name;
  if (const char* v = std::getenv(vendor.c_str())) return v;
  std::string common = std::string("HALSIM_") + name;
  return std::getenv(common.c_str());
}

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
    const char* seed = Env("SEED");
    e->ResetSchedule(seed ? std::strtoull(seed, nullptr, 10) : 0);
    if (const char* settle = Env("SETTLE_US")) {
      e->SetSettleNs(std::atoll(settle) * 1000);
    }
    if (const char* races = Env("RACES")) {
      e->SetAbortOnRace(std::strcmp(races, "abort") == 0);
    }
    if (const char* trace = Env("TRACE"); trace && *trace) {
      if (!e->SetTraceFile(trace)) {
        std::fprintf(stderr, "halsim_metal: cannot write the trace to %s\n", trace);
      }
    }
    if (const char* faults = Env("FAULTS")) {
      FaultPlan plan;
      std::string error;
      if (!FaultPlan::Parse(faults, &plan, &error) || !e->SetFaults(plan, &error)) {
        std::fprintf(stderr, "halsim_metal: malformed HALSIM_FAULTS '%s': %s\n", faults,
                     error.c_str());
      }
    }
    std::atexit(ReportAtExit);
    return e;
  }();
  return *engine;
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
