#include "drivers/gpu/gpu_semaphore.h"

#include <vector>

namespace hal::gpu {

Ref<GpuSemaphore> GpuSemaphore::Create(uint64_t initial_value,
                                       const void* owner) {
  return Ref<GpuSemaphore>::Adopt(new GpuSemaphore(initial_value, owner));
}

void GpuSemaphore::AddDeviceTimepoint(uint64_t value, Ref<GpuEvent> event) {
  StatusOr<uint64_t> payload = Query();
  if (!payload.ok() || *payload >= value) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // Two device signals of one value cannot both succeed on the host; the
  // first recorded is the one a waiter can rely on.
  timepoints_.emplace(value, std::move(event));
}

Ref<GpuEvent> GpuSemaphore::FindDeviceTimepoint(uint64_t value) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = timepoints_.lower_bound(value);
  return it == timepoints_.end() ? Ref<GpuEvent>() : it->second;
}

size_t GpuSemaphore::device_timepoint_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return timepoints_.size();
}

void GpuSemaphore::OnSignaled(uint64_t value) {
  // Timepoints the host payload has passed are no longer needed: waiters see
  // the payload first. Their events are released outside the lock (releasing
  // may return them to the pool).
  std::vector<Ref<GpuEvent>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto end = timepoints_.upper_bound(value);
    for (auto it = timepoints_.begin(); it != end; ++it) {
      dropped.push_back(std::move(it->second));
    }
    timepoints_.erase(timepoints_.begin(), end);
  }
}

void GpuSemaphore::OnFailed(const Status& /*status*/) {
  std::map<uint64_t, Ref<GpuEvent>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(timepoints_);
  }
}

}  // namespace hal::gpu
