// The simulated GPU under every simulated vendor library (libhalsim_cuda,
// _hip, _ze, _hsa and _metal): a vendor-neutral device as an object. Several
// engines may live in one process (unit tests); a vendor library's edge
// (sim/skin/skin_library.h) owns one and never destroys it.
//
// What it models, and what every vendor shares:
//   * Queues: in-order lists of ops that one engine thread (the simulated
//     GPU) runs one at a time on a virtual clock. When an op reaches the
//     head of its queue and its waits hold, it starts at the current virtual
//     time with a seeded duration; the started op with the earliest finish
//     completes next, and its effects (memory, signals, host function)
//     happen then. Which queue's work lands first is the seed's choice.
//   * Signals: 64-bit values with wait conditions (>=, ==, !=, <), the one
//     synchronisation primitive. A binary event (CUDA, HIP, Level Zero) is a
//     view: a record raises the signal to an epoch, a wait waits >= epoch.
//     HSA signals and Metal shared events map on directly.
//   * Domains: sticky error scopes (a CUDA context, a HIP device): the first
//     failed op fails the domain, and later work in it is skipped.
//   * Memory (engine_memory.cc): device, managed, host, registered and pool
//     allocations, filled with 0xCD, range-checked; freed blocks stay in a
//     quarantine so a late use is reported instead of corrupting the heap.
//   * Work (engine_work.cc): copies, fills and native kernels over a grid
//     with per-binding bounds, usable as queue ops or graph nodes.
//   * Graphs (engine_graph.h): a DAG instantiated to one topological order.
//   * The race checker: an op that runs, in virtual time, while an op of
//     another queue touches an overlapping range (one writing) is a race.
//   * Faults (sim/core/fault_plan.h; device loss for a skin that handles
//     it), the trace and its hash, counters.
//
// Determinism: the engine takes a step only once the host has been quiet:
// no thread inside a HostCall, none left one for the settle window, no
// thread that a step woke still on its way out of a blocking wait, and no
// other thread of the process running (Linux: no /proc/self/task state 'R'
// or 'D' but the engines' own threads, read twice with the engine lock
// released, so that a thread blocked on that lock is not taken for a quiet
// one). From such a state only a step (or a timer) can wake the host, so
// the host's reaction to a step (a driver's own host-function thread
// included) is submitted before the device moves on, however long it takes
// (a thread waiting for a CPU reads as running), up to 250 ms (then it
// steps anyway and counts an unsettled step). The window is a floor, 1 us by
// default (HALSIM_SETTLE_US); without /proc it is the only rule, so set it
// longer there. Same seed + same host calls = same trace.
//
// Threading: every public method may be called from any thread. Work and
// host functions run on the engine thread without the engine's lock; they
// may call the engine's non-blocking methods but never a blocking one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/core/fault_plan.h"
#include "sim/core/range.h"
#include "sim/core/sim_kernel_abi.h"
#include "sim/core/sim_random.h"
#include "sim/core/trace_hash.h"

namespace hal::sim::engine {

// What went wrong, in the engine's words; each skin maps it to its vendor's
// codes in one place.
enum class Error : int {
  kOk = 0,
  kInvalidValue,
  kOutOfMemory,
  kIllegalAddress,  // an op touched memory outside or freed (sticky)
  kLaunchFailed,    // an injected op fault (sticky)
  kAlreadyRegistered,
  kNotRegistered,
  kBusy,  // ResetSchedule while a queue has work
};

// A sticky error scope. The first failure wins until Clear().
class Domain {
 public:
  Error error() const { return error_.load(std::memory_order_acquire); }
  bool failed() const { return error() != Error::kOk; }
  void Fail(Error e) {
    Error expected = Error::kOk;
    error_.compare_exchange_strong(expected, e, std::memory_order_acq_rel);
  }
  void Clear() { error_.store(Error::kOk, std::memory_order_release); }

 private:
  std::atomic<Error> error_{Error::kOk};
};

enum class Cond { kGe, kEq, kNe, kLt };
enum class SignalOp { kSet, kMax, kAdd, kSub };

// A 64-bit signal. Its value and status change under the engine's lock
// (through the engine); queued ops hold it by SignalPtr, so its owner may
// drop it while they are pending.
class Signal {
 public:
  explicit Signal(uint64_t initial = 0) : value_(initial) {}

