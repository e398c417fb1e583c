// Fences: a set of (semaphore, value) timepoints treated as one.
//
// Thread safety: Insert must not race with other calls on the same fence;
// Signal, Fail, Query and Wait may be called from any thread once built.
#pragma once

#include <vector>

#include "hal/ref.h"
#include "hal/semaphore.h"
#include "hal/status.h"

namespace hal {

class Fence : public RefCounted {
 public:
  static Ref<Fence> Create() { return Ref<Fence>::Adopt(new Fence()); }

  // Adds a timepoint; a semaphore already present keeps the larger value.
  // INVALID_ARGUMENT for a null semaphore.
  Status Insert(Semaphore* semaphore, uint64_t value);
  Status Extend(const Fence& other);

  // Borrowed view, valid until the next Insert.
  SemaphoreList points() const { return points_; }
  size_t size() const { return points_.size(); }

  // Signals every timepoint (errors from each semaphore; first one wins).
  Status Signal();
  void Fail(const Status& status);
  // OK when every timepoint is reached, DEADLINE_EXCEEDED when not yet, or
  // the failure status of a failed semaphore.
  Status Query() const;
  Status Wait(Timeout timeout) const;

 private:
  Fence() = default;
  ~Fence() override;
  std::vector<SemaphorePoint> points_;  // each semaphore holds a reference
};

}  // namespace hal
