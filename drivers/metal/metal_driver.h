// The Metal driver (drivers/metal/): registration. Plain C++; the driver's
// Objective-C++ stays in drivers/metal/*.mm. See docs/drivers/metal.md.
#pragma once

#include <cstdint>

#include "hal/device.h"
#include "hal/driver.h"
#include "hal/status.h"

namespace hal::metal {

// Registers "metal": one device per MTLDevice (MTLCreateSystemDefaultDevice;
// on Linux the simulated Metal framework, sim/metal/).
Status RegisterMetalDriver(DriverRegistry* registry);

// How the waits of this device's queue operations were met so far: encoded
// into the command buffer (`encodeWaitForEvent:`, no host round trip) or
// held on the host until the value was reached (it had no committed
// signaller yet). For tests of the device->device path.
struct MetalWaitCounts {
  uint64_t encoded = 0;
  uint64_t host = 0;
};
// INVALID_ARGUMENT for a device of another driver.
StatusOr<MetalWaitCounts> GetMetalWaitCounts(Device* device);

}  // namespace hal::metal
