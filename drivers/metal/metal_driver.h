// The Metal driver (drivers/metal/): registration. Plain C++; the driver's
// Objective-C++ stays in drivers/metal/*.mm. See docs/drivers/metal.md.
#pragma once

#include "hal/driver.h"
#include "hal/status.h"

namespace hal::metal {

// Registers "metal": one device per MTLDevice (MTLCreateSystemDefaultDevice;
// on Linux the simulated Metal framework, sim/metal/).
Status RegisterMetalDriver(DriverRegistry* registry);

}  // namespace hal::metal
