#include "drivers/gpu/gpu_event_pool.h"

#include "hal/buggify.h"
#include "hal/coverage.h"

namespace hal::gpu {

// Kept small: a device rarely has more than a few hundred timepoints alive,
// and destroying events is cheap next to creating them in a hot loop.
constexpr size_t kMaxPooledEvents = 1024;

GpuEvent::~GpuEvent() { pool_->Recycle(handle_); }

GpuEventPool::~GpuEventPool() {
  for (GpuEventHandle h : free_) api_->EventDestroy(h).IgnoreError();
}

StatusOr<Ref<GpuEvent>> GpuEventPool::Acquire() {
  GpuEventHandle handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // BUGGIFY: the pool acts empty (a fresh event).
    if (!free_.empty() && !Buggify(BuggifySite::kEventPoolEmpty)) {
      handle = free_.back();
      Sometimes(CoverageState::kVendorEventReused);
      free_.pop_back();
    }
  }
  if (!handle) HAL_RETURN_IF_ERROR(api_->EventCreate(&handle));
  return Ref<GpuEvent>::Adopt(new GpuEvent(shared_from_this(), handle));
}

void GpuEventPool::Recycle(GpuEventHandle handle) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kMaxPooledEvents) {
      free_.push_back(handle);
      return;
    }
  }
  api_->EventDestroy(handle).IgnoreError();
}

}  // namespace hal::gpu