 private:
  friend class Engine;
  uint64_t value_;
  // The domain's error when an op last updated it (Error::kOk otherwise):
  // what a CUDA event query returns once it is reached.
  Error status_ = Error::kOk;
};
using SignalPtr = std::shared_ptr<Signal>;

bool Holds(uint64_t value, Cond cond, uint64_t operand);

struct Wait {
  SignalPtr signal;
  Cond cond = Cond::kGe;
  uint64_t value = 0;
  // Compares (signal value & mask) with `value` (an HSA BARRIER_VALUE
  // packet's mask); as int64_t when `is_signed` (HSA signal values are
  // signed, so its LT and GTE are signed comparisons).
  uint64_t mask = ~uint64_t{0};
  bool is_signed = false;
};
// Whether `w` holds for the signal value `value`.
bool Holds(const Wait& w, uint64_t value);

// Applied at completion, after the op's work: `op` with `value`; the
// signal's status becomes `status_from`'s error (when set).
struct SignalUpdate {
  SignalPtr signal;
  SignalOp op = SignalOp::kSet;
  uint64_t value = 0;
  const Domain* status_from = nullptr;
};

// An op's effect, run at completion on the engine thread without the lock.
using Work = std::function<void()>;

struct Op {
  const char* name = "op";  // in the trace
  std::vector<Wait> waits;  // all must hold before the op starts
  bool wait_any = false;    // one of `waits` suffices (none: no wait)
  std::vector<SignalUpdate> signals;
  Work run;                    // empty: no effect (barrier-like)
  bool zero_time = false;      // completes as soon as it starts (waits)
  bool host = false;           // runs host code: the host reacts to it
  bool host_function = false;  // held while host functions are paused
  uint64_t extra_ns = 0;       // added to the drawn duration
  uint64_t bytes = 0;          // for the trace
  Range write, read;           // for the race checker
  // Further ranges for the race checker, each checked as `write` / `read`
  // are (a dispatch's bindings).
  std::vector<Range> more_writes, more_reads;
  // Once this domain has failed (a lost device), the op waits for nothing:
  // it retires in order, its work skipped (work checks its domain), its
  // signals updated, as a lost device's queued work ends.
  const Domain* retire_if_failed = nullptr;
  uint64_t seq = 0;  // enqueue order over all queues (Enqueue)
};

// The first conflict between `a` and `b` (overlapping ranges, one writing;
// empty ranges overlap nothing): what it is, with the two ranges; null when
// none.
const char* FindConflict(const Op& a, const Op& b, Range* in_a, Range* in_b);

enum class MemoryKind { kDevice, kManaged, kHost, kRegistered, kPool };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  MemoryKind kind = MemoryKind::kDevice;
};

// A native (sim-format) kernel, found by export name (engine_kernels.h).
struct Kernel {
  std::string name;
  hal_sim_kernel_fn fn = nullptr;
  const hal_sim_kernel_info* info = nullptr;
};

struct Counters {
  uint64_t host_functions_launched = 0;
  uint64_t host_functions_run = 0;
  uint64_t host_callback_violations = 0;  // API calls from host functions
  uint64_t work_done = 0;                 // copies, fills and kernels that ran
  uint64_t kernels_run = 0;
  uint64_t graphs_run = 0;
  uint64_t unsignalled_waits = 0;  // waits on events never recorded
  uint64_t races = 0;
  uint64_t steps = 0;            // ops completed
  uint64_t unsettled_steps = 0;  // steps taken while the host was not quiet
};

// A simulated device's UUID, stable per ordinal: the vendor's 4-byte tag
// (e.g. "HIPs"), a fixed middle (version 4, variant bits), then the ordinal
// big-endian.
inline void StableDeviceUuid(const char tag[4], uint32_t ordinal,
                             unsigned char out[16]) {
  static const unsigned char kMiddle[8] = {0x00, 0x00, 0x40, 0x00,
                                           0x80, 0x00, 0x00, 0x00};
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(tag[i]);
  for (int i = 0; i < 8; ++i) out[4 + i] = kMiddle[i];
  for (int i = 0; i < 4; ++i) out[12 + i] = (ordinal >> (24 - 8 * i)) & 0xff;
}

