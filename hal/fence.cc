#include "hal/fence.h"

namespace hal {

Fence::~Fence() {
  for (auto& p : points_) p.semaphore->Release();
}

Status Fence::Insert(Semaphore* semaphore, uint64_t value) {
  if (!semaphore)
    return InvalidArgumentError("fence insert of a null semaphore");
  for (auto& p : points_) {
    if (p.semaphore == semaphore) {
      if (value > p.value) p.value = value;
      return OkStatus();
    }
  }
  semaphore->AddRef();
  points_.push_back({semaphore, value});
  return OkStatus();
}

Status Fence::Extend(const Fence& other) {
  for (const auto& p : other.points_)
    HAL_RETURN_IF_ERROR(Insert(p.semaphore, p.value));
  return OkStatus();
}

Status Fence::Signal() {
  Status first;
  for (auto& p : points_) {
    Status s = p.semaphore->Signal(p.value);
    if (first.ok()) first = s;
  }
  return first;
}

void Fence::Fail(const Status& status) {
  for (auto& p : points_) p.semaphore->Fail(status);
}

Status Fence::Query() const {
  return WaitSemaphores(WaitMode::kAll, points_, Timeout::Immediate());
}

Status Fence::Wait(Timeout timeout) const {
  return WaitSemaphores(WaitMode::kAll, points_, timeout);
}

}  // namespace hal
