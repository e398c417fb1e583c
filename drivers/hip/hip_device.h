// The HIP driver: device enumeration and creation over libamdhip64, opened
// at run time (drivers/hip/hip_dynamic_symbols.h). The device itself is the
// shared GPU-stream device (drivers/gpu/gpu_device.h) over HipApi.
//
// URIs and parameters are those of every GPU-stream driver
// (drivers/gpu/gpu_device_uri.h): hip, hip:N, hip://GPU-<uuid>; library=
// (else HAL_HIP_LIBRARY, else libamdhip64.so.5, then libamdhip64.so),
// queues=, async_allocations=, command_buffer_mode=stream|graph (hipGraph).
#pragma once

#include <vector>

#include "hal/device.h"
#include "hal/driver.h"
#include "hal/uri.h"

namespace hal::hip {

StatusOr<std::vector<DeviceInfo>> EnumerateHipDevices(
    const std::string& library);
StatusOr<Ref<Device>> CreateHipDevice(const DeviceUri& uri);

// Adds the "hip" driver to `registry`.
Status RegisterHipDriver(DriverRegistry* registry);

}  // namespace hal::hip
