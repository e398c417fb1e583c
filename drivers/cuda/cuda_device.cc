#include "drivers/cuda/cuda_device.h"

#include <cstdio>

#include "drivers/cuda/cuda_api.h"
#include "drivers/cuda/cuda_dynamic_symbols.h"
#include "drivers/cuda/cuda_status.h"
#include "drivers/gpu/gpu_device.h"

namespace hal::cuda {

namespace {

#define CU(syms, expr, ...) HAL_CUDA_RETURN_IF_ERROR(syms, expr, __VA_ARGS__)

std::string FormatUuid(const CUuuid& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                "%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
                b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

StatusOr<DeviceInfo> DescribeDevice(const CudaSymbols* syms, int ordinal) {
  CUdevice device;
  CU(syms, cuDeviceGet(&device, ordinal), "device %d", ordinal);
  char name[256] = {};
  CU(syms, cuDeviceGetName(name, sizeof(name) - 1, device), "device %d",
     ordinal);
  CUuuid uuid;
  CU(syms, cuDeviceGetUuid(&uuid, device), "device %d", ordinal);
  size_t memory = 0;
  CU(syms, cuDeviceTotalMem(&memory, device), "device %d", ordinal);
  int major = 0, minor = 0, pools = 0;
  CU(syms,
     cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                          device),
     "device %d", ordinal);
  CU(syms,
     cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                          device),
     "device %d", ordinal);
  CU(syms,
     cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                          device),
     "device %d", ordinal);
  DeviceInfo info;
  info.driver = "cuda";
  info.name = name;
  info.uuid = FormatUuid(uuid);
  info.uri = "cuda:" + std::to_string(ordinal);
  info.ordinal = static_cast<uint64_t>(ordinal);
  info.queue_count = 2;  // the default of cuda:N (queues=N changes it)
  info.memory_bytes = memory;
  info.properties["compute_capability"] =
      std::to_string(major) + "." + std::to_string(minor);
  info.properties["driver_version"] =
      std::to_string(syms->driver_version / 1000) + "." +
      std::to_string((syms->driver_version % 1000) / 10);
  info.properties["memory_pools"] = pools ? "yes" : "no";
  info.properties["library"] = syms->library_path;
  return info;
}

StatusOr<int> DeviceCount(const CudaSymbols* syms) {
  int count = 0;
  CU(syms, cuDeviceGetCount(&count), "counting devices");
  return count;
}

}  // namespace

StatusOr<std::vector<DeviceInfo>> EnumerateCudaDevices(
    const std::string& library) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const CudaSymbols> syms,
                       LoadCudaSymbols(library));
  HAL_ASSIGN_OR_RETURN(int count, DeviceCount(syms.get()));
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    HAL_ASSIGN_OR_RETURN(DeviceInfo info, DescribeDevice(syms.get(), i));
    devices.push_back(std::move(info));
  }
  return devices;
}

StatusOr<Ref<Device>> CreateCudaDevice(const DeviceUri& uri) {
  HAL_RETURN_IF_ERROR(uri.CheckKnownParams(
      {"library", "queues", "async_allocations", "command_buffer_mode"}));
  if (uri.devices.size() > 1) {
    return InvalidArgumentError(
        "cuda: one device per URI (got %zu); multi-GPU logical devices are "
        "not supported",
        uri.devices.size());
  }
  std::string library;
  if (auto it = uri.params.find("library"); it != uri.params.end()) {
    library = it->second;
  }
  HAL_ASSIGN_OR_RETURN(uint64_t queues,
                       uri.GetUint("queues", 2, 1, kMaxQueues));
  bool graph_mode = false;
  if (auto it = uri.params.find("command_buffer_mode");
      it != uri.params.end()) {
    if (it->second == "graph") {
      graph_mode = true;
    } else if (it->second != "stream") {
      return InvalidArgumentError(
          "cuda: command_buffer_mode '%s' is not 'stream' or 'graph'",
          it->second.c_str());
    }
  }
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const CudaSymbols> syms,
                       LoadCudaSymbols(library));
  HAL_ASSIGN_OR_RETURN(int count, DeviceCount(syms.get()));
  if (count == 0) {
    return UnavailableError("cuda: the driver reports no CUDA devices");
  }
  int ordinal = 0;
  if (!uri.devices.empty()) {
    const std::string& id = uri.devices[0];
    if (id.rfind("GPU-", 0) == 0) {
      ordinal = -1;
      for (int i = 0; i < count && ordinal < 0; ++i) {
        HAL_ASSIGN_OR_RETURN(DeviceInfo info, DescribeDevice(syms.get(), i));
        if (info.uuid == id) ordinal = i;
      }
      if (ordinal < 0) {
        return NotFoundError(
            "cuda: no device with UUID %s (hal-info lists them)", id.c_str());
      }
    } else {
      char* end = nullptr;
      long n = std::strtol(id.c_str(), &end, 10);
      if (!end || *end || n < 0) {
        return InvalidArgumentError(
            "cuda: device '%s' is neither an ordinal nor GPU-<uuid>",
            id.c_str());
      }
      if (n >= count) {
        return NotFoundError("cuda: device %ld does not exist (%d device(s))",
                             n, count);
      }
      ordinal = static_cast<int>(n);
    }
  }
  HAL_ASSIGN_OR_RETURN(DeviceInfo info, DescribeDevice(syms.get(), ordinal));
  CUdevice device;
  CU(syms.get(), cuDeviceGet(&device, ordinal), "device %d", ordinal);
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<CudaApi> api,
                       CudaApi::Create(syms, device));
  gpu::GpuDeviceOptions options;
  options.queue_count = static_cast<int>(queues);
  HAL_ASSIGN_OR_RETURN(
      options.async_allocations,
      uri.GetBool("async_allocations", api->SupportsAsyncAlloc()));
  if (options.async_allocations && !api->SupportsAsyncAlloc()) {
    return InvalidArgumentError(
        "cuda: async_allocations=1 but device %d has no memory pools", ordinal);
  }
  options.device_memory_bytes = info.memory_bytes;
  if (graph_mode && !api->SupportsGraphs()) {
    return UnimplementedError(
        "cuda: command_buffer_mode=graph but '%s' lacks the CUgraph entry "
        "points (cuGraphCreate, cuGraphAdd*Node, cuGraphInstantiateWithFlags, "
        "cuGraphLaunch, ...); use command_buffer_mode=stream",
        syms->library_path.c_str());
  }
  options.graph_command_buffers = graph_mode;
  info.uri = uri.ToString();
  info.properties["async_allocations"] =
      options.async_allocations ? "on" : "off";
  info.properties["command_buffer_mode"] = graph_mode ? "graph" : "stream";
  return gpu::GpuDevice::Create(std::move(info), std::move(api), options);
}

Status RegisterCudaDriver(DriverRegistry* registry) {
  DriverFactory factory;
  factory.name = "cuda";
  factory.description =
      "NVIDIA CUDA driver API (libcuda opened at run time; HAL_CUDA_LIBRARY "
      "selects the library, e.g. the CUDA API simulator)";
  factory.enumerate = []() { return EnumerateCudaDevices(""); };
  factory.try_create = [](const DeviceUri& uri) {
    return CreateCudaDevice(uri);
  };
  return registry->Register(std::move(factory));
}

}  // namespace hal::cuda
