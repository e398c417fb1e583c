#include "drivers/sim/sim_scheduler.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <span>
#include <thread>

#include "hal/progress.h"
#include "hal/utils/queue_op.h"

namespace hal::sim {

void FinishSimOp(SimOp& op, const Status& status) {
  utils::CompleteSignals(op.signals, status);
}

namespace {

struct Core;

// An op plus the bookkeeping of its pending waits. Owned by shared_ptr so
// that timepoint callbacks racing with shutdown keep it alive.
struct Entry {
  // Held here rather than by each wait callback, so that a callback
  // captures one shared_ptr and fits std::function's inline storage (no
  // allocation per wait). Core holds entries only while they are live, and
  // drops them all in AbandonAll, so the cycle does not outlive the device.
  std::shared_ptr<Core> core;
  std::unique_ptr<SimOp> op;
  // Waits not yet resolved, plus one held by Submit while it registers.
  std::atomic<int> pending{0};
  // Handed on (all waits met, or one failed); set once.
  std::atomic<bool> dispatched{false};
  std::mutex mutex;              // guards the three fields below
  bool waits_cancelled = false;  // CancelWaits ran; later ids cancel at once
  // The first failed wait's status. Written (under the mutex) only before
  // the writer counts down `pending`; so it is final once the op is
  // dispatched, and the dispatcher may read it without the mutex.
  Status failure;
  // The pending timepoints; their semaphores are retained here (the op's
  // wait list is the caller's, read only during Submit), as a queue
  // operation retains what it waits on.
  std::vector<std::pair<Ref<Semaphore>, Semaphore::TimepointId>> timepoints;
  // Deterministic scheduler, under Core's lock.
  uint64_t complete_at = 0;
  uint64_t start_seq = 0;
  bool began = false;  // registered with the checker
  Status hazard;
  // Under Core's lock: a worker, a pump step or AbandonAll took the op to
  // end it. Exactly one of them does; a wait callback that comes later
  // (racing with AbandonAll) must not queue it again.
  bool taken = false;
  size_t live_index = 0;  // in Core::live, while not taken
};

// Heap order for the deterministic scheduler: earliest completion first,
// ties broken by start order.
bool CompletesLater(const std::shared_ptr<Entry>& a,
                    const std::shared_ptr<Entry>& b) {
  return a->complete_at != b->complete_at ? a->complete_at > b->complete_at
                                          : a->start_seq > b->start_seq;
}

// The state shared with timepoint callbacks, guarded by the context's mutex
// (one lock for the scheduler, the checker, the clock and the trace).
// Callbacks hold Core by shared_ptr: one may still be running on a
// signalling thread after the scheduler is gone (its cancellation lost the
// race), and then finds `joined` set and does nothing.
struct Core {
  explicit Core(std::shared_ptr<SimContext> c, bool det, int queues)
      : ctx(std::move(c)), deterministic(det), queues(queues) {}

  std::shared_ptr<SimContext> ctx;
  const bool deterministic;
  std::condition_variable work_cv;
  std::condition_variable idle_cv;
  std::vector<std::deque<std::shared_ptr<Entry>>> queues;  // threaded: ready
  std::vector<std::shared_ptr<Entry>> ready;  // deterministic: not started
  // Deterministic: started, a min-heap on (complete_at, start_seq).
  std::vector<std::shared_ptr<Entry>> running;
  // Submitted, not taken, in no particular order (AbandonAll sorts by id);
  // Entry::live_index is the position.
  std::vector<std::shared_ptr<Entry>> live;
  // Deterministic: ops in `ready` or `running`, published to waiters
  // through AddPumpWork (hal/progress.h) so that they pump only when a step
  // can run something, and spin or sleep otherwise.
  int64_t runnable = 0;
  // Ops submitted and not yet ended. Raised under the lock (Admit); lowered
  // without it (Retire), which takes the lock to wake WaitIdle only when a
  // waiter is registered in `idle_waiters` (seq_cst on both sides: either
  // the waiter sees zero, or the last Retire sees the waiter).
  std::atomic<size_t> in_flight{0};
  std::atomic<int> idle_waiters{0};
  bool stopping = false;
  bool joined = false;

