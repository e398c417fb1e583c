#include "drivers/gpu/gpu_dynamic_library.h"

#include <dlfcn.h>

namespace hal::gpu {

StatusOr<DynamicLibrary> DynamicLibrary::Open(
    const std::vector<std::string>& candidates, const char* api,
    const char* hint) {
  std::string tried;
  for (const std::string& path : candidates) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      return DynamicLibrary(handle, path);
    }
    const char* err = dlerror();
    if (!tried.empty()) tried += ", ";
    tried += "'" + path + "' (" + (err ? err : "unknown error") + ")";
  }
  return UnavailableError("%s: cannot load %s; %s", api, tried.c_str(), hint);
}

void* DynamicLibrary::Symbol(const char* name) const {
  return dlsym(handle_, name);
}

void DynamicLibrary::Resolve(const char* name, void** slot, bool required,
                             std::string* missing) const {
  *slot = Symbol(name);
  if (!*slot && required) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
  }
}

}  // namespace hal::gpu
