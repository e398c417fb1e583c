// The parts of a queue operation that every driver's scheduler shares: its
// wait and signal points, how a wait stands, how the signals end, and how an
// operation that will not run is abandoned. The schedulers themselves (the
// simulator's seeded one, the GPU-stream layer's worker) stay in their
// drivers; what is decided here is decided the same way everywhere
// (docs/architecture.md, "Rules every driver shares"):
//
// - an operation signals its points after its work succeeded; a value that
//   was overtaken since submission (the payload reached it or passed it)
//   fails its semaphore with the INVALID_ARGUMENT from Semaphore::Signal
//   rather than vanish;
// - an operation whose work failed, or that will not run (a wait failed, the
//   device was lost or destroyed), fails every signal semaphore with that
//   status (first failure wins, hal/semaphore.h);
// - a wait is decided once, by whichever came first: the value (reached
//   for good, even if the semaphore fails later) or the failure.
//
// Thread safety: the functions may be called from any thread; they call
// Semaphore methods only, which take their own locks.
#pragma once

#include <cstdint>
#include <utility>

#include "hal/ref.h"
#include "hal/semaphore.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal::utils {

// A signal (or wait) point that a queue operation keeps until it ends: the
// caller's list is borrowed for the call only.
using RetainedPoint = std::pair<Ref<Semaphore>, uint64_t>;

// Appends `points` to `out` (any container of RetainedPoint with
// emplace_back), retaining each semaphore.
template <typename Container>
void RetainPoints(SemaphoreList points, Container* out) {
  for (const SemaphorePoint& p : points) {
    out->emplace_back(Ref<Semaphore>(p.semaphore), p.value);
  }
}

// Ends one signal point of an operation that finished with `status`: on OK
// signals `value` (failing the semaphore with the error when the value was
// overtaken), else fails the semaphore with `status`.
void CompleteSignal(Semaphore& semaphore, uint64_t value, const Status& status);

// CompleteSignal for each point of `signals` (a range of RetainedPoint), in
// order.
template <typename Signals>
void CompleteSignals(const Signals& signals, const Status& status) {
  for (const auto& [semaphore, value] : signals) {
    CompleteSignal(*semaphore, value, status);
  }
}

// Ends an operation that will not run: its `abandon` hook (undoes what
// submission did, e.g. a queued dealloca; may be empty) sees `status`
// first, then every signal fails with it. `status` is not OK.
template <typename AbandonFn, typename Signals>
void AbandonQueueOp(const AbandonFn& abandon, const Signals& signals,
                    const Status& status) {
  if (abandon) abandon(status);
  CompleteSignals(signals, status);
}

// How one wait of an operation stands when its scheduler looks.
enum class WaitState {
  kReached,  // the payload reached the value before any failure: for good
  kFailed,   // the semaphore failed first; the operation must not run
  kOpen,     // neither yet: look again when the semaphore changes
};
// Reads `semaphore` once for a wait on `value`; on kFailed stores the
// semaphore's failure status in *failure.
WaitState CheckWait(const Semaphore& semaphore, uint64_t value,
                    Status* failure);

}  // namespace hal::utils
