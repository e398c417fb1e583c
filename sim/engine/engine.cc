// The engine's queues, scheduler thread, signals, settle rule, race checker
// and trace (see engine.h). Memory is in engine_memory.cc, work in
// engine_work.cc.
#include "sim/engine/engine.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace hal::sim::engine {

// One in-order queue of ops.
class Queue {
 public:
  uint64_t id = 0;  // creation order: trace names and tie-breaks
  std::deque<Op> ops;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool head_started = false;  // the head op is in flight (virtual time)
  uint64_t head_start = 0;
  uint64_t head_finish = 0;
};

namespace {

// Static TLS (initial-exec), not the dynamic TLS a dlopen'd library gets by
// default. A precaution: ASan runs of the cuda-sim CTS crashed a few times in
// LeakSanitizer's exit-time scan ("Tracer caught signal 11") on a loaded
// machine; dynamic TLS of dlopen'd libraries is a suspect, not a proven cause.
#define HALSIM_TLS __attribute__((tls_model("initial-exec")))
thread_local bool t_in_host_callback HALSIM_TLS = false;
// The engines this thread is inside a HostCall of (nesting; deeper ones
// than kMaxHostCallDepth count again, harmlessly: the settle rule only
// asks whether any call is active).
constexpr int kMaxHostCallDepth = 4;
thread_local const Engine* t_host_call_engines[kMaxHostCallDepth] HALSIM_TLS =
    {};
thread_local int t_host_call_depth HALSIM_TLS = 0;
// Linux thread ids of every engine thread of this library's engines: the
// device, never a host thread (HostThreadRunning).
// Never destroyed: a library's static engine (never destroyed either) keeps
// its thread running through exit, after the library's static destructors
// ran (TSan reported the vector's destructor racing the thread's push_back).
std::mutex& EngineThreadsMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}
std::vector<int>& EngineThreads() {
  static auto* threads = new std::vector<int>();
  return *threads;
}

int ThisThreadId() { return static_cast<int>(::syscall(SYS_gettid)); }

// A thread's scheduler state from /proc/self/task/<tid>/stat: 'R' running
// or runnable, 'S'/'D' blocked, ...; 0 when the thread is gone.
char ThreadState(int tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  // "tid (comm) S ...": comm may hold spaces and parentheses.
  const char* close = std::strrchr(buf, ')');
  if (!close || close[1] != ' ') return 0;
  return close[2];
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// After kMaxSettleNs of host activity the engine steps anyway (so a host
// thread that never blocks cannot stop the device). Generous, because a
// thread that reacts to a step may wait that long for a CPU: on 2 cores
// shared with parallel builds, 20 ms was not enough (level_zero-sim.replay
// failed once in three runs).
constexpr int64_t kMaxSettleNs = 250'000'000;

// Runs host code on the engine thread with InHostCallback() true.
void RunAsHostCallback(const std::function<void()>& fn) {
  t_in_host_callback = true;
  fn();
  t_in_host_callback = false;
}

}  // namespace

bool Holds(uint64_t value, Cond cond, uint64_t operand) {
  switch (cond) {
    case Cond::kGe:
      return value >= operand;
    case Cond::kEq:
      return value == operand;
    case Cond::kNe:
      return value != operand;
    case Cond::kLt:
      return value < operand;
  }
  return false;
}

bool Holds(const Wait& w, uint64_t value) {
  const uint64_t v = value & w.mask;
  if (w.is_signed && (w.cond == Cond::kGe || w.cond == Cond::kLt)) {
    const bool less = static_cast<int64_t>(v) < static_cast<int64_t>(w.value);
    return w.cond == Cond::kLt ? less : !less;
  }
  return Holds(v, w.cond, w.value);
}

Engine::Engine(Options options)
    : options_(options), settle_ns_(options.settle_ns) {}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  for (Queue* queue : queues_) delete queue;
  for (auto& [base, a] : allocations_) {
    if (a.kind != MemoryKind::kRegistered) {
      std::free(reinterpret_cast<void*>(base));
    }
  }
  for (auto& [base, freed] : quarantine_) {
    std::free(reinterpret_cast<void*>(base));
  }
  if (trace_file_) std::fclose(trace_file_);
}

