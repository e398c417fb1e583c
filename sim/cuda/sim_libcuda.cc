// The CUDA API simulator: a libcuda stand-in that runs on the CPU.
//
// It exports the driver-API entry points the HAL's CUDA driver uses
// (resolved through cuGetProcAddress, as the driver does with a real
// libcuda), so the driver's own code runs the conformance suite without a
// GPU. It follows the CUDA documentation where the driver depends on it, and
// reports what real CUDA punishes:
//
//   * Streams are in-order queues of ops that one engine thread (the
//     simulated GPU) runs, one op at a time, on a virtual clock; see
//     "Scheduling" below. An event record captures the stream position; a
//     stream wait or an event synchronize waits for the captured record (a
//     wait on a never-recorded event is a no-op, as in CUDA, and is
//     reported: halsim_cuda_unrecorded_waits). Re-recording
//     an event does not affect waits enqueued before.
//   * Host functions run on the engine thread and block their stream.
//     Calling any CUDA API from inside one returns CUDA_ERROR_NOT_PERMITTED
//     and counts a violation (halsim_cuda_api_violations).
//   * Calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT when
//     none is current; a failed stream operation is a sticky context error
//     (every later call and event in the context reports it) until the
//     primary context is released.
//   * Memory is host RAM: device, managed, pinned host, registered host and
//     pool memory. Transfers that run past the end of an allocation fail
//     with CUDA_ERROR_ILLEGAL_ADDRESS. Fresh memory is filled with 0xCD.
//     A size whose rounding overflows, or larger than the host's memory
//     (pinned) or the device's (16 GiB), is CUDA_ERROR_OUT_OF_MEMORY.
//   * Freed memory (cuMemFree, cuMemFreeHost, cuMemFreeAsync) goes to a
//     quarantine first: the host memory stays allocated and a transfer,
//     fill or kernel that touches it fails with CUDA_ERROR_ILLEGAL_ADDRESS
//     (sticky) and a "use after free" line on stderr, instead of writing
//     memory the process reuses. A block leaves the quarantine once every
//     op enqueued before its free has completed (so none can still touch
//     it) and the quarantine holds more than kQuarantineBytes.
//   * Faults (HALSIM_CUDA_FAULTS, seeded by HALSIM_CUDA_SEED): alloc=N fails
//     the Nth allocation with CUDA_ERROR_OUT_OF_MEMORY and alloc_ppm=P each
//     allocation with probability P/10^6; op=N fails the Nth stream
//     operation with CUDA_ERROR_LAUNCH_FAILED and op_ppm=P each one with
//     probability P/10^6; late_event_us=U with
//     late_event_ppm=P delays an event's completion by U virtual us with
//     probability P/10^6.
//   * Races: a copy, fill or stream-ordered free that runs, in virtual time,
//     while an op of another stream touches an overlapping range (one of
//     them writing) with no event ordering them is reported on stderr and
//     counted (halsim_cuda_races); HALSIM_CUDA_RACES=abort aborts instead.
//
//   * Modules: PTX kernels run as the native build of the same test kernel,
//     looked up by name (see "Modules and kernel launches" below).
//
//   * Graphs: kernel, memset, memcpy (1D), host and empty nodes; a launch
//     runs the nodes as one stream op in one deterministic topological
//     order (see "Graphs" below).
//
// Scheduling. HALSIM_CUDA_SEED drives it, with the same primitives as the
// HAL simulator (sim/sim_core.h). The engine completes ops in virtual-time
// order: when an op reaches the head of its stream and its wait (event,
// earlier graph launch, unpaused host functions) is met, it starts at the
// current virtual time with a seeded duration; the started op with the
// earliest finish completes next, and its effects (memory, event, host
// function) happen then. So which stream's work lands first is the seed's
// choice, not the OS scheduler's. Each completion is a trace line, hashed
// (halsim_cuda_trace_hash; HALSIM_CUDA_TRACE=path writes the lines).
// The engine takes a step only once the host has been quiet: no thread in a
// CUDA call (threads blocked in a synchronize call do not count) and none
// returned from one for the settle window (HALSIM_CUDA_SETTLE_US, 1000 by
// default; 0 runs free), and it waits a fresh window after each host
// function, so that the host's reaction is submitted before the device moves
// on. The same seed and the same host calls therefore give the same trace.
// What is not under the seed: a host thread that stalls longer than the
// window between two calls of one submission, and host threads that never
// go quiet (after 20 ms the engine steps anyway and counts it in
// halsim_cuda_unsettled_steps).
//
// Not simulated: cubin images, graph updates and child graphs, timing
// events, the legacy default stream.
#include "sim/cuda/sim_libcuda.h"

#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/sim_core.h"
#include "sim/sim_kernel_abi.h"

#define HALSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kSimDriverVersion = 13000;
constexpr size_t kDeviceMemoryBytes = size_t{16} << 30;
// Freed memory kept back to catch late uses (see the top of the file).
constexpr size_t kQuarantineBytes = size_t{64} << 20;

using hal::sim::SimRandom;

struct FaultPlan {
  uint64_t alloc = 0;  // fail the Nth allocation
  uint64_t op = 0;     // fail the Nth stream operation
  uint64_t alloc_ppm = 0;  // fail allocations at this seeded rate
  uint64_t op_ppm = 0;     // fail stream operations at this seeded rate
  uint64_t late_event_us = 0;
  uint64_t late_event_ppm = 0;
};

bool ParseFaults(const char* text, FaultPlan* out) {
  FaultPlan plan;
  std::string s = text ? text : "";
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) return false;
    std::string key = item.substr(0, eq);
    char* tail = nullptr;
    uint64_t value = std::strtoull(item.c_str() + eq + 1, &tail, 10);
    if (!tail || *tail) return false;
    if (key == "alloc") {
      plan.alloc = value;
    } else if (key == "op") {
      plan.op = value;
    } else if (key == "late_event_us") {
      plan.late_event_us = value;
    } else if (key == "late_event_ppm" && value <= 1000000) {
      plan.late_event_ppm = value;
    } else if (key == "alloc_ppm" && value <= 1000000) {
      plan.alloc_ppm = value;
    } else if (key == "op_ppm" && value <= 1000000) {
      plan.op_ppm = value;
    } else {
      return false;
    }
  }
  *out = plan;
  return true;
}

struct Context;

struct Allocation {
  size_t size;
  enum Kind { kDevice, kManaged, kHost, kRegistered, kPool } kind;
};

// A freed allocation in the quarantine: its memory is still ours.
struct Freed {
  size_t size;
  uint64_t freed_after;  // Sim::ops_enqueued when it was freed
};

struct SimEvent {
  Context* context = nullptr;
  uint64_t generation = 0;  // bumped by each record
  uint64_t done = 0;        // the last generation that completed
  CUresult result = CUDA_SUCCESS;
};

// A CUevent. Enqueued records and waits share the SimEvent, so that
// cuEventDestroy may return at once, as CUDA's does, while they are pending.
struct EventHandle {
  std::shared_ptr<SimEvent> event;
};

SimEvent* AsEvent(CUevent hevent) {
  auto* handle = reinterpret_cast<EventHandle*>(hevent);
  return handle ? handle->event.get() : nullptr;
}
std::shared_ptr<SimEvent> ShareEvent(CUevent hevent) {
  return reinterpret_cast<EventHandle*>(hevent)->event;
}

// A byte range [begin, end) of device (or host) memory; empty when
// begin == end.
struct Range {
  uintptr_t begin = 0, end = 0;
  bool empty() const { return begin >= end; }
  bool Overlaps(const Range& o) const {
    return !empty() && !o.empty() && begin < o.end && o.begin < end;
  }
};

// One stream op. `ready` (under the lock) says whether the op at the head
// may start; `run` is its effect at completion, called without the lock.
struct StreamOp {
  const char* name = "op";
  uint64_t seq = 0;             // enqueue order over all streams, from 1
  std::function<bool()> ready;  // empty: ready at the head
  std::function<void()> run;    // empty: no effect (barrier-like)
  bool zero_time = false;       // waits: complete as soon as they start
  bool host = false;            // runs host code: the host reacts to it
  uint64_t extra_ns = 0;        // added to the drawn duration (late events)
  uint64_t bytes = 0;           // for the trace
  // Ranges for the race checker (copies, fills, frees).
  Range write, read;
  const Range& shown() const { return write.empty() ? read : write; }
};

struct Stream {
  Context* context = nullptr;
  uint64_t id = 0;  // creation order: trace names and tie-breaks
  std::deque<StreamOp> ops;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool head_started = false;  // the head op is in flight (virtual time)
  uint64_t head_start = 0;
  uint64_t head_finish = 0;
};

struct Context {
  int device = 0;
  int refs = 0;
  CUresult sticky = CUDA_SUCCESS;
};

// One lock for all simulator state: streams are few and the work is memcpy.
struct Sim {
  std::mutex mutex;
  std::condition_variable cv;  // any progress
  bool initialized = false;
  int device_count = 1;
  uint64_t seed = 0;
  bool schedule_reset = false;
  SimRandom schedule{0};  // durations
  SimRandom fault_random{0};
  FaultPlan faults;
  uint64_t allocs = 0;
  uint64_t stream_ops = 0;
  std::vector<Context*> primary;  // per device, null when released
  std::map<uintptr_t, Allocation> allocations;
  size_t device_bytes = 0;
  uint64_t ops_enqueued = 0;
  std::map<uintptr_t, Freed> quarantine;
  std::deque<uintptr_t> quarantine_order;  // oldest free first
  size_t quarantine_bytes = 0;
  bool host_functions_paused = false;
  // The engine (see "Scheduling" above).
  std::vector<Stream*> streams;  // creation order
  uint64_t next_stream_id = 0;
  uint64_t trace_stream_base = 0;  // stream ids in the trace count from here
  bool engine_started = false;
  uint64_t now_ns = 0;  // virtual
  int64_t settle_ns = 1000000;
  int sync_waiters = 0;  // threads blocked in synchronize calls
  uint64_t unsettled_steps = 0;
  uint64_t races = 0;
  bool abort_on_race = false;
  hal::sim::TraceHash trace;
  std::FILE* trace_file = nullptr;
  // Updated by every API call without the lock.
  std::atomic<int> active_calls{0};
  std::atomic<int64_t> last_activity_ns{0};
};

