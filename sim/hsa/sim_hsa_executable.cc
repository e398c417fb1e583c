// The HSA skin's code objects and executables.
//
// A code object (hsa_code_object_reader_create_from_memory) is an AMDGPU
// ELF for gfx90a; loading it into an executable reads its kernel
// descriptors (NAME.kd, sim/engine/engine_amdgpu_elf.h). Each kernel runs as
// the native (sim-format) build of the kernel of the same name, found in the
// test-kernel modules (build/<preset>/kernels/modules, HALSIM_KERNEL_DIR
// overrides it) or in the AMDGPU driver's device library (its blit kernels,
// HALSIM_HSA_DEVICE_LIBRARY_DIR); the AMDGPU code itself never runs. A
// symbol `NAME.kd` of a frozen executable gives the kernel object (the
// address of a copy of its descriptor) and the segment sizes. The kernel
// ABI's arguments (binding pointers, then 4-byte constants) must fit in the
// descriptor's kernarg size.
#include <cstring>
#include <map>
#include <memory>

#include "sim/engine/engine_amdgpu_elf.h"
#include "sim/engine/engine_kernels.h"
#include "sim/hsa/sim_hsa_internal.h"

namespace hal::sim::hsa {

namespace {

engine::KernelLibrary& TestKernels() { return L().kernels(); }

engine::KernelLibrary& DeviceLibraryKernels() {
  static engine::KernelLibrary* kernels = [] {
    std::string dir;
    if (const char* env = std::getenv("HALSIM_HSA_DEVICE_LIBRARY_DIR");
        env && *env) {
      dir = env;
    } else {
#ifdef HALSIM_HSA_DEVICE_LIBRARY_DIR
      dir = HALSIM_HSA_DEVICE_LIBRARY_DIR;
#endif
    }
    return new engine::KernelLibrary(dir, "HALSIM_HSA_DEVICE_LIBRARY_DIR",
                                     "halsim_hsa", "hsa-device-library");
  }();
  return *kernels;
}

bool FindNative(const std::string& name, engine::Kernel* out) {
  // The device library's kernels are named amdgpu_*; look there first so
  // that a test-kernel directory without them prints no warning for them.
  if (name.rfind("amdgpu_", 0) == 0)
    return DeviceLibraryKernels().Find(name, out);
  return TestKernels().Find(name, out);
}

struct Reader {
  std::vector<uint8_t> bytes;
};

struct Symbol {
  std::string name;                       // "NAME.kd"
  std::unique_ptr<uint8_t[]> descriptor;  // 64 bytes: the kernel object
  std::unique_ptr<KernelObject> object;   // null: no native build
};

struct Executable {
  bool frozen = false;
  Agent* agent = nullptr;
  std::vector<std::unique_ptr<Symbol>> symbols;
};

std::mutex& ObjectsMutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::map<uint64_t, const KernelObject*>& Objects() {
  static auto* m = new std::map<uint64_t, const KernelObject*>();
  return *m;
}

}  // namespace

const KernelObject* FindKernelObject(uint64_t kernel_object) {
  std::lock_guard<std::mutex> lock(ObjectsMutex());
  auto it = Objects().find(kernel_object);
  return it == Objects().end() ? nullptr : it->second;
}

}  // namespace hal::sim::hsa

using namespace hal::sim::hsa;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

