#include "drivers/amdgpu/amdgpu_api.h"

#include <string>
#include <vector>

#include "drivers/amdgpu/amdgpu_api_internal.h"

#if HAL_AMDGPU_HAVE_DEVICE_LIBRARY
namespace hal::amdgpu {
// The device library's code object (device/amdgpu_blit_kernels.c for
// gfx90a), embedded by the build (device/embed.cmake).
extern const unsigned char kAmdgpuDeviceLibrary[];
extern const size_t kAmdgpuDeviceLibrary_size;
}  // namespace hal::amdgpu
#endif

namespace hal::amdgpu {

namespace {

struct PoolSearch {
  const HsaSymbols* syms;
  bool want_device;
  hsa_amd_memory_pool_t found = {};
  bool ok = false;
};

hsa_status_t FindPool(hsa_amd_memory_pool_t pool, void* data) {
  auto* search = static_cast<PoolSearch*>(data);
  const HsaSymbols* syms = search->syms;
  hsa_amd_segment_t segment;
  uint32_t flags = 0;
  bool allowed = false;
  if (syms->hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT,
                                         &segment) != HSA_STATUS_SUCCESS ||
      segment != HSA_AMD_SEGMENT_GLOBAL ||
      syms->hsa_amd_memory_pool_get_info(pool,
                                         HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
                                         &flags) != HSA_STATUS_SUCCESS ||
      syms->hsa_amd_memory_pool_get_info(
          pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &allowed) !=
          HSA_STATUS_SUCCESS ||
      !allowed) {
    return HSA_STATUS_SUCCESS;
  }
  const bool match =
      search->want_device
          ? (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) != 0
          : (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) != 0;
  if (!match) return HSA_STATUS_SUCCESS;
  search->found = pool;
  search->ok = true;
  return HSA_STATUS_INFO_BREAK;
}

}  // namespace

StatusOr<std::shared_ptr<HsaApi>> HsaApi::Create(
    std::shared_ptr<const HsaSymbols> syms, std::vector<hsa_agent_t> gpus,
    hsa_agent_t cpu) {
  std::shared_ptr<HsaApi> api(new HsaApi(std::move(syms), cpu));
  for (hsa_agent_t gpu : gpus) {
    Agent agent;
    agent.agent = gpu;
    api->agents_.push_back(std::move(agent));
    api->agent_handles_.push_back(gpu);
  }
  HAL_RETURN_IF_ERROR(api->Initialize());
  return api;
}

HsaApi::~HsaApi() {
  if (device_library_) ModuleUnload(device_library_).IgnoreError();
  // The block pools return their blocks while syms_ is alive.
  pools_.clear();
}

size_t HsaApi::StreamAgent(gpu::GpuStream stream) {
  return AsStream(stream)->agent;
}

Status HsaApi::Initialize() {
  if (agents_.empty()) return InvalidArgumentError("amdgpu: no GPU agent");
  for (size_t i = 0; i < agents_.size(); ++i) {
    PoolSearch device{syms_.get(), true};
    HSA(hsa_amd_agent_iterate_memory_pools(agents_[i].agent, FindPool, &device),
        "finding GPU agent %zu's device memory pool", i);
    if (!device.ok) {
      return UnavailableError(
          "amdgpu: GPU agent %zu has no coarse-grained device memory pool; %s",
          i, kHsaHint);
    }
    agents_[i].device_pool = device.found;
    HAL_RETURN_IF_ERROR(ReadGranule(i));
  }
  PoolSearch host{syms_.get(), false};
  HSA(hsa_amd_agent_iterate_memory_pools(cpu_, FindPool, &host),
      "finding the CPU's kernel-argument memory pool");
  if (!host.ok) {
    return UnavailableError(
        "amdgpu: the CPU agent has no fine-grained kernel-argument pool; %s",
        kHsaHint);
  }
  host_pool_ = host.found;
  return LoadDeviceLibrary();
}

Status HsaApi::ReadGranule(size_t i) {
  size_t granule = 0;
  HSA(hsa_amd_memory_pool_get_info(
          agents_[i].device_pool,
          HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE, &granule),
      "GPU agent %zu's allocation granule", i);
  if (granule == 0 || (granule & (granule - 1)) != 0) {
    return UnavailableError(
        "amdgpu: GPU agent %zu's device pool has an allocation granule of %zu "
        "bytes (not a power of two)",
        i, granule);
  }
  agents_[i].granule = granule;
  return OkStatus();
}

uint64_t HsaApi::AgentMask(uint64_t queue_affinity) const {
  const size_t n = agents_.size();
  const uint64_t all = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  uint64_t mask = 0;
  for (size_t q = 0; q < 64 && mask != all; ++q) {
    if (queue_affinity & (uint64_t{1} << q)) mask |= uint64_t{1} << (q % n);
  }
  return mask ? mask : all;
}

