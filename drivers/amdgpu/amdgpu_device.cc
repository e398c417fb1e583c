#include "drivers/amdgpu/amdgpu_device.h"

#include <cstdlib>

#include "drivers/amdgpu/amdgpu_api.h"
#include "drivers/amdgpu/amdgpu_dynamic_symbols.h"
#include "drivers/amdgpu/amdgpu_status.h"
#include "drivers/gpu/gpu_device.h"
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

struct Loaded {
  std::shared_ptr<const HsaSymbols> syms;
  std::shared_ptr<const Topology> topology;
};

StatusOr<std::shared_ptr<gpu::GpuApi>> CreateApi(
    const Loaded& loaded, const std::vector<int>& ordinals) {
  if (!loaded.topology->have_cpu) {
    return UnavailableError(
        "amdgpu: '%s' reports no CPU agent (kernel arguments live in its "
        "memory)",
        loaded.syms->library_path.c_str());
  }
  std::vector<hsa_agent_t> agents;
  for (int i : ordinals) agents.push_back(loaded.topology->gpus[i]);
  HAL_ASSIGN_OR_RETURN(
      std::shared_ptr<HsaApi> api,
      HsaApi::Create(loaded.syms, std::move(agents), loaded.topology->cpu));
  return std::shared_ptr<gpu::GpuApi>(std::move(api));
}

gpu::GpuDriverBackend Backend(const Loaded& loaded) {
  gpu::GpuDriverBackend backend;
  backend.name = "amdgpu";
  backend.library_path = loaded.syms->library_path;
  auto topology = loaded.topology;
  auto syms = loaded.syms;
  backend.count = [topology]() -> StatusOr<int> {
    return static_cast<int>(topology->gpus.size());
  };
  backend.describe = [syms, topology](int i) {
    return DescribeDevice(syms.get(), topology->gpus[i], i);
  };
  backend.create_api =
      [loaded](int ordinal) -> StatusOr<std::shared_ptr<gpu::GpuApi>> {
    return CreateApi(loaded, {ordinal});
  };
  return backend;
}

StatusOr<Loaded> Load(const std::string& library) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const HsaSymbols> syms,
                       LoadHsaSymbols(library));
  HAL_ASSIGN_OR_RETURN(Topology topology, ReadTopology(syms.get()));
  if (topology.gpus.empty()) {
    return UnavailableError("amdgpu: '%s' reports no GPU agent; %s",
                            syms->library_path.c_str(), kHsaHint);
  }
  return Loaded{std::move(syms),
                std::make_shared<const Topology>(std::move(topology))};
}

// The agents a URI names: none (every visible agent), ordinals or
// GPU-<uuid>s, each once.
StatusOr<std::vector<int>> ResolveAgents(const DeviceUri& uri,
                                         const Loaded& loaded) {
  const int count = static_cast<int>(loaded.topology->gpus.size());
  std::vector<int> ordinals;
  if (uri.devices.empty()) {
    for (int i = 0; i < count; ++i) ordinals.push_back(i);
    return ordinals;
  }
  for (const std::string& id : uri.devices) {
    int ordinal = -1;
    if (id.rfind("GPU-", 0) == 0) {
      for (int i = 0; i < count && ordinal < 0; ++i) {
        HAL_ASSIGN_OR_RETURN(
            DeviceInfo info,
            DescribeDevice(loaded.syms.get(), loaded.topology->gpus[i], i));
        if (info.uuid == id) ordinal = i;
      }
      if (ordinal < 0) {
        return NotFoundError(
            "amdgpu: no GPU agent with UUID %s (hal-info "
            "lists them)",
            id.c_str());
      }
    } else {
      char* end = nullptr;
      long n = std::strtol(id.c_str(), &end, 10);
      if (id.empty() || !end || *end || n < 0) {
        return InvalidArgumentError(
            "amdgpu: device '%s' is neither an ordinal nor GPU-<uuid>",
            id.c_str());
      }
      if (n >= count) {
        return NotFoundError(
            "amdgpu: GPU agent %ld does not exist (%d "
            "agent(s))",
            n, count);
      }
      ordinal = static_cast<int>(n);
    }
    for (int o : ordinals) {
      if (o == ordinal) {
        return InvalidArgumentError("amdgpu: GPU agent '%s' named twice",
                                    id.c_str());
      }
    }
    ordinals.push_back(ordinal);
  }
  return ordinals;
}

}  // namespace

StatusOr<std::vector<DeviceInfo>> EnumerateAmdgpuDevices(
    const std::string& library) {
  HAL_ASSIGN_OR_RETURN(Loaded loaded, Load(library));
  return gpu::EnumerateGpuDevices(Backend(loaded));
}

StatusOr<Ref<Device>> CreateAmdgpuDevice(const DeviceUri& uri) {
  // The shared parameters (one device per URI there: the agents are
  // resolved here).
  DeviceUri params_uri = uri;
  params_uri.devices.clear();
  HAL_ASSIGN_OR_RETURN(gpu::GpuUriParams params,
                       gpu::ParseGpuUri(params_uri, "amdgpu"));
  if (params.graph_mode) {
    return UnimplementedError(
        "amdgpu: command_buffer_mode=graph: HSA has no graphs; command "
        "buffers are emitted as AQL packets at submission");
  }
  HAL_ASSIGN_OR_RETURN(Loaded loaded, Load(params.library));
  HAL_ASSIGN_OR_RETURN(std::vector<int> ordinals, ResolveAgents(uri, loaded));
  if (ordinals.size() == 1) {
    DeviceUri single = uri;
    single.devices = {std::to_string(ordinals[0])};
    HAL_ASSIGN_OR_RETURN(Ref<Device> device,
                         gpu::CreateGpuDevice(single, params, Backend(loaded)));
    return device;
  }
  // A logical device over several agents: one GpuApi over all of them.
  HAL_ASSIGN_OR_RETURN(
      DeviceInfo info,
      DescribeDevice(loaded.syms.get(), loaded.topology->gpus[ordinals[0]],
                     ordinals[0]));
  std::string uuids, list;
  for (int o : ordinals) {
    HAL_ASSIGN_OR_RETURN(
        DeviceInfo agent,
        DescribeDevice(loaded.syms.get(), loaded.topology->gpus[o], o));
    uuids += (uuids.empty() ? "" : ",") + agent.uuid;
    list += (list.empty() ? "" : ",") + std::to_string(o);
  }
  HAL_ASSIGN_OR_RETURN(bool async, uri.GetBool("async_allocations", false));
  if (async) {
    return InvalidArgumentError(
        "amdgpu: async_allocations=1: stream-ordered allocation is not done "
        "yet");
  }
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<gpu::GpuApi> api,
                       CreateApi(loaded, ordinals));
  info.uuid = uuids;
  info.uri = uri.ToString();
  info.properties["agents"] = list;
  info.properties["async_allocations"] = "off";
  info.properties["command_buffer_mode"] = "stream";
  gpu::GpuDeviceOptions options;
  options.queue_count = params.queues;
  options.device_memory_bytes = info.memory_bytes;
  return gpu::GpuDevice::Create(std::move(info), std::move(api), options);
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
