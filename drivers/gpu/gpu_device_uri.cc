#include "drivers/gpu/gpu_device_uri.h"

#include <cstdio>
#include <cstdlib>

#include "drivers/gpu/gpu_device.h"

namespace hal::gpu {

StatusOr<GpuUriParams> ParseGpuUri(const DeviceUri& uri, const char* driver) {
  HAL_RETURN_IF_ERROR(uri.CheckKnownParams(
      {"library", "queues", "async_allocations", "command_buffer_mode"}));
  if (uri.devices.size() > 1) {
    return InvalidArgumentError(
        "%s: one device per URI (got %zu); multi-GPU logical devices are not "
        "supported",
        driver, uri.devices.size());
  }
  GpuUriParams params;
  if (auto it = uri.params.find("library"); it != uri.params.end()) {
    params.library = it->second;
  }
  HAL_ASSIGN_OR_RETURN(uint64_t queues,
                       uri.GetUint("queues", 2, 1, kMaxQueues));
  params.queues = static_cast<int>(queues);
  if (auto it = uri.params.find("command_buffer_mode");
      it != uri.params.end()) {
    if (it->second == "graph") {
      params.graph_mode = true;
    } else if (it->second != "stream") {
      return InvalidArgumentError(
          "%s: command_buffer_mode '%s' is not 'stream' or 'graph'", driver,
          it->second.c_str());
    }
  }
  return params;
}

std::string FormatGpuUuid(const unsigned char b[16]) {
  char text[64];
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                "%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
                b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

namespace {

StatusOr<int> ResolveOrdinal(const DeviceUri& uri, int count,
                             const GpuDriverBackend& backend) {
  const char* driver = backend.name;
  if (uri.devices.empty()) return 0;
  const std::string& id = uri.devices[0];
  if (id.rfind("GPU-", 0) == 0) {
    for (int i = 0; i < count; ++i) {
      HAL_ASSIGN_OR_RETURN(DeviceInfo info, backend.describe(i));
      if (info.uuid == id) return i;
    }
    return NotFoundError("%s: no device with UUID %s (hal-info lists them)",
                         driver, id.c_str());
  }
  char* end = nullptr;
  long n = std::strtol(id.c_str(), &end, 10);
  if (!end || *end || n < 0) {
    return InvalidArgumentError(
        "%s: device '%s' is neither an ordinal nor GPU-<uuid>", driver,
        id.c_str());
  }
  if (n >= count) {
    return NotFoundError("%s: device %ld does not exist (%d device(s))", driver,
                         n, count);
  }
  return static_cast<int>(n);
}

}  // namespace

StatusOr<std::vector<DeviceInfo>> EnumerateGpuDevices(
    const GpuDriverBackend& backend) {
  HAL_ASSIGN_OR_RETURN(int count, backend.count());
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    HAL_ASSIGN_OR_RETURN(DeviceInfo info, backend.describe(i));
    devices.push_back(std::move(info));
  }
  return devices;
}

StatusOr<Ref<Device>> CreateGpuDevice(const DeviceUri& uri,
                                      const GpuUriParams& params,
                                      const GpuDriverBackend& backend) {
  const char* driver = backend.name;
  HAL_ASSIGN_OR_RETURN(int count, backend.count());
  if (count == 0) {
    return UnavailableError("%s: '%s' reports no devices", driver,
                            backend.library_path.c_str());
  }
  HAL_ASSIGN_OR_RETURN(int ordinal, ResolveOrdinal(uri, count, backend));
  HAL_ASSIGN_OR_RETURN(DeviceInfo info, backend.describe(ordinal));
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<GpuApi> api,
                       backend.create_api(ordinal));
  GpuDeviceOptions options;
  options.queue_count = params.queues;
  HAL_ASSIGN_OR_RETURN(
      options.async_allocations,
      uri.GetBool("async_allocations", api->SupportsAsyncAlloc()));
  if (options.async_allocations && !api->SupportsAsyncAlloc()) {
    return InvalidArgumentError(
        "%s: async_allocations=1 but device %d has no memory pools", driver,
        ordinal);
  }
  options.device_memory_bytes = info.memory_bytes;
  if (params.graph_mode && !api->SupportsGraphs()) {
    return UnimplementedError(
        "%s: command_buffer_mode=graph but '%s' lacks the graph entry points "
        "(graph create, add-node, instantiate, launch, ...); use "
        "command_buffer_mode=stream",
        driver, backend.library_path.c_str());
  }
  options.graph_command_buffers = params.graph_mode;
  info.uri = uri.ToString();
  info.properties["async_allocations"] =
      options.async_allocations ? "on" : "off";
  info.properties["command_buffer_mode"] =
      params.graph_mode ? "graph" : "stream";
  return GpuDevice::Create(std::move(info), std::move(api), options);
}

}  // namespace hal::gpu
