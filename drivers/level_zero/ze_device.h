// The Level Zero driver: device enumeration and creation over the Level
// Zero loader, opened at run time (drivers/level_zero/ze_dynamic_symbols.h).
// The device itself is the shared GPU-stream device (drivers/gpu/
// gpu_device.h) over ZeApi.
//
// URIs and parameters are those of every GPU-stream driver
// (drivers/gpu/gpu_device_uri.h): level_zero, level_zero:N,
// level_zero://GPU-<uuid>; library= (the loader; else
// HAL_LEVEL_ZERO_LIBRARY, else libze_loader.so.1), queues=,
// command_buffer_mode=graph (command buffers as regular command lists, see
// ze_api.h). Stream-ordered allocation is not supported yet. Devices are
// those of the loader's first driver.
#pragma once

#include <vector>

#include "hal/device.h"
#include "hal/driver.h"
#include "hal/uri.h"

namespace hal::level_zero {

StatusOr<std::vector<DeviceInfo>> EnumerateZeDevices(
    const std::string& library);
StatusOr<Ref<Device>> CreateZeDevice(const DeviceUri& uri);

// Adds the "level_zero" driver to `registry`.
Status RegisterLevelZeroDriver(DriverRegistry* registry);

}  // namespace hal::level_zero
