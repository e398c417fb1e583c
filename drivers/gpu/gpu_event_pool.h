// GPU events ("timepoints") and the pool that recycles them.
//
// A GpuEvent is a recorded API event (CUevent, hipEvent_t) with a reference
// count: a semaphore's device timepoint and every queue action that waits on
// it hold a reference, and the handle goes back to the pool when the last
// one drops (the seed's iree_hal_cuda_event_t). Recycling is safe because an
// API stream wait captures the event's state when it is enqueued.
//
// Thread safety: the pool may be used from any thread. It must outlive its
// events (each event keeps the pool alive through a shared_ptr).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "drivers/gpu/gpu_api.h"
#include "hal/ref.h"
#include "hal/status.h"

namespace hal::gpu {

class GpuEventPool;

class GpuEvent final : public RefCounted {
 public:
  GpuEventHandle handle() const { return handle_; }

 private:
  friend class GpuEventPool;
  GpuEvent(std::shared_ptr<GpuEventPool> pool, GpuEventHandle handle)
      : pool_(std::move(pool)), handle_(handle) {}
  ~GpuEvent() override;

  std::shared_ptr<GpuEventPool> pool_;
  GpuEventHandle handle_;
};

class GpuEventPool : public std::enable_shared_from_this<GpuEventPool> {
 public:
  explicit GpuEventPool(std::shared_ptr<GpuApi> api) : api_(std::move(api)) {}
  ~GpuEventPool();

  // A fresh or recycled event (not recorded yet from the caller's view).
  StatusOr<Ref<GpuEvent>> Acquire();
  GpuApi* api() const { return api_.get(); }

 private:
  friend class GpuEvent;
  void Recycle(GpuEventHandle handle);

  std::shared_ptr<GpuApi> api_;
  std::mutex mutex_;
  std::vector<GpuEventHandle> free_;
};

}  // namespace hal::gpu
