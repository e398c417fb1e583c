#include "drivers/amdgpu/amdgpu_device.h"

#include "drivers/amdgpu/amdgpu_api.h"
#include "drivers/amdgpu/amdgpu_dynamic_symbols.h"
#include "drivers/amdgpu/amdgpu_status.h"
#include "drivers/gpu/gpu_device_uri.h"

namespace hal::amdgpu {

namespace {

#define HSA(syms, expr, ...) HAL_HSA_RETURN_IF_ERROR(syms, expr, __VA_ARGS__)

struct Topology {
  hsa_agent_t cpu = {};
  bool have_cpu = false;
  std::vector<hsa_agent_t> gpus;  // in the runtime's order
};

struct TopologySearch {
  const HsaSymbols* syms;
  Topology* topology;
};

hsa_status_t VisitAgent(hsa_agent_t agent, void* data) {
  auto* search = static_cast<TopologySearch*>(data);
  hsa_device_type_t type;
  hsa_status_t r =
      search->syms->hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
  if (r != HSA_STATUS_SUCCESS) return r;
  if (type == HSA_DEVICE_TYPE_GPU) {
    search->topology->gpus.push_back(agent);
  } else if (type == HSA_DEVICE_TYPE_CPU && !search->topology->have_cpu) {
    search->topology->cpu = agent;
    search->topology->have_cpu = true;
  }
  return HSA_STATUS_SUCCESS;
}

StatusOr<Topology> ReadTopology(const HsaSymbols* syms) {
  Topology topology;
  TopologySearch search{syms, &topology};
  HSA(syms, hsa_iterate_agents(VisitAgent, &search), "listing agents");
  return topology;
}

struct MemorySearch {
  const HsaSymbols* syms;
  size_t bytes = 0;
};

// The size of the agent's coarse-grained device pool (its VRAM).
hsa_status_t VisitPool(hsa_amd_memory_pool_t pool, void* data) {
  auto* search = static_cast<MemorySearch*>(data);
  uint32_t flags = 0;
  size_t size = 0;
  if (search->syms->hsa_amd_memory_pool_get_info(
          pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags) ==
          HSA_STATUS_SUCCESS &&
      (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) &&
      search->syms->hsa_amd_memory_pool_get_info(
          pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size) == HSA_STATUS_SUCCESS) {
    search->bytes = size;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

StatusOr<DeviceInfo> DescribeDevice(const HsaSymbols* syms, hsa_agent_t agent,
                                    int ordinal) {
  char name[64] = {};
  HSA(syms, hsa_agent_get_info(agent, HSA_AGENT_INFO_NAME, name),
      "GPU agent %d", ordinal);
  char uuid[25] = {};
  HSA(syms,
      hsa_agent_get_info(
          agent, static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_UUID), uuid),
      "GPU agent %d", ordinal);
  uint32_t compute_units = 0;
  HSA(syms,
      hsa_agent_get_info(
          agent,
          static_cast<hsa_agent_info_t>(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT),
          &compute_units),
      "GPU agent %d", ordinal);
  uint32_t wavefront = 0;
  HSA(syms,
      hsa_agent_get_info(agent, HSA_AGENT_INFO_WAVEFRONT_SIZE, &wavefront),
      "GPU agent %d", ordinal);
  MemorySearch memory{syms};
  HSA(syms, hsa_amd_agent_iterate_memory_pools(agent, VisitPool, &memory),
      "GPU agent %d", ordinal);
  DeviceInfo info;
  info.driver = "amdgpu";
  info.name = name;
  info.uuid = uuid;
  info.uri = "amdgpu:" + std::to_string(ordinal);
  info.ordinal = static_cast<uint64_t>(ordinal);
  info.queue_count = 2;  // the default of amdgpu:N (queues=N changes it)
  info.memory_bytes = memory.bytes;
  info.properties["isa"] = name;
  info.properties["compute_units"] = std::to_string(compute_units);
  info.properties["wavefront_size"] = std::to_string(wavefront);
  info.properties["library"] = syms->library_path;
  info.properties["queue_packets"] = std::to_string(HsaApi::kQueueSize);
  return info;
}

gpu::GpuDriverBackend Backend(std::shared_ptr<const HsaSymbols> syms,
                              std::shared_ptr<const Topology> topology) {
  gpu::GpuDriverBackend backend;
  backend.name = "amdgpu";
  backend.library_path = syms->library_path;
  backend.count = [topology]() -> StatusOr<int> {
    return static_cast<int>(topology->gpus.size());
  };
  backend.describe = [syms, topology](int i) {
    return DescribeDevice(syms.get(), topology->gpus[i], i);
  };
  backend.create_api =
      [syms, topology](int ordinal) -> StatusOr<std::shared_ptr<gpu::GpuApi>> {
    if (!topology->have_cpu) {
      return UnavailableError(
          "amdgpu: '%s' reports no CPU agent (kernel arguments live in its "
          "memory)",
          syms->library_path.c_str());
    }
    HAL_ASSIGN_OR_RETURN(
        std::shared_ptr<HsaApi> api,
        HsaApi::Create(syms, topology->gpus[ordinal], topology->cpu));
    return std::shared_ptr<gpu::GpuApi>(std::move(api));
  };
  return backend;
}

StatusOr<gpu::GpuDriverBackend> Load(const std::string& library) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const HsaSymbols> syms,
                       LoadHsaSymbols(library));
  HAL_ASSIGN_OR_RETURN(Topology topology, ReadTopology(syms.get()));
  if (topology.gpus.empty()) {
    return UnavailableError("amdgpu: '%s' reports no GPU agent; %s",
                            syms->library_path.c_str(), kHsaHint);
  }
  return Backend(std::move(syms),
                 std::make_shared<const Topology>(std::move(topology)));
}

}  // namespace

StatusOr<std::vector<DeviceInfo>> EnumerateAmdgpuDevices(
    const std::string& library) {
  HAL_ASSIGN_OR_RETURN(gpu::GpuDriverBackend backend, Load(library));
  return gpu::EnumerateGpuDevices(backend);
}

StatusOr<Ref<Device>> CreateAmdgpuDevice(const DeviceUri& uri) {
  if (uri.devices.size() > 1) {
    return UnimplementedError(
        "amdgpu: logical devices over several GPU agents ('%s') are not done "
        "yet; name one agent (amdgpu:N or amdgpu://GPU-<uuid>)",
        uri.ToString().c_str());
  }
  HAL_ASSIGN_OR_RETURN(gpu::GpuUriParams params,
                       gpu::ParseGpuUri(uri, "amdgpu"));
  if (params.graph_mode) {
    return UnimplementedError(
        "amdgpu: command_buffer_mode=graph: HSA has no graphs; command "
        "buffers are emitted as AQL packets at submission");
  }
  HAL_ASSIGN_OR_RETURN(gpu::GpuDriverBackend backend, Load(params.library));
  return gpu::CreateGpuDevice(uri, params, backend);
}

Status RegisterAmdgpuDriver(DriverRegistry* registry) {
  DriverFactory factory;
  factory.name = "amdgpu";
  factory.description =
      "AMD GPUs through HSA/ROCr (libhsa-runtime64 opened at run time; "
      "HAL_AMDGPU_LIBRARY selects the library, e.g. the HSA simulator)";
  factory.enumerate = []() { return EnumerateAmdgpuDevices(""); };
  factory.try_create = [](const DeviceUri& uri) {
    return CreateAmdgpuDevice(uri);
  };
  return registry->Register(std::move(factory));
}

}  // namespace hal::amdgpu
