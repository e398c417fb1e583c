// Timeline semaphores.
//
// A semaphore holds a 64-bit payload that only goes up, or a failure status.
// The timeline logic (payload, failure, waiters, timepoint callbacks) lives
// here once; drivers subclass to attach device-side state (GPU events, ...)
// through the protected hooks.
//
// Thread safety: every method may be called from any thread at any time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "hal/ref.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal {

class Semaphore : public RefCounted {
 public:
  // Called at most once: when the payload reaches the value (with OK) or the
  // semaphore fails (with the failure status). A cancelled callback is
  // dropped without being called. Runs on the thread that signalled or failed
  // the semaphore, outside its lock, or inline in NotifyAt when already
  // resolved; it must not block.
  using TimepointCallback = std::function<void(const Status&)>;
  using TimepointId = uint64_t;

  static Ref<Semaphore> Create(uint64_t initial_value);

  // The current payload, or the failure status once failed.
  StatusOr<uint64_t> Query() const;
  // Query's fast path, inline and without a StatusOr: false once failed
  // (Query then gives the status), else true with the payload in *payload.
  bool LoadPayload(uint64_t* payload) const {
    if (failed_.load(std::memory_order_acquire)) return false;
    *payload = payload_.load(std::memory_order_acquire);
    return true;
  }

  // True iff the payload reached `value` before any failure. Unlike Query, a
  // failed semaphore still answers for the values it reached before it
  // failed (true) and for the others (false). A value reached is reached for
  // good: once true, always true. Queue operations decide their waits with
  // this: a wait reached before a failure stays satisfied.
  bool Reached(uint64_t value) const;

  // Raises the payload to `value`. INVALID_ARGUMENT (payload unchanged) when
  // `value` is not above the current payload; the failure status when failed.
  Status Signal(uint64_t value);

  // Puts the semaphore in the failed state. The first failure wins; later
  // calls are ignored. An OK status is turned into UNKNOWN. Pending
  // timepoints whose value the payload reached before the failure (a Signal
  // racing with this one raised it but has not fired them yet) fire OK; the
  // others fire with the failure.
  void Fail(Status status);

  // Blocks until the payload reaches `value` (OK), the semaphore fails (its
  // failure status) or the timeout passes (DEADLINE_EXCEEDED). An immediate
  // timeout is a poll.
  Status Wait(uint64_t value, Timeout timeout);

  // Registers `callback` for when `value` is reached or the semaphore fails.
  // When already resolved the callback runs inline and 0 is returned;
  // otherwise returns an id for CancelTimepoint.
  TimepointId NotifyAt(uint64_t value, TimepointCallback callback);
  // Drops a pending callback. Returns false when it already ran (or is
  // running on another thread).
  bool CancelTimepoint(TimepointId id);

  // Only for diagnostics and tests.
  size_t pending_timepoint_count() const;
  // Test-only: `hook` runs inside every Signal of this semaphore after it
  // raised the payload and before it collects the reached timepoints (the
  // window in which a racing Fail used to fire them with the failure).
  // Null clears it. Set it before the semaphore is shared.
  void SetSignalRaceHookForTesting(std::function<void()> hook) {
    signal_race_hook_ = std::move(hook);
  }

 protected:
  explicit Semaphore(uint64_t initial_value) : payload_(initial_value) {}
  ~Semaphore() override;

  // Hooks for drivers; called after the state changed, outside the lock.
  virtual void OnSignaled(uint64_t /*value*/) {}
  virtual void OnFailed(const Status& /*status*/) {}

 private:
  struct Timepoint {
    TimepointId id;
    uint64_t value;
    TimepointCallback callback;
    bool live = true;  // false: fired or cancelled, a slot kept for now
  };
  // Under the mutex: skips the dead prefix of `timepoints_`, and drops the
  // dead slots (keeping the order) once they outnumber the live ones.
  void DropDeadTimepoints();
  // Fires (outside the lock) the callbacks taken out of `timepoints_`.
  static void Fire(std::vector<Timepoint>& fired, const Status& status);

  // Signal's and Fail's slow paths, taken when `slow_` says that someone
  // sleeps in Wait or a timepoint is pending.
  void WakeSleepers();
  // Sleeps until `epoch_` moves away from `epoch` (or spuriously), at most
  // until `timeout`.
  void SleepOnEpoch(uint32_t epoch, Timeout timeout);

  // The payload and the failed flag are atomics so that Query, Signal
  // without waiters and Wait on a reached value take no lock. `failure_` is
  // written once, under the mutex, before `failed_` is set.
  std::atomic<uint64_t> payload_;
  std::atomic<bool> failed_{false};
  // Bit 0: a timepoint is pending (changed under the mutex). Bits 1 and up:
  // the number of threads sleeping (or about to) in Wait, in steps of
  // kSleeper. Signal reads it after raising the payload and takes the slow
  // path only when it is not zero.
  static constexpr uint32_t kHasTimepoints = 1;
  static constexpr uint32_t kSleeper = 2;
  std::atomic<uint32_t> slow_{0};
  // Bumped by every signal or failure that finds sleepers; they sleep on it
  // (a futex on Linux, `cv_` elsewhere).
  std::atomic<uint32_t> epoch_{0};
  // When WakeSleepers last ran (steady ns): the latency oracle's reference.
  std::atomic<int64_t> woken_at_ns_{0};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Status failure_;
  // The payload when the failure landed (read under the mutex, after
  // `failed_` was set): values at or below it were reached before it.
  uint64_t failed_payload_ = 0;
  // Pending timepoints in registration order (ids increase). A fired or
  // cancelled one stays as a dead slot until dead slots outnumber live ones,
  // so that removing one moves no others: a chain of waits on one timeline,
  // fired oldest first, costs O(1) moves per signal, not O(pending).
  std::vector<Timepoint> timepoints_;
  size_t live_timepoints_ = 0;
  size_t first_live_ = 0;  // no live slot before this index
  // At most the smallest live value: a Signal below it fires nothing and
  // skips the scan.
  uint64_t min_pending_ = UINT64_MAX;
  std::function<void()> signal_race_hook_;
  TimepointId next_id_ = 1;
};

// A (semaphore, value) pair. Lists of these are borrowed (span) by calls
// that take them; the callee retains what it keeps.
struct SemaphorePoint {
  Semaphore* semaphore = nullptr;
  uint64_t value = 0;
};
using SemaphoreList = std::span<const SemaphorePoint>;

enum class WaitMode { kAll, kAny };

// Waits on a list: ALL (every point reached) or ANY (one point reached). An
// empty list is satisfied at once. A failed semaphore ends the wait at once
// with its status, in both modes, unless (ANY) a point was already reached.
// DEADLINE_EXCEEDED on timeout; INVALID_ARGUMENT for a null semaphore.
Status WaitSemaphores(WaitMode mode, SemaphoreList points, Timeout timeout);

// The latency oracle: how many host waits in this process resumed more than
// 2 s after what they waited for was decided (reached or failed): lost or
// late wake-ups, each also reported on stderr. The CTS fails a test during
// which it grew, on every driver.
uint64_t SemaphoreLateWakeups();

// Validates a list given to a queue operation (no nulls).
Status ValidateSemaphoreList(SemaphoreList points, const char* what);

}  // namespace hal
