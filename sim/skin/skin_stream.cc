// The stream library's devices: initialisation, the device queries and the
// primary-context scopes.
#include "sim/skin/skin_stream.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace hal::sim::skin {

namespace {

LibraryOptions WithStreamKinds(LibraryOptions options) {
  options.kinds = {"streams", "events", "modules", "graphs",
                   "executable graphs"};
  return options;
}

}  // namespace

StreamLibrary::StreamLibrary(LibraryOptions options)
    : Library(WithStreamKinds(std::move(options))) {
  for (int i = 0; i < kMaxDevices; ++i) devices_[i].ordinal = i;
}

Code StreamLibrary::Init(unsigned flags) {
  if (flags != 0) return Code::kInvalidValue;
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (initialized_) return Code::kOk;
  if (!ApplyEnvironment()) return Code::kInvalidValue;
  device_count_ = ConfiguredDeviceCount(1, 0, kMaxDevices);
  if (device_count_ < 0) device_count_ = 1;
  initialized_ = true;
  return Code::kOk;
}

Scope* StreamLibrary::device(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count_) return nullptr;
  return &devices_[ordinal];
}

Code StreamLibrary::DeviceCount(int* count) {
  if (!initialized()) return Code::kNotInitialized;
  if (!count) return Code::kInvalidValue;
  *count = device_count_;
  return Code::kOk;
}

Code StreamLibrary::GetDevice(int ordinal, int* out) {
  if (!initialized()) return Code::kNotInitialized;
  if (!out) return Code::kInvalidValue;
  if (!device(ordinal)) return Code::kInvalidDevice;
  *out = ordinal;
  return Code::kOk;
}

Code StreamLibrary::CheckDevice(int ordinal) {
  if (!initialized()) return Code::kNotInitialized;
  return device(ordinal) ? Code::kOk : Code::kInvalidDevice;
}

Code StreamLibrary::DeviceName(int ordinal, char* name, int len,
                               const char* format) {
  Code code = CheckDevice(ordinal);
  if (code != Code::kOk) return code;
  if (!name || len <= 0) return Code::kInvalidValue;
  std::snprintf(name, len, format, ordinal);
  return Code::kOk;
}

Code StreamLibrary::DeviceUuid(int ordinal, const char tag[4], char out[16]) {
  Code code = CheckDevice(ordinal);
  if (code != Code::kOk) return code;
  if (!out) return Code::kInvalidValue;
  engine::StableDeviceUuid(tag, static_cast<uint32_t>(ordinal),
                           reinterpret_cast<unsigned char*>(out));
  return Code::kOk;
}

Code StreamLibrary::DeviceTotalMem(int ordinal, size_t* bytes) {
  Code code = CheckDevice(ordinal);
  if (code != Code::kOk) return code;
  if (!bytes) return Code::kInvalidValue;
  *bytes = kDeviceMemoryBytes;
  return Code::kOk;
}

Scope* StreamLibrary::Retain(int ordinal) {
  std::lock_guard<std::mutex> lock(init_mutex_);
  ++devices_[ordinal].refs;
  return &devices_[ordinal];
}

Code StreamLibrary::ReleaseScope(int ordinal) {
  Code code = CheckDevice(ordinal);
  if (code != Code::kOk) return code;
  std::lock_guard<std::mutex> lock(init_mutex_);
  Scope& scope = devices_[ordinal];
  if (scope.refs == 0) return Code::kInvalidContext;
  if (--scope.refs == 0) scope.domain.Clear();
  return Code::kOk;
}

}  // namespace hal::sim::skin