// --- Control. ---

Error Engine::ResetSchedule(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Queue* queue : queues_) {
    if (!queue->ops.empty()) return Error::kBusy;
  }
  seed_ = seed;
  schedule_reset_ = true;
  schedule_ = SimRandom(seed);
  host_random_ = SimRandom(seed ^ kHostChoiceSalt);
  ResetFaultRandomLocked();
  allocs_ = 0;
  ops_run_ = 0;
  now_ns_ = 0;
  trace_ = TraceHash();
  trace_queue_base_ = next_queue_id_;
  return Error::kOk;
}

bool Engine::schedule_was_reset() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return schedule_reset_;
}

bool Engine::SetFaults(const FaultPlan& plan, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (plan.lose_device_at && !on_device_lost_) {
    if (error) *error = "lose_device_at is not simulated by this library";
    return false;
  }
  faults_ = plan;
  allocs_ = 0;
  ops_run_ = 0;
  ResetFaultRandomLocked();
  return true;
}

void Engine::SetDeviceLossHandler(std::function<void()> on_lost) {
  std::lock_guard<std::mutex> lock(mutex_);
  on_device_lost_ = std::move(on_lost);
}

bool Engine::device_lost() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return device_lost_;
}

void Engine::SetSettleNs(int64_t ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  settle_ns_ = ns;
}

void Engine::SetAbortOnRace(bool abort) {
  std::lock_guard<std::mutex> lock(mutex_);
  abort_on_race_ = abort;
}

bool Engine::SetTraceFile(const char* path) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (trace_file_) std::fclose(trace_file_);
  trace_file_ = std::fopen(path, "w");
  if (!trace_file_) return false;
  std::fprintf(trace_file_, "# %s seed %llu\n", options_.log_prefix,
               (unsigned long long)seed_);
  return true;
}

void Engine::PauseHostFunctions(bool paused) {
  std::lock_guard<std::mutex> lock(mutex_);
  host_functions_paused_ = paused;
  cv_.notify_all();
}

uint64_t Engine::seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}
uint64_t Engine::trace_hash() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_.value();
}
uint64_t Engine::trace_length() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_.lines();
}
uint64_t Engine::virtual_time_ns() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return now_ns_;
}
Counters Engine::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

void Engine::ResetFaultRandomLocked() {
  fault_random_ = SimRandom(seed_ ^ kFaultStreamSalt);
}

bool Engine::AllocFaultLocked() {
  ++allocs_;
  return (faults_.fail_alloc != 0 && allocs_ == faults_.fail_alloc) ||
         fault_random_.Chance(faults_.alloc_fail_ppm);
}

bool Engine::OpFaultLocked() {
  ++ops_run_;
  return (faults_.fail_op != 0 && ops_run_ == faults_.fail_op) ||
         fault_random_.Chance(faults_.op_fail_ppm);
}

uint64_t Engine::DrawHostChoice(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  return n ? host_random_.Below(n) : 0;
}

uint64_t Engine::DrawLateSignalNs() {
  std::lock_guard<std::mutex> lock(mutex_);
  return fault_random_.Chance(faults_.late_signal_ppm)
             ? faults_.late_signal_us * 1000
             : 0;
}

// --- Host calls. ---

Engine::HostCall::HostCall(Engine& engine) : engine_(&engine) {
  const int known = std::min(t_host_call_depth, kMaxHostCallDepth);
  for (int i = 0; i < known; ++i) {
    if (t_host_call_engines[i] == &engine) {
      engine_ = nullptr;
      return;
    }
  }
  if (t_host_call_depth < kMaxHostCallDepth) {
    t_host_call_engines[t_host_call_depth] = &engine;
  }
  ++t_host_call_depth;
  engine.active_calls_.fetch_add(1);
  engine.api_calls_.fetch_add(1, std::memory_order_relaxed);
}

Engine::HostCall::~HostCall() {
  if (!engine_) return;
  --t_host_call_depth;
  engine_->last_activity_ns_.store(SteadyNs());
  engine_->active_calls_.fetch_sub(1);
}

