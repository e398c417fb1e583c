// The Metal driver, in Objective-C++ without ARC: explicit retain/release of
// every id<MTL...> it keeps, and @autoreleasepool around every call that
// gets autoreleased objects (command buffers, encoders, errors).
//
// Mapping (the IREE Metal design, docs/drivers/metal.md):
//   * a device per MTLDevice, a MTLCommandQueue per HAL queue;
//   * buffers on storage modes: host-visible memory is Shared, device-only
//     memory is Private (its `contents` is NULL, so it is never mapped);
//   * a timeline semaphore is a MTLSharedEvent: host signals set
//     signaledValue; a queue operation encodes a wait for every wait point
//     whose value is reached or will be signalled by work committed already
//     (device to device, no host round trip), and is held on the host until
//     the others are reached (NotifyAt), so that work waiting for a value
//     nobody has submitted yet never blocks its Metal queue;
//   * a queue operation is one MTLCommandBuffer: encoded waits, its work in
//     blit and compute encoders (a new encoder after each barrier), encoded
//     signals. A shared-event listener raises the HAL payload when the
//     event is signalled; the completion handler fails the signals of a
//     failed command buffer. Values signalled from the host (alloca,
//     dealloca, host calls) are not encoded: the host signals them;
//   * fill with a pattern Metal's blit fill cannot take (a 2- or 4-byte
//     pattern, or a range that is not 4-byte aligned) and update go through
//     a Shared staging buffer and blit copies; files through a Shared
//     staging buffer (hal/utils/file_staging.h);
//   * executables: a MTLLibrary per MSL module, a pipeline per export;
//     dispatch with dispatchThreadgroups (binding i at buffer index i, the
//     constants at index 30, the export's workgroup size per threadgroup).
//
// One concept per file (metal_driver.h is the only header plain C++ sees;
// the others are Objective-C++, for drivers/metal/*.mm):
//   metal_buffer      MetalBuffer: a HAL buffer over a MTLBuffer;
//   metal_allocator   MetalAllocator: storage modes and host imports;
//   metal_semaphore   MetalSemaphore: a timeline over a MTLSharedEvent;
//   metal_executable  MetalExecutable(Cache): libraries and pipelines;
//   metal_encoder     Encoder: one queue operation's blit/compute commands;
//   metal_device      MetalDevice: queues, submission, waits and signals;
//   metal_driver      registration (this file).
#import "Metal/Metal.h"

#include <utility>
#include <vector>

// Every program that links the Metal driver loads GCC's Objective-C runtime,
// whose class tables are allocated at load time and never freed (a constant
// ~8.9 KB, sim/metal/lsan_suppressions.txt), and whose +initialize takes its
// own lock under GNUstep's (sim/metal/tsan_suppressions.txt). The sanitizers
// read these weak hooks, so hal-check, the unit tests and a user's program
// get the same suppressions as the Metal tests' environment gives them;
// reports from the project's own code are untouched. Binaries that load the
// runtime without this object (a test linking hal_drivers but not the
// registration) get them from the asan/tsan test presets' environment.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libobjc.so\n";
}
extern "C" const char* __lsan_default_options() {
  return "print_suppressions=0";
}
extern "C" const char* __tsan_default_suppressions() {
  return "deadlock:libobjc.so\n";
}

#include "drivers/metal/metal_device.h"
#include "drivers/metal/metal_driver.h"
#include "hal/uri.h"

namespace hal::metal {

StatusOr<MetalWaitCounts> GetMetalWaitCounts(Device* device) {
  auto* metal = dynamic_cast<MetalDevice*>(device);
  if (!metal) return InvalidArgumentError("not a Metal device");
  return metal->wait_counts();
}

Status RegisterMetalDriver(DriverRegistry* registry) {
  DriverFactory factory;
  factory.name = "metal";
  factory.description =
      "Apple Metal (MTLDevice; on Linux the simulated Metal framework)";
  factory.enumerate = []() -> StatusOr<std::vector<DeviceInfo>> {
    @autoreleasepool {
      id<MTLDevice> device = MTLCreateSystemDefaultDevice();
      if (!device) return std::vector<DeviceInfo>{};
      DeviceInfo info;
      info.driver = "metal";
      info.name = [[device name] UTF8String];
      info.uri = "metal:0";
      info.memory_bytes = [device recommendedMaxWorkingSetSize];
      [device release];
      return std::vector<DeviceInfo>{info};
    }
  };
  factory.try_create = [](const DeviceUri& uri) {
    return MetalDevice::Create(uri);
  };
  return registry->Register(std::move(factory));
}

}  // namespace hal::metal
