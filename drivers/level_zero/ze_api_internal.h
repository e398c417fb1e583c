// What the Level Zero GpuApi's files share (ze_api.cc: devices, streams,
// events, memory, modules; ze_api_graph.cc: graphs as regular command
// lists): the objects behind the GpuApi handles and the call macro.
// Internal to drivers/level_zero.
#pragma once

#include <level_zero/ze_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "drivers/gpu/gpu_api.h"
#include "drivers/level_zero/ze_dynamic_symbols.h"
#include "hal/formats/spirv_reader.h"
#include "hal/status.h"

// A Level Zero call in a ZeApi method: its failure becomes a Status that
// names the call (ze_status.h).
#define ZE(expr, ...) HAL_ZE_RETURN_IF_ERROR(syms_.get(), expr, __VA_ARGS__)

namespace hal::level_zero {

constexpr uint32_t kEventsPerPool = 256;
// How long a release waits for work still using what it releases.
constexpr uint64_t kReleaseWaitNs = uint64_t{10} * 1000 * 1000 * 1000;

// A GpuEventHandle.
struct ZeEvent {
  void* slot = nullptr;  // ZeApi::Slot
  bool recorded = false;
};

struct ZeFunction {
  ze_kernel_handle_t kernel = nullptr;
  std::vector<int> param_bytes;
  std::mutex mutex;  // arguments and group size are kernel state
  uint32_t group[3] = {0, 0, 0};
};

struct ZeModule {
  ze_module_handle_t module = nullptr;
  std::vector<formats::SpirvKernel> kernels;
  std::vector<std::unique_ptr<ZeFunction>> functions;
};

inline ze_command_list_handle_t AsList(gpu::GpuStream s) {
  return static_cast<ze_command_list_handle_t>(s);
}
inline ZeEvent* AsEvent(gpu::GpuEventHandle e) {
  return static_cast<ZeEvent*>(e);
}
inline void* AsPtr(gpu::GpuDevicePtr p) { return reinterpret_cast<void*>(p); }

// Sets `f`'s group size and arguments (kernel state in Level Zero); the
// caller holds f->mutex until the launch is appended, which reads them.
Status SetKernelState(const ZeSymbols* syms, ZeFunction* f,
                      const uint32_t block[3], uint32_t shared_memory,
                      void** params);

}  // namespace hal::level_zero
