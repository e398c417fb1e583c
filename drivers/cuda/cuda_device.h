// The CUDA driver: device enumeration and creation over libcuda, opened at
// run time (drivers/cuda/cuda_dynamic_symbols.h). The device itself is the
// shared GPU-stream device (drivers/gpu/gpu_device.h) over CudaApi.
//
// URIs and parameters are those of every GPU-stream driver
// (drivers/gpu/gpu_device_uri.h): cuda, cuda:N, cuda://GPU-<uuid> (as
// nvidia-smi prints it); library= (else HAL_CUDA_LIBRARY, else libcuda.so.1),
// queues=, async_allocations=, command_buffer_mode=stream|graph (CUgraph).
#pragma once

#include <vector>

#include "hal/device.h"
#include "hal/driver.h"
#include "hal/uri.h"

namespace hal::cuda {

StatusOr<std::vector<DeviceInfo>> EnumerateCudaDevices(
    const std::string& library);
StatusOr<Ref<Device>> CreateCudaDevice(const DeviceUri& uri);

// Adds the "cuda" driver to `registry`.
Status RegisterCudaDriver(DriverRegistry* registry);

}  // namespace hal::cuda
