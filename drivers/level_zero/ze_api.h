// The Level Zero implementation of the GPU-stream API layer
// (drivers/gpu/gpu_api.h): one ze_device_handle_t in its own context.
//
// How Level Zero maps onto the layer:
//   * A stream is an immediate command list on the compute engine group
//     (in order: ZE_COMMAND_LIST_FLAG_RELAXED_ORDERING is not set); append
//     is enqueue.
//   * An event (GpuEventHandle) is a ZeEvent over one slot of a
//     host-visible event pool. Level Zero events are binary states that
//     must be reset before they are signalled again, and a device wait reads
//     the state when it runs, not when it is appended. GpuEventPool only
//     recycles an event after every queue action that waited on it
//     completed, so a re-record may reset the slot on the host first.
//   * Host functions: Level Zero has none. LaunchHostFunc appends "signal
//     A; wait B" to the stream; a host-function thread waits for A on the
//     host, runs the function, and signals B, so the function still blocks
//     the work after it. Functions run in launch order (the layer launches
//     them on callback streams only, after the work they report on).
//   * Memory is USM: zeMemAllocDevice/Host/Shared; a host allocation's
//     address is its device address. Level Zero 1.4 cannot register
//     (import) arbitrary host memory: MemHostRegister is UNIMPLEMENTED.
//   * Modules are SPIR-V; each kernel's argument sizes come from the module
//     (hal/formats/spirv_reader.h). Kernel arguments are kernel state in
//     Level Zero, so a launch sets them and appends under the kernel's
//     lock. Indirect launches are zeCommandListAppendLaunchKernelIndirect:
//     the device reads the group count, with no host round trip.
//   * Graphs are regular command lists built once (dependencies as
//     barriers) and run by zeCommandQueueExecuteCommandLists on a command
//     queue per stream, ordered with the stream by events (ze_api.cc).
//   * No stream-ordered allocation.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <level_zero/ze_api.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "drivers/gpu/gpu_api.h"
#include "drivers/level_zero/ze_dynamic_symbols.h"

namespace hal::level_zero {

class ZeApi final : public gpu::GpuApi {
 public:
  static StatusOr<std::shared_ptr<ZeApi>> Create(
      std::shared_ptr<const ZeSymbols> syms, ze_driver_handle_t driver,
      ze_device_handle_t device);
  ~ZeApi() override;

  const ZeSymbols* syms() const { return syms_.get(); }

  const char* name() const override { return "level_zero"; }
  HAL_GPU_API_OVERRIDES
  bool SupportsAsyncAlloc() const override { return false; }
  bool SupportsIndirectLaunch() const override { return true; }
  Status LaunchKernelIndirect(gpu::GpuFunction function, gpu::GpuDevicePtr grid,
                              const uint32_t block[3], uint32_t shared_memory,
                              gpu::GpuStream stream, void** params) override;
  ExecutableFormat module_format() const override {
    return ExecutableFormat::kLevelZeroSpirv;
  }

 private:
  // One event of a host-visible pool.
  struct Slot {
    ze_event_handle_t event = nullptr;
  };
  struct HostFunction {
    ze_command_list_handle_t stream;
    Slot* ready;    // signalled by the stream when the function may run
    Slot* release;  // signalled by the host when it ran
    gpu::GpuHostFn fn;
    void* user_data;
  };

  // A graph: one closed regular command list (ze_api.cc).
  struct GraphExec {
    ze_command_list_handle_t list = nullptr;
    int launches_pending = 0;   // launch records not reclaimed
    bool destroyed = false;     // GraphExecDestroy came; freed after the last
    Slot* last_done = nullptr;  // of the newest pending launch
  };
  // One launch's two small lists and three events, until reclaimed.
  struct GraphLaunchRecord {
    GraphExec* exec = nullptr;
    ze_command_list_handle_t pre = nullptr;
    ze_command_list_handle_t post = nullptr;
    Slot* ready = nullptr;
    Slot* done = nullptr;
    Slot* passed = nullptr;
    GraphLaunchRecord* waited_by = nullptr;  // the next launch of `exec`
  };

  ZeApi(std::shared_ptr<const ZeSymbols> syms, ze_driver_handle_t driver,
        ze_device_handle_t device)
      : syms_(std::move(syms)), driver_(driver), device_(device) {}
  Status Initialize();
  StatusOr<Slot*> AcquireSlot();
  void ReleaseSlot(Slot* slot);  // resets it on the host
  void HostFunctionMain();
  // OK, or DATA_LOSS when the device is lost.
  Status DeviceStatus(const char* what);
  Status AppendGraphNodes(gpu::GpuGraph graph, ze_command_list_handle_t list);
  // The command queue that runs graph launches for `stream` (made once).
  StatusOr<ze_command_queue_handle_t> GraphQueueLocked(gpu::GpuStream stream);
  // A closed regular list: wait for `waits`, then signal `signal` (if set).
  StatusOr<ze_command_list_handle_t> SmallListLocked(uint32_t num_waits,
                                                     ze_event_handle_t* waits,
                                                     ze_event_handle_t signal);
  // Frees the lists and events of completed graph launches, oldest first;
  // with `wait`, waits for each on the host first (teardown).
  void ReclaimGraphLaunchesLocked(bool wait);

  std::shared_ptr<const ZeSymbols> syms_;
  ze_driver_handle_t driver_;
  ze_device_handle_t device_;
  ze_context_handle_t context_ = nullptr;
  uint32_t compute_ordinal_ = 0;
  uint32_t compute_queues_ = 1;

  std::mutex slots_mutex_;
  std::vector<ze_event_pool_handle_t> pools_;
  std::vector<std::unique_ptr<Slot>> slots_;  // every slot made
  std::vector<Slot*> free_slots_;
  uint32_t next_stream_index_ = 0;

  std::mutex host_mutex_;
  std::condition_variable host_cv_;
  std::deque<HostFunction> host_functions_;
  // Per stream: the release slot of its last host function, recycled once
  // a later one on the same stream is ready (the stream passed the wait).
  std::vector<std::pair<ze_command_list_handle_t, Slot*>> last_release_;
  bool stopping_ = false;
  std::thread host_thread_;

  std::mutex graph_mutex_;
  std::vector<std::pair<gpu::GpuStream, ze_command_queue_handle_t>>
      graph_queues_;
  std::deque<std::unique_ptr<GraphLaunchRecord>>
      graph_launches_;  // oldest first
};

}  // namespace hal::level_zero
