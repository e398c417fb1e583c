#include "drivers/gpu/gpu_pending_actions.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "drivers/gpu/gpu_semaphore.h"
#include "hal/buggify.h"
#include "hal/coverage.h"

namespace hal::gpu {

namespace {
std::atomic<uint64_t> g_hand_offs{0};
void CountHandOff() { g_hand_offs.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

uint64_t ThreadHandOffs() {
  return g_hand_offs.load(std::memory_order_relaxed);
}

void GpuAction::SetPoints(SemaphoreList wait, SemaphoreList signal) {
  wait_reached.reset(new std::atomic<bool>[wait.size()]());
  for (size_t i = 0; i < wait.size(); ++i) {
    const SemaphorePoint& p = wait[i];
    waits.emplace_back(Ref<Semaphore>(p.semaphore), p.value);
    // Decided at submission, on the submitting thread: a wait already
    // reached stays satisfied even if its semaphore fails before the worker
    // looks; one on a semaphore already failed fails the action.
    StatusOr<uint64_t> payload = p.semaphore->Query();
    wait_reached[i].store(payload.ok() && *payload >= p.value);
    if (!payload.ok() && failed_at_submission.ok()) {
      Sometimes(CoverageState::kOpBehindAFailedWait);
      failed_at_submission = payload.status();
    }
  }
  utils::RetainPoints(signal, &signals);
}

// State shared with host functions and timepoint callbacks, which may run
// on other threads while the worker is busy (and, for timepoint callbacks
// that race with cancellation, after the actions are gone).
struct GpuPendingActions::Shared {
  std::mutex mutex;
  std::condition_variable cv;       // wakes the worker
  std::condition_variable idle_cv;  // wakes WaitIdle
  bool dirty = false;
  bool shutdown = false;
  std::vector<std::unique_ptr<GpuAction>> incoming;
  std::vector<GpuAction*> completions;  // pushed by host functions
  size_t outstanding = 0;               // enqueued and not finished

  void Wake() {
    std::lock_guard<std::mutex> lock(mutex);
    dirty = true;
    cv.notify_one();
  }
  void Done() {
    std::lock_guard<std::mutex> lock(mutex);
    if (--outstanding == 0) idle_cv.notify_all();
  }
};

struct GpuPendingActions::HostQueue {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::unique_ptr<GpuAction>> actions;
  bool stop = false;
  std::thread thread;
};

GpuPendingActions::GpuPendingActions(std::shared_ptr<GpuApi> api,
                                     std::shared_ptr<GpuEventPool> events,
                                     std::vector<GpuStream> streams,
                                     std::vector<GpuStream> callback_streams,
                                     const void* owner)
    : api_(std::move(api)),
      events_(std::move(events)),
      streams_(std::move(streams)),
      callback_streams_(std::move(callback_streams)),
      owner_(owner),
      shared_(std::make_shared<Shared>()) {
  host_queues_.resize(streams_.size());
  worker_ = std::thread([this] { WorkerMain(); });
}

GpuPendingActions::~GpuPendingActions() { Shutdown(); }

void GpuPendingActions::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->shutdown = true;
    shared_->cv.notify_one();
  }
  worker_.join();
}

void GpuPendingActions::Enqueue(std::unique_ptr<GpuAction> action) {
  // Timepoints from submission on, so that a wait reached and then failed
  // before the worker looks is still seen as reached (wait_reached).
  RegisterWakeups(action.get());
  std::lock_guard<std::mutex> lock(shared_->mutex);
  ++shared_->outstanding;
  shared_->incoming.push_back(std::move(action));
  shared_->cv.notify_one();
  CountHandOff();
}

Status GpuPendingActions::WaitIdle(Timeout timeout) {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  auto idle = [&] { return shared_->outstanding == 0; };
  if (timeout.is_infinite()) {
    shared_->idle_cv.wait(lock, idle);
  } else if (!timeout.is_immediate()) {
    shared_->idle_cv.wait_until(lock, timeout.deadline(), idle);
  }
  if (idle()) return OkStatus();
  return DeadlineExceededError(
      "wait_idle: %zu queue operation(s) still pending", shared_->outstanding);
}

void GpuPendingActions::OnHostFunction(void* user_data) {
  // Runs on an API thread: no API calls here, only a hand-off.
  auto* action = static_cast<GpuAction*>(user_data);
  auto* shared = static_cast<Shared*>(action->shared);
  std::lock_guard<std::mutex> lock(shared->mutex);
  shared->completions.push_back(action);
  shared->cv.notify_one();
  CountHandOff();
}

void GpuPendingActions::WorkerMain() {
  // Once shutdown was handled, the worker waits for completions like any
  // other wake-up instead of spinning on the flag (a spinning host thread
  // also holds the simulator's engine, which waits for busy host threads).
  bool shutdown_seen = false;
  while (true) {
    std::vector<std::unique_ptr<GpuAction>> incoming;
    std::vector<GpuAction*> done;
    bool shutdown;
    {
      std::unique_lock<std::mutex> lock(shared_->mutex);
      shared_->cv.wait(lock, [&] {
        return shared_->dirty || (shared_->shutdown && !shutdown_seen) ||
               !shared_->incoming.empty() || !shared_->completions.empty();
      });
      incoming.swap(shared_->incoming);
      done.swap(shared_->completions);
      shared_->dirty = false;
      shutdown = shared_->shutdown;
    }
    // BUGGIFY: a late worker (its work waits; nothing may depend on when
    // it looks).
    if (Buggify(BuggifySite::kWorkerDelay)) {
      std::this_thread::sleep_for(std::chrono::microseconds(
          (incoming.size() * 37 + done.size() * 101) % 256));
    }
    for (auto& a : incoming) pending_.push_back(std::move(a));
    for (GpuAction* a : done) {
      auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                             [a](const auto& p) { return p.get() == a; });
      completing_.splice(completing_.end(), in_flight_, it);
    }
    for (auto it = completing_.begin(); it != completing_.end();) {
      if (TryComplete(it->get())) {
        it = completing_.erase(it);
      } else {
        ++it;
      }
    }
    if (shutdown) {
      shutdown_seen = true;
      while (!pending_.empty()) {
        std::unique_ptr<GpuAction> a = std::move(pending_.front());
        pending_.pop_front();
        Status cancelled = CancelledError(
            "%s: device destroyed before its waits were met", a->name);
        Abandon(std::move(a), cancelled);
      }
      if (in_flight_.empty() && completing_.empty()) break;
    } else {
      while (ScanPending()) {
      }
    }
  }
  for (auto& q : host_queues_) {
    if (!q) continue;
    {
      std::lock_guard<std::mutex> lock(q->mutex);
      q->stop = true;
      q->cv.notify_one();
    }
    q->thread.join();
  }
}