bool Engine::InHostCallback() { return t_in_host_callback; }

Work Engine::AsHostCallback(std::function<void()> fn) {
  return [fn = std::move(fn)] { RunAsHostCallback(fn); };
}

void Engine::CountHostCallbackViolation() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.host_callback_violations;
}

void Engine::CountUnsignalledWait() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.unsignalled_waits;
}

void Engine::CountGraphRun() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.graphs_run;
}

void Engine::ReportRace(const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.races;
  std::fprintf(stderr, "%s: race (seed %llu): %s\n", options_.log_prefix,
               (unsigned long long)seed_, what.c_str());
  if (abort_on_race_) std::abort();
}

// Inside a HostCall, while the thread blocks until the device gets
// somewhere: the engine may step meanwhile.
void Engine::BlockLocked(std::unique_lock<std::mutex>& lock,
                         const std::function<bool()>& done) {
  HostCall call(*this);  // counts the thread if the caller did not
  active_calls_.fetch_sub(1);
  ++sync_waiters_;
  blocked_.push_back(&done);
  cv_.wait(lock, done);
  blocked_.erase(std::find(blocked_.begin(), blocked_.end(), &done));
  --sync_waiters_;
  active_calls_.fetch_add(1);
}

// --- Queues. ---

Queue* Engine::CreateQueue() {
  auto* queue = new Queue();
  std::lock_guard<std::mutex> lock(mutex_);
  queue->id = next_queue_id_++;
  queues_.push_back(queue);
  StartEngineLocked();
  return queue;
}

void Engine::DestroyQueue(Queue* queue) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    BlockLocked(lock, [&] { return queue->ops.empty(); });
    queues_.erase(std::find(queues_.begin(), queues_.end(), queue));
  }
  delete queue;
}

Error Engine::Enqueue(Queue* queue, Op op) {
  if (!queue) return Error::kInvalidValue;
  std::lock_guard<std::mutex> lock(mutex_);
  ++queue->enqueued;
  op.seq = ++ops_enqueued_;
  queue->ops.push_back(std::move(op));
  cv_.notify_all();
  return Error::kOk;
}

void Engine::Synchronize(Queue* queue) {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t target = queue->enqueued;
  BlockLocked(lock, [&] { return queue->completed >= target; });
}

Error Engine::EnqueueHostFunction(Queue* queue, std::function<void()> fn,
                                  std::vector<SignalUpdate> signals) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.host_functions_launched;
  }
  Op op;
  op.name = "host_function";
  op.host = true;
  op.host_function = true;
  op.signals = std::move(signals);
  op.run = [this, fn = std::move(fn)] {
    RunAsHostCallback(fn);
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.host_functions_run;
  };
  return Enqueue(queue, std::move(op));
}

// --- Signals. ---

SignalPtr Engine::CreateSignal(uint64_t initial) {
  return std::make_shared<Signal>(initial);
}

uint64_t Engine::SignalValue(const SignalPtr& signal, Error* status) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (status) *status = signal->status_;
  return signal->value_;
}

void Engine::ApplySignalLocked(const SignalUpdate& u) {
  Signal& s = *u.signal;
  switch (u.op) {
    case SignalOp::kSet:
      s.value_ = u.value;
      break;
    case SignalOp::kMax:
      s.value_ = std::max(s.value_, u.value);
      break;
    case SignalOp::kAdd:
      s.value_ += u.value;
      break;
    case SignalOp::kSub:
      s.value_ -= u.value;
      break;
  }
  if (u.status_from) s.status_ = u.status_from->error();
}

void Engine::UpdateSignal(const SignalPtr& signal, SignalOp op,
                          uint64_t value) {
  std::lock_guard<std::mutex> lock(mutex_);
  ApplySignalLocked({signal, op, value, nullptr});
  cv_.notify_all();
}

Error Engine::WaitSignal(const SignalPtr& signal, Cond cond, uint64_t value,
                         bool as_host_function) {
  Wait wait;
  wait.signal = signal;
  wait.cond = cond;
  wait.value = value;
  return WaitSignal(wait, as_host_function);
}