  std::mutex& mutex() { return ctx->mutex(); }

  // No entry lock on the usual path (a wait that succeeded): `pending`
  // and `dispatched` are atomics, and a failure is recorded before the
  // count-down that publishes it (acq_rel).
  void WaitResolved(const std::shared_ptr<Entry>& entry, const Status& status) {
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(entry->mutex);
      if (entry->failure.ok()) entry->failure = status;
    }
    const int left = entry->pending.fetch_sub(1, std::memory_order_acq_rel) - 1;
    // A failed wait dispatches at once: the op will not run, and its
    // signals must fail now rather than after waits that may never come.
    if (left != 0 && status.ok()) return;
    if (entry->dispatched.exchange(true, std::memory_order_acq_rel)) return;
    // Either this wait failed, or every wait has counted down (left == 0)
    // and with it recorded its failure, if any: `failure` is final.
    const bool failed = !status.ok() || !entry->failure.ok();
    std::lock_guard<std::mutex> lock(mutex());
    if (joined) return;  // Shutdown abandons everything left in `live`
    // AbandonAll (device loss) took it meanwhile: it ends it, once. (Its
    // op may be gone already: check before touching it.)
    if (entry->taken) return;
    Dispatch(entry, failed);
  }

  // Hands a live, untaken entry on to run (or to fail, when `failed`); with
  // the lock held.
  void Dispatch(std::shared_ptr<Entry> entry, bool failed) {
    // From now on the op may run at any moment: the checker sees it as in
    // flight, against other ops and against host mappings.
    if (!failed && ctx->lost().ok() && !entry->op->accesses.empty()) {
      entry->hazard = ctx->BeginAccess(entry->op->id, entry->op->name->c_str(),
                                       entry->op->accesses);
      entry->began = true;
    }
    if (deterministic) {
      ready.push_back(std::move(entry));
      ++runnable;
      AddPumpWork(1);
    } else {
      const int queue = entry->op->queue;
      queues[queue].push_back(std::move(entry));
      work_cv.notify_all();  // only the threaded workers wait on it
    }
  }

  // Counts `n` ended ops out of `in_flight`; without the lock.
  void Retire(size_t n) {
    if (in_flight.fetch_sub(n, std::memory_order_seq_cst) != n) return;
    if (idle_waiters.load(std::memory_order_seq_cst) == 0) return;
    std::lock_guard<std::mutex> lock(mutex());
    idle_cv.notify_all();
  }

  // Registers `entry`; with the lock held. False when it cannot be queued
  // (shutting down or device lost): the caller abandons it.
  Status Admit(const std::shared_ptr<Entry>& entry) {
    if (stopping) return CancelledError("device is shutting down");
    if (!ctx->lost().ok()) return ctx->lost();
    entry->live_index = live.size();
    live.push_back(entry);
    in_flight.fetch_add(1, std::memory_order_relaxed);
    return OkStatus();
  }

  // Takes `entry` out of `live`; with the lock held.
  void Unlive(Entry& entry) {
    const size_t i = entry.live_index;
    if (i != live.size() - 1) {
      live[i] = std::move(live.back());
      live[i]->live_index = i;
    }
    live.pop_back();
  }

