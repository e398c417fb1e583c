// The CUDA skin's shared pieces (sim/cuda/*.cc): CUDA objects over the
// engine (sim/engine/engine.h), the CUresult mapping, and the checks every
// entry point starts with. Not installed; the library's public additions
// are sim_libcuda.h and sim/core/halsim_control.h.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/engine_event.h"

#define HALSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace hal::sim::cuda {

using engine::Engine;

constexpr int kSimDriverVersion = 13000;
constexpr size_t kDeviceMemoryBytes = size_t{16} << 30;

// The library's engine: one static at the C ABI edge, never destroyed (the
// engine thread may outlive exit).
Engine& E();

// A primary context: its sticky error is the engine domain of its work.
struct Context {
  int device = 0;
  int refs = 0;  // under ContextMutex()
  engine::Domain domain;
};

struct Stream {
  Context* context = nullptr;
  engine::Queue* queue = nullptr;
};

// A CUevent is an engine event (sim/engine/engine_event.h): a view of an
// engine signal, so cuEventDestroy may return at once, as CUDA's does,
// while records and waits are pending.
struct Event {
  Context* context = nullptr;
  engine::Event event{E()};
};

struct LibraryState {
  std::atomic<bool> initialized{false};
  int device_count = 1;
  std::vector<Context*> primary;  // per device, null until retained
};
LibraryState& State();  // under ContextMutex() after cuInit
std::mutex& ContextMutex();

CUresult ToCuResult(engine::Error error);
CUresult HostFunctionViolation(const char* name);
Context* Current();

// Checks a launch as cuLaunchKernel does, reads its parameters, and returns
// the work (stream op or graph node) in `out` (sim_libcuda_module.cc).
CUresult KernelOp(Context* ctx, CUfunction hfunc, unsigned int grid_x,
                  unsigned int grid_y, unsigned int grid_z,
                  unsigned int block_x, unsigned int block_y,
                  unsigned int block_z, unsigned int shared_bytes,
                  void** kernel_params, void** extra, engine::Work* out);

}  // namespace hal::sim::cuda

// Every entry point starts here: host functions may not call CUDA, and the
// engine's settle rule counts the thread as inside a call.
#define HALSIM_ENTER(name)                                \
  if (::hal::sim::engine::Engine::InHostCallback())       \
    return ::hal::sim::cuda::HostFunctionViolation(name); \
  ::hal::sim::engine::Engine::HostCall halsim_api_call_(::hal::sim::cuda::E())

#define HALSIM_NEED_INIT()                      \
  do {                                          \
    if (!::hal::sim::cuda::State().initialized) \
      return CUDA_ERROR_NOT_INITIALIZED;        \
  } while (0)

// A current context without a sticky error.
#define HALSIM_NEED_CONTEXT(ctx)                                \
  HALSIM_NEED_INIT();                                           \
  ::hal::sim::cuda::Context* ctx = ::hal::sim::cuda::Current(); \
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;                  \
  if (ctx->domain.failed())                                     \
  return ::hal::sim::cuda::ToCuResult(ctx->domain.error())
