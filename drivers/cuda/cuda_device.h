// The CUDA driver: device enumeration and creation over libcuda, opened at
// run time (drivers/cuda/cuda_dynamic_symbols.h). The device itself is the
// shared GPU-stream device (drivers/gpu/gpu_device.h) over CudaApi.
//
// URIs: cuda (device 0), cuda:N (ordinal), cuda://GPU-<uuid> (as nvidia-smi
// prints it). Parameters:
//   library=PATH            libcuda to load (else HAL_CUDA_LIBRARY, else
//                           libcuda.so.1)
//   queues=N                HAL queues, one CUDA stream each (default 2)
//   async_allocations=0|1   queue_alloca/dealloca from the device's memory
//                           pool in stream order (default 1 where the device
//                           has pools)
//   command_buffer_mode=stream   the only mode so far; `graph` (CUgraph) is
//                           not implemented (docs/drivers/cuda.md)
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