Status HsaApi::AllowAgents(uint64_t agent_mask, void* p, size_t size) {
  std::vector<hsa_agent_t> agents;
  for (size_t i = 0; i < agents_.size(); ++i) {
    if (agent_mask & (uint64_t{1} << i)) agents.push_back(agents_[i].agent);
  }
  hsa_status_t r = HsaInjectedError("hsa_amd_agents_allow_access");
  if (r == HSA_STATUS_SUCCESS) {
    r = syms_->hsa_amd_agents_allow_access(static_cast<uint32_t>(agents.size()),
                                           agents.data(), nullptr, p);
  }
  if (r != HSA_STATUS_SUCCESS) {
    return HsaStatusToStatus(syms_.get(), r, "hsa_amd_agents_allow_access",
                             "granting %zu GPU agent(s) %zu bytes",
                             agents.size(), size);
  }
  return OkStatus();
}

Status HsaApi::LoadDeviceLibrary() {
#if HAL_AMDGPU_HAVE_DEVICE_LIBRARY
  gpu::GpuModule module = nullptr;
  HAL_RETURN_IF_ERROR(ModuleLoad(
      std::span<const uint8_t>(kAmdgpuDeviceLibrary, kAmdgpuDeviceLibrary_size),
      &module));
  gpu::GpuFunction fill = nullptr, copy = nullptr, patch = nullptr;
  Status s = ModuleGetFunction(module, "amdgpu_blit_fill", &fill);
  if (s.ok()) s = ModuleGetFunction(module, "amdgpu_blit_copy", &copy);
  if (s.ok()) s = ModuleGetFunction(module, "amdgpu_dispatch_patch", &patch);
  if (!s.ok()) {
    ModuleUnload(module).IgnoreError();
    return Status(s.code(), "amdgpu: the device library: " + s.message());
  }
  for (size_t i = 0; i < agents_.size(); ++i) {
    agents_[i].blit_fill = static_cast<HsaFunction*>(fill)->kernels[i];
    agents_[i].blit_copy = static_cast<HsaFunction*>(copy)->kernels[i];
    agents_[i].dispatch_patch = static_cast<HsaFunction*>(patch)->kernels[i];
  }
  device_library_ = module;
#endif
  return OkStatus();
}

Status HsaApi::AllowAllAgents(void* p, size_t size) {
  hsa_status_t r = HsaInjectedError("hsa_amd_agents_allow_access");
  if (r == HSA_STATUS_SUCCESS) {
    r = syms_->hsa_amd_agents_allow_access(
        static_cast<uint32_t>(agent_handles_.size()), agent_handles_.data(),
        nullptr, p);
  }
  if (r != HSA_STATUS_SUCCESS) {
    return HsaStatusToStatus(syms_.get(), r, "hsa_amd_agents_allow_access",
                             "granting %zu GPU agent(s) %zu bytes",
                             agent_handles_.size(), size);
  }
  return OkStatus();
}

bool HsaApi::SupportsGraphs() const { return false; }

#define HAL_AMDGPU_NO_GRAPHS()                                            \
  return UnimplementedError(                                              \
      "amdgpu: HSA has no graphs; command buffers are emitted as AQL at " \
      "submission (command_buffer_mode=stream)")

Status HsaApi::GraphCreate(gpu::GpuGraph*) { HAL_AMDGPU_NO_GRAPHS(); }
Status HsaApi::GraphDestroy(gpu::GpuGraph) { HAL_AMDGPU_NO_GRAPHS(); }
Status HsaApi::GraphAddEmptyNode(gpu::GpuGraph,
                                 std::span<const gpu::GpuGraphNode>,
                                 gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphAddKernelNode(gpu::GpuGraph,
                                  std::span<const gpu::GpuGraphNode>,
                                  gpu::GpuFunction, const uint32_t[3],
                                  const uint32_t[3], uint32_t, void**,
                                  gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphAddMemsetNode(gpu::GpuGraph,
                                  std::span<const gpu::GpuGraphNode>,
                                  gpu::GpuDevicePtr, uint32_t, size_t, size_t,
                                  gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphAddMemcpyNode(gpu::GpuGraph,
                                  std::span<const gpu::GpuGraphNode>,
                                  gpu::GpuDevicePtr, gpu::GpuDevicePtr, size_t,
                                  gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphAddHostNode(gpu::GpuGraph,
                                std::span<const gpu::GpuGraphNode>,
                                gpu::GpuHostFn, void*, gpu::GpuGraphNode*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphInstantiate(gpu::GpuGraph, gpu::GpuGraphExec*) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphLaunch(gpu::GpuGraphExec, gpu::GpuStream) {
  HAL_AMDGPU_NO_GRAPHS();
}
Status HsaApi::GraphExecDestroy(gpu::GpuGraphExec) { HAL_AMDGPU_NO_GRAPHS(); }

}  // namespace hal::amdgpu
