#include "hal/semaphore.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

#include "hal/buggify.h"
#include "hal/coverage.h"
#include "hal/progress.h"
#include "hal/wait_graph.h"

namespace hal {

namespace {

// How long a waiter sleeps between pump attempts when another host thread
// must act first (deterministic simulator only).
constexpr auto kPumpSlice = std::chrono::milliseconds(1);

// The latency oracle: a host waiter that resumes this long after its value
// was reached (or its semaphore failed) was not woken when it should have
// been: a lost or late wake-up. Reported and counted, never silent (a
// waiter that sleeps to its deadline and then finds the value would
// otherwise pass, only slowly). Generous, for loaded and sanitized runs.
constexpr auto kLateWakeBound = std::chrono::seconds(2);
std::atomic<uint64_t> late_wakeups{0};

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Timeout::Clock::now().time_since_epoch())
      .count();
}

// `since_ns`: when the waiter should have woken.
void CheckWakeLatency(int64_t since_ns, const char* what) {
  const int64_t late_ns = SteadyNs() - since_ns;
  if (since_ns == 0 ||
      late_ns <= std::chrono::nanoseconds(kLateWakeBound).count())
    return;
  late_wakeups.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr,
               "hal: latency oracle: %s resumed %lld ms after its value was "
               "reached or failed (a lost or late wake-up: every sleeper must "
               "wake when what it waits for is decided)\n",
               what, static_cast<long long>(late_ns / 1000000));
}

// Waits on `cv` until `done()` or the deadline, running progress pumps
// (with `lock` released) whenever they can make progress. The deadline is
// checked after every pump step (one operation per device), so a poll runs
// at most one step and a timed wait overruns its deadline by at most one.
template <typename Lock, typename Done>
void PumpingWait(std::condition_variable& cv, Lock& lock, Timeout timeout,
                 Done done) {
  while (!done()) {
    lock.unlock();
    bool progressed = RunProgressPumps();
    lock.lock();
    if (done()) return;
    if (timeout.is_immediate() || timeout.expired()) return;
    if (progressed) continue;
    auto slice = Timeout::Clock::now() + kPumpSlice;
    cv.wait_until(lock, timeout.is_infinite()
                            ? slice
                            : std::min(slice, timeout.deadline()));
  }
}

// How long a waiter spins before it sleeps. A signal that is already on
// its way (the other side of a ping-pong, a device thread
// finishing a short op) usually lands within a few microseconds, and a
// futex sleep + wake-up costs more than that (docs/performance.md: about
// 10x on a 2-core machine).
constexpr auto kSpinBudget = std::chrono::microseconds(10);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Spins until `done()` or the spin budget (or the deadline) runs out.
template <typename Done>
bool SpinUntil(const Done& done, Timeout timeout,
               Timeout::Clock::duration budget = kSpinBudget) {
  if (done()) return true;
  auto limit = Timeout::Clock::now() + budget;
  if (!timeout.is_infinite()) limit = std::min(limit, timeout.deadline());
  while (true) {
    for (int i = 0; i < 32; ++i) {
      if (done()) return true;
      CpuRelax();
    }
    if (Timeout::Clock::now() >= limit) return done();
  }
}

// SpinUntil, only while it pays on this thread. A failed spin costs its
// whole budget (the other side was not about to answer: its thread is not
// running on a loaded machine, or its work is long), while a successful one
// saves a futex sleep and wake-up, a few microseconds: spinning pays only
// when nearly every spin succeeds. So each thread keeps a moving average of
// its spins' success (1/8 weight per spin) and spins while it is at least
// kSpinPaysAbove; below that, waits sleep at once, as a plain futex wait
// does, and one wait in kSpinProbeEvery still spins, for kSpinProbeBudget
// (a futex wake-up of an idle core takes a few microseconds; on a loaded
// machine the probes cost about 5% of a futex round trip). A probe that
// succeeds
// lifts the average to the threshold: the other side answered within the
// budget although this thread slept, so spinning is worth another try (two
// threads that both sleep would otherwise never find out that spinning
// pays again; two failures in a row stop it again).
struct SpinHistory {
  uint32_t score = 1024;  // success rate, in 1/1024ths
  uint32_t waits = 0;
};
thread_local SpinHistory t_spin_history;
constexpr uint32_t kSpinPaysAbove = 870;  // 85%
constexpr uint32_t kSpinProbeEvery = 16;
constexpr auto kSpinProbeBudget = std::chrono::microseconds(4);

