// A HAL device over a GPU-stream API (CUDA, HIP): the machinery of the
// CUDA seed document written once (docs/drivers/cuda.md).
//
// Each HAL queue is one work stream plus one callback stream (for the host
// functions that report completion, so they never block the work stream).
// Every queue operation becomes a GpuAction handed to GpuPendingActions,
// whose worker thread issues it once its waits are resolved; see
// gpu_pending_actions.h for the rules. Validation is the base Device's.
//
// Thread safety: as hal::Device.
#pragma once

#include <memory>
#include <vector>

#include "drivers/gpu/gpu_allocator.h"
#include "drivers/gpu/gpu_api.h"
#include "drivers/gpu/gpu_event_pool.h"
#include "drivers/gpu/gpu_graph_command_buffer.h"
#include "drivers/gpu/gpu_pending_actions.h"
#include "hal/device.h"

namespace hal::gpu {

struct GpuDeviceOptions {
  int queue_count = 2;
  // queue_alloca/dealloca through the device's memory pool (stream-ordered);
  // otherwise synchronous allocations when the waits are met.
  bool async_allocations = false;
  DeviceSize device_memory_bytes = 0;
  // Command buffers as graphs (gpu_graph_command_buffer.h); otherwise
  // replayed onto the stream (gpu_stream_command_buffer.h). Needs
  // GpuApi::SupportsGraphs.
  bool graph_command_buffers = false;
  // Graphs of reusable command buffers kept for relaunch (graph mode).
  size_t graph_cache_capacity = 32;
};

class GpuDevice final : public Device {
 public:
  // `info.queue_count` is set from `options`.
  static StatusOr<Ref<Device>> Create(DeviceInfo info,
                                      std::shared_ptr<GpuApi> api,
                                      const GpuDeviceOptions& options);

  GpuApi* api() const { return api_.get(); }
  const GpuDeviceOptions& options() const { return options_; }
  // Null unless options().graph_command_buffers.
  const GpuGraphCache* graph_cache() const { return graphs_.get(); }

 protected:
  HAL_DEVICE_IMPL_OVERRIDES

 private:
  GpuDevice(DeviceInfo info, Ref<GpuAllocator> allocator,
            std::shared_ptr<GpuApi> api, const GpuDeviceOptions& options);
  ~GpuDevice() override;
  Status Initialize();
  std::unique_ptr<GpuAction> NewAction(const char* name, QueueAffinity affinity,
                                       SemaphoreList wait,
                                       SemaphoreList signal);

  std::shared_ptr<GpuApi> api_;
  GpuDeviceOptions options_;
  GpuAllocator* gpu_allocator_;
  std::shared_ptr<GpuEventPool> events_;
  std::vector<GpuStream> streams_;
  std::vector<GpuStream> callback_streams_;
  std::unique_ptr<GpuGraphCache> graphs_;
  std::unique_ptr<GpuPendingActions> pending_;
};

}  // namespace hal::gpu
