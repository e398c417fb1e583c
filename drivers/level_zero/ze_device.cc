#include "drivers/level_zero/ze_device.h"

#include "drivers/gpu/gpu_device_uri.h"
#include "drivers/level_zero/ze_api.h"
#include "drivers/level_zero/ze_dynamic_symbols.h"
#include "drivers/level_zero/ze_status.h"

namespace hal::level_zero {

namespace {

#define ZE(syms, expr, ...) HAL_ZE_RETURN_IF_ERROR(syms, expr, __VA_ARGS__)

StatusOr<ze_device_handle_t> DeviceHandle(const ZeSymbols* syms, int ordinal) {
  uint32_t count = 0;
  ZE(syms, zeDeviceGet(syms->drivers[0], &count, nullptr), "counting devices");
  std::vector<ze_device_handle_t> devices(count);
  ZE(syms, zeDeviceGet(syms->drivers[0], &count, devices.data()),
     "listing devices");
  if (ordinal < 0 || static_cast<uint32_t>(ordinal) >= count) {
    return NotFoundError("level_zero: no device %d (%u devices)", ordinal,
                         count);
  }
  return devices[ordinal];
}

std::string EngineGroups(const ZeSymbols* syms, ze_device_handle_t device,
                         Status* status) {
  uint32_t groups = 0;
  ze_result_t r =
      syms->zeDeviceGetCommandQueueGroupProperties(device, &groups, nullptr);
  std::vector<ze_command_queue_group_properties_t> props(groups);
  for (auto& p : props) {
    p = {};
    p.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  }
  if (r == ZE_RESULT_SUCCESS) {
    r = syms->zeDeviceGetCommandQueueGroupProperties(device, &groups,
                                                     props.data());
  }
  if (r != ZE_RESULT_SUCCESS) {
    *status =
        ZeResultToStatus(r, "zeDeviceGetCommandQueueGroupProperties", "%s", "");
    return "";
  }
  // "0:compute+copy x4, 1:copy x4"
  std::string text;
  for (uint32_t i = 0; i < groups; ++i) {
    const bool compute =
        props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE;
    const bool copy =
        props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    if (!text.empty()) text += ", ";
    text += std::to_string(i) + ":" +
            (compute ? (copy ? "compute+copy" : "compute") : "copy") + " x" +
            std::to_string(props[i].numQueues);
  }
  return text;
}

StatusOr<DeviceInfo> DescribeDevice(const ZeSymbols* syms, int ordinal) {
  HAL_ASSIGN_OR_RETURN(ze_device_handle_t device, DeviceHandle(syms, ordinal));
  ze_device_properties_t props = {};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  ZE(syms, zeDeviceGetProperties(device, &props), "device %d", ordinal);
  uint32_t mems = 0;
  ZE(syms, zeDeviceGetMemoryProperties(device, &mems, nullptr), "device %d",
     ordinal);
  std::vector<ze_device_memory_properties_t> mem(mems);
  for (auto& m : mem) {
    m = {};
    m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  }
  ZE(syms, zeDeviceGetMemoryProperties(device, &mems, mem.data()), "device %d",
     ordinal);
  ze_device_compute_properties_t compute = {};
  compute.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ZE(syms, zeDeviceGetComputeProperties(device, &compute), "device %d",
     ordinal);
  Status groups_status;
  std::string groups = EngineGroups(syms, device, &groups_status);
  HAL_RETURN_IF_ERROR(groups_status);
  DeviceInfo info;
  info.driver = "level_zero";
  info.name = props.name;
  info.uuid = gpu::FormatGpuUuid(props.uuid.id);
  info.uri = "level_zero:" + std::to_string(ordinal);
  info.ordinal = static_cast<uint64_t>(ordinal);
  info.queue_count = 2;  // the default of level_zero:N (queues=N changes it)
  info.memory_bytes = 0;
  for (const auto& m : mem) info.memory_bytes += m.totalSize;
  info.properties["engine_groups"] = groups;
  info.properties["max_group_size"] = std::to_string(compute.maxTotalGroupSize);
  char vendor[16];
  std::snprintf(vendor, sizeof(vendor), "0x%04x", props.vendorId);
  info.properties["vendor_id"] = vendor;
  info.properties["library"] = syms->library_path;
  return info;
}

StatusOr<int> DeviceCount(const ZeSymbols* syms) {
  uint32_t count = 0;
  ZE(syms, zeDeviceGet(syms->drivers[0], &count, nullptr), "counting devices");
  return static_cast<int>(count);
}

gpu::GpuDriverBackend Backend(std::shared_ptr<const ZeSymbols> syms) {
  gpu::GpuDriverBackend backend;
  backend.name = "level_zero";
  backend.library_path = syms->library_path;
  backend.count = [syms] { return DeviceCount(syms.get()); };
  backend.describe = [syms](int i) { return DescribeDevice(syms.get(), i); };
  backend.create_api =
      [syms](int ordinal) -> StatusOr<std::shared_ptr<gpu::GpuApi>> {
    HAL_ASSIGN_OR_RETURN(ze_device_handle_t device,
                         DeviceHandle(syms.get(), ordinal));
    HAL_ASSIGN_OR_RETURN(std::shared_ptr<ZeApi> api,
                         ZeApi::Create(syms, syms->drivers[0], device));
    return std::shared_ptr<gpu::GpuApi>(std::move(api));
  };
  return backend;
}

}  // namespace

StatusOr<std::vector<DeviceInfo>> EnumerateZeDevices(
    const std::string& library) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const ZeSymbols> syms,
                       LoadZeSymbols(library));
  return gpu::EnumerateGpuDevices(Backend(std::move(syms)));
}

StatusOr<Ref<Device>> CreateZeDevice(const DeviceUri& uri) {
  HAL_ASSIGN_OR_RETURN(gpu::GpuUriParams params,
                       gpu::ParseGpuUri(uri, "level_zero"));
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const ZeSymbols> syms,
                       LoadZeSymbols(params.library));
  return gpu::CreateGpuDevice(uri, params, Backend(std::move(syms)));
}

Status RegisterLevelZeroDriver(DriverRegistry* registry) {
  DriverFactory factory;
  factory.name = "level_zero";
  factory.description =
      "Level Zero (the loader libze_loader.so.1 opened at run time; "
      "ZE_ENABLE_ALT_DRIVERS selects the driver behind it, e.g. the "
      "simulated libhalsim_ze.so)";
  factory.enumerate = []() { return EnumerateZeDevices(""); };
  factory.try_create = [](const DeviceUri& uri) { return CreateZeDevice(uri); };
  return registry->Register(std::move(factory));
}

}  // namespace hal::level_zero
