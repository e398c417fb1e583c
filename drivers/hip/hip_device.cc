#include "drivers/hip/hip_device.h"

#include "drivers/gpu/gpu_device_uri.h"
#include "drivers/hip/hip_api.h"
#include "drivers/hip/hip_dynamic_symbols.h"
#include "drivers/hip/hip_status.h"

namespace hal::hip {

namespace {

#define HIP(syms, expr, ...) HAL_HIP_RETURN_IF_ERROR(syms, expr, __VA_ARGS__)

StatusOr<DeviceInfo> DescribeDevice(const HipSymbols* syms, int ordinal) {
  hipDevice_t device;
  HIP(syms, hipDeviceGet(&device, ordinal), "device %d", ordinal);
  char name[256] = {};
  HIP(syms, hipDeviceGetName(name, sizeof(name) - 1, device), "device %d",
      ordinal);
  hipUUID uuid;
  HIP(syms, hipDeviceGetUuid(&uuid, device), "device %d", ordinal);
  size_t memory = 0;
  HIP(syms, hipDeviceTotalMem(&memory, device), "device %d", ordinal);
  int major = 0, minor = 0, pools = 0, warp = 0;
  HIP(syms,
      hipDeviceGetAttribute(&major, hipDeviceAttributeComputeCapabilityMajor,
                            device),
      "device %d", ordinal);
  HIP(syms,
      hipDeviceGetAttribute(&minor, hipDeviceAttributeComputeCapabilityMinor,
                            device),
      "device %d", ordinal);
  HIP(syms,
      hipDeviceGetAttribute(&pools, hipDeviceAttributeMemoryPoolsSupported,
                            device),
      "device %d", ordinal);
  HIP(syms, hipDeviceGetAttribute(&warp, hipDeviceAttributeWarpSize, device),
      "device %d", ordinal);
  DeviceInfo info;
  info.driver = "hip";
  info.name = name;
  info.uuid =
      gpu::FormatGpuUuid(reinterpret_cast<const unsigned char*>(uuid.bytes));
  info.uri = "hip:" + std::to_string(ordinal);
  info.ordinal = static_cast<uint64_t>(ordinal);
  info.queue_count = 2;  // the default of hip:N (queues=N changes it)
  info.memory_bytes = memory;
  info.properties["compute_capability"] =
      std::to_string(major) + "." + std::to_string(minor);
  info.properties["warp_size"] = std::to_string(warp);
  // HIP_VERSION: major * 10^7 + minor * 10^5 + patch.
  const int v = syms->driver_version;
  info.properties["driver_version"] = std::to_string(v / 10000000) + "." +
                                      std::to_string((v / 100000) % 100) + "." +
                                      std::to_string(v % 100000);
  info.properties["memory_pools"] = pools ? "yes" : "no";
  info.properties["library"] = syms->library_path;
  return info;
}

StatusOr<int> DeviceCount(const HipSymbols* syms) {
  int count = 0;
  HIP(syms, hipGetDeviceCount(&count), "counting devices");
  return count;
}

gpu::GpuDriverBackend Backend(std::shared_ptr<const HipSymbols> syms) {
  gpu::GpuDriverBackend backend;
  backend.name = "hip";
  backend.library_path = syms->library_path;
  backend.count = [syms] { return DeviceCount(syms.get()); };
  backend.describe = [syms](int i) { return DescribeDevice(syms.get(), i); };
  backend.create_api =
      [syms](int ordinal) -> StatusOr<std::shared_ptr<gpu::GpuApi>> {
    hipDevice_t device;
    HIP(syms.get(), hipDeviceGet(&device, ordinal), "device %d", ordinal);
    HAL_ASSIGN_OR_RETURN(std::shared_ptr<HipApi> api,
                         HipApi::Create(syms, device));
    return std::shared_ptr<gpu::GpuApi>(std::move(api));
  };
  return backend;
}

}  // namespace

StatusOr<std::vector<DeviceInfo>> EnumerateHipDevices(
    const std::string& library) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const HipSymbols> syms,
                       LoadHipSymbols(library));
  return gpu::EnumerateGpuDevices(Backend(std::move(syms)));
}

StatusOr<Ref<Device>> CreateHipDevice(const DeviceUri& uri) {
  HAL_ASSIGN_OR_RETURN(gpu::GpuUriParams params, gpu::ParseGpuUri(uri, "hip"));
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const HipSymbols> syms,
                       LoadHipSymbols(params.library));
  return gpu::CreateGpuDevice(uri, params, Backend(std::move(syms)));
}

Status RegisterHipDriver(DriverRegistry* registry) {
  DriverFactory factory;
  factory.name = "hip";
  factory.description =
      "AMD HIP (libamdhip64 opened at run time; HAL_HIP_LIBRARY selects the "
      "library, e.g. the HIP API simulator)";
  factory.enumerate = []() { return EnumerateHipDevices(""); };
  factory.try_create = [](const DeviceUri& uri) {
    return CreateHipDevice(uri);
  };
  return registry->Register(std::move(factory));
}

}  // namespace hal::hip
