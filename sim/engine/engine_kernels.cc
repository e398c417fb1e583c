#include "sim/engine/engine_kernels.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hal::sim::engine {

bool SignatureMatches(const Kernel& kernel,
                      const std::vector<int>& param_bytes) {
  const hal_sim_kernel_info& info = *kernel.info;
  const size_t n = param_bytes.size();
  if (info.abi_version != HAL_SIM_KERNEL_ABI_VERSION ||
      n != size_t{info.binding_count} + info.constant_count) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (param_bytes[i] != (i < info.binding_count ? 8 : 4)) return false;
  }
  return true;
}

void ReadLaunchParams(const Kernel& kernel, void* const* params,
                      std::vector<uintptr_t>* pointers,
                      std::vector<uint32_t>* constants) {
  const uint32_t nb = kernel.info->binding_count;
  const uint32_t nc = kernel.info->constant_count;
  pointers->resize(nb);
  constants->resize(nc);
  for (uint32_t i = 0; i < nb; ++i) {
    uint64_t p;
    std::memcpy(&p, params[i], 8);
    (*pointers)[i] = static_cast<uintptr_t>(p);
  }
  for (uint32_t i = 0; i < nc; ++i) {
    std::memcpy(&(*constants)[i], params[nb + i], 4);
  }
}

KernelLibrary::KernelLibrary(std::string dir, std::string hint,
                             const char* log_prefix,
                             const char* installed_subdir)
    : dir_(std::move(dir)),
      hint_(std::move(hint)),
      log_prefix_(log_prefix),
      installed_subdir_(installed_subdir) {}

namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The install's copy of `subdir`: the folder of the shared object this
// function is in (lib/libhalsim_*.so), then HALSIM_INSTALL_DATA_FROM_LIBDIR
// (the relative path from the install's library folder to share/gpuhal,
// computed by CMake from GNUInstallDirs), then `subdir`. Empty when this
// code is not in a shared object or the folder does not exist.
std::string InstalledDir(const char* subdir) {
#ifdef HALSIM_INSTALL_DATA_FROM_LIBDIR
  Dl_info info;
  if (!subdir || dladdr(reinterpret_cast<void*>(&InstalledDir), &info) == 0 ||
      !info.dli_fname) {
    return "";
  }
  std::string self = info.dli_fname;
  size_t slash = self.rfind('/');
  if (slash == std::string::npos) return "";
  std::string dir = self.substr(0, slash) + "/" +
                    HALSIM_INSTALL_DATA_FROM_LIBDIR + "/" + subdir;
  return IsDirectory(dir) ? dir : "";
#else
  (void)subdir;
  return "";
#endif
}

}  // namespace

bool KernelLibrary::Find(const std::string& name, Kernel* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!loaded_) {
    loaded_ = true;
    // A build-tree path compiled into an installed library is gone (or
    // stale) on the machine it is installed on: use the install's copy.
    if (!IsDirectory(dir_)) {
      std::string installed = InstalledDir(installed_subdir_);
      if (!installed.empty()) dir_ = installed;
    }
    if (DIR* d = opendir(dir_.c_str())) {
      std::vector<std::string> files;
      while (dirent* e = readdir(d)) {
        std::string f = e->d_name;
        if (f.size() > 7 && f.compare(f.size() - 7, 7, ".sim.so") == 0) {
          files.push_back(dir_ + "/" + f);
        }
      }
      closedir(d);
      std::sort(files.begin(), files.end());  // a stable search order
      for (const std::string& f : files) {
        if (void* h = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL)) {
          handles_.push_back(h);
        } else {
          std::fprintf(stderr, "%s: cannot load %s: %s\n", log_prefix_,
                       f.c_str(), dlerror());
        }
      }
    }
    if (handles_.empty()) {
      std::fprintf(stderr,
                   "%s: no native kernel modules (*.sim.so) in '%s'; set %s\n",
                   log_prefix_, dir_.c_str(), hint_.c_str());
    }
  }
  std::string info_name = name + "__hal_sim_info";
  for (void* h : handles_) {
    void* f = dlsym(h, name.c_str());
    void* i = dlsym(h, info_name.c_str());
    if (f && i) {
      out->name = name;
      out->fn = reinterpret_cast<hal_sim_kernel_fn>(f);
      out->info = static_cast<const hal_sim_kernel_info*>(i);
      return true;
    }
  }
  return false;
}

}  // namespace hal::sim::engine
