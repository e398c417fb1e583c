#include "drivers/cuda/cuda_device.h"

#include <cstdio>

#include "drivers/cuda/cuda_api.h"
#include "drivers/cuda/cuda_dynamic_symbols.h"
#include "drivers/cuda/cuda_status.h"
#include "drivers/gpu/gpu_device_uri.h"

namespace hal::cuda {

namespace {

#define CU(syms, expr, ...) HAL_CUDA_RETURN_IF_ERROR(syms, expr, __VA_ARGS__)

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
  info.uuid =
      gpu::FormatGpuUuid(reinterpret_cast<const unsigned char*>(uuid.bytes));
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

gpu::GpuDriverBackend Backend(std::shared_ptr<const CudaSymbols> syms) {
  gpu::GpuDriverBackend backend;
  backend.name = "cuda";
  backend.library_path = syms->library_path;
  backend.count = [syms] { return DeviceCount(syms.get()); };
  backend.describe = [syms](int i) { return DescribeDevice(syms.get(), i); };
  backend.create_api =
      [syms](int ordinal) -> StatusOr<std::shared_ptr<gpu::GpuApi>> {
    CUdevice device;
    CU(syms.get(), cuDeviceGet(&device, ordinal), "device %d", ordinal);
    HAL_ASSIGN_OR_RETURN(std::shared_ptr<CudaApi> api,
                         CudaApi::Create(syms, device));
    return std::shared_ptr<gpu::GpuApi>(std::move(api));
  };
  return backend;
}

}  // namespace

StatusOr<std::vector<DeviceInfo>> EnumerateCudaDevices(
    const std::string& library) {
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const CudaSymbols> syms,
                       LoadCudaSymbols(library));
  return gpu::EnumerateGpuDevices(Backend(std::move(syms)));
}

StatusOr<Ref<Device>> CreateCudaDevice(const DeviceUri& uri) {
  HAL_ASSIGN_OR_RETURN(gpu::GpuUriParams params, gpu::ParseGpuUri(uri, "cuda"));
  HAL_ASSIGN_OR_RETURN(std::shared_ptr<const CudaSymbols> syms,
                       LoadCudaSymbols(params.library));
  return gpu::CreateGpuDevice(uri, params, Backend(std::move(syms)));
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