// `*skipped` (optional) tells whether the spin was skipped.
template <typename Done>
bool AdaptiveSpinUntil(const Done& done, Timeout timeout,
                       bool* skipped = nullptr) {
  if (done()) return true;
  SpinHistory& h = t_spin_history;
  const bool probe = h.score < kSpinPaysAbove;
  if (probe && ++h.waits % kSpinProbeEvery != 0) {
    if (skipped) *skipped = true;
    return false;
  }
  if (SpinUntil(done, timeout, probe ? kSpinProbeBudget : kSpinBudget)) {
    h.score += (1024 - h.score) / 8;
    if (probe) h.score = std::max(h.score, kSpinPaysAbove);
    return true;
  }
  h.score -= h.score / 8;
  return false;
}

// A wait that skipped its spin and then slept tells whether the spin would
// have paid: a sleep shorter than the spin budget means the other side
// answered within it. Counted like a quarter of a spin, so that a thread (or
// two ping-ponging threads) that sleeps on every wait goes back to spinning
// once the machine is quiet, without waiting for a lucky probe.
void NoteSkippedSpinSlept(Timeout::Clock::duration slept) {
  SpinHistory& h = t_spin_history;
  if (slept < kSpinBudget) {
    h.score += (1024 - h.score) / 32;
  } else {
    h.score -= h.score / 32;
  }
}

#if defined(__linux__)
// Sleeps while `*word == expected`, until woken or the deadline passes.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
               Timeout timeout) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  if (timeout.is_infinite()) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE,
            expected, nullptr, nullptr, 0);
    return;
  }
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, the clock
  // behind std::chrono::steady_clock on Linux.
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                timeout.deadline().time_since_epoch())
                .count();
  if (ns < 0) ns = 0;
  timespec deadline{static_cast<time_t>(ns / 1000000000),
                    static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word),
          FUTEX_WAIT_BITSET_PRIVATE, expected, &deadline, nullptr,
          FUTEX_BITSET_MATCH_ANY);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE,
          INT32_MAX, nullptr, nullptr, 0);
}
#endif

}  // namespace

Ref<Semaphore> Semaphore::Create(uint64_t initial_value) {
  return Ref<Semaphore>::Adopt(new Semaphore(initial_value));
}

Semaphore::~Semaphore() {
  // Whoever registered a timepoint holds a reference to us while it is
  // pending, so none can be left; if one is, it would never fire: drop it.
  // A pending operation that still needs us is a driver's lifetime bug.
  WaitGraphSemaphoreDestroyed(this);
}

StatusOr<uint64_t> Semaphore::Query() const {
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }
  return payload_.load(std::memory_order_acquire);
}

// The payload is read before `failed_` (both seq_cst). Fail sets `failed_`
// and then reads the payload into `failed_payload_`, so a payload seen here
// with `failed_` still clear is at or below `failed_payload_`: an answer of
// true never turns false.
bool Semaphore::Reached(uint64_t value) const {
  const uint64_t payload = payload_.load(std::memory_order_seq_cst);
  if (!failed_.load(std::memory_order_seq_cst)) return payload >= value;
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_payload_ >= value;
}

void Semaphore::Fire(std::vector<Timepoint>& fired, const Status& status) {
  for (auto& tp : fired) tp.callback(status);
}

