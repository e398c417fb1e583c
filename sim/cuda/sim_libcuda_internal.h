// The CUDA skin's shared pieces (sim/cuda/*.cc): the library (sim/skin/
// skin.h), the CUresult mapping, and the checks every entry point starts
// with. Not installed; the library's public additions are sim_libcuda.h and
// sim/core/halsim_control.h.
#pragma once

#include <cuda.h>

#include "sim/skin/skin_stream.h"

namespace hal::sim::cuda {

using skin::Code;

constexpr int kSimDriverVersion = 13000;

skin::StreamLibrary& L();
CUresult Cu(Code code);
inline CUresult Cu(engine::Error error) { return Cu(skin::FromEngine(error)); }
// The calling thread's current context (a primary context), or null.
skin::Scope* Current();

// Handles: null unless live in the library's handle table.
inline skin::Stream* AsStream(CUstream h) { return L().Find<skin::Stream>(h); }
inline skin::Event* AsEvent(CUevent h) { return L().Find<skin::Event>(h); }
inline skin::Graph* AsGraph(CUgraph h) { return L().Find<skin::Graph>(h); }

// Checks a launch as cuLaunchKernel does, reads its parameters, and returns
// the work (stream op or graph node) in `out` (sim_libcuda_module.cc).
CUresult KernelOp(skin::Scope* ctx, CUfunction hfunc, const uint32_t grid[3],
                  const uint32_t block[3], unsigned int shared_bytes,
                  void** kernel_params, void** extra, skin::KernelLaunch* out);

}  // namespace hal::sim::cuda

// Entry-point prologues (sim/skin/skin_stream.h): the host-callback rule and
// the settle rule; then cuInit done; then a current context without a sticky
// error, as `ctx`.
#define HALSIM_ENTER(name) \
  HALSIM_SKIN_ENTER(::hal::sim::cuda::L(), name, ::hal::sim::cuda::Cu)
#define HALSIM_ENTER_INIT(name) \
  HALSIM_SKIN_ENTER_INIT(::hal::sim::cuda::L(), name, ::hal::sim::cuda::Cu)
#define HALSIM_ENTER_CONTEXT(name, ctx)                                      \
  HALSIM_SKIN_ENTER_SCOPE(::hal::sim::cuda::L(), name, ::hal::sim::cuda::Cu, \
                          ctx, ::hal::sim::cuda::Current())
