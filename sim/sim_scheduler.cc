#include "sim/sim_scheduler.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

namespace hal::sim {

void FinishSimOp(SimOp& op, const Status& status) {
  for (auto& [sem, value] : op.signals) {
    if (status.ok()) {
      // A value at or below the payload was reached already; nothing waits
      // on it any more, so a rejected signal is harmless here.
      sem->Signal(value).IgnoreError();
    } else {
      sem->Fail(status);
    }
  }
}

namespace {

void Abandon(SimOp& op, const Status& status) {
  if (op.abandon) op.abandon(status);
  FinishSimOp(op, status);
}

// An op plus the bookkeeping of its pending waits. Owned by shared_ptr so
// that timepoint callbacks racing with shutdown keep it alive.
struct Entry {
  std::unique_ptr<SimOp> op;
  std::mutex mutex;
  int pending = 0;
  bool dispatched = false;  // handed to a queue (all waits met, or one failed)
  Status failure;
  std::vector<std::pair<Semaphore*, Semaphore::TimepointId>> timepoints;
};

// The state shared with timepoint callbacks. Callbacks hold it by
// shared_ptr: one may still be running on a signalling thread after the
// scheduler is gone (its cancellation lost the race), and then finds
// `joined` set and does nothing.
struct Core {
  std::mutex mutex;
  std::condition_variable work_cv;
  std::condition_variable idle_cv;
  std::vector<std::deque<std::shared_ptr<Entry>>> queues;
  std::unordered_set<std::shared_ptr<Entry>> live;
  size_t in_flight = 0;
  bool stopping = false;
  bool joined = false;

  void WaitResolved(const std::shared_ptr<Entry>& entry, const Status& status) {
    {
      std::lock_guard<std::mutex> lock(entry->mutex);
      --entry->pending;
      if (!status.ok() && entry->failure.ok()) entry->failure = status;
      // A failed wait dispatches at once: the op will not run, and its
      // signals must fail now rather than after waits that may never come.
      bool ready = entry->pending == 0 || !entry->failure.ok();
      if (!ready || entry->dispatched) return;
      entry->dispatched = true;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (joined) return;  // Shutdown abandons everything left in `live`
    queues[entry->op->queue].push_back(entry);
    work_cv.notify_all();
  }
};

class ThreadedScheduler final : public SimScheduler {
 public:
  explicit ThreadedScheduler(int queue_count) : core_(std::make_shared<Core>()) {
    core_->queues.resize(queue_count);
    for (int i = 0; i < queue_count; ++i) {
      workers_.emplace_back([this, i] { WorkerMain(i); });
    }
  }
  ~ThreadedScheduler() override { Shutdown(); }

  void Submit(std::unique_ptr<SimOp> op) override {
    auto entry = std::make_shared<Entry>();
    entry->op = std::move(op);
    entry->pending = static_cast<int>(entry->op->waits.size()) + 1;
    {
      std::lock_guard<std::mutex> lock(core_->mutex);
      if (core_->stopping) {
        Abandon(*entry->op, CancelledError("device is shutting down"));
        return;
      }
      core_->live.insert(entry);
      ++core_->in_flight;
    }
    std::shared_ptr<Core> core = core_;
    for (auto& [sem, value] : entry->op->waits) {
      auto id = sem->NotifyAt(value, [core, entry](const Status& status) {
        core->WaitResolved(entry, status);
      });
      if (id) {
        std::lock_guard<std::mutex> lock(entry->mutex);
        entry->timepoints.emplace_back(sem.get(), id);
      }
    }
    core_->WaitResolved(entry, OkStatus());  // the +1 taken above
  }

  Status WaitIdle(Timeout timeout) override {
    std::unique_lock<std::mutex> lock(core_->mutex);
    auto idle = [this] { return core_->in_flight == 0; };
    if (timeout.is_infinite()) {
      core_->idle_cv.wait(lock, idle);
    } else if (!timeout.is_immediate()) {
      core_->idle_cv.wait_until(lock, timeout.deadline(), idle);
    }
    if (core_->in_flight == 0) return OkStatus();
    return DeadlineExceededError("%zu operation(s) still in flight",
                                 core_->in_flight);
  }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> lock(core_->mutex);
      if (core_->stopping) return;
      core_->stopping = true;
      core_->work_cv.notify_all();
    }
    // Workers drain their ready queues before they exit.
    for (auto& w : workers_) w.join();
    workers_.clear();
    // Whatever is left waits on semaphores nobody will signal for us now.
    std::vector<std::shared_ptr<Entry>> left;
    {
      std::lock_guard<std::mutex> lock(core_->mutex);
      core_->joined = true;
      left.assign(core_->live.begin(), core_->live.end());
      core_->live.clear();
      for (auto& q : core_->queues) q.clear();
      core_->in_flight = 0;
      core_->idle_cv.notify_all();
    }
    for (auto& entry : left) {
      std::vector<std::pair<Semaphore*, Semaphore::TimepointId>> ids;
      {
        std::lock_guard<std::mutex> lock(entry->mutex);
        ids.swap(entry->timepoints);
      }
      for (auto& [sem, id] : ids) sem->CancelTimepoint(id);
      Abandon(*entry->op, CancelledError("device destroyed before '%s' ran",
                                         entry->op->name));
    }
  }

 private:
  void WorkerMain(int queue) {
    Core& core = *core_;
    std::unique_lock<std::mutex> lock(core.mutex);
    while (true) {
      core.work_cv.wait(lock, [&] { return core.stopping || !core.queues[queue].empty(); });
      if (core.queues[queue].empty()) return;  // stopping and drained
      std::shared_ptr<Entry> entry = std::move(core.queues[queue].front());
      core.queues[queue].pop_front();
      lock.unlock();
      Execute(*entry);
      lock.lock();
      core.live.erase(entry);
      if (--core.in_flight == 0) core.idle_cv.notify_all();
    }
  }

  static void Execute(Entry& entry) {
    SimOp& op = *entry.op;
    Status failure;
    std::vector<std::pair<Semaphore*, Semaphore::TimepointId>> timepoints;
    {
      std::lock_guard<std::mutex> lock(entry.mutex);
      failure = entry.failure;
      timepoints.swap(entry.timepoints);
    }
    if (!failure.ok()) {
      // Drop the callbacks of waits that are still pending.
      for (auto& [sem, id] : timepoints) sem->CancelTimepoint(id);
      Abandon(op, failure);
      return;
    }
    FinishSimOp(op, op.run ? op.run() : OkStatus());
  }

  std::shared_ptr<Core> core_;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<SimScheduler> CreateThreadedScheduler(int queue_count) {
  return std::make_unique<ThreadedScheduler>(queue_count);
}

}  // namespace hal::sim
