// Executables and dispatch over a GPU-stream API (CUDA PTX, HIP HSACO): the
// seed's executable cache written once against GpuApi.
//
// Prepare loads every module of a verified executable (GpuApi::ModuleLoad:
// cuModuleLoadDataEx for CUDA) and resolves one function per export by name
// (cuModuleGetFunction). The export's workgroup size is the block size of
// every launch and its shared_memory_size the dynamic shared memory. The
// executable keeps the API (and so the context) alive and unloads its
// modules when released; command buffers hold a reference to it, so a
// submission never outlives its code.
//
// Kernel ABI (docs/executables.md): the bindings, in order, as 64-bit device
// pointers to the start of each bound range, then the constants, in order,
// as 32-bit values.
//
// Indirect dispatch: where the API has a launch whose grid is read from
// device memory (GpuApi::SupportsIndirectLaunch: Level Zero), the device
// reads the count when the launch runs, with no host round trip, and checks
// it itself. Otherwise (CUDA, HIP) LaunchGpuDispatch emulates it with a host
// round trip: it copies the 12-byte count to the host on the stream,
// synchronizes the stream (which also finishes everything enqueued before,
// such as the command that wrote the count), and launches with the count it
// read.
#pragma once

#include <memory>
#include <vector>

#include "drivers/gpu/gpu_api.h"
#include "hal/command_buffer.h"
#include "hal/executable.h"

namespace hal::gpu {

// UNIMPLEMENTED when the API has no module entry points.
StatusOr<Ref<ExecutableCache>> CreateGpuExecutableCache(
    std::shared_ptr<GpuApi> api);

// How many indirect dispatches this process has launched through the host
// round trip (read the count on the host, then launch) since it started:
// what tests use to tell that an API with SupportsIndirectLaunch made none.
// Thread-safe.
uint64_t IndirectCountHostReads();

// Enqueues one recorded dispatch (validated by ValidateSubmission against
// `table`) on `stream`. A zero count in any dimension launches nothing.
// INVALID_ARGUMENT for an executable another cache prepared; OUT_OF_RANGE
// for an indirect count above kMaxWorkgroupCount read on the host;
// FAILED_PRECONDITION for a buffer whose memory is not there; API errors as
// the API reports them. An indirect dispatch without an indirect launch
// blocks the calling thread until the stream drained.
Status LaunchGpuDispatch(GpuApi* api, GpuStream stream,
                         const cmd::Dispatch& dispatch, BindingTable table);

// A direct dispatch resolved to a kernel launch: what LaunchGpuDispatch
// passes to GpuApi::LaunchKernel (graph command buffers add it as a node).
struct GpuKernelLaunch {
  GpuFunction function = nullptr;
  uint32_t grid[3] = {};  // a zero dimension: nothing to launch
  uint32_t block[3] = {};
  uint32_t shared_memory = 0;
  std::vector<GpuDevicePtr> pointers;  // one per binding
  std::vector<uint32_t> constants;

  bool empty() const { return grid[0] == 0 || grid[1] == 0 || grid[2] == 0; }
  // One pointer per kernel parameter (into this object), for the API call.
  std::vector<void*> Params();
  bool operator==(const GpuKernelLaunch&) const = default;
};

// Resolves a direct (not indirect) dispatch with the checks and errors of
// LaunchGpuDispatch, without enqueueing anything. INTERNAL for an indirect
// dispatch (its grid is known only when it runs).
StatusOr<GpuKernelLaunch> ResolveGpuDispatch(GpuApi* api,
                                             const cmd::Dispatch& dispatch,
                                             BindingTable table);

}  // namespace hal::gpu