bool GpuPendingActions::ScanPending() {
  bool changed = false;
  for (auto it = pending_.begin(); it != pending_.end();) {
    GpuAction* a = it->get();
    Status failure;
    bool resolved = true;
    std::vector<Ref<GpuEvent>> events;
    failure = a->failed_at_submission;
    for (size_t i = 0; i < a->waits.size() && failure.ok(); ++i) {
      if (a->wait_reached[i].load()) continue;
      auto& [sem, value] = a->waits[i];
      utils::WaitState state = utils::CheckWait(*sem, value, &failure);
      if (state == utils::WaitState::kReached) {
        a->wait_reached[i].store(true);
        continue;
      }
      if (state == utils::WaitState::kFailed) break;
      if (a->kind == GpuAction::Kind::kDevice) {
        auto* gpu_sem = dynamic_cast<GpuSemaphore*>(sem.get());
        if (gpu_sem && gpu_sem->owner() == owner_) {
          if (Ref<GpuEvent> event = gpu_sem->FindDeviceTimepoint(value)) {
            events.push_back(std::move(event));
            continue;
          }
        }
      }
      resolved = false;
    }
    if (!failure.ok()) {
      std::unique_ptr<GpuAction> action = std::move(*it);
      it = pending_.erase(it);
      Abandon(std::move(action), failure);
      changed = true;
      continue;
    }
    if (!resolved) {
      RegisterWakeups(a);
      ++it;
      continue;
    }
    std::unique_ptr<GpuAction> action = std::move(*it);
    it = pending_.erase(it);
    CancelWakeups(action.get());
    action->waited_events = std::move(events);
    if (action->kind == GpuAction::Kind::kHost) {
      RunHost(std::move(action));
    } else {
      Issue(std::move(action));
    }
    changed = true;
  }
  return changed;
}

void GpuPendingActions::RegisterWakeups(GpuAction* action) {
  if (action->registered) return;
  action->registered = true;
  std::weak_ptr<Shared> weak = shared_;
  for (size_t i = 0; i < action->waits.size(); ++i) {
    auto& [sem, value] = action->waits[i];
    action->timepoint_ids.push_back(sem->NotifyAt(
        value, [weak, reached = action->wait_reached, i](const Status& s) {
          if (s.ok()) reached[i].store(true);
          if (auto shared = weak.lock()) shared->Wake();
        }));
  }
}

void GpuPendingActions::CancelWakeups(GpuAction* action) {
  if (!action->registered) return;
  for (size_t i = 0; i < action->timepoint_ids.size(); ++i) {
    action->waits[i].first->CancelTimepoint(action->timepoint_ids[i]);
  }
  action->timepoint_ids.clear();
  action->registered = false;
}