  void Submit(const std::shared_ptr<Core>& self, std::unique_ptr<SimOp> op,
              SimScheduler::AdmitHook hook, void* hook_arg) {
    auto entry = std::allocate_shared<Entry>(SimCacheAllocator<Entry>());
    entry->op = std::move(op);
    // Waits already reached need no timepoint (the usual case: a
    // dependency on earlier work). The others are copied out of the
    // caller's list, which outlives this call (the op's view of it is
    // cleared before a wait can dispatch the op). (On the stack for a few.)
    using WaitPoint = SemaphorePoint;
    constexpr size_t kInlineWaits = 4;
    WaitPoint inline_waits[kInlineWaits];
    std::vector<WaitPoint> heap_waits;
    size_t unreached = 0;
    for (const SemaphorePoint& p : entry->op->waits) {
      uint64_t payload;
      if (p.semaphore->LoadPayload(&payload) && payload >= p.value) continue;
      if (unreached < kInlineWaits) {
        inline_waits[unreached] = p;
      } else {
        if (heap_waits.empty()) {
          heap_waits.assign(inline_waits, inline_waits + kInlineWaits);
        }
        heap_waits.push_back(p);
      }
      ++unreached;
    }
    std::span<WaitPoint> waits =
        heap_waits.empty() ? std::span<WaitPoint>(inline_waits, unreached)
                           : std::span<WaitPoint>(heap_waits);
    entry->pending.store(static_cast<int>(unreached) + 1,
                         std::memory_order_relaxed);
    Status admitted;
    {
      std::lock_guard<std::mutex> lock(mutex());
      if (hook) hook(hook_arg, *entry->op);
      admitted = Admit(entry);
      // The caller's list, read no more. Here, under the lock: once
      // admitted, the op is in `live`, and a device loss on another thread
      // (AbandonAll) may take it as soon as the lock is dropped.
      entry->op->waits = {};
      if (admitted.ok() && unreached == 0) {
        // Every wait is reached (the usual case): no callback can come, so
        // the op is handed on here, under the lock already held, as
        // WaitResolved would after the count-down of the +1 below.
        entry->pending.store(0, std::memory_order_relaxed);
        entry->dispatched.store(true, std::memory_order_relaxed);
        Dispatch(std::move(entry), /*failed=*/false);
        return;
      }
    }
    // Only now can a callback come; it reaches the core through the entry.
    // (After a refused admission the op is this thread's alone.)
    entry->core = self;
    if (!admitted.ok()) {
      Abandon(*entry->op, admitted);
      return;
    }
    for (const WaitPoint& w : waits) {
      Semaphore* sem = w.semaphore;
      auto id = sem->NotifyAt(w.value, [entry](const Status& status) {
        entry->core->WaitResolved(entry, status);
      });
      if (id) {
        bool cancel_now;
        {
          std::lock_guard<std::mutex> lock(entry->mutex);
          // A failed earlier wait may have dispatched the op, and a worker
          // may already have run and cancelled its waits: this timepoint
          // came too late to be in that list, so it goes now (else it would
          // keep the entry, and through it this semaphore, alive forever).
          cancel_now = entry->waits_cancelled;
          if (!cancel_now)
            entry->timepoints.emplace_back(Ref<Semaphore>(sem), id);
        }
        if (cancel_now) sem->CancelTimepoint(id);
      }
    }
    WaitResolved(entry, OkStatus());  // the +1 taken above
  }

  static void CancelWaits(Entry& entry) {
    std::vector<std::pair<Ref<Semaphore>, Semaphore::TimepointId>> ids;
    {
      std::lock_guard<std::mutex> lock(entry.mutex);
      ids.swap(entry.timepoints);
      entry.waits_cancelled = true;
    }
    for (auto& [sem, id] : ids) sem->CancelTimepoint(id);
  }

  static void Abandon(SimOp& op, const Status& status) {
    utils::AbandonQueueOp(op.abandon, op.signals, status);
  }