struct Options {
  const char* log_prefix = "halsim";  // stderr lines start "<prefix>: "
  size_t device_memory_bytes = size_t{16} << 30;
  size_t quarantine_bytes = size_t{64} << 20;
  // The quiet window before a step. 1 us: the thread scans decide (see
  // Determinism above); a longer window only matters without /proc.
  int64_t settle_ns = 1000;  // 0 runs free (not deterministic)
};

class Queue;

class Engine {
 public:
  explicit Engine(Options options = {});
  ~Engine();  // stops the engine thread; queues must be idle
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // --- Configuration and control (the halsim_control.h ABI). ---
  // Restarts the schedule as if seeded with `seed`: the random streams, the
  // virtual clock, the trace hash and the fault counters (the plan stays);
  // queues created afterwards are numbered from 0 in the trace. kBusy (and
  // nothing changes) while any queue has work.
  Error ResetSchedule(uint64_t seed);
  bool schedule_was_reset() const;
  // Replaces the fault plan, restarts its counters and stream. False for a
  // plan that names a fault the engine does not model: lose_device_at
  // without a device-loss handler.
  bool SetFaults(const FaultPlan& plan, std::string* error = nullptr);
  // Models the plan's lose_device_at for a skin: the first step whose
  // virtual time reaches it loses the device, once per engine (a lost
  // device stays lost; neither SetFaults nor ResetSchedule brings it back).
  // `on_lost` then runs on the engine thread without the lock, before that
  // step's work, and may call the engine's non-blocking methods; the skin
  // makes its queues fail. Set once, before any SetFaults that uses it.
  void SetDeviceLossHandler(std::function<void()> on_lost);
  bool device_lost() const;
  void SetSettleNs(int64_t ns);
  void SetAbortOnRace(bool abort);
  // Writes each trace line to `path` after a header; false if unwritable.
  bool SetTraceFile(const char* path);
  void PauseHostFunctions(bool paused);
  uint64_t seed() const;
  uint64_t trace_hash() const;
  uint64_t trace_length() const;
  // Entry points the host called (outermost HostCalls; host callbacks'
  // calls on the engine thread do not count).
  uint64_t api_calls() const { return api_calls_.load(); }
  uint64_t virtual_time_ns() const;
  Counters counters() const;
  const char* log_prefix() const { return options_.log_prefix; }

  // --- Host calls (the settle rule). ---
  // Marks the calling thread inside an API call for the engine's settle
  // rule; nests (inner guards on the same engine do nothing).
  class HostCall {
   public:
    explicit HostCall(Engine& engine);
    ~HostCall();
    HostCall(const HostCall&) = delete;
    HostCall& operator=(const HostCall&) = delete;

   private:
    Engine* engine_;  // null: nested
  };
  // True on the engine thread while a host function or host node runs.
  static bool InHostCallback();
  // `fn` as work that runs with InHostCallback() true (graph host nodes).
  static Work AsHostCallback(std::function<void()> fn);
  void CountHostCallbackViolation();
  void CountUnsignalledWait();
  void CountGraphRun();
  // A race the engine's own queue check cannot see (two nodes of one graph
  // that no edge orders): counted as a race, printed after "<prefix>: race
  // (seed S): ", and an abort under SetAbortOnRace(true).
  void ReportRace(const std::string& what);

  // --- Queues. ---
  Queue* CreateQueue();
  // Waits for the queue's work, then destroys it.
  void DestroyQueue(Queue* queue);
  Error Enqueue(Queue* queue, Op op);
  // Blocks until the work enqueued on `queue` before the call completed.
  void Synchronize(Queue* queue);
  // A host function: runs on the engine thread as an op of `queue`, held
  // while host functions are paused; InHostCallback() inside. `signals` are
  // applied when it returned, as the op leaves the queue (so a host thread
  // that sees them knows the queue is past it).
  Error EnqueueHostFunction(Queue* queue, std::function<void()> fn,
                            std::vector<SignalUpdate> signals = {});