HALSIM_EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(
    const void* code_object, size_t size,
    hsa_code_object_reader_t* code_object_reader) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  if (!code_object || size == 0 || !code_object_reader) {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  auto* r = new Reader();
  r->bytes.assign(static_cast<const uint8_t*>(code_object),
                  static_cast<const uint8_t*>(code_object) + size);
  code_object_reader->handle = reinterpret_cast<uint64_t>(r);
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t
hsa_code_object_reader_destroy(hsa_code_object_reader_t code_object_reader) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  auto* r = reinterpret_cast<Reader*>(code_object_reader.handle);
  if (!r) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  delete r;
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_executable_create_alt(
    hsa_profile_t profile,
    hsa_default_float_rounding_mode_t default_float_rounding_mode,
    const char* options, hsa_executable_t* executable) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  (void)default_float_rounding_mode;
  (void)options;
  if (!executable ||
      (profile != HSA_PROFILE_BASE && profile != HSA_PROFILE_FULL)) {
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  executable->handle = reinterpret_cast<uint64_t>(new Executable());
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_executable_load_agent_code_object(
    hsa_executable_t executable, hsa_agent_t agent,
    hsa_code_object_reader_t code_object_reader, const char* options,
    hsa_loaded_code_object_t* loaded_code_object) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  (void)options;
  auto* exe = reinterpret_cast<Executable*>(executable.handle);
  auto* r = reinterpret_cast<Reader*>(code_object_reader.handle);
  Agent* a = AgentOf(agent);
  if (!exe) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (!r) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  if (!a || a->type != HSA_DEVICE_TYPE_GPU)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  if (exe->frozen) return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
  std::vector<engine::AmdgpuKernelDescriptor> kernels;
  std::string error;
  if (!engine::ParseAmdgpuCodeObject(r->bytes.data(), r->bytes.size(), &kernels,
                                     &error)) {
    std::fprintf(stderr,
                 "halsim_hsa: hsa_executable_load_agent_code_object: %s\n",
                 error.c_str());
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  exe->agent = a;
  for (const engine::AmdgpuKernelDescriptor& k : kernels) {
    auto sym = std::make_unique<Symbol>();
    sym->name = k.name + ".kd";
    sym->descriptor.reset(new uint8_t[64]());
    std::memcpy(sym->descriptor.get() + 0, &k.group_segment_size, 4);
    std::memcpy(sym->descriptor.get() + 4, &k.private_segment_size, 4);
    std::memcpy(sym->descriptor.get() + 8, &k.kernarg_size, 4);
    auto object = std::make_unique<KernelObject>();
    object->name = k.name;
    object->kernarg_size = k.kernarg_size;
    object->group_segment_size = k.group_segment_size;
    object->private_segment_size = k.private_segment_size;
    if (FindNative(k.name, &object->kernel)) {
      const hal_sim_kernel_info* info = object->kernel.info;
      std::vector<int> params(info->binding_count, 8);
      params.insert(params.end(), info->constant_count, 4);
      const uint32_t explicit_bytes =
          8 * info->binding_count + 4 * info->constant_count;
      if (!engine::SignatureMatches(object->kernel, params) ||
          k.kernarg_size < explicit_bytes) {
        std::fprintf(stderr,
                     "halsim_hsa: kernel '%s' takes %u bytes of arguments; "
                     "its native build needs %u\n",
                     k.name.c_str(), k.kernarg_size, explicit_bytes);
        return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
      }
      sym->object = std::move(object);
    }
    exe->symbols.push_back(std::move(sym));
  }
  if (loaded_code_object) loaded_code_object->handle = executable.handle;
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t executable,
                                                 const char* options) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  (void)options;
  auto* exe = reinterpret_cast<Executable*>(executable.handle);
  if (!exe) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (exe->frozen) return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
  exe->frozen = true;
  std::lock_guard<std::mutex> lock(ObjectsMutex());
  for (auto& s : exe->symbols) {
    if (s->object) {
      Objects()[reinterpret_cast<uint64_t>(s->descriptor.get())] =
          s->object.get();
    }
  }
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t executable) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  auto* exe = reinterpret_cast<Executable*>(executable.handle);
  if (!exe) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  {
    std::lock_guard<std::mutex> lock(ObjectsMutex());
    for (auto& s : exe->symbols) {
      Objects().erase(reinterpret_cast<uint64_t>(s->descriptor.get()));
    }
  }
  delete exe;
  return HSA_STATUS_SUCCESS;
}

HALSIM_EXPORT hsa_status_t hsa_executable_get_symbol_by_name(
    hsa_executable_t executable, const char* symbol_name,
    const hsa_agent_t* agent, hsa_executable_symbol_t* symbol) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  auto* exe = reinterpret_cast<Executable*>(executable.handle);
  if (!exe) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (!symbol_name || !symbol) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (agent && AgentOf(*agent) != exe->agent)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  for (auto& s : exe->symbols) {
    if (s->name != symbol_name) continue;
    if (!s->object) {
      std::fprintf(stderr,
                   "halsim_hsa: kernel '%s' has no native build in the "
                   "test-kernel modules (%s) or the device library (%s); the "
                   "simulator cannot run it\n",
                   symbol_name, TestKernels().dir().c_str(),
                   DeviceLibraryKernels().dir().c_str());
      return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
    }
    symbol->handle = reinterpret_cast<uint64_t>(s.get());
    return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}

HALSIM_EXPORT hsa_status_t hsa_executable_symbol_get_info(
    hsa_executable_symbol_t executable_symbol,
    hsa_executable_symbol_info_t attribute, void* value) {
  HALSIM_ENTER();
  HALSIM_NEED_INIT();
  auto* s = reinterpret_cast<Symbol*>(executable_symbol.handle);
  if (!s || !s->object) return HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL;
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto put32 = [value](uint32_t v) { std::memcpy(value, &v, 4); };
  switch (attribute) {
    case HSA_EXECUTABLE_SYMBOL_INFO_TYPE: {
      hsa_symbol_kind_t kind = HSA_SYMBOL_KIND_KERNEL;
      std::memcpy(value, &kind, sizeof(kind));
      return HSA_STATUS_SUCCESS;
    }
    case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
      put32(static_cast<uint32_t>(s->name.size()));
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
      std::memcpy(value, s->name.data(), s->name.size());
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: {
      uint64_t object = reinterpret_cast<uint64_t>(s->descriptor.get());
      std::memcpy(value, &object, 8);
      return HSA_STATUS_SUCCESS;
    }
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
      put32(s->object->kernarg_size);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT:
      put32(16);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE:
      put32(s->object->group_segment_size);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE:
      put32(s->object->private_segment_size);
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}