void Semaphore::WakeSleepers() {
  woken_at_ns_.store(SteadyNs(), std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
#if defined(__linux__)
  FutexWakeAll(&epoch_);
#else
  // A sleeper checks its condition under the mutex before it waits; taking
  // the mutex here orders this wake-up after that check.
  { std::lock_guard<std::mutex> lock(mutex_); }
  cv_.notify_all();
#endif
}

void Semaphore::SleepOnEpoch(uint32_t epoch, Timeout timeout) {
#if defined(__linux__)
  FutexWait(&epoch_, epoch, timeout);
#else
  std::unique_lock<std::mutex> lock(mutex_);
  if (epoch_.load(std::memory_order_seq_cst) != epoch) return;
  if (timeout.is_infinite()) {
    cv_.wait(lock);
  } else {
    cv_.wait_until(lock, timeout.deadline());
  }
#endif
}

// The payload moves with a CAS, so concurrent signals keep it monotonic and
// exactly one of two equal signals wins. Whoever registers a sleeper or a
// timepoint sets `slow_` and then re-reads the payload, and Signal reads
// `slow_` after its CAS (all seq_cst): either Signal sees them and takes the
// slow path, or they see the new payload. Sleepers are woken without the
// lock, so a woken thread never blocks on the mutex its waker holds.
Status Semaphore::Signal(uint64_t value) {
  uint64_t current = payload_.load(std::memory_order_relaxed);
  while (true) {
    if (failed_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mutex_);
      return failure_;
    }
    if (value <= current) {
      return InvalidArgumentError(
          "semaphore signal to %llu is not above the current payload %llu",
          static_cast<unsigned long long>(value),
          static_cast<unsigned long long>(current));
    }
    if (payload_.compare_exchange_weak(current, value,
                                       std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
      break;
    }
  }
  if (signal_race_hook_) signal_race_hook_();
  const uint32_t slow = slow_.load(std::memory_order_seq_cst);
  if (slow == 0) {
    // BUGGIFY: wake anyway (nobody should be asleep; a sleeper that was
    // missed by the registration protocol would be found here).
    if (Buggify(BuggifySite::kWakeAnyway)) WakeSleepers();
    OnSignaled(value);
    return OkStatus();
  }
  std::vector<Timepoint> fired;
  if (slow & kHasTimepoints) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Another signal may have raised the payload further meanwhile; fire
    // everything that is reached now.
    const uint64_t reached = payload_.load(std::memory_order_seq_cst);
    if (reached >= min_pending_) {
      // Fired in registration order; the others keep theirs.
      uint64_t min = UINT64_MAX;
      for (size_t i = first_live_; i < timepoints_.size(); ++i) {
        Timepoint& tp = timepoints_[i];
        if (!tp.live) continue;
        if (tp.value <= reached) {
          fired.push_back(std::move(tp));
          tp.live = false;
          --live_timepoints_;
        } else if (tp.value < min) {
          min = tp.value;
        }
      }
      min_pending_ = min;
      DropDeadTimepoints();
    }
    if (live_timepoints_ == 0) {
      slow_.fetch_and(~kHasTimepoints, std::memory_order_seq_cst);
    }
  }
  if (slow >= kSleeper) {
    Sometimes(CoverageState::kSignalWokeASleeper);
    WakeSleepers();
  }
  OnSignaled(value);
  Fire(fired, OkStatus());
  return OkStatus();
}

void Semaphore::Fail(Status status) {
  if (status.ok()) status = UnknownError("semaphore failed with an OK status");
  std::vector<Timepoint> fired;
  std::vector<Timepoint> reached;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    failure_ = status;
    failed_.store(true, std::memory_order_seq_cst);
    // A Signal whose CAS lands after this read read `failed_` before this
    // store: its value counts as not reached before the failure.
    failed_payload_ = payload_.load(std::memory_order_seq_cst);
    // A Signal racing with this one may have raised the payload and not yet
    // collected its timepoints: those values were reached before the
    // failure, so they fire OK, as they would have a moment earlier.
    for (Timepoint& tp : timepoints_) {
      if (!tp.live) continue;
      (tp.value <= failed_payload_ ? reached : fired).push_back(std::move(tp));
    }
    timepoints_.clear();
    live_timepoints_ = 0;
    first_live_ = 0;
    min_pending_ = UINT64_MAX;
    slow_.fetch_and(~kHasTimepoints, std::memory_order_seq_cst);
  }
  const bool sleepers = slow_.load(std::memory_order_seq_cst) >= kSleeper;
  if (sleepers || !fired.empty()) {
    Sometimes(CoverageState::kSemaphoreFailedWithWaiters);
  }
  if (sleepers) WakeSleepers();
  OnFailed(status);
  Fire(reached, OkStatus());
  Fire(fired, status);
}