  // Fails every op not yet taken by a worker or a pump step, in id order.
  // Each op is taken once (`taken`), and counted out of `in_flight` once,
  // after it was destroyed.
  void AbandonAll(const Status& status) {
    std::vector<std::shared_ptr<Entry>> left;
    {
      std::lock_guard<std::mutex> lock(mutex());
      left = std::move(live);
      live.clear();
      std::sort(
          left.begin(), left.end(),
          [](const std::shared_ptr<Entry>& a, const std::shared_ptr<Entry>& b) {
            return a->op->id < b->op->id;
          });
      for (auto& e : left) e->taken = true;
      ready.clear();
      if (runnable != 0) {
        AddPumpWork(-runnable);
        runnable = 0;
      }
      for (auto& e : left) {
        if (e->began) ctx->EndAccess(e->op->id);
      }
      running.clear();
      for (auto& q : queues) q.clear();
      for (auto& e : left) {
        TraceLine(*ctx) << "abandon " << *e->op->name << "#" << e->op->id << " "
                        << status.ToString();
      }
    }
    for (auto& e : left) {
      CancelWaits(*e);
      // Failing its signals may resolve the waits of ops later in `left`;
      // they are taken, so their callbacks queue nothing.
      std::unique_ptr<SimOp> op = std::move(e->op);
      Abandon(*op, status);
      // Destroyed outside the lock (release callbacks may call into the
      // device) and before it leaves `in_flight` (WaitIdle returning means
      // every release ran).
      op.reset();
    }
    if (left.empty()) return;
    Retire(left.size());
  }

  // Runs the op's work (or not) and returns its status. `lost` is the
  // device-loss status when the device is gone.
  // `drawn_fault`, when given, is OnRunOp's answer, drawn by the caller
  // under the lock it held anyway (the deterministic step); the caller then
  // also guarantees that `entry.failure` no longer changes.
  Status Execute(Entry& entry, const Status& lost,
                 const Status* drawn_fault = nullptr) {
    SimOp& op = *entry.op;
    Status failure;
    if (drawn_fault) {
      failure = entry.failure;
    } else {
      std::lock_guard<std::mutex> lock(entry.mutex);
      failure = entry.failure;
    }
    if (!failure.ok()) {
      CancelWaits(entry);  // drop the callbacks of waits still pending
      if (op.abandon) op.abandon(failure);
      return failure;
    }
    if (!lost.ok()) {
      if (op.abandon) op.abandon(lost);
      return lost;
    }
    if (!entry.hazard.ok()) return entry.hazard;
    Status fault;
    if (drawn_fault) {
      fault = *drawn_fault;
    } else {
      std::lock_guard<std::mutex> lock(mutex());
      fault = ctx->OnRunOp(op.name->c_str(), op.id);
    }
    if (!fault.ok()) return fault;
    return RunWork(op);
  }

  // The op's work. With the checker on, an op with buffer accesses may
  // meet a hazard with a host mapping while it is in flight (the host maps
  // its range, or it started while a mapping was held): that fails the op,
  // before its work when it comes in time (then the op is abandoned, as for
  // a failed wait), else after it.
  Status RunWork(SimOp& op) {
    if (op.accesses.empty() || !ctx->checking()) {
      return op.run ? op.run() : OkStatus();
    }
    auto take = [&] {
      if (!ctx->has_mapping_hazards()) return OkStatus();
      std::lock_guard<std::mutex> lock(mutex());
      return ctx->TakeMappingHazard(op.id);
    };
    Status hazard = take();
    if (!hazard.ok()) {
      if (op.abandon) op.abandon(hazard);
      return hazard;
    }
    Status status = op.run ? op.run() : OkStatus();
    hazard = take();
    return hazard.ok() ? status : hazard;
  }

  // Checks the device-loss time after the clock moved; with the lock held.
  void CheckLoss() {
    uint64_t at = ctx->faults().lose_device_at;
    if (at && ctx->now_ns() >= at && ctx->lost().ok()) {
      ctx->LoseDevice(DataLossError(
          "simulated device loss at virtual time %llu ns (seed %llu)",
          (unsigned long long)at, (unsigned long long)ctx->seed()));
      TraceLine(*ctx) << "device lost at t=" << ctx->now_ns();
    }
  }