  // --- Signals. ---
  SignalPtr CreateSignal(uint64_t initial = 0);
  uint64_t SignalValue(const SignalPtr& signal, Error* status = nullptr) const;
  // A host-side update (wakes waiters and ops).
  void UpdateSignal(const SignalPtr& signal, SignalOp op, uint64_t value);
  // Blocks until `cond` holds for the signal; returns its status. With
  // `as_host_function`, the wait stands in for a host function (a driver's
  // host thread waiting for the device to reach the point where a function
  // should run, where the vendor has no host functions): it is also held
  // while host functions are paused.
  Error WaitSignal(const SignalPtr& signal, Cond cond, uint64_t value,
                   bool as_host_function = false);
  // As above, for a wait with a mask or a signed comparison.
  Error WaitSignal(const Wait& wait, bool as_host_function = false);
  // As above, but also returns (with `*gave_up` true and the signal's
  // status) once `give_up` holds, which is evaluated under the engine's lock
  // after every step: a skin's wait that a lost device will never satisfy
  // reports the loss instead of blocking forever.
  Error WaitSignalUnless(const Wait& wait, bool as_host_function,
                         const std::function<bool()>& give_up, bool* gave_up);
  // The delay of a late signal the fault plan draws now (0: on time).
  uint64_t DrawLateSignalNs();
  // A seeded choice in [0, n) for a skin's host-side freedom (e.g. the order
  // of a Level Zero list's unordered commands), from its own stream:
  // restarted by ResetSchedule, drawn in host-call order, so the same seed
  // and host calls make the same choices.
  uint64_t DrawHostChoice(uint64_t n);

  // --- Memory (engine_memory.cc). ---
  // `size` > 0 rounded up to `alignment`, filled with 0xCD. kOutOfMemory
  // for a planned fault or a size the device (host) cannot hold.
  Error Allocate(size_t size, MemoryKind kind, size_t alignment, void** out);
  // Frees the allocation at `base` into the quarantine. kInvalidValue when
  // there is none, or when `host` does not match its kind (host memory vs
  // device-side memory); registered memory is unregistered, not freed.
  Error Free(uintptr_t base, bool host);
  Error Register(uintptr_t p, size_t n);
  Error Unregister(uintptr_t p);
  // The allocation holding `p` (or starting at it when empty).
  bool FindAllocation(uintptr_t p, Allocation* out) const;
  // The allocation starting exactly at `base`.
  bool AllocationAt(uintptr_t base, Allocation* out) const;
  // What a user kernel's dispatch declares to the race checker for its
  // binding pointers: the simulator learns only pointers (no sizes, no
  // read-only flag), and a driver's buffers are suballocations of large
  // blocks, so "to the end of the allocation" would report races that are
  // not there. Each pointer that lies in an allocation declares its first
  // 4 bytes (one element, clipped to the allocation) as written: unordered
  // kernels (or a kernel and a copy or fill) that use one binding address
  // are reported, races on other bytes only are missed, and two unordered
  // kernels that only read one binding address are reported too.
  std::vector<Range> KernelBindingRanges(
      const std::vector<uintptr_t>& pointers) const;

  // --- Work (engine_work.cc): the effect of a queue op or graph node. ---
  // Each counts toward the op fault, checks its ranges (past an allocation,
  // use after free) and is skipped once `domain` has failed; a failure
  // fails the domain.
  Work CopyWork(Domain* domain, uintptr_t dst, uintptr_t src, size_t n);
  // `count` elements of `pattern_bytes` (1, 2 or 4).
  Work FillWork(Domain* domain, uintptr_t dst, uint32_t pattern,
                int pattern_bytes, size_t count);
  // Runs every workgroup of `grid`; each pointer may reach the end of the
  // allocation it points into (an access past it is kIllegalAddress).
  Work KernelWork(Domain* domain, const Kernel* kernel, const uint32_t grid[3],
                  std::vector<uintptr_t> pointers,
                  std::vector<uint32_t> constants);
  // Frees `base` (device-side) when it runs; races with unordered uses.
  Error EnqueueFree(Queue* queue, uintptr_t base);

