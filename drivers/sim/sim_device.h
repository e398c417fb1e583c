// The simulator device: every HAL concept on the CPU, with real host memory,
// several queues, and a seed that drives scheduling, durations and faults.
//
// URI parameters (sim://?seed=7&queues=4):
//   seed        u64; without it one is drawn and printed to stderr
//   mode        deterministic (default) | threaded
//   queues      1..64 (default 2)
//   memory_mb   DEVICE_LOCAL budget in MiB (default 4096)
//   check       1 (default) | 0: the hazard checker
//   trace       path: write the trace there when the device is destroyed
//   workers     dispatch worker threads (default 1)
//   fail_alloc, alloc_fail_ppm, fail_op, op_fail_ppm, slow_ppm,
//   lose_device_at  faults (see SimFaultPlan in sim_context.h)
// See docs/simulator.md for the model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "drivers/sim/sim_allocator.h"
#include "drivers/sim/sim_context.h"
#include "drivers/sim/sim_scheduler.h"
#include "hal/device.h"
#include "hal/driver.h"

namespace hal::sim {

enum class SimMode { kDeterministic, kThreaded };

struct SimDeviceOptions {
  int queue_count = 2;
  DeviceSize device_memory_bytes = DeviceSize{4096} << 20;
  uint64_t seed = 0;
  SimMode mode = SimMode::kDeterministic;
  bool checking = true;
  std::string trace_path;
  int workers = 1;
  SimFaultPlan faults;
};

class SimDevice final : public Device {
 public:
  static StatusOr<Ref<Device>> Create(const DeviceUri& uri);
  static StatusOr<Ref<Device>> Create(const SimDeviceOptions& options,
                                      std::string uri);

  const SimDeviceOptions& options() const { return options_; }
  SimContext& context() { return *context_; }

 protected:
  HAL_DEVICE_IMPL_OVERRIDES

 private:
  SimDevice(DeviceInfo info, Ref<SimAllocator> allocator,
            const SimDeviceOptions& options,
            std::shared_ptr<SimContext> context);
  ~SimDevice() override;

  std::unique_ptr<SimOp> NewOp(const TraceToken& name, QueueAffinity affinity,
                               SemaphoreList wait, SemaphoreList signal);
  void Submit(std::unique_ptr<SimOp> op);
  // SimScheduler::AdmitHook: numbers and traces the op (context lock held).
  static void AdmitOp(void* arg, SimOp& op);
  // Names a semaphore in the trace by a stable per-device id.
  void AppendSemaphore(TraceLine& line, Semaphore* semaphore);
  void AppendForeignSemaphore(TraceLine& line, Semaphore* semaphore);

  SimDeviceOptions options_;
  std::shared_ptr<SimContext> context_;
  SimAllocator* sim_allocator_;
  std::unique_ptr<SimScheduler> scheduler_;
  // Ids for semaphores this device did not create (first seen, kept alive
  // so an id is never reused); under the context lock.
  std::vector<std::pair<Ref<Semaphore>, uint64_t>> foreign_semaphores_;
  uint64_t next_op_id_ = 0;  // under the context lock
};

// Adds the "sim" driver to `registry`.
Status RegisterSimDriver(DriverRegistry* registry);

// Sim-specific controls for tests and tools. Each returns INVALID_ARGUMENT
// when `device` is not a simulator device.
StatusOr<SimDevice*> AsSimDevice(Device* device);
StatusOr<uint64_t> SimSeed(Device* device);
// FNV-1a over the trace so far (host calls and device events).
StatusOr<uint64_t> SimTraceHash(Device* device);
StatusOr<uint64_t> SimVirtualTimeNs(Device* device);
// Hazards the checker reported, oldest first.
StatusOr<std::vector<std::string>> SimCheckerReports(Device* device);
Status SimSetFaults(Device* device, const SimFaultPlan& plan);

}  // namespace hal::sim