  // Completion bookkeeping shared by both schedulers: CompleteLocked with
  // the lock held, then Finish without it. Complete does both.
  void Complete(const std::shared_ptr<Entry>& entry, const Status& status) {
    Status lost;
    {
      std::lock_guard<std::mutex> lock(mutex());
      lost = CompleteLocked(*entry, status);
    }
    Finish(*entry, status, lost);
  }

  // Returns the device-loss status.
  Status CompleteLocked(Entry& entry, const Status& status) {
    if (entry.began) ctx->EndAccess(entry.op->id);
    TraceLine line(*ctx);
    line << "t=" << ctx->now_ns() << " complete " << *entry.op->name << "#"
         << entry.op->id << " ";
    if (status.ok()) {
      line << "OK";
    } else {
      line << status.ToString();
    }
    return ctx->lost();
  }

  void Finish(Entry& entry, const Status& status, const Status& lost) {
    // The caller took the entry: it alone ends the op. The op (and with it
    // the buffers, files and closures it holds) is destroyed here, outside
    // the device lock, so that a release callback may call into the device,
    // and before it leaves `in_flight`, so that WaitIdle returning means
    // every release ran.
    std::unique_ptr<SimOp> op = std::move(entry.op);
    FinishSimOp(*op, status);
    op.reset();
    if (!lost.ok()) AbandonAll(lost);
    Retire(1);
  }
};

class ThreadedScheduler final : public SimScheduler {
 public:
  ThreadedScheduler(int queue_count, std::shared_ptr<SimContext> ctx)
      : core_(std::make_shared<Core>(std::move(ctx), false, queue_count)) {
    for (int i = 0; i < queue_count; ++i) {
      workers_.emplace_back([this, i] { WorkerMain(i); });
    }
  }
  ~ThreadedScheduler() override { Shutdown(); }

  void Submit(std::unique_ptr<SimOp> op, AdmitHook hook,
              void* hook_arg) override {
    core_->Submit(core_, std::move(op), hook, hook_arg);
  }

  Status WaitIdle(Timeout timeout) override {
    std::unique_lock<std::mutex> lock(core_->mutex());
    auto idle = [this] { return core_->in_flight.load() == 0; };
    core_->idle_waiters.fetch_add(1);  // before the predicate's first read
    if (timeout.is_infinite()) {
      core_->idle_cv.wait(lock, idle);
    } else if (!timeout.is_immediate()) {
      core_->idle_cv.wait_until(lock, timeout.deadline(), idle);
    }
    core_->idle_waiters.fetch_sub(1);
    const size_t left = core_->in_flight.load();
    if (left == 0) return OkStatus();
    return DeadlineExceededError("%zu operation(s) still in flight", left);
  }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> lock(core_->mutex());
      if (core_->stopping) return;
      core_->stopping = true;
      core_->work_cv.notify_all();
    }
    // Workers drain their ready queues before they exit.
    for (auto& w : workers_) w.join();
    workers_.clear();
    {
      std::lock_guard<std::mutex> lock(core_->mutex());
      core_->joined = true;
    }
    // Whatever is left waits on semaphores nobody will signal for us now.
    core_->AbandonAll(
        CancelledError("device destroyed before the operation ran"));
  }

 private:
  void WorkerMain(int queue) {
    Core& core = *core_;
    std::unique_lock<std::mutex> lock(core.mutex());
    while (true) {
      core.work_cv.wait(
          lock, [&] { return core.stopping || !core.queues[queue].empty(); });
      if (core.queues[queue].empty()) return;  // stopping and drained
      std::shared_ptr<Entry> entry = std::move(core.queues[queue].front());
      core.queues[queue].pop_front();
      core.Unlive(*entry);
      entry->taken = true;
      Status lost = core.ctx->lost();
      lock.unlock();
      Status status = core.Execute(*entry, lost);
      lock.lock();
      core.ctx->AdvanceTo(core.ctx->now_ns() + core.ctx->DrawDuration());
      core.CheckLoss();
      lock.unlock();
      core.Complete(entry, status);
      entry.reset();  // outside the lock
      lock.lock();
    }
  }

  std::shared_ptr<Core> core_;
  std::vector<std::thread> workers_;
};

