// The Level Zero skin's modules and kernels.
//
// A module is SPIR-V (ZE_MODULE_FORMAT_IL_SPIRV). zeModuleCreate reads its
// kernels and their argument sizes with the driver's reader
// (hal/formats/spirv_reader.h, from hal_formats, which halsim_engine
// links). A kernel runs as the native (sim-format) build of the same test
// kernel (build/<preset>/kernels/modules/*.sim.so, compiled in as
// HALSIM_KERNEL_MODULES_DIR; HALSIM_KERNEL_DIR overrides it), whose
// signature must be the SPIR-V one; the SPIR-V itself is never executed.
// zeKernelSetGroupSize must give the native build's workgroup size.
#include <cstring>
#include <map>
#include <string>

#include "hal/formats/spirv_reader.h"
#include "sim/engine/engine_kernels.h"
#include "sim/level_zero/sim_ze_internal.h"

using namespace hal::sim::ze;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

namespace {

engine::KernelLibrary& Kernels() { return L().kernels(); }

struct BuildLog {
  std::string text;
};

using hal::formats::SpirvKernel;

struct ModuleData : Module {
  std::vector<SpirvKernel> kernels;
};

ze_result_t SimModuleCreate(ze_context_handle_t context,
                            ze_device_handle_t hdev,
                            const ze_module_desc_t* desc,
                            ze_module_handle_t* out,
                            ze_module_build_log_handle_t* log_out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  Device* dev = AsDevice(hdev);
  if (!context || !dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out || !desc->pInputModule) {
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  }
  auto log = std::make_unique<BuildLog>();
  auto finish_log = [&] {
    if (log_out) {
      *log_out = reinterpret_cast<ze_module_build_log_handle_t>(log.release());
      CountCreated(Kind::kBuildLog);
    }
  };
  if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV) {
    log->text = "only SPIR-V modules (ZE_MODULE_FORMAT_IL_SPIRV) are simulated";
    std::fprintf(stderr, "halsim_ze: zeModuleCreate: %s\n", log->text.c_str());
    finish_log();
    return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
  }
  auto m = std::make_unique<ModuleData>();
  m->device = dev;
  std::string error;
  if (!hal::formats::ParseSpirvKernels(
          std::span<const uint8_t>(desc->pInputModule, desc->inputSize),
          &m->kernels, &error)) {
    log->text = error;
    std::fprintf(stderr, "halsim_ze: zeModuleCreate: %s\n", error.c_str());
    finish_log();
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  for (const SpirvKernel& k : m->kernels) m->names.push_back(k.name);
  finish_log();
  CountCreated(Kind::kModule);
  *out = reinterpret_cast<ze_module_handle_t>(m.release());
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimModuleDestroy(ze_module_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* m = reinterpret_cast<ModuleData*>(h);
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (m->kernels_live.load() > 0) {
    return Violation(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeModuleDestroy",
                     "%d kernels created from the module are still alive",
                     m->kernels_live.load());
  }
  delete m;
  CountDestroyed(Kind::kModule);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimModuleGetKernelNames(ze_module_handle_t h, uint32_t* count,
                                    const char** names) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* m = reinterpret_cast<ModuleData*>(h);
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const uint32_t total = static_cast<uint32_t>(m->names.size());
  if (*count == 0 || !names) {
    *count = total;
    return ZE_RESULT_SUCCESS;
  }
  const uint32_t n = std::min(*count, total);
  for (uint32_t i = 0; i < n; ++i) names[i] = m->names[i].c_str();
  *count = n;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimBuildLogDestroy(ze_module_build_log_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!h) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete reinterpret_cast<BuildLog*>(h);
  CountDestroyed(Kind::kBuildLog);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimBuildLogGetString(ze_module_build_log_handle_t h, size_t* size,
                                 char* text) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* log = reinterpret_cast<BuildLog*>(h);
  if (!log) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!size) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const size_t need = log->text.size() + 1;
  if (*size == 0 || !text) {
    *size = need;
    return ZE_RESULT_SUCCESS;
  }
  if (*size < need) return ZE_RESULT_ERROR_INVALID_SIZE;
  std::memcpy(text, log->text.c_str(), need);
  *size = need;
  return ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------------------
// Kernels.

ze_result_t SimKernelCreate(ze_module_handle_t hmod,
                            const ze_kernel_desc_t* desc,
                            ze_kernel_handle_t* out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* m = reinterpret_cast<ModuleData*>(hmod);
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out || !desc->pKernelName) {
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  }
  const SpirvKernel* sk = nullptr;
  for (const SpirvKernel& k : m->kernels) {
    if (k.name == desc->pKernelName) sk = &k;
  }
  if (!sk) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  auto k = std::make_unique<Kernel>();
  k->module = m;
  k->name = sk->name;
  if (!Kernels().Find(k->name, &k->native)) {
    std::fprintf(stderr,
                 "halsim_ze: SPIR-V kernel '%s' has no native build in the "
                 "test-kernel modules (%s); the simulator cannot run it\n",
                 k->name.c_str(), Kernels().dir().c_str());
    return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  }
  if (!engine::SignatureMatches(k->native, sk->param_bytes)) {
    std::fprintf(stderr,
                 "halsim_ze: SPIR-V kernel '%s' has %zu parameters that do "
                 "not match its native build (%u bindings as pointers, then "
                 "%u 4-byte constants)\n",
                 k->name.c_str(), sk->param_bytes.size(),
                 k->native.info->binding_count, k->native.info->constant_count);
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  k->param_bytes = sk->param_bytes;
  k->values.assign(sk->param_bytes.size(), 0);
  k->set.assign(sk->param_bytes.size(), false);
  ++m->kernels_live;
  CountCreated(Kind::kKernel);
  *out = reinterpret_cast<ze_kernel_handle_t>(k.release());
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimKernelDestroy(ze_kernel_handle_t h) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* k = reinterpret_cast<Kernel*>(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (k->pending.load() > 0) {
    return Violation(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, "zeKernelDestroy",
                     "kernel '%s' is used by %d pending launches",
                     k->name.c_str(), k->pending.load());
  }
  --k->module->kernels_live;
  delete k;
  CountDestroyed(Kind::kKernel);
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimKernelSetGroupSize(ze_kernel_handle_t h, uint32_t x, uint32_t y,
                                  uint32_t z) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* k = reinterpret_cast<Kernel*>(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  const uint32_t* want = k->native.info->workgroup_size;
  if (!x || !y || !z || uint64_t{x} * y * z > 1024) {
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  }
  if (x != want[0] || y != want[1] || z != want[2]) {
    std::fprintf(stderr,
                 "halsim_ze: zeKernelSetGroupSize: '%s' given [%u, %u, %u]; "
                 "its native build runs [%u, %u, %u]\n",
                 k->name.c_str(), x, y, z, want[0], want[1], want[2]);
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  }
  k->group_size[0] = x;
  k->group_size[1] = y;
  k->group_size[2] = z;
  k->group_size_set = true;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimKernelSuggestGroupSize(ze_kernel_handle_t h, uint32_t, uint32_t,
                                      uint32_t, uint32_t* x, uint32_t* y,
                                      uint32_t* z) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* k = reinterpret_cast<Kernel*>(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!x || !y || !z) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *x = k->native.info->workgroup_size[0];
  *y = k->native.info->workgroup_size[1];
  *z = k->native.info->workgroup_size[2];
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimKernelSetArgumentValue(ze_kernel_handle_t h, uint32_t index,
                                      size_t size, const void* value) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* k = reinterpret_cast<Kernel*>(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (index >= k->param_bytes.size()) {
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  }
  if (size != static_cast<size_t>(k->param_bytes[index])) {
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  }
  uint64_t v = 0;
  if (value) std::memcpy(&v, value, size);  // null: a null pointer argument
  k->values[index] = v;
  k->set[index] = true;
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimKernelGetProperties(ze_kernel_handle_t h,
                                   ze_kernel_properties_t* p) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* k = reinterpret_cast<Kernel*>(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->numKernelArgs = static_cast<uint32_t>(k->param_bytes.size());
  p->requiredGroupSizeX = k->native.info->workgroup_size[0];
  p->requiredGroupSizeY = k->native.info->workgroup_size[1];
  p->requiredGroupSizeZ = k->native.info->workgroup_size[2];
  p->requiredNumSubGroups = 0;
  p->requiredSubgroupSize = 0;
  p->maxSubgroupSize = 16;
  p->maxNumSubgroups = 64;
  p->localMemSize = 0;
  p->privateMemSize = 0;
  p->spillMemSize = 0;
  std::memset(&p->uuid, 0, sizeof(p->uuid));
  return ZE_RESULT_SUCCESS;
}

ze_result_t SimKernelGetName(ze_kernel_handle_t h, size_t* size, char* name) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  auto* k = reinterpret_cast<Kernel*>(h);
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!size) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const size_t need = k->name.size() + 1;
  if (*size == 0 || !name) {
    *size = need;
    return ZE_RESULT_SUCCESS;
  }
  if (*size < need) return ZE_RESULT_ERROR_INVALID_SIZE;
  std::memcpy(name, k->name.c_str(), need);
  *size = need;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

namespace hal::sim::ze {

KernelArgs ReadKernelArgs(const Kernel* k) {
  const hal_sim_kernel_info* info = k->native.info;
  KernelArgs args;
  for (uint32_t i = 0; i < info->binding_count; ++i) {
    args.pointers.push_back(static_cast<uintptr_t>(k->values[i]));
  }
  for (uint32_t i = 0; i < info->constant_count; ++i) {
    args.constants.push_back(
        static_cast<uint32_t>(k->values[info->binding_count + i]));
  }
  return args;
}

ze_result_t KernelLaunchOp(Kernel* k, Device* device, const uint32_t grid[3],
                           const char* call, engine::Work* out) {
  if (!k->group_size_set) {
    return Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                     "kernel '%s' launched before zeKernelSetGroupSize",
                     k->name.c_str());
  }
  for (size_t i = 0; i < k->set.size(); ++i) {
    if (!k->set[i]) {
      return Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT, call,
                       "kernel '%s' launched with argument %zu not set "
                       "(zeKernelSetArgumentValue)",
                       k->name.c_str(), i);
    }
  }
  if (!grid[0] || !grid[1] || !grid[2]) {
    *out = nullptr;  // an empty launch does nothing
    return ZE_RESULT_SUCCESS;
  }
  KernelArgs args = ReadKernelArgs(k);
  *out = E().KernelWork(&device->domain, &k->native, grid,
                        std::move(args.pointers), std::move(args.constants));
  return ZE_RESULT_SUCCESS;
}

void FillModuleTable(ze_module_dditable_t* t) {
  t->pfnCreate = SimModuleCreate;
  t->pfnDestroy = SimModuleDestroy;
  t->pfnGetKernelNames = SimModuleGetKernelNames;
}

void FillModuleBuildLogTable(ze_module_build_log_dditable_t* t) {
  t->pfnDestroy = SimBuildLogDestroy;
  t->pfnGetString = SimBuildLogGetString;
}

void FillKernelTable(ze_kernel_dditable_t* t) {
  t->pfnCreate = SimKernelCreate;
  t->pfnDestroy = SimKernelDestroy;
  t->pfnSetGroupSize = SimKernelSetGroupSize;
  t->pfnSuggestGroupSize = SimKernelSuggestGroupSize;
  t->pfnSetArgumentValue = SimKernelSetArgumentValue;
  t->pfnGetProperties = SimKernelGetProperties;
  t->pfnGetName = SimKernelGetName;
}

}  // namespace hal::sim::ze
