// The HIP skin's shared pieces (sim/hip/*.cc): the library (sim/skin/
// skin.h), the hipError_t mapping, and the checks every entry point starts
// with. Not installed; the library's public additions are
// sim/core/halsim_control.h.
#pragma once

#include <hip/hip_runtime_api.h>

#include "sim/skin/skin_stream.h"

namespace hal::sim::hip {

using skin::Code;

// HIP_VERSION of Debian's 5.2.3: major * 10^7 + minor * 10^5 + patch.
constexpr int kSimDriverVersion = 50200003;
// The ISA the simulated devices report and accept code objects for
// (EF_AMDGPU_MACH_AMDGCN_GFX90A).
constexpr unsigned kGfx90aMach = 0x3f;

skin::StreamLibrary& L();
hipError_t ToHip(Code code);
inline hipError_t ToHip(engine::Error e) { return ToHip(skin::FromEngine(e)); }
// The calling thread's device (hipSetDevice; device 0 until set).
skin::Scope* Current();

// Handles: null unless live in the library's handle table.
inline skin::Stream* AsStream(hipStream_t h) {
  return L().Find<skin::Stream>(h);
}
inline skin::Event* AsEvent(hipEvent_t h) { return L().Find<skin::Event>(h); }
inline skin::Graph* AsGraph(hipGraph_t h) { return L().Find<skin::Graph>(h); }

// Checks a launch as hipModuleLaunchKernel does, reads its parameters, and
// returns the work (stream op or graph node) in `out`
// (sim_libhip_module.cc).
hipError_t KernelOp(skin::Scope* device, hipFunction_t f,
                    const uint32_t grid[3], const uint32_t block[3],
                    unsigned int shared_bytes, void** kernel_params,
                    void** extra, skin::KernelLaunch* out);

}  // namespace hal::sim::hip

// Entry-point prologues (sim/skin/skin_stream.h): the host-callback rule and
// the settle rule; then hipInit done; then the current device without a sticky
// error, as `dev`.
#define HALSIM_ENTER(name) \
  HALSIM_SKIN_ENTER(::hal::sim::hip::L(), name, ::hal::sim::hip::ToHip)
#define HALSIM_ENTER_INIT(name) \
  HALSIM_SKIN_ENTER_INIT(::hal::sim::hip::L(), name, ::hal::sim::hip::ToHip)
#define HALSIM_ENTER_DEVICE(name, dev)                                        \
  HALSIM_SKIN_ENTER_SCOPE(::hal::sim::hip::L(), name, ::hal::sim::hip::ToHip, \
                          dev, ::hal::sim::hip::Current())
