// What every GPU-stream driver (CUDA, HIP) does alike with a device URI:
// the shared parameters, the device it names, and the GpuDevice it makes.
//
// URIs: <driver> (device 0), <driver>:N (ordinal), <driver>://GPU-<uuid>.
// Parameters:
//   library=PATH            the vendor library (else HAL_<DRIVER>_LIBRARY,
//                           else the driver's default)
//   queues=N                HAL queues, one stream each (default 2)
//   async_allocations=0|1   queue_alloca/dealloca from the device's memory
//                           pool in stream order (default 1 where the device
//                           has pools)
//   command_buffer_mode=stream|graph   replay onto the stream (default) or
//                           build one API graph per command buffer
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/gpu/gpu_api.h"
#include "hal/device.h"
#include "hal/uri.h"

namespace hal::gpu {

struct GpuUriParams {
  std::string library;  // empty: not given
  int queues = 2;
  bool graph_mode = false;
};

// Checks the URI's parameters (only the ones above), that it names at most
// one device, and reads them. INVALID_ARGUMENT naming `driver` otherwise.
StatusOr<GpuUriParams> ParseGpuUri(const DeviceUri& uri, const char* driver);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints UUIDs.
std::string FormatGpuUuid(const unsigned char bytes[16]);

// What a GPU-stream driver supplies for enumeration and device creation,
// over its loaded vendor library.
struct GpuDriverBackend {
  const char* name = nullptr;  // "cuda", "hip": the URI's driver
  std::string library_path;    // for messages
  std::function<StatusOr<int>()> count;
  // The device's info (uuid as FormatGpuUuid, uri "<name>:N", properties).
  std::function<StatusOr<DeviceInfo>(int ordinal)> describe;
  std::function<StatusOr<std::shared_ptr<GpuApi>>(int ordinal)> create_api;
};

// Every device the library reports.
StatusOr<std::vector<DeviceInfo>> EnumerateGpuDevices(
    const GpuDriverBackend& backend);

// The device the URI names (none: 0; N; GPU-<uuid>), as the URI asks:
// queues, async allocations (INVALID_ARGUMENT when asked for without pools),
// command-buffer mode (UNIMPLEMENTED when graphs are asked for and the
// library lacks them). UNAVAILABLE when the library reports no device,
// NOT_FOUND for an ordinal or UUID it does not have. Records the choices in
// the device's properties.
StatusOr<Ref<Device>> CreateGpuDevice(const DeviceUri& uri,
                                      const GpuUriParams& params,
                                      const GpuDriverBackend& backend);

}  // namespace hal::gpu
