// The simulator device: every HAL concept on the CPU, with real host memory,
// several queues and a replaceable scheduler (sim_scheduler.h).
//
// URI parameters (sim://?queues=4&seed=7):
//   queues     number of queues, 1..64 (default 2)
//   memory_mb  DEVICE_LOCAL memory budget in MiB (default 4096)
//   seed       recorded in the device info; scheduling is not seeded yet
#pragma once

#include <memory>

#include "hal/device.h"
#include "hal/driver.h"
#include "sim/sim_allocator.h"
#include "sim/sim_scheduler.h"

namespace hal::sim {

struct SimDeviceOptions {
  int queue_count = 2;
  DeviceSize device_memory_bytes = DeviceSize{4096} << 20;
  uint64_t seed = 0;
};

class SimDevice final : public Device {
 public:
  static StatusOr<Ref<Device>> Create(const DeviceUri& uri);
  static StatusOr<Ref<Device>> Create(const SimDeviceOptions& options,
                                      std::string uri);

 protected:
  StatusOr<Ref<Buffer>> QueueAllocaImpl(QueueAffinity affinity,
                                        SemaphoreList wait, SemaphoreList signal,
                                        const BufferParams& params,
                                        DeviceSize size) override;
  Status QueueDeallocaImpl(QueueAffinity affinity, SemaphoreList wait,
                           SemaphoreList signal, Buffer* buffer) override;
  Status QueueReadImpl(QueueAffinity affinity, SemaphoreList wait,
                       SemaphoreList signal, File* source,
                       uint64_t source_offset, Buffer* target,
                       DeviceSize target_offset, DeviceSize length) override;
  Status QueueWriteImpl(QueueAffinity affinity, SemaphoreList wait,
                        SemaphoreList signal, Buffer* source,
                        DeviceSize source_offset, File* target,
                        uint64_t target_offset, DeviceSize length) override;
  Status QueueExecuteImpl(QueueAffinity affinity, SemaphoreList wait,
                          SemaphoreList signal, CommandBuffer* command_buffer,
                          BindingTable bindings) override;
  Status QueueHostCallImpl(QueueAffinity affinity, SemaphoreList wait,
                           SemaphoreList signal, HostCallFn fn) override;
  Status WaitIdleImpl(Timeout timeout) override;

 private:
  SimDevice(DeviceInfo info, Ref<SimAllocator> allocator,
            const SimDeviceOptions& options);
  ~SimDevice() override;

  std::unique_ptr<SimOp> NewOp(const char* name, QueueAffinity affinity,
                               SemaphoreList wait, SemaphoreList signal);

  SimAllocator* sim_allocator_;
  std::unique_ptr<SimScheduler> scheduler_;
};

// Adds the "sim" driver to `registry`.
Status RegisterSimDriver(DriverRegistry* registry);

// Host address of `length` bytes at `offset` of a resolved reference, or an
// error when the memory is not there (queue_alloca not committed, freed).
StatusOr<uint8_t*> SimStorage(Buffer* allocated, DeviceSize offset,
                              DeviceSize length, const char* what);

}  // namespace hal::sim
