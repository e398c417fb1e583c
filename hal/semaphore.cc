#include "hal/semaphore.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "hal/progress.h"

namespace hal {

namespace {
// How long a waiter sleeps between pump attempts when another host thread
// must act first (deterministic simulator only).
constexpr auto kPumpSlice = std::chrono::milliseconds(1);

// Waits on `cv` until `done()` or the deadline, running progress pumps
// (with `lock` released) whenever they can make progress.
template <typename Lock, typename Done>
void PumpingWait(std::condition_variable& cv, Lock& lock, Timeout timeout,
                 Done done) {
  while (!done()) {
    lock.unlock();
    bool progressed = RunProgressPumps();
    lock.lock();
    if (done()) return;
    if (progressed) continue;
    if (timeout.is_immediate() || timeout.expired()) return;
    auto slice = Timeout::Clock::now() + kPumpSlice;
    cv.wait_until(lock, timeout.is_infinite() ? slice
                                              : std::min(slice, timeout.deadline()));
  }
}
}  // namespace

Ref<Semaphore> Semaphore::Create(uint64_t initial_value) {
  return Ref<Semaphore>::Adopt(new Semaphore(initial_value));
}

Semaphore::~Semaphore() {
  // Whoever registered a timepoint holds a reference to us while it is
  // pending, so none can be left; if one is, it would never fire: drop it.
}

StatusOr<uint64_t> Semaphore::Query() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.ok()) return failure_;
  return payload_;
}

void Semaphore::Fire(std::vector<Timepoint>& fired, const Status& status) {
  for (auto& tp : fired) tp.callback(status);
}

Status Semaphore::Signal(uint64_t value) {
  std::vector<Timepoint> fired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.ok()) return failure_;
    if (value <= payload_) {
      return InvalidArgumentError(
          "semaphore signal to %llu is not above the current payload %llu",
          static_cast<unsigned long long>(value),
          static_cast<unsigned long long>(payload_));
    }
    payload_ = value;
    auto split = std::stable_partition(
        timepoints_.begin(), timepoints_.end(),
        [value](const Timepoint& tp) { return tp.value > value; });
    std::move(split, timepoints_.end(), std::back_inserter(fired));
    timepoints_.erase(split, timepoints_.end());
    if (waiters_ > 0) cv_.notify_all();
  }
  OnSignaled(value);
  Fire(fired, OkStatus());
  return OkStatus();
}

void Semaphore::Fail(Status status) {
  if (status.ok()) status = UnknownError("semaphore failed with an OK status");
  std::vector<Timepoint> fired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.ok()) return;
    failure_ = status;
    fired.swap(timepoints_);
    if (waiters_ > 0) cv_.notify_all();
  }
  OnFailed(status);
  Fire(fired, status);
}

Status Semaphore::Wait(uint64_t value, Timeout timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto done = [&] { return !failure_.ok() || payload_ >= value; };
  if (!done() && HaveProgressPumps()) {
    ++waiters_;
    PumpingWait(cv_, lock, timeout, done);
    --waiters_;
  } else if (!done()) {
    if (timeout.is_immediate()) {
      return DeadlineExceededError("semaphore poll: payload %llu < %llu",
                                   static_cast<unsigned long long>(payload_),
                                   static_cast<unsigned long long>(value));
    }
    // A brief spin catches the common case of a signal that is already on
    // its way, without paying for a sleep and a wake-up.
    for (int i = 0; i < 64 && !done(); ++i) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
    ++waiters_;
    if (timeout.is_infinite()) {
      cv_.wait(lock, done);
    } else {
      cv_.wait_until(lock, timeout.deadline(), done);
    }
    --waiters_;
  }
  if (!failure_.ok()) return failure_;
  if (payload_ >= value) return OkStatus();
  return DeadlineExceededError("semaphore wait timed out: payload %llu < %llu",
                               static_cast<unsigned long long>(payload_),
                               static_cast<unsigned long long>(value));
}

Semaphore::TimepointId Semaphore::NotifyAt(uint64_t value,
                                           TimepointCallback callback) {
  Status resolved;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.ok() && payload_ < value) {
      TimepointId id = next_id_++;
      timepoints_.push_back(Timepoint{id, value, std::move(callback)});
      return id;
    }
    resolved = failure_;
  }
  callback(resolved);
  return 0;
}

bool Semaphore::CancelTimepoint(TimepointId id) {
  if (id == 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(timepoints_.begin(), timepoints_.end(),
                         [id](const Timepoint& tp) { return tp.id == id; });
  if (it == timepoints_.end()) return false;
  timepoints_.erase(it);
  return true;
}

size_t Semaphore::pending_timepoint_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timepoints_.size();
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
};
}  // namespace

Status WaitSemaphores(WaitMode mode, SemaphoreList points, Timeout timeout) {
  HAL_RETURN_IF_ERROR(ValidateSemaphoreList(points, "wait"));
  if (points.empty()) return OkStatus();
  if (points.size() == 1) {
    return points[0].semaphore->Wait(points[0].value, timeout);
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
          state->cv.notify_all();
        });
  }
  auto done = [&] {
    if (mode == WaitMode::kAny) {
      return state->reached > 0 || state->remaining == 0 || !state->failure.ok();
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
