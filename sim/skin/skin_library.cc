// The edge every simulated vendor library shares: configuration, kinds and
// handles, rule reports, kernels and the leak report.
#include "sim/skin/skin_library.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/core/fault_plan.h"

namespace hal::sim::skin {

namespace {

// The libraries whose leaks are reported at exit (one per simulated
// library in this shared object; never destroyed).
std::vector<const Library*>& Reported() {
  static auto* libraries = new std::vector<const Library*>();
  return *libraries;
}
std::mutex& ReportedMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

}  // namespace

Code FromEngine(engine::Error error) {
  using engine::Error;
  switch (error) {
    case Error::kOk:
      return Code::kOk;
    case Error::kInvalidValue:
      return Code::kInvalidValue;
    case Error::kOutOfMemory:
      return Code::kOutOfMemory;
    case Error::kIllegalAddress:
      return Code::kIllegalAddress;
    case Error::kLaunchFailed:
      return Code::kLaunchFailed;
    case Error::kAlreadyRegistered:
      return Code::kAlreadyRegistered;
    case Error::kNotRegistered:
      return Code::kNotRegistered;
    case Error::kBusy:
      return Code::kNotReady;
  }
  return Code::kNone;
}

Library::Library(LibraryOptions options) : options_(std::move(options)) {
  engine::Options engine_options;
  engine_options.log_prefix = options_.log_prefix;
  engine_options.device_memory_bytes = options_.device_memory_bytes;
  engine_ = new Engine(engine_options);
  if (options_.device_loss_handler) {
    engine_->SetDeviceLossHandler(options_.device_loss_handler);
  }
  for (const char* name : options_.kinds) KindId(name);
  std::lock_guard<std::mutex> lock(ReportedMutex());
  Reported().push_back(this);
  static const bool registered = [] {
    std::atexit([] {
      std::vector<const Library*> libraries;
      {
        std::lock_guard<std::mutex> lock(ReportedMutex());
        libraries = Reported();
      }
      for (const Library* library : libraries) {
        if (library->options().before_leak_report) {
          library->options().before_leak_report();
        }
        library->ReportLeaks();
      }
    });
    return true;
  }();
  (void)registered;
}

const char* Library::GetEnv(const char* name, std::string* used) const {
  for (std::string var : {std::string("HALSIM_") + name,
                          std::string(options_.env_alias) + name}) {
    if (const char* value = std::getenv(var.c_str())) {
      if (used) *used = var;
      return value;
    }
  }
  return nullptr;
}

bool Library::ApplyEnvironment() {
  std::lock_guard<std::mutex> lock(configure_mutex_);
  Engine& engine = *engine_;
  if (!engine.schedule_was_reset()) {
    const char* seed = GetEnv("SEED");
    engine.ResetSchedule(seed ? std::strtoull(seed, nullptr, 10) : 0);
  }
  if (const char* settle = GetEnv("SETTLE_US")) {
    engine.SetSettleNs(std::atoll(settle) * 1000);
  }
  if (const char* races = GetEnv("RACES")) {
    engine.SetAbortOnRace(std::strcmp(races, "abort") == 0);
  }
  if (const char* trace = GetEnv("TRACE");
      trace && *trace && !engine.SetTraceFile(trace)) {
    std::fprintf(stderr, "%s: cannot write the trace to %s\n", log_prefix(),
                 trace);
  }
  std::string var;
  if (const char* faults = GetEnv("FAULTS", &var)) {
    FaultPlan plan;
    std::string error;
    if (!FaultPlan::Parse(faults, &plan, &error) ||
        !engine.SetFaults(plan, &error)) {
      std::fprintf(stderr, "%s: malformed %s '%s': %s\n", log_prefix(),
                   var.c_str(), faults, error.c_str());
      return false;
    }
  }
  return true;
}

int Library::ConfiguredDeviceCount(int fallback, int min, int max) const {
  const char* env =
      options_.devices_env ? std::getenv(options_.devices_env) : nullptr;
  if (!env || !*env) return fallback;
  char* end = nullptr;
  long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < min || n > max) {
    std::fprintf(stderr, "%s: %s=%s: want %d..%d\n", log_prefix(),
                 options_.devices_env, env, min, max);
    return -1;
  }
  return static_cast<int>(n);
}