class DeterministicScheduler final : public SimScheduler, public ProgressPump {
 public:
  explicit DeterministicScheduler(std::shared_ptr<SimContext> ctx)
      : core_(std::make_shared<Core>(std::move(ctx), true, 0)) {
    RegisterProgressPump(this);
  }
  ~DeterministicScheduler() override { Shutdown(); }

  void Submit(std::unique_ptr<SimOp> op, AdmitHook hook,
              void* hook_arg) override {
    core_->Submit(core_, std::move(op), hook, hook_arg);
  }

  // One thread pumps at a time; another returns false at once (it may be
  // the one a host call run by the pump waits for). The pumping thread may
  // re-enter: a host call that waits (hal/device.h, QueueHostCall) pumps
  // from inside the step that runs it, and that nested step runs only
  // operations of other queues than the host calls on the stack.
  bool Pump() override {
    const std::thread::id me = std::this_thread::get_id();
    if (pump_owner_.load(std::memory_order_acquire) == me) return Step();
    std::thread::id none;
    if (!pump_owner_.compare_exchange_strong(none, me,
                                             std::memory_order_acq_rel)) {
      return false;
    }
    bool progressed = Step();
    pump_owner_.store(std::thread::id(), std::memory_order_release);
    return progressed;
  }

  Status WaitIdle(Timeout timeout) override {
    while (true) {
      if (core_->in_flight.load() == 0) return OkStatus();
      const bool progressed = Pump();
      const size_t left = core_->in_flight.load();
      if (left == 0) return OkStatus();
      // The deadline is checked after every step: a poll runs at most one.
      if (timeout.is_immediate() || timeout.expired()) {
        return DeadlineExceededError(
            progressed ? "%zu operation(s) still in flight"
                       : "%zu operation(s) still in flight; their waits are "
                         "not met",
            left);
      }
      if (progressed) continue;
      // Another host thread must signal something first.
      std::unique_lock<std::mutex> lock(core_->mutex());
      core_->idle_waiters.fetch_add(1);  // before the re-check (see Retire)
      if (core_->in_flight.load() != 0) {
        auto slice = Timeout::Clock::now() + std::chrono::milliseconds(1);
        core_->idle_cv.wait_until(
            lock, timeout.is_infinite() ? slice
                                        : std::min(slice, timeout.deadline()));
      }
      core_->idle_waiters.fetch_sub(1);
    }
  }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> lock(core_->mutex());
      if (core_->stopping) return;
    }
    // Finish what can run, as the threaded scheduler's workers do.
    while (Pump()) {
    }
    {
      std::lock_guard<std::mutex> lock(core_->mutex());
      core_->stopping = true;
      core_->joined = true;
    }
    UnregisterProgressPump(this);
    core_->AbandonAll(
        CancelledError("device destroyed before the operation ran"));
  }

 private:
  // Starts every ready op (in a seeded order, each with a seeded duration),
  // then completes the in-flight op that finishes first. One step per call.
  // Nested in a host call's wait (`excluded_` not empty), it completes the
  // first op that finishes on a queue with no host call on the stack.
  bool Step() {
    Core& core = *core_;
    SimContext& ctx = *core.ctx;
    std::shared_ptr<Entry> entry;
    Status lost;
    Status fault;
    Status status;
    Status lost_after;
    bool ended = false;
    {
      std::lock_guard<std::mutex> lock(core.mutex());
      if (core.joined) return false;
      while (!core.ready.empty()) {
        size_t i = ctx.schedule_random().Below(core.ready.size());
        std::shared_ptr<Entry> e = std::move(core.ready[i]);
        core.ready[i] = std::move(core.ready.back());
        core.ready.pop_back();
        // Final once dispatched (see the fault draw below): no entry lock.
        const bool waits_ok = e->failure.ok();
        e->start_seq = ++start_seq_;
        e->complete_at = ctx.now_ns() + (waits_ok ? ctx.DrawDuration() : 0);
        TraceLine(ctx) << "t=" << ctx.now_ns() << " start " << *e->op->name
                       << "#" << e->op->id << " q"
                       << static_cast<uint64_t>(e->op->queue) << " until "
                       << e->complete_at;
        core.running.push_back(std::move(e));
        std::push_heap(core.running.begin(), core.running.end(),
                       CompletesLater);
      }
      if (core.running.empty()) return false;
      if (excluded_.empty()) {
        std::pop_heap(core.running.begin(), core.running.end(), CompletesLater);
        entry = std::move(core.running.back());
        core.running.pop_back();
      } else {
        // The heap's order is total (start_seq breaks ties), so the first
        // eligible op is unique and the choice replays.
        auto best = core.running.end();
        for (auto it = core.running.begin(); it != core.running.end(); ++it) {
          if (std::find(excluded_.begin(), excluded_.end(), (*it)->op->queue) !=
              excluded_.end()) {
            continue;
          }
          if (best == core.running.end() || CompletesLater(*best, *it))
            best = it;
        }
        if (best == core.running.end()) return false;
        entry = std::move(*best);
        core.running.erase(best);
        std::make_heap(core.running.begin(), core.running.end(),
                       CompletesLater);
      }
      core.Unlive(*entry);
      entry->taken = true;
      --core.runnable;
      AddPumpWork(-1);
      ctx.AdvanceTo(entry->complete_at);
      core.CheckLoss();
      lost = ctx.lost();
      // The fault draw of Execute, here under the lock already held (the
      // same draws in the same order). The entry's failure is final: it was
      // set, if at all, before the op was dispatched, and a later wait
      // callback only counts down `pending`.
      if (entry->failure.ok() && lost.ok() && entry->hazard.ok()) {
        fault = ctx.OnRunOp(entry->op->name->c_str(), entry->op->id);
      }
      // An op with no work and nothing to abandon (a barrier, an empty
      // command buffer) ends here, under the lock already held: Execute
      // would only pick one of the statuses at hand, and nothing runs (or
      // traces) in between.
      const SimOp& op = *entry->op;
      if (!op.run && !op.abandon && op.accesses.empty() &&
          entry->failure.ok()) {
        status = !lost.ok()            ? lost
                 : !entry->hazard.ok() ? entry->hazard
                                       : fault;
        lost_after = core.CompleteLocked(*entry, status);
        ended = true;
      }
    }
    if (ended) {
      core.Finish(*entry, status, lost_after);
      return true;
    }
    // Only the pumping thread touches `excluded_`.
    excluded_.push_back(entry->op->queue);
    status = core.Execute(*entry, lost, &fault);
    excluded_.pop_back();
    core.Complete(entry, status);
    return true;
  }

  std::shared_ptr<Core> core_;
  // The thread pumping now (none: the default id).
  std::atomic<std::thread::id> pump_owner_{};
  // The queues of the ops being executed by the pumping thread, outermost
  // first: a nested step (a host call waiting) does not complete their
  // later work, as a worker per queue would not.
  std::vector<int> excluded_;
  uint64_t start_seq_ = 0;  // under the core lock
};

}  // namespace

std::unique_ptr<SimScheduler> CreateThreadedScheduler(
    int queue_count, std::shared_ptr<SimContext> context) {
  return std::make_unique<ThreadedScheduler>(queue_count, std::move(context));
}

std::unique_ptr<SimScheduler> CreateDeterministicScheduler(
    std::shared_ptr<SimContext> context) {
  return std::make_unique<DeterministicScheduler>(std::move(context));
}

}  // namespace hal::sim