Sim& S() {
  static Sim* sim =
      new Sim();  // never destroyed: the engine thread may outlive exit
  return *sim;
}

std::atomic<uint64_t> g_launched{0};
std::atomic<uint64_t> g_run{0};
std::atomic<uint64_t> g_violations{0};
std::atomic<uint64_t> g_work_done{0};
std::atomic<uint64_t> g_unrecorded_waits{0};
// Static TLS (initial-exec), not the dynamic TLS a dlopen'd library gets by
// default. A precaution: ASan runs of the cuda-sim CTS crashed a few times in
// LeakSanitizer's exit-time scan ("Tracer caught signal 11") on a loaded
// machine; dynamic TLS of dlopen'd libraries is a suspect, not a proven cause.
#define HALSIM_TLS __attribute__((tls_model("initial-exec")))
thread_local bool t_in_host_function HALSIM_TLS = false;
thread_local std::vector<Context*> t_context_stack HALSIM_TLS;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Marks a thread inside a CUDA call, for the engine's settle rule.
struct ApiCall {
  ApiCall() { S().active_calls.fetch_add(1); }
  ~ApiCall() {
    S().last_activity_ns.store(SteadyNs());
    S().active_calls.fetch_sub(1);
  }
};

// Inside a call, while the thread blocks until the device gets somewhere:
// the engine may step meanwhile. Under the lock.
struct Blocked {
  Blocked() {
    S().active_calls.fetch_sub(1);
    ++S().sync_waiters;
  }
  ~Blocked() {
    --S().sync_waiters;
    S().active_calls.fetch_add(1);
  }
};

CUresult HostFunctionViolation(const char* name) {
  g_violations.fetch_add(1);
  std::fprintf(stderr,
               "halsim_cuda: %s called from a host function; CUDA forbids "
               "API calls in cuLaunchHostFunc callbacks\n",
               name);
  return CUDA_ERROR_NOT_PERMITTED;
}

// Every entry point starts here: host functions may not call CUDA.
#define HALSIM_ENTER(name)                                 \
  if (t_in_host_function) return HostFunctionViolation(name); \
  ApiCall halsim_api_call_

#define HALSIM_NEED_INIT()                                   \
  do {                                                       \
    if (!S().initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  } while (0)

Context* Current() {
  return t_context_stack.empty() ? nullptr : t_context_stack.back();
}

#define HALSIM_NEED_CONTEXT(ctx)                         \
  HALSIM_NEED_INIT();                                    \
  Context* ctx = Current();                              \
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;           \
  do {                                                   \
    std::lock_guard<std::mutex> _l(S().mutex);           \
    if (ctx->sticky != CUDA_SUCCESS) return ctx->sticky; \
  } while (0)

// Under the lock: the allocation holding [p, p+n), the one p is in, or none.
const Allocation* FindAllocation(uintptr_t p, uintptr_t* base) {
  auto& allocs = S().allocations;
  auto it = allocs.upper_bound(p);
  if (it == allocs.begin()) return nullptr;
  --it;
  if (p >= it->first + it->second.size &&
      !(it->second.size == 0 && p == it->first)) {
    return nullptr;
  }
  *base = it->first;
  return &it->second;
}

// Under the lock. A range that starts in an allocation must end in it;
// other addresses are pageable host memory (allowed with unified
// addressing).
bool RangeOk(uintptr_t p, size_t n) {
  uintptr_t base;
  const Allocation* a = FindAllocation(p, &base);
  return !a || n <= base + a->size - p;
}

// Under the lock: whether [p, p+n) (n > 0) touches quarantined memory.
bool TouchesFreedLocked(uintptr_t p, size_t n) {
  auto& q = S().quarantine;
  uintptr_t end = n > UINTPTR_MAX - p ? UINTPTR_MAX : p + n;
  auto it = q.lower_bound(end);
  if (it == q.begin()) return false;
  --it;
  return it->first + it->second.size > p;
}

// Under the lock: the seq of the oldest op not yet completed, or the next
// seq when every stream is idle.
uint64_t OldestPendingOpLocked() {
  Sim& s = S();
  uint64_t oldest = s.ops_enqueued + 1;
  for (Stream* stream : s.streams) {
    if (!stream->ops.empty()) {
      oldest = std::min(oldest, stream->ops.front().seq);
    }
  }
  return oldest;
}

// Under the lock: returns quarantined memory to the host, oldest first,
// while the quarantine is over budget and no op enqueued before the free is
// still pending (ops complete in order within a stream, so the front of
// each stream is its oldest).
void TrimQuarantineLocked() {
  Sim& s = S();
  if (s.quarantine_bytes <= kQuarantineBytes) return;
  const uint64_t oldest_pending = OldestPendingOpLocked();
  while (s.quarantine_bytes > kQuarantineBytes && !s.quarantine_order.empty()) {
    auto it = s.quarantine.find(s.quarantine_order.front());
    if (it->second.freed_after >= oldest_pending) break;
    s.quarantine_bytes -= it->second.size;
    std::free(reinterpret_cast<void*>(it->first));
    s.quarantine.erase(it);
    s.quarantine_order.pop_front();
  }
}

// Under the lock: restarts the seed's fault stream.
void ResetFaultRandomLocked() {
  Sim& s = S();
  s.fault_random = SimRandom(s.seed ^ hal::sim::kFaultStreamSalt);
}

// Under the lock: counts an allocation and injects the planned fault.
bool AllocFaultLocked() {
  Sim& s = S();
  ++s.allocs;
  return (s.faults.alloc != 0 && s.allocs == s.faults.alloc) ||
         s.fault_random.Chance(static_cast<uint32_t>(s.faults.alloc_ppm));
}

// Under the lock: counts a stream operation (a transfer, fill or kernel, in
// the engine's order) and injects the planned fault.
bool OpFaultLocked() {
  Sim& s = S();
  ++s.stream_ops;
  return (s.faults.op != 0 && s.stream_ops == s.faults.op) ||
         s.fault_random.Chance(static_cast<uint32_t>(s.faults.op_ppm));
}

// Physical memory of the host: the most one allocation can take (asking
// the C allocator for more aborts under ASan or faults in the 0xCD fill).
size_t HostMemoryBytes() {
  static const size_t bytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return size_t{1} << 40;
    if (static_cast<size_t>(pages) > SIZE_MAX / page_size) return SIZE_MAX;
    return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
  }();
  return bytes;
}

// `size` (> 0) rounded up to `alignment` (a power of two), or null when the
// rounding overflows or the host cannot hold it.
void* RawAlloc(size_t size, size_t alignment) {
  if (size > HostMemoryBytes() || size > SIZE_MAX - (alignment - 1)) {
    return nullptr;
  }
  size_t rounded = (size + alignment - 1) & ~(alignment - 1);
  void* p = std::aligned_alloc(alignment, rounded);
  if (p) std::memset(p, 0xCD, rounded);
  return p;
}

CUresult Allocate(size_t size, Allocation::Kind kind, size_t alignment,
                  void** out) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (AllocFaultLocked()) return CUDA_ERROR_OUT_OF_MEMORY;
  bool device = kind != Allocation::kHost;
  if (device && (size > kDeviceMemoryBytes ||
                 s.device_bytes > kDeviceMemoryBytes - size)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* p = RawAlloc(size, alignment);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  if (device) s.device_bytes += size;
  s.allocations[reinterpret_cast<uintptr_t>(p)] = Allocation{size, kind};
  *out = p;
  return CUDA_SUCCESS;
}

CUresult Free(uintptr_t p, bool host) {
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(p);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  bool is_host = it->second.kind == Allocation::kHost;
  if (is_host != host || it->second.kind == Allocation::kRegistered) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!is_host) s.device_bytes -= it->second.size;
  // Ops enqueued up to now may still touch it: quarantine, do not free.
  s.quarantine[p] = Freed{it->second.size, s.ops_enqueued};
  s.quarantine_order.push_back(p);
  s.quarantine_bytes += it->second.size;
  s.allocations.erase(it);
  TrimQuarantineLocked();
  return CUDA_SUCCESS;
}

// --- The engine (see "Scheduling" at the top). ---

