// The AMDGPU driver (HSA/ROCr opened at run time) and its registration.
//
// URIs: amdgpu (GPU agent 0), amdgpu:N, amdgpu://N, amdgpu://GPU-<uuid>
// (the agent's HSA_AMD_AGENT_INFO_UUID); parameters as every GPU-stream
// driver (drivers/gpu/gpu_device_uri.h): library=, queues=. The real
// library honours ROCR_VISIBLE_DEVICES, and so does the simulator.
// Logical devices over several GPU agents (amdgpu://0,1) are not done yet:
// UNIMPLEMENTED.
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
