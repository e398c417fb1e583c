// The library state every skin shares: initialisation, devices, the
// host-callback rule, the native kernels and the handle table.
#include "sim/skin/skin.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/engine/engine_control.h"

namespace hal::sim::skin {

namespace {

const char* const kKindNames[] = {"streams", "events", "modules", "graphs",
                                  "executable graphs"};

// The libraries whose leaks are reported at exit (one per skin; never
// destroyed).
std::vector<const Library*>& Reported() {
  static auto* libraries = new std::vector<const Library*>();
  return *libraries;
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

Library::Library(const LibraryOptions& options) : options_(options) {
  engine::Options engine_options;
  engine_options.log_prefix = options.log_prefix;
  engine_options.device_memory_bytes = kDeviceMemoryBytes;
  engine_ = new Engine(engine_options);
  for (int i = 0; i < kMaxDevices; ++i) devices_[i].ordinal = i;
}

Code Library::Init(unsigned flags) {
  if (flags != 0) return Code::kInvalidValue;
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (initialized_) return Code::kOk;
  if (!engine::ConfigureFromEnvironment(*engine_, options_.env_alias)) {
    return Code::kInvalidValue;
  }
  if (const char* n =
          options_.devices_env ? std::getenv(options_.devices_env) : nullptr) {
    device_count_ = std::atoi(n);
    if (device_count_ < 0 || device_count_ > kMaxDevices) device_count_ = 1;
  }
  Reported().push_back(this);
  static const bool registered = [] {
    std::atexit([] {
      for (const Library* lib : Reported()) lib->ReportLeaks();
    });
    return true;
  }();
  (void)registered;
  initialized_ = true;
  return Code::kOk;
}

Scope* Library::device(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count_) return nullptr;
  return &devices_[ordinal];
}

Code Library::DeviceCount(int* count) {
  if (!initialized()) return Code::kNotInitialized;
  if (!count) return Code::kInvalidValue;
  *count = device_count_;
  return Code::kOk;
}

Code Library::GetDevice(int ordinal, int* out) {
  if (!initialized()) return Code::kNotInitialized;
  if (!out) return Code::kInvalidValue;
  if (!device(ordinal)) return Code::kInvalidDevice;
  *out = ordinal;
  return Code::kOk;
}

Code Library::CheckDevice(int ordinal) {
  if (!initialized()) return Code::kNotInitialized;
  return device(ordinal) ? Code::kOk : Code::kInvalidDevice;
}

Code Library::DeviceName(int ordinal, char* name, int len, const char* format) {
  Code code = CheckDevice(ordinal);
  if (code != Code::kOk) return code;
  if (!name || len <= 0) return Code::kInvalidValue;
  std::snprintf(name, len, format, ordinal);
  return Code::kOk;
}

Code Library::DeviceUuid(int ordinal, const char tag[4], char out[16]) {
  Code code = CheckDevice(ordinal);
  if (code != Code::kOk) return code;
  if (!out) return Code::kInvalidValue;
  engine::StableDeviceUuid(tag, static_cast<uint32_t>(ordinal),
                           reinterpret_cast<unsigned char*>(out));
  return Code::kOk;
}

Code Library::DeviceTotalMem(int ordinal, size_t* bytes) {
  Code code = CheckDevice(ordinal);
  if (code != Code::kOk) return code;
  if (!bytes) return Code::kInvalidValue;
  *bytes = kDeviceMemoryBytes;
  return Code::kOk;
}

Scope* Library::Retain(int ordinal) {
  std::lock_guard<std::mutex> lock(init_mutex_);
  ++devices_[ordinal].refs;
  return &devices_[ordinal];
}

Code Library::ReleaseScope(int ordinal) {
  Code code = CheckDevice(ordinal);
  if (code != Code::kOk) return code;
  std::lock_guard<std::mutex> lock(init_mutex_);
  Scope& scope = devices_[ordinal];
  if (scope.refs == 0) return Code::kInvalidContext;
  if (--scope.refs == 0) scope.domain.Clear();
  return Code::kOk;
}

Code Library::HostCallbackViolation(const char* call) {
  engine_->CountHostCallbackViolation();
  std::fprintf(stderr, "%s: %s called from a host callback; %s\n",
               options_.log_prefix, call, options_.callback_rule);
  return Code::kNotPermitted;
}

engine::KernelLibrary& Library::kernels() {
  std::call_once(kernels_once_, [this] {
    std::string dir;
    if (const char* env =
            engine::GetControlEnv("KERNEL_DIR", options_.env_alias);
        env && *env) {
      dir = env;
    } else if (options_.kernel_dir) {
      dir = options_.kernel_dir;
    }
    kernels_ = new engine::KernelLibrary(dir, "HALSIM_KERNEL_DIR",
                                         options_.log_prefix);
  });
  return *kernels_;
}

void Library::Register(Kind kind, const void* handle) {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  handles_[handle] = kind;
  ++live_[static_cast<int>(kind)];
}

bool Library::Unregister(Kind kind, const void* handle) {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  auto it = handles_.find(handle);
  if (it == handles_.end() || it->second != kind) return false;
  handles_.erase(it);
  --live_[static_cast<int>(kind)];
  return true;
}

bool Library::Live(Kind kind, const void* handle) const {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  auto it = handles_.find(handle);
  return it != handles_.end() && it->second == kind;
}

uint64_t Library::live_handles() const {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  return handles_.size();
}

void Library::ReportLeaks() const {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  if (handles_.empty()) return;
  std::string list;
  for (int k = 0; k < static_cast<int>(Kind::kCount); ++k) {
    if (live_[k] == 0) continue;
    if (!list.empty()) list += ", ";
    list += std::to_string(live_[k]) + " " + kKindNames[k];
  }
  std::fprintf(stderr, "%s: %zu %s handles leaked at exit (%s); seed=%llu\n",
               options_.log_prefix, handles_.size(), options_.api, list.c_str(),
               static_cast<unsigned long long>(engine_->seed()));
}

}  // namespace hal::sim::skin