// Three phases, each entered only when the one before did not finish:
// pump while a progress pump (deterministic simulator) has work to run; spin
// while none has (as long and as often as spinning pays on this thread:
// AdaptiveSpinUntil); sleep on the epoch, until a signal, a failure, or
// work published by a pump. A sleep lasts at most kPumpSlice when pumping
// stalled (another thread pumps, or the work left is on queues excluded on
// this thread): nobody wakes us when that ends. The deadline is checked after
// every pump step: a poll runs at most one step, a timed wait stops at most one
// step past its deadline.
Status Semaphore::Wait(uint64_t value, Timeout timeout) {
  auto done = [&] {
    return failed_.load(std::memory_order_seq_cst) ||
           payload_.load(std::memory_order_seq_cst) >= value;
  };
  if (!done()) {
    if (timeout.is_immediate() && !HavePumpWork()) {
      return DeadlineExceededError(
          "semaphore poll: payload %llu < %llu",
          static_cast<unsigned long long>(payload_.load()),
          static_cast<unsigned long long>(value));
    }
    bool finished = false;
    bool spin_skipped = false;
    if (!timeout.is_immediate() && !HavePumpWork()) {
      finished = AdaptiveSpinUntil([&] { return done() || HavePumpWork(); },
                                   timeout, &spin_skipped) &&
                 done();
    }
    while (!finished && !done()) {
      bool pump_stalled = false;
      if (HavePumpWork()) {
        const bool progressed = RunProgressPumps();
        if (done() || timeout.is_immediate() || timeout.expired()) break;
        if (progressed) continue;
        // Another thread is pumping, or the work left belongs to queues
        // whose host calls are on this thread's stack.
        pump_stalled = true;
      } else if (timeout.is_immediate() || timeout.expired()) {
        break;
      }
      // While pumps exist, work they publish meanwhile wakes this sleeper
      // (AddPumpSleeper), since it may be the only thread that would run
      // it. Registered as a sleeper (slow_) only around the sleep, so that
      // the signals a pump step sends from this thread take Signal's fast
      // path. Read the epoch before re-checking: a wake-up after the check
      // changes it, and then the sleep returns at once.
      const bool pumps = HaveProgressPumps();
      PumpSleeper pump_sleeper;
      pump_sleeper.wake = [](void* self) {
        static_cast<Semaphore*>(self)->WakeSleepers();
      };
      pump_sleeper.arg = this;
      if (pumps) AddPumpSleeper(&pump_sleeper);
      slow_.fetch_add(kSleeper, std::memory_order_seq_cst);
      const uint32_t epoch = epoch_.load(std::memory_order_seq_cst);
      if (done()) {
      } else if (pump_stalled) {
        // Nobody wakes us when the stall ends: look again in a slice.
        auto slice = Timeout::Clock::now() + kPumpSlice;
        SleepOnEpoch(epoch,
                     Timeout::At(timeout.is_infinite()
                                     ? slice
                                     : std::min(slice, timeout.deadline())));
      } else if (!pumps || !HavePumpWork()) {
        const auto slept_from = Timeout::Clock::now();
        SleepOnEpoch(epoch, timeout);
        if (done()) {
          // Woken by a wake-up: since it was sent; else the value was
          // reached with no wake-up at all: since the sleep began.
          CheckWakeLatency(
              epoch_.load(std::memory_order_seq_cst) != epoch
                  ? woken_at_ns_.load(std::memory_order_relaxed)
                  : std::chrono::duration_cast<std::chrono::nanoseconds>(
                        slept_from.time_since_epoch())
                        .count(),
              "a semaphore wait");
        }
        if (spin_skipped && done()) {
          NoteSkippedSpinSlept(Timeout::Clock::now() - slept_from);
          spin_skipped = false;
        }
      }  // else work was published meanwhile: pump it
      slow_.fetch_sub(kSleeper, std::memory_order_seq_cst);
      if (pumps) RemovePumpSleeper(&pump_sleeper);
    }
  }
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }
  const uint64_t payload = payload_.load(std::memory_order_acquire);
  if (payload >= value) return OkStatus();
  return DeadlineExceededError("semaphore wait timed out: payload %llu < %llu",
                               static_cast<unsigned long long>(payload),
                               static_cast<unsigned long long>(value));
}

