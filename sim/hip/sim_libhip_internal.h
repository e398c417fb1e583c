// The HIP skin's shared pieces (sim/hip/*.cc): HIP objects over the engine
// (sim/engine/engine.h), the hipError_t mapping, and the checks every entry
// point starts with. Not installed; the library's public additions are
// sim/core/halsim_control.h.
#pragma once

#include <hip/hip_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/engine_event.h"

#define HALSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace hal::sim::hip {

using engine::Engine;

// HIP_VERSION of Debian's 5.2.3: major * 10^7 + minor * 10^5 + patch.
constexpr int kSimDriverVersion = 50200003;
constexpr size_t kDeviceMemoryBytes = size_t{16} << 30;
constexpr int kMaxDevices = 8;
// The ISA the simulated devices report and accept code objects for
// (EF_AMDGPU_MACH_AMDGCN_GFX90A).
constexpr unsigned kGfx90aMach = 0x3f;

// The library's engine: one static at the C ABI edge, never destroyed (the
// engine thread may outlive exit).
Engine& E();

// A device: its sticky error (a failed kernel or injected op fault) is the
// engine domain of its work, as a HIP device's is until hipDeviceReset.
struct Device {
  int ordinal = 0;
  engine::Domain domain;
};

struct Stream {
  Device* device = nullptr;
  engine::Queue* queue = nullptr;
};

// A hipEvent_t is an engine event (sim/engine/engine_event.h), as a CUevent
// is in the CUDA skin.
struct Event {
  Device* device = nullptr;
  engine::Event event{E()};
};

bool Initialized();
int DeviceCount();
Device* GetDevice(int ordinal);  // null when out of range

hipError_t ToHipError(engine::Error error);
hipError_t HostFunctionViolation(const char* name);
// The calling thread's device (hipSetDevice; device 0 until set).
Device* Current();

// Checks a launch as hipModuleLaunchKernel does, reads its parameters, and
// returns the work (stream op or graph node) in `out`
// (sim_libhip_module.cc).
hipError_t KernelOp(Device* device, hipFunction_t f, const uint32_t grid[3],
                    const uint32_t block[3], unsigned int shared_bytes,
                    void** kernel_params, void** extra, engine::Work* out);

}  // namespace hal::sim::hip

// Every entry point starts here: host callbacks may not call HIP, and the
// engine's settle rule counts the thread as inside a call.
#define HALSIM_ENTER(name)                               \
  if (::hal::sim::engine::Engine::InHostCallback())      \
    return ::hal::sim::hip::HostFunctionViolation(name); \
  ::hal::sim::engine::Engine::HostCall halsim_api_call_(::hal::sim::hip::E())

#define HALSIM_NEED_INIT()                                              \
  do {                                                                  \
    if (!::hal::sim::hip::Initialized()) return hipErrorNotInitialized; \
  } while (0)

// The current device, without a sticky error.
#define HALSIM_NEED_DEVICE(dev)                              \
  HALSIM_NEED_INIT();                                        \
  ::hal::sim::hip::Device* dev = ::hal::sim::hip::Current(); \
  if (dev->domain.failed())                                  \
  return ::hal::sim::hip::ToHipError(dev->domain.error())