Error Engine::WaitSignal(const Wait& wait, bool as_host_function) {
  std::unique_lock<std::mutex> lock(mutex_);
  BlockLocked(lock, [&] {
    return Holds(wait, wait.signal->value_) &&
           !(as_host_function && host_functions_paused_);
  });
  return wait.signal->status_;
}

Error Engine::WaitSignalUnless(const Wait& wait, bool as_host_function,
                               const std::function<bool()>& give_up,
                               bool* gave_up) {
  std::unique_lock<std::mutex> lock(mutex_);
  bool reached = false;
  BlockLocked(lock, [&] {
    reached = Holds(wait, wait.signal->value_) &&
              !(as_host_function && host_functions_paused_);
    return reached || give_up();
  });
  *gave_up = !reached;
  return wait.signal->status_;
}

uint64_t Engine::OldestPendingOpLocked() const {
  uint64_t oldest = ops_enqueued_ + 1;
  for (const Queue* queue : queues_) {
    if (!queue->ops.empty()) oldest = std::min(oldest, queue->ops.front().seq);
  }
  return oldest;
}

// --- The engine thread. ---

void Engine::StartEngineLocked() {
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] {
    const int tid = ThisThreadId();
    {
      std::lock_guard<std::mutex> guard(EngineThreadsMutex());
      EngineThreads().push_back(tid);
    }
    EngineMain();
    std::lock_guard<std::mutex> guard(EngineThreadsMutex());
    EngineThreads().erase(
        std::find(EngineThreads().begin(), EngineThreads().end(), tid));
  });
}

bool Engine::WokenWaiterLocked() const {
  // A waiter whose condition holds was woken by a step but has not taken
  // the lock back yet; until it does it is neither inside a call nor
  // visibly running (it may be waiting for this very lock).
  for (const std::function<bool()>* done : blocked_) {
    if ((*done)()) return true;
  }
  return false;
}

bool Engine::HostThreadRunning() {
  // A thread of the process that runs outside any call may be reacting to
  // the device (a driver's host-function thread running the function
  // between its wait and its signal, or a thread it woke): let it finish or
  // block. Every thread counts but the engines' own, even one that never
  // called the library yet.
  DIR* dir = ::opendir("/proc/self/task");
  if (!dir) return false;  // no procfs: the settle window alone
  std::vector<int> engines;
  {
    std::lock_guard<std::mutex> guard(EngineThreadsMutex());
    engines = EngineThreads();
  }
  bool busy = false;
  while (dirent* entry = ::readdir(dir)) {
    const int tid = std::atoi(entry->d_name);
    if (tid <= 0 ||
        std::find(engines.begin(), engines.end(), tid) != engines.end()) {
      continue;
    }
    const char state = ThreadState(tid);
    if (state == 'R' || state == 'D') {  // running, or in a short kernel wait
      busy = true;
      break;
    }
  }
  ::closedir(dir);
  return busy;
}

// Returns once the host has been quiet for the settle window and no host
// thread is still reacting to the last step, or after kMaxSettleNs of
// activity (counted: the trace may not replay).
//
// The thread scans run with the engine lock released: a host thread
// blocked on that lock (a control call such as halsim_trace_hash, or an
// engine read just outside a call's guard) sleeps in the kernel like a
// quiet thread, and was read as quiet while the scan held the lock; the
// engine then stepped before the call it was about to make (a Level Zero
// CTS trace differed in about 1 run of 20, teardown's submissions landing
// after a step instead of before it). Released, the lock is free, so such
// a thread takes it and runs.
void Engine::SettleLocked(std::unique_lock<std::mutex>& lock) {
  if (settle_ns_ <= 0) return;
  const int64_t start = SteadyNs();
  for (;;) {
    const int64_t now = SteadyNs();
    const int64_t quiet = now - last_activity_ns_.load();
    // Polls a busy host thread's state every 50 us at most.
    int64_t floor_ns = 20'000;
    if (active_calls_.load() == 0 && quiet >= settle_ns_ &&
        !WokenWaiterLocked()) {
      // One scan is not a snapshot: a thread read as blocked may be woken
      // by one read later that then blocks itself. So a second scan, and
      // then the host must still be out of calls and quiet (a woken thread
      // that already reacted with a call moved last_activity_ns_).
      const int64_t before = last_activity_ns_.load();
      lock.unlock();
      const bool running = HostThreadRunning() || HostThreadRunning();
      lock.lock();
      if (stopping_) return;
      if (!running && !WokenWaiterLocked() && active_calls_.load() == 0 &&
          last_activity_ns_.load() == before) {
        return;
      }
      floor_ns = 50'000;
    }
    if (now - start > kMaxSettleNs) {
      ++counters_.unsettled_steps;
      return;
    }
    int64_t wait = settle_ns_ - quiet;
    cv_.wait_for(lock,
                 std::chrono::nanoseconds(std::max<int64_t>(wait, floor_ns)));
    if (stopping_) return;
  }
}