Semaphore::TimepointId Semaphore::NotifyAt(uint64_t value,
                                           TimepointCallback callback) {
  Status resolved;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_.load(std::memory_order_relaxed)) {
      // Publish the timepoint (slow_) before re-reading the payload; see
      // Signal.
      slow_.fetch_or(kHasTimepoints, std::memory_order_seq_cst);
      if (payload_.load(std::memory_order_seq_cst) < value) {
        TimepointId id = next_id_++;
        timepoints_.push_back(Timepoint{id, value, std::move(callback)});
        ++live_timepoints_;
        if (value < min_pending_) min_pending_ = value;
        return id;
      }
      if (live_timepoints_ == 0) {
        slow_.fetch_and(~kHasTimepoints, std::memory_order_seq_cst);
      }
    }
    resolved = failure_;
  }
  callback(resolved);
  return 0;
}

bool Semaphore::CancelTimepoint(TimepointId id) {
  if (id == 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  // Ids increase in registration order, which the slots keep.
  auto it = std::lower_bound(
      timepoints_.begin() + first_live_, timepoints_.end(), id,
      [](const Timepoint& tp, TimepointId v) { return tp.id < v; });
  if (it == timepoints_.end() || it->id != id || !it->live) return false;
  it->live = false;
  it->callback = nullptr;  // its captures go now, as before
  --live_timepoints_;
  // min_pending_ stays a lower bound.
  DropDeadTimepoints();
  if (live_timepoints_ == 0) {
    slow_.fetch_and(~kHasTimepoints, std::memory_order_seq_cst);
  }
  return true;
}

void Semaphore::DropDeadTimepoints() {
  if (live_timepoints_ == 0) {
    timepoints_.clear();
    first_live_ = 0;
    min_pending_ = UINT64_MAX;
    return;
  }
  while (!timepoints_[first_live_].live) ++first_live_;
  const size_t dead = timepoints_.size() - live_timepoints_;
  if (dead < 16 || dead <= live_timepoints_) return;
  size_t w = 0;
  for (size_t r = first_live_; r < timepoints_.size(); ++r) {
    if (!timepoints_[r].live) continue;
    if (w != r) timepoints_[w] = std::move(timepoints_[r]);
    ++w;
  }
  timepoints_.erase(timepoints_.begin() + w, timepoints_.end());
  first_live_ = 0;
}

size_t Semaphore::pending_timepoint_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_timepoints_;
}

Status ValidateSemaphoreList(SemaphoreList points, const char* what) {
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].semaphore) {
      return InvalidArgumentError("%s semaphore %zu is null", what, i);
    }
  }
  return OkStatus();
}