int Library::KindId(const char* name) {
  std::lock_guard<std::mutex> lock(kinds_mutex_);
  for (size_t i = 0; i < kind_names_.size(); ++i) {
    if (kind_names_[i] == name) return static_cast<int>(i);
  }
  if (kind_names_.size() == kMaxKinds) return kMaxKinds - 1;
  kind_names_.emplace_back(name);
  return static_cast<int>(kind_names_.size() - 1);
}

void Library::CountCreated(int kind) { live_[kind].fetch_add(1); }
void Library::CountDestroyed(int kind) { live_[kind].fetch_sub(1); }

uint64_t Library::live_objects() const {
  int64_t n = 0;
  for (const auto& live : live_) n += live.load();
  return n > 0 ? static_cast<uint64_t>(n) : 0;
}

void Library::Register(int kind, const void* handle) {
  {
    std::lock_guard<std::mutex> lock(handles_mutex_);
    handles_[handle] = kind;
  }
  CountCreated(kind);
}

bool Library::Unregister(int kind, const void* handle) {
  {
    std::lock_guard<std::mutex> lock(handles_mutex_);
    auto it = handles_.find(handle);
    if (it == handles_.end() || it->second != kind) return false;
    handles_.erase(it);
  }
  CountDestroyed(kind);
  return true;
}

bool Library::Live(int kind, const void* handle) const {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  auto it = handles_.find(handle);
  return it != handles_.end() && it->second == kind;
}

void Library::Violation(const char* call, const char* format, ...) {
  va_list args;
  va_start(args, format);
  ViolationV(call, format, args);
  va_end(args);
}

void Library::ViolationV(const char* call, const char* format, va_list args) {
  violations_.fetch_add(1);
  char text[512];
  std::vsnprintf(text, sizeof(text), format, args);
  const auto seed = static_cast<unsigned long long>(engine_->seed());
  std::fprintf(stderr,
               "%s: %s rule violated: %s%s%s; seed=%llu (rerun with "
               "HALSIM_SEED=%llu)\n",
               log_prefix(), options_.api, call ? call : "", call ? ": " : "",
               text, seed, seed);
}

Code Library::HostCallbackViolation(const char* call) {
  engine_->CountHostCallbackViolation();
  std::fprintf(stderr, "%s: %s called from a host callback; %s\n", log_prefix(),
               call, options_.callback_rule ? options_.callback_rule : "");
  return Code::kNotPermitted;
}

engine::KernelLibrary& Library::kernels() {
  std::call_once(kernels_once_, [this] {
    std::string dir;
    if (const char* env = GetEnv("KERNEL_DIR"); env && *env) {
      dir = env;
    } else if (options_.kernel_dir) {
      dir = options_.kernel_dir;
    }
    kernels_ =
        new engine::KernelLibrary(dir, "HALSIM_KERNEL_DIR", log_prefix());
  });
  return *kernels_;
}

void Library::ReportLeaks() const {
  std::string list;
  int64_t total = 0;
  {
    std::lock_guard<std::mutex> lock(kinds_mutex_);
    for (size_t k = 0; k < kind_names_.size(); ++k) {
      int64_t n = live_[k].load();
      if (n <= 0) continue;
      total += n;
      if (!list.empty()) list += ", ";
      list += std::to_string(n) + " " + kind_names_[k];
    }
  }
  if (total == 0) return;
  std::fprintf(stderr, "%s: %lld %s handles leaked at exit (%s); seed=%llu\n",
               log_prefix(), static_cast<long long>(total), options_.api,
               list.c_str(), static_cast<unsigned long long>(engine_->seed()));
}

}  // namespace hal::sim::skin