void Engine::TraceLocked(const char* text) {
  trace_.AddLine(text);
  if (trace_file_) {
    std::fprintf(trace_file_, "%s\n", text);
    std::fflush(trace_file_);
  }
}

bool Engine::ReadyLocked(const Op& op) const {
  if (op.host_function && host_functions_paused_) return false;
  if (op.retire_if_failed && op.retire_if_failed->failed()) return true;
  if (op.wait_any && !op.waits.empty()) {
    for (const Wait& w : op.waits) {
      if (Holds(w, w.signal->value_)) return true;
    }
    return false;
  }
  for (const Wait& w : op.waits) {
    if (!Holds(w, w.signal->value_)) return false;
  }
  return true;
}

namespace {

// An op's write ranges (`writes`) or read ranges: `write` / `read`, then
// `more_writes` / `more_reads`. Indexed rather than copied out: the race
// check runs for every ranged op against every running queue.
size_t RangeCount(const Op& op, bool writes) {
  return 1 + (writes ? op.more_writes : op.more_reads).size();
}
const Range& RangeAt(const Op& op, bool writes, size_t i) {
  if (i == 0) return writes ? op.write : op.read;
  return (writes ? op.more_writes : op.more_reads)[i - 1];
}

}  // namespace

const char* FindConflict(const Op& a, const Op& b, Range* in_a, Range* in_b) {
  static const struct {
    bool a_writes, b_writes;
    const char* what;
  } kKinds[] = {{true, true, "both write"},
                {true, false, "the first writes what the second reads"},
                {false, true, "the second writes what the first reads"}};
  for (const auto& kind : kKinds) {
    for (size_t i = 0; i < RangeCount(a, kind.a_writes); ++i) {
      const Range& x = RangeAt(a, kind.a_writes, i);
      for (size_t j = 0; j < RangeCount(b, kind.b_writes); ++j) {
        const Range& y = RangeAt(b, kind.b_writes, j);
        if (x.Overlaps(y)) {
          *in_a = x;
          *in_b = y;
          return kind.what;
        }
      }
    }
  }
  return nullptr;
}

// `queue`'s head just started; compares it with the ops in flight on other
// queues.
void Engine::CheckRacesLocked(Queue* queue) {
  const Op& op = queue->ops.front();
  if (op.write.empty() && op.read.empty() && op.more_writes.empty() &&
      op.more_reads.empty()) {
    return;
  }
  for (Queue* other : queues_) {
    if (other == queue || !other->head_started ||
        other->head_finish <= queue->head_start) {
      continue;
    }
    const Op& o = other->ops.front();
    Range mine, theirs;
    const char* what = FindConflict(op, o, &mine, &theirs);
    if (!what) continue;
    ++counters_.races;
    std::fprintf(stderr,
                 "%s: race (seed %llu, virtual t=%llu ns): %s on stream %s "
                 "[0x%llx, 0x%llx) and %s on stream %s [0x%llx, 0x%llx) "
                 "run at the same time and %s; no event orders them\n",
                 options_.log_prefix, (unsigned long long)seed_,
                 (unsigned long long)queue->head_start, op.name,
                 StreamName(queue).text + 1, (unsigned long long)mine.begin,
                 (unsigned long long)mine.end, o.name,
                 StreamName(other).text + 1, (unsigned long long)theirs.begin,
                 (unsigned long long)theirs.end, what);
    if (abort_on_race_) std::abort();
  }
}