// Under the lock (released while it waits): returns once the host has been
// quiet for the settle window, or after kMaxSettleNs of activity.
constexpr int64_t kMaxSettleNs = 20'000'000;
void SettleLocked(std::unique_lock<std::mutex>& lock) {
  Sim& s = S();
  if (s.settle_ns <= 0) return;
  const int64_t start = SteadyNs();
  for (;;) {
    const int64_t now = SteadyNs();
    const int64_t quiet = now - s.last_activity_ns.load();
    if (s.active_calls.load() == 0 && quiet >= s.settle_ns) return;
    if (now - start > kMaxSettleNs) {
      ++s.unsettled_steps;
      return;
    }
    int64_t wait = s.settle_ns - quiet;
    s.cv.wait_for(lock, std::chrono::nanoseconds(std::max<int64_t>(
                            wait, 20'000)));
  }
}

void TraceLocked(const char* text) {
  Sim& s = S();
  s.trace.AddLine(text);
  if (s.trace_file) {
    std::fprintf(s.trace_file, "%s\n", text);
    std::fflush(s.trace_file);
  }
}

// Under the lock: `stream`'s head just started; compares it with the ops in
// flight on other streams.
void CheckRacesLocked(Stream* stream) {
  Sim& s = S();
  const StreamOp& op = stream->ops.front();
  if (op.write.empty() && op.read.empty()) return;
  for (Stream* other : s.streams) {
    if (other == stream || !other->head_started ||
        other->head_finish <= stream->head_start) {
      continue;
    }
    const StreamOp& o = other->ops.front();
    const char* what = nullptr;
    if (op.write.Overlaps(o.write)) {
      what = "both write";
    } else if (op.write.Overlaps(o.read)) {
      what = "the first writes what the second reads";
    } else if (op.read.Overlaps(o.write)) {
      what = "the second writes what the first reads";
    }
    if (!what) continue;
    ++s.races;
    std::fprintf(stderr,
                 "halsim_cuda: race (seed %llu, virtual t=%llu ns): %s on "
                 "stream %llu [0x%llx, 0x%llx) and %s on stream %llu "
                 "[0x%llx, 0x%llx) run at the same time and %s; no event "
                 "orders them\n",
                 (unsigned long long)s.seed,
                 (unsigned long long)stream->head_start, op.name,
                 (unsigned long long)(stream->id - s.trace_stream_base),
                 (unsigned long long)op.shown().begin,
                 (unsigned long long)op.shown().end,
                 o.name,
                 (unsigned long long)(other->id - s.trace_stream_base),
                 (unsigned long long)o.shown().begin,
                 (unsigned long long)o.shown().end,
                 what);
    if (s.abort_on_race) std::abort();
  }
}

// Under the lock: starts every head op that may start (in stream creation
// order, so the duration draws follow the seed) and returns the stream whose
// op finishes first, or null when nothing can run.
Stream* StartReadyHeadsLocked() {
  Sim& s = S();
  Stream* next = nullptr;
  for (Stream* stream : s.streams) {
    if (stream->ops.empty()) continue;
    if (!stream->head_started) {
      StreamOp& op = stream->ops.front();
      if (op.ready && !op.ready()) continue;
      stream->head_started = true;
      stream->head_start = s.now_ns;
      stream->head_finish =
          s.now_ns +
          (op.zero_time ? 0 : hal::sim::DrawOpDuration(s.schedule)) +
          op.extra_ns;
      CheckRacesLocked(stream);
    }
    if (!next || stream->head_finish < next->head_finish) next = stream;
  }
  return next;
}

void EngineMain() {
  Sim& s = S();
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    bool any = false;
    for (Stream* stream : s.streams) any = any || !stream->ops.empty();
    if (!any) {
      s.cv.wait(lock);
      continue;
    }
    SettleLocked(lock);
    Stream* next = StartReadyHeadsLocked();
    if (!next) {
      s.cv.wait(lock);  // every head waits (on an event, a paused host fn)
      continue;
    }
    s.now_ns = next->head_finish;
    StreamOp& op = next->ops.front();
    char line[160];
    std::snprintf(line, sizeof(line), "t=%llu s%llu %s %llu",
                  (unsigned long long)s.now_ns,
                  (unsigned long long)(next->id - s.trace_stream_base),
                  op.name, (unsigned long long)op.bytes);
    TraceLocked(line);
    // The op stays at the head (and so blocks its stream) while it runs.
    std::function<void()> run = std::move(op.run);
    const bool host = op.host;
    lock.unlock();
    if (run) run();
    run = nullptr;  // captured state goes without the lock
    lock.lock();
    next->ops.pop_front();
    next->head_started = false;
    ++next->completed;
    TrimQuarantineLocked();
    // Let the host react before the next step: to a host function (which
    // wakes host threads), or to a completion a blocked synchronize call
    // may have been waiting for.
    if (host || s.sync_waiters > 0) s.last_activity_ns.store(SteadyNs());
    s.cv.notify_all();
  }
}

// Under the lock.
void StartEngineLocked() {
  Sim& s = S();
  if (s.engine_started) return;
  s.engine_started = true;
  std::thread(EngineMain).detach();
}

CUresult Enqueue(CUstream hstream, StreamOp op) {
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++stream->enqueued;
  op.seq = ++s.ops_enqueued;
  stream->ops.push_back(std::move(op));
  s.cv.notify_all();
  return CUDA_SUCCESS;
}

// A transfer or fill as stream (or graph node) work: counts toward the op
// fault, checks ranges, and is skipped once the context has a sticky error.
std::function<void()> WorkOp(Context* ctx, uintptr_t dst, uintptr_t src,
                             size_t n, std::function<void()> work) {
  return [ctx, dst, src, n, work = std::move(work)] {
    Sim& s = S();
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (ctx->sticky != CUDA_SUCCESS) return;
      if (OpFaultLocked()) {
        ctx->sticky = CUDA_ERROR_LAUNCH_FAILED;
        return;
      }
      if (n &&
          (TouchesFreedLocked(dst, n) || (src && TouchesFreedLocked(src, n)))) {
        std::fprintf(stderr,
                     "halsim_cuda: illegal address (use after free, seed "
                     "%llu): %zu bytes at 0x%llx (source 0x%llx) touch freed "
                     "memory\n",
                     (unsigned long long)s.seed, n, (unsigned long long)dst,
                     (unsigned long long)src);
        ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
        return;
      }
      if (!RangeOk(dst, n) || (src && !RangeOk(src, n))) {
        std::fprintf(stderr,
                     "halsim_cuda: illegal address: %zu bytes at 0x%llx "
                     "(source 0x%llx) run past an allocation\n",
                     n, (unsigned long long)dst, (unsigned long long)src);
        ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
        return;
      }
    }
    work();
    g_work_done.fetch_add(1);
  };
}

const char* ErrorName(CUresult r) {
  switch (r) {
#define N(x) \
  case x:    \
    return #x;
    N(CUDA_SUCCESS)
    N(CUDA_ERROR_INVALID_VALUE)
    N(CUDA_ERROR_OUT_OF_MEMORY)
    N(CUDA_ERROR_NOT_INITIALIZED)
    N(CUDA_ERROR_DEINITIALIZED)
    N(CUDA_ERROR_NO_DEVICE)
    N(CUDA_ERROR_INVALID_DEVICE)
    N(CUDA_ERROR_INVALID_CONTEXT)
    N(CUDA_ERROR_INVALID_HANDLE)
    N(CUDA_ERROR_NOT_FOUND)
    N(CUDA_ERROR_INVALID_IMAGE)
    N(CUDA_ERROR_INVALID_PTX)
    N(CUDA_ERROR_NOT_READY)
    N(CUDA_ERROR_ILLEGAL_ADDRESS)
    N(CUDA_ERROR_LAUNCH_FAILED)
    N(CUDA_ERROR_NOT_PERMITTED)
    N(CUDA_ERROR_NOT_SUPPORTED)
    N(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    N(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
#undef N
    default:
      return nullptr;
  }
}

const char* ErrorString(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS:
      return "no error";
    case CUDA_ERROR_INVALID_VALUE:
      return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "initialization error";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "invalid device context";
    case CUDA_ERROR_INVALID_HANDLE:
      return "invalid resource handle";
    case CUDA_ERROR_NOT_READY:
      return "device not ready";
    case CUDA_ERROR_NOT_FOUND:
      return "named symbol not found";
    case CUDA_ERROR_INVALID_IMAGE:
      return "device kernel image is invalid";
    case CUDA_ERROR_INVALID_PTX:
      return "a PTX JIT compilation failed";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "operation not supported";
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      return "an illegal memory access was encountered";
    case CUDA_ERROR_LAUNCH_FAILED:
      return "unspecified launch failure";
    case CUDA_ERROR_NOT_PERMITTED:
      return "operation not permitted";
    default:
      return nullptr;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Initialization, version, errors.

HALSIM_EXPORT CUresult cuInit(unsigned int flags) {
  HALSIM_ENTER("cuInit");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized) return CUDA_SUCCESS;
  if (!s.schedule_reset) {  // halsim_cuda_reset_schedule came first
    if (const char* seed = std::getenv("HALSIM_CUDA_SEED")) {
      s.seed = std::strtoull(seed, nullptr, 10);
    }
    s.schedule = SimRandom(s.seed);
    ResetFaultRandomLocked();
  }
  if (const char* settle = std::getenv("HALSIM_CUDA_SETTLE_US")) {
    s.settle_ns = std::atoll(settle) * 1000;
  }
  if (const char* races = std::getenv("HALSIM_CUDA_RACES")) {
    s.abort_on_race = std::strcmp(races, "abort") == 0;
  }
  if (const char* trace = std::getenv("HALSIM_CUDA_TRACE"); trace && *trace) {
    s.trace_file = std::fopen(trace, "w");
    if (!s.trace_file) {
      std::fprintf(stderr, "halsim_cuda: cannot write the trace to %s\n",
                   trace);
    } else {
      std::fprintf(s.trace_file, "# halsim_cuda seed %llu\n",
                   (unsigned long long)s.seed);
    }
  }
  if (const char* faults = std::getenv("HALSIM_CUDA_FAULTS")) {
    if (!ParseFaults(faults, &s.faults)) {
      std::fprintf(stderr, "halsim_cuda: malformed HALSIM_CUDA_FAULTS '%s'\n",
                   faults);
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (const char* n = std::getenv("HALSIM_CUDA_DEVICES")) {
    s.device_count = std::atoi(n);
    if (s.device_count < 0 || s.device_count > 8) s.device_count = 1;
  }
  s.primary.assign(s.device_count, nullptr);
  s.initialized = true;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDriverGetVersion(int* version) {
  HALSIM_ENTER("cuDriverGetVersion");
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  // HALSIM_CUDA_DRIVER_VERSION pretends to be another driver (tests of the
  // too-old-driver path).
  const char* v = std::getenv("HALSIM_CUDA_DRIVER_VERSION");
  *version = v ? std::atoi(v) : kSimDriverVersion;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGetErrorName(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  *str = ErrorName(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

HALSIM_EXPORT CUresult cuGetErrorString(CUresult error, const char** str) {
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  *str = ErrorString(error);
  return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---------------------------------------------------------------------------
// Devices.

HALSIM_EXPORT CUresult cuDeviceGetCount(int* count) {
  HALSIM_ENTER("cuDeviceGetCount");
  HALSIM_NEED_INIT();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = S().device_count;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  HALSIM_ENTER("cuDeviceGet");
  HALSIM_NEED_INIT();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= S().device_count)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

#define HALSIM_CHECK_DEVICE(dev) \
  HALSIM_NEED_INIT();            \
  if ((dev) < 0 || (dev) >= S().device_count) return CUDA_ERROR_INVALID_DEVICE

HALSIM_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetName");
  HALSIM_CHECK_DEVICE(dev);
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, len, "HAL CUDA API simulator %d", dev);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetUuid");
  HALSIM_CHECK_DEVICE(dev);
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  // Stable per ordinal: a fixed prefix, then the ordinal.
  static const unsigned char kPrefix[12] = {0x5e, 0xed, 0xca, 0xfe, 0x00, 0x00,
                                            0x40, 0x00, 0x80, 0x00, 0x00, 0x00};
  std::memcpy(uuid->bytes, kPrefix, sizeof(kPrefix));
  uint32_t ordinal = static_cast<uint32_t>(dev);
  for (int i = 0; i < 4; ++i)
    uuid->bytes[12 + i] = char((ordinal >> (24 - 8 * i)) & 0xff);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  HALSIM_ENTER("cuDeviceTotalMem");
  HALSIM_CHECK_DEVICE(dev);
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = kDeviceMemoryBytes;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetAttribute(int* value,
                                            CUdevice_attribute attrib,
                                            CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetAttribute");
  HALSIM_CHECK_DEVICE(dev);
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 8;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      *value = 1;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool,
                                                 CUdevice dev) {
  HALSIM_ENTER("cuDeviceGetDefaultMemPool");
  HALSIM_CHECK_DEVICE(dev);
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  static int pools[8];
  *pool = reinterpret_cast<CUmemoryPool>(&pools[dev]);
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Contexts: primary contexts only.

HALSIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  HALSIM_ENTER("cuDevicePrimaryCtxRetain");
  HALSIM_CHECK_DEVICE(dev);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  Context*& ctx = s.primary[dev];
  if (!ctx) {
    ctx = new Context();
    ctx->device = dev;
  }
  ++ctx->refs;
  *pctx = reinterpret_cast<CUcontext>(ctx);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  HALSIM_ENTER("cuDevicePrimaryCtxRelease");
  HALSIM_CHECK_DEVICE(dev);
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  Context*& ctx = s.primary[dev];
  if (!ctx || ctx->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--ctx->refs == 0) {
    // Releasing the last reference destroys the context and its sticky
    // error. The Context object stays (handles may still be compared).
    ctx->sticky = CUDA_SUCCESS;
  }
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  HALSIM_ENTER("cuCtxPushCurrent");
  HALSIM_NEED_INIT();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  t_context_stack.push_back(reinterpret_cast<Context*>(ctx));
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx) {
  HALSIM_ENTER("cuCtxPopCurrent");
  HALSIM_NEED_INIT();
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = reinterpret_cast<CUcontext>(t_context_stack.back());
  t_context_stack.pop_back();
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Streams, events, host functions.

HALSIM_EXPORT CUresult cuStreamCreate(CUstream* phstream, unsigned int flags) {
  HALSIM_ENTER("cuStreamCreate");
  HALSIM_NEED_CONTEXT(ctx);
  if (!phstream || (flags & ~CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  auto* stream = new Stream();
  stream->context = ctx;
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    stream->id = S().next_stream_id++;
    S().streams.push_back(stream);
    StartEngineLocked();
  }
  *phstream = reinterpret_cast<CUstream>(stream);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuStreamDestroy(CUstream hstream) {
  HALSIM_ENTER("cuStreamDestroy");
  HALSIM_NEED_INIT();
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  // CUDA returns at once and releases the stream when its work is done; the
  // simulator drains it here, which the caller cannot tell apart.
  Sim& s = S();
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    Blocked blocked;
    s.cv.wait(lock, [&] { return stream->ops.empty(); });
    s.streams.erase(std::find(s.streams.begin(), s.streams.end(), stream));
  }
  delete stream;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuStreamSynchronize(CUstream hstream) {
  HALSIM_ENTER("cuStreamSynchronize");
  HALSIM_NEED_INIT();
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  Sim& s = S();
  std::unique_lock<std::mutex> lock(s.mutex);
  uint64_t target = stream->enqueued;
  Blocked blocked;
  s.cv.wait(lock, [&] { return stream->completed >= target; });
  return stream->context->sticky;
}

HALSIM_EXPORT CUresult cuEventCreate(CUevent* phevent, unsigned int flags) {
  HALSIM_ENTER("cuEventCreate");
  HALSIM_NEED_CONTEXT(ctx);
  if (!phevent) return CUDA_ERROR_INVALID_VALUE;
  if (!(flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_NOT_SUPPORTED;
  auto* handle = new EventHandle{std::make_shared<SimEvent>()};
  handle->event->context = ctx;
  *phevent = reinterpret_cast<CUevent>(handle);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuEventDestroy(CUevent hevent) {
  HALSIM_ENTER("cuEventDestroy");
  HALSIM_NEED_INIT();
  auto* handle = reinterpret_cast<EventHandle*>(hevent);
  if (!handle) return CUDA_ERROR_INVALID_HANDLE;
  // CUDA returns at once and releases the event once pending work is done:
  // pending records and waits hold the SimEvent.
  std::lock_guard<std::mutex> lock(S().mutex);  // the ops' references
  delete handle;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuEventRecord(CUevent hevent, CUstream hstream) {
  HALSIM_ENTER("cuEventRecord");
  HALSIM_NEED_CONTEXT(ctx);
  SimEvent* event = AsEvent(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t generation;
  uint64_t delay_us = 0;
  {
    Sim& s = S();
    std::lock_guard<std::mutex> lock(s.mutex);
    generation = ++event->generation;
    if (s.fault_random.Chance(
            static_cast<uint32_t>(s.faults.late_event_ppm))) {
      delay_us = s.faults.late_event_us;
    }
  }
  StreamOp op;
  op.name = delay_us ? "record(late)" : "record";
  op.extra_ns = delay_us * 1000;
  op.run = [event = ShareEvent(hevent), generation, ctx] {
    std::lock_guard<std::mutex> lock(S().mutex);
    event->result = ctx->sticky;
    if (event->done < generation) event->done = generation;
  };
  return Enqueue(hstream, std::move(op));
}

HALSIM_EXPORT CUresult cuEventQuery(CUevent hevent) {
  HALSIM_ENTER("cuEventQuery");
  HALSIM_NEED_INIT();
  SimEvent* event = AsEvent(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(S().mutex);
  if (event->done < event->generation) return CUDA_ERROR_NOT_READY;
  return event->result;
}

HALSIM_EXPORT CUresult cuEventSynchronize(CUevent hevent) {
  HALSIM_ENTER("cuEventSynchronize");
  HALSIM_NEED_INIT();
  SimEvent* event = AsEvent(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  std::unique_lock<std::mutex> lock(S().mutex);
  uint64_t generation = event->generation;
  Blocked blocked;
  S().cv.wait(lock, [&] { return event->done >= generation; });
  return event->result;
}

HALSIM_EXPORT CUresult cuStreamWaitEvent(CUstream hstream, CUevent hevent,
                                         unsigned int flags) {
  HALSIM_ENTER("cuStreamWaitEvent");
  HALSIM_NEED_CONTEXT(ctx);
  SimEvent* event = AsEvent(hevent);
  if (!event || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    generation = event->generation;  // the record this wait captures
  }
  if (generation == 0) {
    // CUDA makes this a no-op, so nothing orders the stream after whatever
    // the caller meant to record later: the "record before wait" rule.
    g_unrecorded_waits.fetch_add(1);
    std::fprintf(stderr,
                 "halsim_cuda: cuStreamWaitEvent on an event that was never "
                 "recorded: a no-op in CUDA (record the event first)\n");
    return CUDA_SUCCESS;
  }
  StreamOp op;
  op.name = "wait";
  op.zero_time = true;
  op.ready = [event = ShareEvent(hevent), generation] {
    return event->done >= generation;
  };
  return Enqueue(hstream, std::move(op));
}

HALSIM_EXPORT CUresult cuLaunchHostFunc(CUstream hstream, CUhostFn fn,
                                        void* user_data) {
  HALSIM_ENTER("cuLaunchHostFunc");
  HALSIM_NEED_CONTEXT(ctx);
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  g_launched.fetch_add(1);
  StreamOp op;
  op.name = "host_function";
  op.host = true;
  op.ready = [] { return !S().host_functions_paused; };
  op.run = [fn, user_data] {
    t_in_host_function = true;
    fn(user_data);
    t_in_host_function = false;
    g_run.fetch_add(1);
  };
  return Enqueue(hstream, std::move(op));
}

// ---------------------------------------------------------------------------
// Memory.

HALSIM_EXPORT CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  HALSIM_ENTER("cuMemAlloc");
  HALSIM_NEED_CONTEXT(ctx);
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  CUresult r = Allocate(bytesize, Allocation::kDevice, 256, &p);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

HALSIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER("cuMemAllocManaged");
  HALSIM_NEED_CONTEXT(ctx);
  if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* p = nullptr;
  CUresult r = Allocate(bytesize, Allocation::kManaged, 256, &p);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

HALSIM_EXPORT CUresult cuMemFree(CUdeviceptr dptr) {
  HALSIM_ENTER("cuMemFree");
  HALSIM_NEED_CONTEXT(ctx);
  return Free(static_cast<uintptr_t>(dptr), /*host=*/false);
}

HALSIM_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize,
                                      unsigned int flags) {
  HALSIM_ENTER("cuMemHostAlloc");
  HALSIM_NEED_CONTEXT(ctx);
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  return Allocate(bytesize, Allocation::kHost, 4096, pp);
}

HALSIM_EXPORT CUresult cuMemFreeHost(void* p) {
  HALSIM_ENTER("cuMemFreeHost");
  HALSIM_NEED_CONTEXT(ctx);
  return Free(reinterpret_cast<uintptr_t>(p), /*host=*/true);
}

HALSIM_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER("cuMemHostRegister");
  HALSIM_NEED_CONTEXT(ctx);
  if (!p || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  uintptr_t base;
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  if (bytesize > UINTPTR_MAX - addr) return CUDA_ERROR_INVALID_VALUE;
  if (FindAllocation(addr, &base) ||
      FindAllocation(addr + bytesize - 1, &base)) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  s.allocations[addr] = Allocation{bytesize, Allocation::kRegistered};
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuMemHostUnregister(void* p) {
  HALSIM_ENTER("cuMemHostUnregister");
  HALSIM_NEED_CONTEXT(ctx);
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.allocations.end() || it->second.kind != Allocation::kRegistered) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p,
                                                 unsigned int flags) {
  HALSIM_ENTER("cuMemHostGetDevicePointer");
  HALSIM_NEED_CONTEXT(ctx);
  if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(S().mutex);
  uintptr_t base;
  const Allocation* a = FindAllocation(reinterpret_cast<uintptr_t>(p), &base);
  if (!a ||
      (a->kind != Allocation::kHost && a->kind != Allocation::kRegistered)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr,
                                               size_t bytesize,
                                               CUmemoryPool pool,
                                               CUstream hstream) {
  HALSIM_ENTER("cuMemAllocFromPoolAsync");
  HALSIM_NEED_CONTEXT(ctx);
  if (!dptr || !pool || !hstream) return CUDA_ERROR_INVALID_VALUE;
  // The address is handed out at once and usable in stream order.
  void* p = nullptr;
  CUresult r = Allocate(bytesize, Allocation::kPool, 256, &p);
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

HALSIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hstream) {
  HALSIM_ENTER("cuMemFreeAsync");
  HALSIM_NEED_CONTEXT(ctx);
  StreamOp op;
  op.name = "free";
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    auto it = S().allocations.find(static_cast<uintptr_t>(dptr));
    if (it == S().allocations.end() || it->second.kind == Allocation::kHost ||
        it->second.kind == Allocation::kRegistered) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // Freeing races with any use of the memory that is not ordered before.
    op.write = {it->first, it->first + it->second.size};
  }
  op.run = [dptr] { Free(static_cast<uintptr_t>(dptr), false); };
  return Enqueue(hstream, std::move(op));
}

namespace {

std::function<void()> MemcpyOp(Context* ctx, CUdeviceptr dst, CUdeviceptr src,
                               size_t bytes) {
  return WorkOp(ctx, dst, src, bytes, [dst, src, bytes] {
    std::memmove(reinterpret_cast<void*>(dst),
                 reinterpret_cast<const void*>(src), bytes);
  });
}

template <typename T>
std::function<void()> MemsetOp(Context* ctx, CUdeviceptr dst, T value,
                               size_t count) {
  return WorkOp(ctx, dst, 0, count * sizeof(T), [dst, value, count] {
    T* p = reinterpret_cast<T*>(dst);
    for (size_t i = 0; i < count; ++i) p[i] = value;
  });
}

}  // namespace

HALSIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                     size_t bytes, CUstream hstream) {
  HALSIM_ENTER("cuMemcpyAsync");
  HALSIM_NEED_CONTEXT(ctx);
  if ((!dst || !src) && bytes) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  StreamOp op;
  op.name = "memcpy";
  op.bytes = bytes;
  op.write = {dst, dst + bytes};
  op.read = {src, src + bytes};
  op.run = MemcpyOp(stream->context, dst, src, bytes);
  return Enqueue(hstream, std::move(op));
}

template <typename T>
CUresult MemsetAsync(CUdeviceptr dst, T value, size_t count, CUstream hstream) {
  if (!dst && count) return CUDA_ERROR_INVALID_VALUE;
  if (dst % sizeof(T)) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  StreamOp op;
  op.name = "memset";
  op.bytes = count * sizeof(T);
  op.write = {dst, dst + count * sizeof(T)};
  op.run = MemsetOp<T>(stream->context, dst, value, count);
  return Enqueue(hstream, std::move(op));
}

HALSIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc,
                                       size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD8Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync<unsigned char>(dst, uc, n, hstream);
}

HALSIM_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short us,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD16Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync<unsigned short>(dst, us, n, hstream);
}

HALSIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD32Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync<unsigned int>(dst, ui, n, hstream);
}

// ---------------------------------------------------------------------------
// Modules and kernel launches.
//
// A PTX module's kernels run as the native (sim-format) build of the same
// test kernel: cuModuleLoadDataEx reads each `.entry NAME(...)` and its
// parameter list from the PTX text, and looks NAME up in the native kernel
// modules the build produces (build/<preset>/kernels/modules/*.sim.so,
// compiled in as HALSIM_CUDA_KERNEL_MODULES_DIR; HALSIM_CUDA_KERNEL_DIR
// overrides it). The PTX itself is never executed. cuLaunchKernel runs every
// block of the grid, one after another, on the stream's thread, with each
// pointer parameter bounded by the allocation it points into: an access
// outside it is CUDA_ERROR_ILLEGAL_ADDRESS (sticky), as a GPU's memory fault.

namespace {

struct NativeKernels {
  std::mutex mutex;
  bool loaded = false;
  std::vector<void*> handles;  // never closed: functions may still run
};

NativeKernels& Natives() {
  static NativeKernels* natives = new NativeKernels();
  return *natives;
}

std::string KernelModulesDir() {
  if (const char* env = std::getenv("HALSIM_CUDA_KERNEL_DIR"); env && *env) {
    return env;
  }
#ifdef HALSIM_CUDA_KERNEL_MODULES_DIR
  return HALSIM_CUDA_KERNEL_MODULES_DIR;
#else
  return "";
#endif
}

// The native kernel `name` and its info, or false.
bool FindNativeKernel(const std::string& name, hal_sim_kernel_fn* fn,
                      const hal_sim_kernel_info** info) {
  NativeKernels& n = Natives();
  std::lock_guard<std::mutex> lock(n.mutex);
  if (!n.loaded) {
    n.loaded = true;
    std::string dir = KernelModulesDir();
    if (DIR* d = opendir(dir.c_str())) {
      std::vector<std::string> files;
      while (dirent* e = readdir(d)) {
        std::string f = e->d_name;
        if (f.size() > 7 && f.compare(f.size() - 7, 7, ".sim.so") == 0) {
          files.push_back(dir + "/" + f);
        }
      }
      closedir(d);
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) {
        if (void* h = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL)) {
          n.handles.push_back(h);
        } else {
          std::fprintf(stderr, "halsim_cuda: cannot load %s: %s\n", f.c_str(),
                       dlerror());
        }
      }
    }
    if (n.handles.empty()) {
      std::fprintf(stderr,
                   "halsim_cuda: no native kernel modules (*.sim.so) in '%s'; "
                   "set HALSIM_CUDA_KERNEL_DIR\n",
                   dir.c_str());
    }
  }
  std::string info_name = name + "__hal_sim_info";
  for (void* h : n.handles) {
    void* f = dlsym(h, name.c_str());
    void* i = dlsym(h, info_name.c_str());
    if (f && i) {
      *fn = reinterpret_cast<hal_sim_kernel_fn>(f);
      *info = static_cast<const hal_sim_kernel_info*>(i);
      return true;
    }
  }
  return false;
}

struct Function {
  std::string name;
  std::vector<int> param_bytes;        // per PTX parameter: 8 (.u64) or 4
  hal_sim_kernel_fn native = nullptr;  // null: no native build
  const hal_sim_kernel_info* info = nullptr;
};

struct Module {
  Context* context = nullptr;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

// Parses `.entry NAME(<params>)` blocks. False for text that is not PTX.
bool ParsePtx(const std::string& ptx, Module* module) {
  if (ptx.find(".version") == std::string::npos ||
      ptx.find(".target") == std::string::npos) {
    return false;
  }
  size_t pos = 0;
  while ((pos = ptx.find(".entry", pos)) != std::string::npos) {
    pos += 6;
    size_t start = ptx.find_first_not_of(" \t\r\n", pos);
    if (start == std::string::npos) return false;
    size_t end = start;
    while (end < ptx.size() &&
           (std::isalnum(static_cast<unsigned char>(ptx[end])) ||
            ptx[end] == '_' || ptx[end] == '$')) {
      ++end;
    }
    if (end == start) return false;
    auto f = std::make_unique<Function>();
    f->name = ptx.substr(start, end - start);
    size_t open = ptx.find_first_not_of(" \t\r\n", end);
    if (open != std::string::npos && ptx[open] == '(') {
      size_t close = ptx.find(')', open);
      if (close == std::string::npos) return false;
      std::string params = ptx.substr(open + 1, close - open - 1);
      size_t p = 0;
      while ((p = params.find(".param", p)) != std::string::npos) {
        p += 6;
        size_t type = params.find_first_not_of(" \t\r\n", p);
        if (type == std::string::npos) return false;
        if (params.compare(type, 4, ".u64") == 0 ||
            params.compare(type, 4, ".b64") == 0 ||
            params.compare(type, 4, ".s64") == 0) {
          f->param_bytes.push_back(8);
        } else if (params.compare(type, 4, ".u32") == 0 ||
                   params.compare(type, 4, ".b32") == 0 ||
                   params.compare(type, 4, ".s32") == 0) {
          f->param_bytes.push_back(4);
        } else {
          return false;  // the kernel ABI has only pointers and uint32
        }
      }
      pos = close;
    }
    FindNativeKernel(f->name, &f->native, &f->info);
    std::string name = f->name;
    module->functions[name] = std::move(f);
  }
  return true;
}

std::atomic<uint64_t> g_kernels_run{0};

}  // namespace

HALSIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image,
                                          unsigned int num_options,
                                          CUjit_option* options,
                                          void** option_values) {
  HALSIM_ENTER("cuModuleLoadDataEx");
  HALSIM_NEED_CONTEXT(ctx);
  if (!module || !image || (num_options && (!options || !option_values))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char* text = static_cast<const char*>(image);
  if (std::strncmp(text,
                   "\x7f"
                   "ELF",
                   4) == 0) {
    std::fprintf(stderr,
                 "halsim_cuda: cuModuleLoadDataEx: cubin/ELF images are not "
                 "simulated; only PTX\n");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  auto m = std::make_unique<Module>();
  m->context = ctx;
  if (!ParsePtx(text, m.get()) || m->functions.empty()) {
    // Real CUDA writes the JIT error to CU_JIT_ERROR_LOG_BUFFER.
    for (unsigned i = 0; i < num_options; ++i) {
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER) {
        size_t size = 0;
        for (unsigned j = 0; j < num_options; ++j) {
          if (options[j] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
            size = reinterpret_cast<uintptr_t>(option_values[j]);
          }
        }
        if (size) {
          std::snprintf(static_cast<char*>(option_values[i]), size,
                        "halsim_cuda: not PTX the simulator understands "
                        "(.version, .target and .entry with .u64/.u32 "
                        "parameters)");
        }
      }
    }
    return CUDA_ERROR_INVALID_PTX;
  }
  *module = reinterpret_cast<CUmodule>(m.release());
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  HALSIM_ENTER("cuModuleUnload");
  HALSIM_NEED_INIT();
  if (!hmod) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Module*>(hmod);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod,
                                           const char* name) {
  HALSIM_ENTER("cuModuleGetFunction");
  HALSIM_NEED_CONTEXT(ctx);
  if (!hfunc || !hmod || !name) return CUDA_ERROR_INVALID_VALUE;
  auto* m = reinterpret_cast<Module*>(hmod);
  auto it = m->functions.find(name);
  if (it == m->functions.end()) return CUDA_ERROR_NOT_FOUND;
  Function* f = it->second.get();
  if (!f->native) {
    std::fprintf(stderr,
                 "halsim_cuda: PTX kernel '%s' has no native build in the "
                 "test-kernel modules (%s); the simulator cannot run it\n",
                 name, KernelModulesDir().c_str());
    return CUDA_ERROR_NOT_FOUND;
  }
  // The PTX signature must be the kernel ABI's: the native build's bindings
  // as pointers, then its constants.
  uint32_t n = static_cast<uint32_t>(f->param_bytes.size());
  bool ok = n == f->info->binding_count + f->info->constant_count &&
            f->info->abi_version == HAL_SIM_KERNEL_ABI_VERSION;
  for (uint32_t i = 0; ok && i < n; ++i) {
    ok = f->param_bytes[i] == (i < f->info->binding_count ? 8 : 4);
  }
  if (!ok) {
    std::fprintf(stderr,
                 "halsim_cuda: PTX kernel '%s' has %u parameters that do not "
                 "match its native build (%u bindings, %u constants)\n",
                 name, n, f->info->binding_count, f->info->constant_count);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *hfunc = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}

namespace {

// Checks a launch as cuLaunchKernel does, reads its parameters, and returns
// the work (stream op or graph node) in `out`.
CUresult KernelOp(Context* ctx, CUfunction hfunc, unsigned int grid_x,
                  unsigned int grid_y, unsigned int grid_z,
                  unsigned int block_x, unsigned int block_y,
                  unsigned int block_z, unsigned int shared_bytes,
                  void** kernel_params, void** extra,
                  std::function<void()>* out) {
  auto* f = reinterpret_cast<Function*>(hfunc);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  // CUDA's limits: grid x < 2^31, y and z <= 65535; 1024 threads per block,
  // 48 KiB of dynamic shared memory without an opt-in attribute.
  if (grid_x == 0 || grid_y == 0 || grid_z == 0 || grid_x > 0x7FFFFFFFu ||
      grid_y > 65535 || grid_z > 65535 || block_x == 0 || block_y == 0 ||
      block_z == 0 || uint64_t{block_x} * block_y * block_z > 1024 ||
      shared_bytes > 48 * 1024 || extra ||
      (!f->param_bytes.empty() && !kernel_params)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const hal_sim_kernel_info* info = f->info;
  // The native build was compiled for one block size.
  if (block_x != info->workgroup_size[0] ||
      block_y != info->workgroup_size[1] ||
      block_z != info->workgroup_size[2]) {
    std::fprintf(stderr,
                 "halsim_cuda: '%s' launched with blocks [%u, %u, %u]; its "
                 "native build runs [%u, %u, %u]\n",
                 f->name.c_str(), block_x, block_y, block_z,
                 info->workgroup_size[0], info->workgroup_size[1],
                 info->workgroup_size[2]);
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Parameters are read during the call, as CUDA does.
  uint32_t nb = info->binding_count, nc = info->constant_count;
  std::vector<uintptr_t> pointers(nb);
  std::vector<uint32_t> constants(nc);
  for (uint32_t i = 0; i < nb; ++i) {
    uint64_t p;
    std::memcpy(&p, kernel_params[i], 8);
    pointers[i] = static_cast<uintptr_t>(p);
  }
  for (uint32_t i = 0; i < nc; ++i) {
    std::memcpy(&constants[i], kernel_params[nb + i], 4);
  }
  uint32_t grid[3] = {grid_x, grid_y, grid_z};
  *out = [ctx, f, info, pointers = std::move(pointers),
          constants = std::move(constants), grid] {
    Sim& s = S();
    uint32_t nb = info->binding_count;
    std::vector<uint8_t*> data(nb);
    std::vector<uint64_t> lengths(nb);
    std::vector<uint32_t> flags(nb, 0);
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (ctx->sticky != CUDA_SUCCESS) return;
      if (OpFaultLocked()) {
        ctx->sticky = CUDA_ERROR_LAUNCH_FAILED;
        return;
      }
      // Each pointer may reach the end of the allocation it points into.
      for (uint32_t i = 0; i < nb; ++i) {
        uintptr_t base;
        const Allocation* a = FindAllocation(pointers[i], &base);
        if (!a) {
          std::fprintf(
              stderr,
              "halsim_cuda: '%s' parameter %u (0x%llx) is not in "
              "any allocation%s\n",
              f->name.c_str(), i, (unsigned long long)pointers[i],
              TouchesFreedLocked(pointers[i], 1) ? " (use after free)" : "");
          ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
          return;
        }
        data[i] = reinterpret_cast<uint8_t*>(pointers[i]);
        lengths[i] = base + a->size - pointers[i];
      }
    }
    hal_sim_dispatch_state state{};
    for (int i = 0; i < 3; ++i) {
      state.workgroup_count[i] = grid[i];
      state.workgroup_size[i] = info->workgroup_size[i];
    }
    state.constant_count = static_cast<uint32_t>(constants.size());
    state.constants = constants.data();
    state.binding_count = nb;
    state.binding_data = data.data();
    state.binding_lengths = lengths.data();
    state.binding_flags = flags.data();
    for (uint32_t z = 0; z < grid[2]; ++z) {
      for (uint32_t y = 0; y < grid[1]; ++y) {
        for (uint32_t x = 0; x < grid[0]; ++x) {
          // One block per call (kernel ABI v2 takes a range), so a fault
          // stops the launch at the faulting block, as before.
          state.workgroup_begin =
              x + uint64_t{grid[0]} * (y + uint64_t{grid[1]} * z);
          state.workgroup_end = state.workgroup_begin + 1;
          f->native(&state);
          if (state.fault != HAL_SIM_FAULT_NONE) {
            std::fprintf(stderr,
                         "halsim_cuda: illegal address: kernel '%s' block "
                         "(%u, %u, %u) thread (%u, %u, %u): %llu-byte access "
                         "at offset %llu of parameter %u, past its "
                         "allocation\n",
                         f->name.c_str(), x, y, z, state.fault_local_id[0],
                         state.fault_local_id[1], state.fault_local_id[2],
                         (unsigned long long)state.fault_length,
                         (unsigned long long)state.fault_offset,
                         state.fault_binding);
            std::lock_guard<std::mutex> lock(s.mutex);
            ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
            return;
          }
        }
      }
    }
    g_kernels_run.fetch_add(1);
    g_work_done.fetch_add(1);
  };
  return CUDA_SUCCESS;
}

}  // namespace

HALSIM_EXPORT CUresult
cuLaunchKernel(CUfunction hfunc, unsigned int grid_x, unsigned int grid_y,
               unsigned int grid_z, unsigned int block_x, unsigned int block_y,
               unsigned int block_z, unsigned int shared_bytes,
               CUstream hstream, void** kernel_params, void** extra) {
  HALSIM_ENTER("cuLaunchKernel");
  HALSIM_NEED_CONTEXT(ctx);
  if (!hfunc) return CUDA_ERROR_INVALID_HANDLE;
  if (!hstream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  StreamOp op;
  op.name = "kernel";
  CUresult r = KernelOp(ctx, hfunc, grid_x, grid_y, grid_z, block_x, block_y,
                        block_z, shared_bytes, kernel_params, extra, &op.run);
  if (r != CUDA_SUCCESS) return r;
  return Enqueue(hstream, std::move(op));
}

// ---------------------------------------------------------------------------
// Graphs.
//
// A graph is its nodes in creation order, each with its dependencies (nodes
// of the same graph, so added before it). cuGraphInstantiateWithFlags fixes
// one execution order: a topological order that, among the nodes whose
// dependencies all ran, always takes the one added last. It is deterministic,
// and it differs from the recording order wherever the dependencies allow,
// so a missing edge shows up as a wrong result instead of being hidden by
// recording order. cuGraphLaunch enqueues the whole order as one stream op;
// every node runs with the checks of its stream form (op faults, ranges,
// kernel bounds, sticky errors). Launches of one executable graph run one at
// a time in launch order, as CUDA orders them, also across streams.

namespace {

struct Graph;

struct GraphNode {
  Graph* graph = nullptr;
  size_t index = 0;
  std::vector<size_t> deps;
  std::function<void()> run;  // empty: an empty node
  bool host = false;          // a host node
};

struct Graph {
  Context* context = nullptr;
  std::vector<std::unique_ptr<GraphNode>> nodes;
};

std::atomic<uint64_t> g_graphs_run{0};

struct GraphExecState {
  std::vector<std::function<void()>> order;
  bool has_host_nodes = false;
  uint64_t launched = 0;  // tickets handed out (under the sim lock)
  uint64_t finished = 0;  // launches that ran
};

struct GraphExec {
  Context* context = nullptr;
  std::shared_ptr<GraphExecState> state;  // shared with in-flight launches
};

// Adds a node after checking the handles and dependencies.
CUresult AddNode(CUgraphNode* out, CUgraph hgraph, const CUgraphNode* deps,
                 size_t num_deps, std::function<void()> run) {
  auto* graph = reinterpret_cast<Graph*>(hgraph);
  if (!out || !graph || (num_deps && !deps)) return CUDA_ERROR_INVALID_VALUE;
  auto node = std::make_unique<GraphNode>();
  node->graph = graph;
  node->index = graph->nodes.size();
  for (size_t i = 0; i < num_deps; ++i) {
    auto* dep = reinterpret_cast<GraphNode*>(deps[i]);
    if (!dep || dep->graph != graph) return CUDA_ERROR_INVALID_VALUE;
    if (std::find(node->deps.begin(), node->deps.end(), dep->index) !=
        node->deps.end()) {
      return CUDA_ERROR_INVALID_VALUE;  // CUDA forbids duplicate entries
    }
    node->deps.push_back(dep->index);
  }
  node->run = std::move(run);
  *out = reinterpret_cast<CUgraphNode>(node.get());
  graph->nodes.push_back(std::move(node));
  return CUDA_SUCCESS;
}

// The address a 1D CUDA_MEMCPY3D operand names, or 0 for forms the
// simulator does not have (arrays, 2D/3D offsets).
uintptr_t MemcpyOperand(CUmemorytype type, const void* host, CUdeviceptr device,
                        CUarray array, size_t x, size_t y, size_t z) {
  if (array || y || z) return 0;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      return host ? reinterpret_cast<uintptr_t>(host) + x : 0;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
      return device ? static_cast<uintptr_t>(device) + x : 0;
    default:
      return 0;
  }
}

}  // namespace

HALSIM_EXPORT CUresult cuGraphCreate(CUgraph* phgraph, unsigned int flags) {
  HALSIM_ENTER("cuGraphCreate");
  HALSIM_NEED_CONTEXT(ctx);
  if (!phgraph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* graph = new Graph();
  graph->context = ctx;
  *phgraph = reinterpret_cast<CUgraph>(graph);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGraphDestroy(CUgraph hgraph) {
  HALSIM_ENTER("cuGraphDestroy");
  HALSIM_NEED_INIT();
  if (!hgraph) return CUDA_ERROR_INVALID_VALUE;
  delete reinterpret_cast<Graph*>(hgraph);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode* phnode, CUgraph hgraph,
                                           const CUgraphNode* deps,
                                           size_t num_deps) {
  HALSIM_ENTER("cuGraphAddEmptyNode");
  HALSIM_NEED_CONTEXT(ctx);
  return AddNode(phnode, hgraph, deps, num_deps, nullptr);
}

HALSIM_EXPORT CUresult cuGraphAddKernelNode(
    CUgraphNode* phnode, CUgraph hgraph, const CUgraphNode* deps,
    size_t num_deps, const CUDA_KERNEL_NODE_PARAMS* params) {
  HALSIM_ENTER("cuGraphAddKernelNode");
  HALSIM_NEED_CONTEXT(ctx);
  if (!params || !hgraph) return CUDA_ERROR_INVALID_VALUE;
  if (!params->func) return CUDA_ERROR_NOT_SUPPORTED;  // CUkernel handles
  // Parameters are copied now, as CUDA does.
  std::function<void()> op;
  CUresult r = KernelOp(reinterpret_cast<Graph*>(hgraph)->context, params->func,
                        params->gridDimX, params->gridDimY, params->gridDimZ,
                        params->blockDimX, params->blockDimY, params->blockDimZ,
                        params->sharedMemBytes, params->kernelParams,
                        params->extra, &op);
  if (r != CUDA_SUCCESS) return r;
  return AddNode(phnode, hgraph, deps, num_deps, std::move(op));
}

HALSIM_EXPORT CUresult cuGraphAddMemsetNode(
    CUgraphNode* phnode, CUgraph hgraph, const CUgraphNode* deps,
    size_t num_deps, const CUDA_MEMSET_NODE_PARAMS* params, CUcontext hctx) {
  HALSIM_ENTER("cuGraphAddMemsetNode");
  HALSIM_NEED_CONTEXT(ctx);
  if (!params || !hgraph || !hctx) return CUDA_ERROR_INVALID_VALUE;
  auto* graph = reinterpret_cast<Graph*>(hgraph);
  if (reinterpret_cast<Context*>(hctx) != graph->context) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (params->height != 1) {
    std::fprintf(stderr,
                 "halsim_cuda: 2D memset nodes are not simulated (height "
                 "%zu)\n",
                 params->height);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUdeviceptr dst = params->dst;
  size_t n = params->width;
  unsigned int size = params->elementSize;
  if (!dst || (size != 1 && size != 2 && size != 4) || dst % size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::function<void()> op;
  if (size == 1) {
    op = MemsetOp<unsigned char>(graph->context, dst,
                                 static_cast<unsigned char>(params->value), n);
  } else if (size == 2) {
    op = MemsetOp<unsigned short>(
        graph->context, dst, static_cast<unsigned short>(params->value), n);
  } else {
    op = MemsetOp<unsigned int>(graph->context, dst, params->value, n);
  }
  return AddNode(phnode, hgraph, deps, num_deps, std::move(op));
}

HALSIM_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode* phnode, CUgraph hgraph,
                                            const CUgraphNode* deps,
                                            size_t num_deps,
                                            const CUDA_MEMCPY3D* p,
                                            CUcontext hctx) {
  HALSIM_ENTER("cuGraphAddMemcpyNode");
  HALSIM_NEED_CONTEXT(ctx);
  if (!p || !hgraph || !hctx) return CUDA_ERROR_INVALID_VALUE;
  auto* graph = reinterpret_cast<Graph*>(hgraph);
  if (reinterpret_cast<Context*>(hctx) != graph->context) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (p->Height != 1 || p->Depth != 1) {
    std::fprintf(stderr,
                 "halsim_cuda: only 1D memcpy nodes are simulated (height "
                 "%zu, depth %zu)\n",
                 p->Height, p->Depth);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  uintptr_t src = MemcpyOperand(p->srcMemoryType, p->srcHost, p->srcDevice,
                                p->srcArray, p->srcXInBytes, p->srcY, p->srcZ);
  uintptr_t dst = MemcpyOperand(p->dstMemoryType, p->dstHost, p->dstDevice,
                                p->dstArray, p->dstXInBytes, p->dstY, p->dstZ);
  if (!src || !dst) return CUDA_ERROR_INVALID_VALUE;
  return AddNode(phnode, hgraph, deps, num_deps,
                 MemcpyOp(graph->context, dst, src, p->WidthInBytes));
}

HALSIM_EXPORT CUresult cuGraphAddHostNode(CUgraphNode* phnode, CUgraph hgraph,
                                          const CUgraphNode* deps,
                                          size_t num_deps,
                                          const CUDA_HOST_NODE_PARAMS* params) {
  HALSIM_ENTER("cuGraphAddHostNode");
  HALSIM_NEED_CONTEXT(ctx);
  if (!params || !params->fn) return CUDA_ERROR_INVALID_VALUE;
  CUhostFn fn = params->fn;
  void* user_data = params->userData;
  // As a host function: no CUDA calls from inside.
  CUresult r = AddNode(phnode, hgraph, deps, num_deps, [fn, user_data] {
    t_in_host_function = true;
    fn(user_data);
    t_in_host_function = false;
  });
  if (r == CUDA_SUCCESS) reinterpret_cast<GraphNode*>(*phnode)->host = true;
  return r;
}

HALSIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* phexec,
                                                   CUgraph hgraph,
                                                   unsigned long long flags) {
  HALSIM_ENTER("cuGraphInstantiateWithFlags");
  HALSIM_NEED_CONTEXT(ctx);
  auto* graph = reinterpret_cast<Graph*>(hgraph);
  if (!phexec || !graph) return CUDA_ERROR_INVALID_VALUE;
  if (flags != 0) return CUDA_ERROR_NOT_SUPPORTED;
  // Kahn's algorithm, taking the ready node added last.
  const size_t n = graph->nodes.size();
  std::vector<size_t> missing(n);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; ++i) {
    missing[i] = graph->nodes[i]->deps.size();
    for (size_t d : graph->nodes[i]->deps) dependents[d].push_back(i);
  }
  std::vector<size_t> ready;  // kept sorted ascending; the back runs next
  for (size_t i = 0; i < n; ++i) {
    if (missing[i] == 0) ready.push_back(i);
  }
  auto state = std::make_shared<GraphExecState>();
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    if (graph->nodes[i]->run) state->order.push_back(graph->nodes[i]->run);
    state->has_host_nodes = state->has_host_nodes || graph->nodes[i]->host;
    for (size_t j : dependents[i]) {
      if (--missing[j] == 0) {
        ready.insert(std::upper_bound(ready.begin(), ready.end(), j), j);
      }
    }
  }
  auto* exec = new GraphExec();
  exec->context = graph->context;
  exec->state = std::move(state);
  *phexec = reinterpret_cast<CUgraphExec>(exec);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuGraphLaunch(CUgraphExec hexec, CUstream hstream) {
  HALSIM_ENTER("cuGraphLaunch");
  HALSIM_NEED_CONTEXT(ctx);
  auto* exec = reinterpret_cast<GraphExec*>(hexec);
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  if (!hstream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  std::shared_ptr<GraphExecState> state = exec->state;
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(S().mutex);
    ticket = state->launched++;
  }
  StreamOp op;
  op.name = "graph";
  op.host = state->has_host_nodes;
  // After the earlier launches of this executable graph.
  op.ready = [state, ticket] { return state->finished == ticket; };
  op.run = [state] {
    for (const std::function<void()>& node : state->order) node();
    g_graphs_run.fetch_add(1);
    std::lock_guard<std::mutex> lock(S().mutex);
    ++state->finished;
  };
  return Enqueue(hstream, std::move(op));
}

HALSIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hexec) {
  HALSIM_ENTER("cuGraphExecDestroy");
  HALSIM_NEED_INIT();
  if (!hexec) return CUDA_ERROR_INVALID_VALUE;
  // In-flight launches keep the node list (CUDA frees it on completion).
  delete reinterpret_cast<GraphExec*>(hexec);
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Entry points by name.

namespace {
struct ProcEntry {
  const char* name;
  void* fn;
};
// #name keeps the un-suffixed API name; the pointer is the versioned
// definition cuda.h's macros map the name to (cuMemAlloc -> cuMemAlloc_v2).
#define HALSIM_PROC(name) {#name, reinterpret_cast<void*>(&name)},
// clang-format off
const ProcEntry kProcs[] = {
    HALSIM_PROC(cuInit)
    HALSIM_PROC(cuDriverGetVersion)
    HALSIM_PROC(cuGetErrorName)
    HALSIM_PROC(cuGetErrorString)
    HALSIM_PROC(cuDeviceGet)
    HALSIM_PROC(cuDeviceGetCount)
    HALSIM_PROC(cuDeviceGetName)
    HALSIM_PROC(cuDeviceGetUuid)
    HALSIM_PROC(cuDeviceTotalMem)
    HALSIM_PROC(cuDeviceGetAttribute)
    HALSIM_PROC(cuDeviceGetDefaultMemPool)
    HALSIM_PROC(cuDevicePrimaryCtxRetain)
    HALSIM_PROC(cuDevicePrimaryCtxRelease)
    HALSIM_PROC(cuCtxPushCurrent)
    HALSIM_PROC(cuCtxPopCurrent)
    HALSIM_PROC(cuStreamCreate)
    HALSIM_PROC(cuStreamDestroy)
    HALSIM_PROC(cuStreamWaitEvent)
    HALSIM_PROC(cuStreamSynchronize)
    HALSIM_PROC(cuEventCreate)
    HALSIM_PROC(cuEventDestroy)
    HALSIM_PROC(cuEventRecord)
    HALSIM_PROC(cuEventQuery)
    HALSIM_PROC(cuEventSynchronize)
    HALSIM_PROC(cuLaunchHostFunc)
    HALSIM_PROC(cuMemAlloc)
    HALSIM_PROC(cuMemAllocManaged)
    HALSIM_PROC(cuMemFree)
    HALSIM_PROC(cuMemHostAlloc)
    HALSIM_PROC(cuMemFreeHost)
    HALSIM_PROC(cuMemHostRegister)
    HALSIM_PROC(cuMemHostUnregister)
    HALSIM_PROC(cuMemHostGetDevicePointer)
    HALSIM_PROC(cuMemAllocFromPoolAsync)
    HALSIM_PROC(cuMemFreeAsync)
    HALSIM_PROC(cuMemcpyAsync)
    HALSIM_PROC(cuMemsetD8Async)
    HALSIM_PROC(cuMemsetD16Async)
    HALSIM_PROC(cuMemsetD32Async)
    HALSIM_PROC(cuModuleLoadDataEx)
    HALSIM_PROC(cuModuleUnload)
    HALSIM_PROC(cuModuleGetFunction)
    HALSIM_PROC(cuLaunchKernel)
    HALSIM_PROC(cuGraphCreate)
    HALSIM_PROC(cuGraphDestroy)
    HALSIM_PROC(cuGraphAddEmptyNode)
    HALSIM_PROC(cuGraphAddKernelNode)
    HALSIM_PROC(cuGraphAddMemsetNode)
    HALSIM_PROC(cuGraphAddMemcpyNode)
    HALSIM_PROC(cuGraphAddHostNode)
    HALSIM_PROC(cuGraphInstantiateWithFlags)
    HALSIM_PROC(cuGraphLaunch)
    HALSIM_PROC(cuGraphExecDestroy)
};
// clang-format on
#undef HALSIM_PROC
}  // namespace

HALSIM_EXPORT CUresult
cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                    cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  HALSIM_ENTER("cuGetProcAddress");
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (cuda_version > kSimDriverVersion) {
    if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  for (const ProcEntry& e : kProcs) {
    if (std::strcmp(e.name, symbol) == 0) {
      *pfn = e.fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

// The CUDA 11.3-11.8 signature, for callers that ask for it by name.
#undef cuGetProcAddress
HALSIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn,
                                        int cuda_version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, nullptr);
}

// ---------------------------------------------------------------------------
// Simulator controls (sim/cuda/sim_libcuda.h).

HALSIM_EXPORT uint64_t halsim_cuda_host_functions_launched(void) {
  return g_launched.load();
}
HALSIM_EXPORT uint64_t halsim_cuda_host_functions_run(void) {
  return g_run.load();
}
HALSIM_EXPORT uint64_t halsim_cuda_api_violations(void) {
  return g_violations.load();
}

HALSIM_EXPORT uint64_t halsim_cuda_kernels_run(void) {
  return g_kernels_run.load();
}
HALSIM_EXPORT uint64_t halsim_cuda_graphs_run(void) {
  return g_graphs_run.load();
}

HALSIM_EXPORT uint64_t halsim_cuda_stream_work_done(void) {
  return g_work_done.load();
}

HALSIM_EXPORT void halsim_cuda_pause_host_functions(int paused) {
  std::lock_guard<std::mutex> lock(S().mutex);
  S().host_functions_paused = paused != 0;
  S().cv.notify_all();
}

HALSIM_EXPORT int halsim_cuda_set_faults(const char* plan) {
  FaultPlan parsed;
  if (!ParseFaults(plan, &parsed)) return -1;
  std::lock_guard<std::mutex> lock(S().mutex);
  S().faults = parsed;
  S().allocs = 0;
  S().stream_ops = 0;
  ResetFaultRandomLocked();
  return 0;
}

HALSIM_EXPORT int halsim_cuda_reset_schedule(uint64_t seed) {
  Sim& s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (Stream* stream : s.streams) {
    if (!stream->ops.empty()) return -1;
  }
  s.seed = seed;
  s.schedule_reset = true;
  s.schedule = SimRandom(seed);
  ResetFaultRandomLocked();
  s.allocs = 0;
  s.stream_ops = 0;
  s.now_ns = 0;
  s.trace = hal::sim::TraceHash();
  s.trace_stream_base = s.next_stream_id;
  return 0;
}

HALSIM_EXPORT uint64_t halsim_cuda_seed(void) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().seed;
}
HALSIM_EXPORT uint64_t halsim_cuda_trace_hash(void) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().trace.value();
}
HALSIM_EXPORT uint64_t halsim_cuda_trace_length(void) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().trace.lines();
}
HALSIM_EXPORT uint64_t halsim_cuda_virtual_time_ns(void) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().now_ns;
}
HALSIM_EXPORT uint64_t halsim_cuda_races(void) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().races;
}
HALSIM_EXPORT uint64_t halsim_cuda_unrecorded_waits(void) {
  return g_unrecorded_waits.load();
}
HALSIM_EXPORT uint64_t halsim_cuda_unsettled_steps(void) {
  std::lock_guard<std::mutex> lock(S().mutex);
  return S().unsettled_steps;
}