namespace {
// Shared by the callbacks of one multi-wait; outlives the wait call when a
// callback races with its cancellation.
struct MultiWaitState {
  std::mutex mutex;
  std::condition_variable cv;
  size_t remaining = 0;
  size_t reached = 0;
  Status failure;
  int64_t decided_at_ns = 0;  // the last timepoint that fired
};

// One lock-free look at every point. Returns true when the wait is decided
// (ALL: every point reached or one failed; ANY: one reached, or none
// reached and one failed), with its result in `*result`.
bool PollPoints(WaitMode mode, SemaphoreList points, Status* result) {
  size_t reached = 0;
  Status failure;
  for (const SemaphorePoint& p : points) {
    StatusOr<uint64_t> payload = p.semaphore->Query();
    if (!payload.ok()) {
      if (failure.ok()) failure = payload.status();
      if (mode == WaitMode::kAll) break;
    } else if (*payload >= p.value) {
      ++reached;
      if (mode == WaitMode::kAny) break;
    }
  }
  if (mode == WaitMode::kAny && reached > 0) {
    *result = OkStatus();
    return true;
  }
  if (!failure.ok()) {
    *result = failure;
    return true;
  }
  if (mode == WaitMode::kAll && reached == points.size()) {
    *result = OkStatus();
    return true;
  }
  return false;
}
}  // namespace

uint64_t SemaphoreLateWakeups() {
  return late_wakeups.load(std::memory_order_relaxed);
}

Status WaitSemaphores(WaitMode mode, SemaphoreList points, Timeout timeout) {
  HAL_RETURN_IF_ERROR(ValidateSemaphoreList(points, "wait"));
  if (points.empty()) return OkStatus();
  if (points.size() == 1) {
    return points[0].semaphore->Wait(points[0].value, timeout);
  }
  // Most multi-waits are decided at once or within a few microseconds;
  // only then register timepoints and sleep.
  Status polled;
  if (PollPoints(mode, points, &polled)) return polled;
  if (!timeout.is_immediate() && !HavePumpWork() &&
      AdaptiveSpinUntil(
          [&] { return PollPoints(mode, points, &polled) || HavePumpWork(); },
          timeout) &&
      PollPoints(mode, points, &polled)) {
    return polled;
  }
  auto state = std::make_shared<MultiWaitState>();
  state->remaining = points.size();
  std::vector<Semaphore::TimepointId> ids(points.size(), 0);
  for (size_t i = 0; i < points.size(); ++i) {
    ids[i] = points[i].semaphore->NotifyAt(
        points[i].value, [state](const Status& status) {
          std::lock_guard<std::mutex> lock(state->mutex);
          if (status.ok()) {
            ++state->reached;
          } else if (state->failure.ok()) {
            state->failure = status;
          }
          --state->remaining;
          state->decided_at_ns = SteadyNs();
          state->cv.notify_all();
        });
  }
  auto done = [&] {
    if (mode == WaitMode::kAny) {
      return state->reached > 0 || state->remaining == 0 ||
             !state->failure.ok();
    }
    return state->remaining == 0 || !state->failure.ok();
  };
  Status result;
  {
    std::unique_lock<std::mutex> lock(state->mutex);
    if (HaveProgressPumps()) {
      PumpingWait(state->cv, lock, timeout, done);
    } else if (timeout.is_infinite()) {
      state->cv.wait(lock, done);
    } else if (!timeout.is_immediate()) {
      state->cv.wait_until(lock, timeout.deadline(), done);
    }
    if (done())
      CheckWakeLatency(state->decided_at_ns, "a multi-semaphore wait");
    if (mode == WaitMode::kAny && state->reached > 0) {
      result = OkStatus();
    } else if (!state->failure.ok()) {
      result = state->failure;
    } else if (mode == WaitMode::kAll && state->remaining == 0) {
      result = OkStatus();
    } else {
      result = DeadlineExceededError(
          "wait (%s) on %zu semaphores timed out; %zu reached",
          mode == WaitMode::kAll ? "ALL" : "ANY", points.size(),
          state->reached);
    }
  }
  for (size_t i = 0; i < points.size(); ++i) {
    points[i].semaphore->CancelTimepoint(ids[i]);
  }
  return result;
}

}  // namespace hal