// Starts every head op that may start (in queue creation order, so the
// duration draws follow the seed) and returns the queue whose op finishes
// first, or null when nothing can run.
Queue* Engine::StartReadyHeadsLocked() {
  Queue* next = nullptr;
  for (Queue* queue : queues_) {
    if (queue->ops.empty()) continue;
    if (!queue->head_started) {
      Op& op = queue->ops.front();
      if (!ReadyLocked(op)) continue;
      queue->head_started = true;
      queue->head_start = now_ns_;
      uint64_t duration = 0;
      if (!op.zero_time) {
        duration = DrawOpDuration(schedule_);
        if (fault_random_.Chance(faults_.slow_ppm)) duration *= 100;
      }
      queue->head_finish = now_ns_ + duration + op.extra_ns;
      CheckRacesLocked(queue);
    }
    if (!next || queue->head_finish < next->head_finish) next = queue;
  }
  return next;
}

void Engine::LoseDeviceIfDueLocked(std::unique_lock<std::mutex>& lock) {
  if (device_lost_ || !on_device_lost_ || faults_.lose_device_at == 0 ||
      now_ns_ < faults_.lose_device_at) {
    return;
  }
  device_lost_ = true;
  char line[96];
  std::snprintf(line, sizeof(line), "t=%llu device_lost",
                (unsigned long long)now_ns_);
  TraceLocked(line);
  std::fprintf(stderr,
               "%s: device lost (seed %llu, virtual t=%llu ns, fault plan "
               "lose_device_at=%llu)\n",
               options_.log_prefix, (unsigned long long)seed_,
               (unsigned long long)now_ns_,
               (unsigned long long)faults_.lose_device_at);
  std::function<void()> on_lost = on_device_lost_;
  lock.unlock();
  on_lost();
  lock.lock();
}

void Engine::EngineMain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    bool any = false;
    for (Queue* queue : queues_) any = any || !queue->ops.empty();
    if (!any) {
      cv_.wait(lock);
      continue;
    }
    SettleLocked(lock);
    if (stopping_) break;
    Queue* next = StartReadyHeadsLocked();
    if (!next) {
      cv_.wait(lock);  // every head waits (on a signal, a paused host fn)
      continue;
    }
    now_ns_ = next->head_finish;
    LoseDeviceIfDueLocked(lock);
    Op& op = next->ops.front();
    char line[160];
    std::snprintf(line, sizeof(line), "t=%llu %s %s %llu",
                  (unsigned long long)now_ns_, StreamName(next).text, op.name,
                  (unsigned long long)op.bytes);
    TraceLocked(line);
    // The op stays at the head (and so blocks its queue) while it runs.
    Work run = std::move(op.run);
    const bool host = op.host;
    lock.unlock();
    if (run) run();
    run = nullptr;  // captured state goes without the lock
    lock.lock();
    for (const SignalUpdate& u : next->ops.front().signals) {
      ApplySignalLocked(u);
    }
    next->ops.pop_front();
    next->head_started = false;
    ++next->completed;
    ++counters_.steps;
    TrimQuarantineLocked();
    // Let the host react before the next step: to a host function (which
    // wakes host threads), or to a completion a blocked wait may have been
    // waiting for.
    if (host || sync_waiters_ > 0) last_activity_ns_.store(SteadyNs());
    cv_.notify_all();
  }
}

Engine::StreamNameBuffer Engine::StreamName(const Queue* queue) const {
  StreamNameBuffer name;
  if (queue->id >= trace_queue_base_) {
    std::snprintf(name.text, sizeof(name.text), "s%llu",
                  (unsigned long long)(queue->id - trace_queue_base_));
  } else {
    std::snprintf(name.text, sizeof(name.text), "s-%llu",
                  (unsigned long long)(trace_queue_base_ - queue->id));
  }
  return name;
}

}  // namespace hal::sim::engine
