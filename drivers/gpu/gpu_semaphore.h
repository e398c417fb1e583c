// Timeline semaphores over binary GPU events (the seed's
// iree_hal_cuda_timeline_semaphore_t).
//
// The payload, failure state, host waits and host timepoints are the base
// hal::Semaphore's (CPU primitives). On top, a GpuSemaphore keeps the device
// signal timepoints: recorded GPU events whose completion means the payload
// reaches a value. A device wait on (semaphore, value) uses such an event
// (a stream wait on it) whenever one with a value >= the waited one was
// recorded, so a device->device chain needs no host round trip; otherwise
// the waiting work is held by GpuPendingActions until the host payload or a
// new device timepoint releases it.
//
// Device timepoints belong to one device (`owner`): only that device's
// streams may wait on their events. Other devices and drivers see a plain
// timeline semaphore.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <map>
#include <mutex>

#include "drivers/gpu/gpu_event_pool.h"
#include "hal/semaphore.h"

namespace hal::gpu {

class GpuSemaphore final : public Semaphore {
 public:
  static Ref<GpuSemaphore> Create(uint64_t initial_value, const void* owner);

  const void* owner() const { return owner_; }

  // Records that `event` (already recorded on a stream of the owner) means
  // `value` once it completes. Ignored when the payload is already there or
  // the semaphore failed.
  void AddDeviceTimepoint(uint64_t value, Ref<GpuEvent> event);
  // The earliest recorded device timepoint at or above `value`, or null.
  Ref<GpuEvent> FindDeviceTimepoint(uint64_t value);
  // Only for tests and diagnostics.
  size_t device_timepoint_count();

 protected:
  void OnSignaled(uint64_t value) override;
  void OnFailed(const Status& status) override;

 private:
  GpuSemaphore(uint64_t initial_value, const void* owner)
      : Semaphore(initial_value), owner_(owner) {}

  const void* owner_;
  std::mutex mutex_;
  std::map<uint64_t, Ref<GpuEvent>> timepoints_;  // by value
};

}  // namespace hal::gpu
