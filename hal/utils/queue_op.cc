#include "hal/utils/queue_op.h"

namespace hal::utils {

void CompleteSignal(Semaphore& semaphore, uint64_t value,
                    const Status& status) {
  if (!status.ok()) {
    semaphore.Fail(status);
    return;
  }
  // Submission checked that the value was above the payload; a signal
  // overtaken since (the host or another operation raised the payload to it
  // or past it) fails the semaphore, as hal/device.h says.
  Status signaled = semaphore.Signal(value);
  if (!signaled.ok()) semaphore.Fail(signaled);
}

WaitState CheckWait(const Semaphore& semaphore, uint64_t value,
                    Status* failure) {
  // Reached, not Query: a value reached before a later failure keeps the
  // wait satisfied (Query would report the failure).
  if (semaphore.Reached(value)) return WaitState::kReached;
  StatusOr<uint64_t> payload = semaphore.Query();
  if (payload.ok()) return WaitState::kOpen;
  *failure = payload.status();
  return WaitState::kFailed;
}

}  // namespace hal::utils