 private:
  struct Freed {
    size_t size;
    uint64_t freed_after;  // ops_enqueued_ when it was freed
  };

  void EngineMain();
  void StartEngineLocked();
  void SettleLocked(std::unique_lock<std::mutex>& lock);
  // Whether a host thread may still react to the last step: a blocked
  // waiter whose condition holds but has not resumed (WokenWaiterLocked),
  // or a thread of the process (not an engine's) running outside any call
  // (HostThreadRunning: called without the engine lock, so that a thread
  // blocked on the lock itself is not read as quiet).
  bool WokenWaiterLocked() const;
  static bool HostThreadRunning();
  Queue* StartReadyHeadsLocked();
  bool ReadyLocked(const Op& op) const;
  void CheckRacesLocked(Queue* queue);
  // Loses the device (runs the handler, unlocked) when the plan's
  // lose_device_at is due at now_ns_.
  void LoseDeviceIfDueLocked(std::unique_lock<std::mutex>& lock);
  void TraceLocked(const char* text);
  void ApplySignalLocked(const SignalUpdate& update);
  void BlockLocked(std::unique_lock<std::mutex>& lock,
                   const std::function<bool()>& done);
  // The seq of the oldest op not yet completed, or the next seq when every
  // queue is idle.
  uint64_t OldestPendingOpLocked() const;
  void TrimQuarantineLocked();
  void ResetFaultRandomLocked();
  bool AllocFaultLocked();
  bool OpFaultLocked();
  bool FindAllocationLocked(uintptr_t p, Allocation* out) const;
  bool TouchesFreedLocked(uintptr_t p, size_t n) const;
  // Whether [p, p + n) starting in an allocation ends in it.
  bool RangeOkLocked(uintptr_t p, size_t n) const;
  // The shared checks of CopyWork/FillWork; false: skip the work.
  bool BeginWork(Domain* domain, uintptr_t dst, uintptr_t src, size_t n);

  const Options options_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;  // any progress

  uint64_t seed_ = 0;
  bool schedule_reset_ = false;
  SimRandom schedule_{0};
  SimRandom fault_random_{kFaultStreamSalt};
  SimRandom host_random_{kHostChoiceSalt};
  FaultPlan faults_;
  uint64_t allocs_ = 0;
  uint64_t ops_run_ = 0;  // op-fault counter

  std::map<uintptr_t, Allocation> allocations_;
  size_t device_bytes_ = 0;
  std::map<uintptr_t, Freed> quarantine_;
  std::deque<uintptr_t> quarantine_order_;  // oldest free first
  size_t quarantine_bytes_ = 0;

  std::vector<Queue*> queues_;  // creation order
  uint64_t next_queue_id_ = 0;
  uint64_t trace_queue_base_ = 0;
  // A queue's name in the trace and in messages: its number since the last
  // schedule reset ("s3"), or "s-N" for the N-th-last queue created before
  // it (such a queue may still get work; subtracting the base wrapped).
  // (A fixed buffer: the trace line is written on every step.)
  struct StreamNameBuffer {
    char text[24];
  };
  StreamNameBuffer StreamName(const Queue* queue) const;
  uint64_t ops_enqueued_ = 0;
  uint64_t now_ns_ = 0;
  bool host_functions_paused_ = false;
  int64_t settle_ns_;
  int sync_waiters_ = 0;
  // The conditions of the threads blocked in BlockLocked (their frames own
  // them); one that holds names a thread the engine must let resume.
  std::vector<const std::function<bool()>*> blocked_;
  bool abort_on_race_ = false;
  std::function<void()> on_device_lost_;
  bool device_lost_ = false;
  Counters counters_;
  TraceHash trace_;
  std::FILE* trace_file_ = nullptr;

  std::thread thread_;
  bool started_ = false;
  bool stopping_ = false;
  std::atomic<int> active_calls_{0};
  std::atomic<uint64_t> api_calls_{0};
  std::atomic<int64_t> last_activity_ns_{0};
};

}  // namespace hal::sim::engine
