// A vendor library opened at run time: the one place drivers call dlopen.
//
// Drivers never link their vendor library, so one binary runs on any
// machine; a library that is not there is UNAVAILABLE with a hint.
// Libraries are opened RTLD_NOW | RTLD_LOCAL (a simulator and the real
// library never interpose on each other) and never closed: vendor runtimes
// cannot be unloaded safely. Thread-safe; the object is a plain handle.
#pragma once

#include <string>
#include <vector>

#include "hal/status.h"

namespace hal::gpu {

class DynamicLibrary {
 public:
  // Opens the first of `candidates` that loads. UNAVAILABLE when none does:
  // "<api>: cannot load '<path>' (<loader error>)[, ...]; <hint>".
  static StatusOr<DynamicLibrary> Open(
      const std::vector<std::string>& candidates, const char* api,
      const char* hint);

  // The symbol's address, or null when the library does not export it.
  void* Symbol(const char* name) const;
  // Symbol(name) into `*slot`; when it is null and `required`, appends the
  // name to `*missing` (comma-separated), for the caller's one UNAVAILABLE
  // message naming every missing entry point.
  void Resolve(const char* name, void** slot, bool required,
               std::string* missing) const;
  const std::string& path() const { return path_; }

 private:
  DynamicLibrary(void* handle, std::string path)
      : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

}  // namespace hal::gpu