void GpuPendingActions::Issue(std::unique_ptr<GpuAction> action) {
  GpuStream stream = streams_[action->queue];
  Status status;
  for (const Ref<GpuEvent>& event : action->waited_events) {
    Sometimes(CoverageState::kWaitResolvedOnTheDevice);
    status = api_->StreamWaitEvent(stream, event->handle());
    if (!status.ok()) break;
  }
  if (status.ok() && action->issue) status = action->issue(stream);
  action->issue_status = status;

  // Whatever was enqueued (even after an error) must finish before the
  // action's resources go: record the completion event in every case.
  StatusOr<Ref<GpuEvent>> event = events_->Acquire();
  Status tracked = event.status();
  if (tracked.ok()) tracked = api_->EventRecord((*event)->handle(), stream);
  if (!tracked.ok()) {
    api_->StreamSynchronize(stream).IgnoreError();
    Finish(std::move(action), status.ok() ? tracked : status);
    return;
  }
  action->done_event = *event;
  if (status.ok()) {
    for (auto& [sem, value] : action->signals) {
      auto* gpu_sem = dynamic_cast<GpuSemaphore*>(sem.get());
      if (gpu_sem && gpu_sem->owner() == owner_) {
        gpu_sem->AddDeviceTimepoint(value, action->done_event);
      }
    }
  }
  GpuStream callback_stream = callback_streams_[action->queue];
  action->shared = shared_.get();
  GpuAction* raw = action.get();
  in_flight_.push_back(std::move(action));
  Status notify =
      api_->StreamWaitEvent(callback_stream, raw->done_event->handle());
  if (notify.ok()) {
    notify = api_->LaunchHostFunc(callback_stream, &OnHostFunction, raw);
  }
  if (!notify.ok()) {
    // No notification will come: wait here instead.
    api_->EventSynchronize(raw->done_event->handle()).IgnoreError();
    auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                           [raw](const auto& p) { return p.get() == raw; });
    std::unique_ptr<GpuAction> a = std::move(*it);
    in_flight_.erase(it);
    if (a->issue_status.ok()) a->issue_status = notify;
    completing_.push_back(std::move(a));
    shared_->Wake();
  }
}

bool GpuPendingActions::TryComplete(GpuAction* action) {
  Status status = action->issue_status;
  if (status.ok() && action->done_event) {
    bool ready = false;
    status = api_->EventQuery(action->done_event->handle(), &ready);
    if (Buggify(BuggifySite::kNotReady)) ready = false;  // the blocking path
    if (status.ok() && !ready) {
      status = api_->EventSynchronize(action->done_event->handle());
    }
  }
  if (status.ok()) {
    // A wait satisfied by a device timepoint is only known to have
    // succeeded once its semaphore reached the value on the host: an
    // upstream failure must fail this action too.
    for (size_t i = 0; i < action->waits.size(); ++i) {
      if (action->wait_reached[i].load()) continue;
      auto& [sem, value] = action->waits[i];
      // The semaphore may have reached the value and failed afterwards (a
      // later operation failed it); the wait stays satisfied (CheckWait).
      utils::WaitState state = utils::CheckWait(*sem, value, &status);
      if (state == utils::WaitState::kReached) {
        action->wait_reached[i].store(true);
        continue;
      }
      if (state == utils::WaitState::kFailed) break;
      RegisterWakeups(action);
      return false;
    }
  }
  CancelWakeups(action);
  auto it = std::find_if(completing_.begin(), completing_.end(),
                         [action](const auto& p) { return p.get() == action; });
  std::unique_ptr<GpuAction> owned = std::move(*it);
  Finish(std::move(owned), status);
  return true;
}

void GpuPendingActions::Finish(std::unique_ptr<GpuAction> action,
                               Status status) {
  CancelWakeups(action.get());
  if (action->complete) status = action->complete(status);
  utils::CompleteSignals(action->signals, status);
  action.reset();
  shared_->Done();
}

void GpuPendingActions::Abandon(std::unique_ptr<GpuAction> action,
                                const Status& status) {
  CancelWakeups(action.get());
  utils::AbandonQueueOp(action->abandon, action->signals, status);
  action.reset();
  shared_->Done();
}

void GpuPendingActions::RunHost(std::unique_ptr<GpuAction> action) {
  std::unique_ptr<HostQueue>& q = host_queues_[action->queue];
  if (!q) {
    q = std::make_unique<HostQueue>();
    HostQueue* raw = q.get();
    q->thread = std::thread([this, raw] { HostMain(raw); });
  }
  std::lock_guard<std::mutex> lock(q->mutex);
  q->actions.push_back(std::move(action));
  q->cv.notify_one();
  CountHandOff();
}

void GpuPendingActions::HostMain(HostQueue* queue) {
  while (true) {
    std::unique_ptr<GpuAction> action;
    {
      std::unique_lock<std::mutex> lock(queue->mutex);
      queue->cv.wait(lock,
                     [&] { return queue->stop || !queue->actions.empty(); });
      if (queue->actions.empty()) return;
      action = std::move(queue->actions.front());
      queue->actions.pop_front();
    }
    Status status = action->host_work ? action->host_work() : OkStatus();
    if (action->complete) status = action->complete(status);
    utils::CompleteSignals(action->signals, status);
    action.reset();
    shared_->Done();
  }
}

}  // namespace hal::gpu
