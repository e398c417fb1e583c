// The AMDGPU driver (HSA/ROCr opened at run time) and its registration.
//
// URIs: amdgpu (one logical device over every visible GPU agent),
// amdgpu:N, amdgpu://N, amdgpu://GPU-<uuid> (the agent's
// HSA_AMD_AGENT_INFO_UUID), and lists of those (amdgpu://0,1,
// amdgpu://GPU-a,GPU-b: one logical device over those agents, HAL queue i
// on agent i % count). Parameters as every GPU-stream driver
// (drivers/gpu/gpu_device_uri.h): library=, queues=. The real library
// honours ROCR_VISIBLE_DEVICES, and so does the simulator.
#pragma once

#include <string>
#include <vector>

#include "hal/device.h"
#include "hal/driver.h"
#include "hal/uri.h"

namespace hal::amdgpu {

StatusOr<std::vector<DeviceInfo>> EnumerateAmdgpuDevices(
    const std::string& library);
StatusOr<Ref<Device>> CreateAmdgpuDevice(const DeviceUri& uri);
Status RegisterAmdgpuDriver(DriverRegistry* registry);

}  // namespace hal::amdgpu
