// Random HAL programs on any device (HAL_TEST_DEVICE, default the
// simulator): the input is a program over a few slots of semaphores,
// buffers, command buffers and mappings. Ops: create/destroy semaphores,
// host signal/fail/wait/poll, allocations of many types, usages and sizes
// (zero and huge included), queue_alloca/dealloca, fill/update/copy/barrier/
// host calls with wait and signal lists drawn from the slots (duplicates,
// non-increasing values, failed semaphores), command buffers (one-shot and
// reusable, binding-table slots), mappings, subspans, WaitIdle and faults
// (sim:// through SimSetFaults, a driver over a simulated vendor library
// through halsim_set_faults, sim/core/halsim_control.h).
//
// The oracle, besides "no crash, no sanitizer report, no leak":
//  * every status is one of the codes documented for its call;
//  * a call that fails enqueued nothing: the semaphores it names are
//    unchanged (checked for those no unfinished operation signals);
//  * payloads never go down, a failed semaphore stays failed with its code;
//  * a host call never starts before its waits are reached;
//  * a fill or update of a buffer no unfinished operation touches, waited
//    for, reads back as written (and, where the buffer maps, changed nothing
//    else);
//  * no hang: every wait is bounded; at the end either every semaphore is
//    failed and WaitIdle returns within 10 s, or the device is destroyed
//    with work pending; either way every accepted operation has finished
//    (each gets a private "done" semaphore as the last signal).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "drivers/sim/sim_context.h"
#include "drivers/sim/sim_device.h"
#include "fuzz/fuzz_input.h"
#include "hal/command_buffer.h"
#include "hal/device.h"
#include "hal/driver.h"
#include "hal/semaphore.h"
#include "hal/uri.h"
#include "sim/core/halsim_control_loader.h"

namespace {
using namespace hal;
using hal::fuzz::FuzzInput;
using Codes = std::initializer_list<StatusCode>;

constexpr int kSemSlots = 4;
constexpr int kBufSlots = 6;
constexpr int kCbSlots = 3;
constexpr int kMapSlots = 2;
constexpr size_t kMaxOps = 96;
constexpr size_t kRecordSize = 32;
// A wait that must finish: longer means a hang.
constexpr auto kMustFinish = std::chrono::seconds(10);

// Codes a host Fail or a host call injects.
constexpr StatusCode kInjected[] = {
    StatusCode::kAborted, StatusCode::kDataLoss, StatusCode::kUnavailable,
    StatusCode::kCancelled, StatusCode::kPermissionDenied};
// Validation codes of queue operations and recording (hal/device.h,
// hal/command_buffer.h, docs/architecture.md "Error codes").

constexpr Codes kQueueCodes = {StatusCode::kInvalidArgument,
                               StatusCode::kOutOfRange,
                               StatusCode::kFailedPrecondition};

// The environment's device (the property tests' convention), the simulator
// by default. A sim:// URI without a seed gets one from the input so that an
// input replays exactly.
std::string DeviceUriFor(uint8_t seed, bool* is_sim,
                         const sim::HalsimControl** vendor_sim) {
  const char* env = std::getenv("HAL_TEST_DEVICE");
  std::string uri = env && *env ? env : "sim://?queues=4";
  StatusOr<DeviceUri> parsed = DeviceUri::Parse(uri);
  *is_sim = parsed.ok() && parsed->driver == "sim";
  const sim::HalsimControl& control =
      sim::FindHalsimControl(parsed.ok() ? parsed->driver : "");
  *vendor_sim = control ? &control : nullptr;
  if (*is_sim && !parsed->has_param("seed")) {
    parsed->params["seed"] = std::to_string(seed);
    return parsed->ToString();
  }
  return uri;
}

struct Observed {
  uint64_t payload = 0;  // highest payload seen
  bool failed = false;
  StatusCode code = StatusCode::kOk;
};

struct SemSlot {
  Ref<Semaphore> sem;
  uint64_t id = 0;
  Observed seen;
};

struct BufSlot {
  Ref<Buffer> buffer;
  uint64_t id = 0;  // of the allocation (shared by subspans)
};

struct CbSlot {
  Ref<CommandBuffer> cb;
  std::vector<uint64_t> buffer_ids;  // direct references
};

// An operation the device accepted.
struct Op {
  Ref<Semaphore> done;  // the private last signal
  std::vector<std::pair<Ref<Semaphore>, uint64_t>> signals;
  std::vector<uint64_t> signal_ids;
  std::vector<uint64_t> buffer_ids;
  bool finished = false;
};

class Program {
 public:
  Program(Ref<Device> device, bool is_sim, const sim::HalsimControl* vendor_sim)
      : device_(std::move(device)), is_sim_(is_sim), vendor_sim_(vendor_sim) {}

  // `data` is a sequence of kRecordSize-byte records, one op each (an op
  // reads its arguments from its record only, zeros past its end).
  void Run(const uint8_t* data, size_t size, bool fail_all_at_end) {
    FuzzInput none(nullptr, 0);
    in_ = &none;
    for (int i = 0; i < kSemSlots; ++i) NewSemaphore(i, i);
    for (size_t pos = 0, ops = 0; pos < size && ops < kMaxOps;
         pos += kRecordSize, ++ops) {
      FuzzInput record(data + pos, std::min(kRecordSize, size - pos));
      in_ = &record;
      Step();
    }
    in_ = &none;
    Finish(fail_all_at_end);
  }

 private:
  // --- statuses ------------------------------------------------------------

  // A canonical code; INTERNAL only after injected simulator faults and
  // UNKNOWN only after Fail(OK), which may have spread to any status that
  // reports a semaphore's failure.
  void CheckCode(const Status& status, const char* what) {
    int code = static_cast<int>(status.code());
    HAL_FUZZ_CHECK(
        code >= 0 && code <= static_cast<int>(StatusCode::kUnauthenticated),
        "%s: status code %d is not canonical", what, code);
    HAL_FUZZ_CHECK(status.code() != StatusCode::kInternal || sim_faults_,
                   "%s: INTERNAL without an injected fault: %s", what,
                   status.ToString().c_str());
    HAL_FUZZ_CHECK(status.code() != StatusCode::kUnknown || failed_with_ok_,
                   "%s: UNKNOWN: %s", what, status.ToString().c_str());
  }

  // A validation error: one of `allowed` (the codes documented for the call).
  void Check(const Status& status, Codes allowed, const char* what) {
    if (verbose_)
      std::fprintf(stderr, "  %s: %s\n", what, status.ToString().c_str());
    CheckCode(status, what);
    if (status.ok()) return;
    for (StatusCode c : allowed) {
      if (status.code() == c) return;
    }
    HAL_FUZZ_CHECK(false, "%s: %s is not a documented code for this call", what,
                   status.ToString().c_str());
  }

  // --- model ---------------------------------------------------------------

  void Observe(SemSlot& s) { Observe(s.sem.get(), s.seen); }
  void Observe(Semaphore* sem, Observed& o) {
    StatusOr<uint64_t> q = sem->Query();
    if (!q.ok()) {
      CheckFailureCode(q.status());
      HAL_FUZZ_CHECK(!o.failed || q.status().code() == o.code,
                     "failure code changed from %s to %s",
                     StatusCodeName(o.code), q.status().ToString().c_str());
      o.failed = true;
      o.code = q.status().code();
      return;
    }
    HAL_FUZZ_CHECK(!o.failed, "a failed semaphore recovered (payload %llu)",
                   (unsigned long long)*q);
    HAL_FUZZ_CHECK(*q >= o.payload, "payload went down from %llu to %llu",
                   (unsigned long long)o.payload, (unsigned long long)*q);
    o.payload = *q;
  }
  // A failure reaches a semaphore from Fail, a host call, a fault, a hazard,
  // a device loss or a cancellation.
  void CheckFailureCode(const Status& status) {
    HAL_FUZZ_CHECK(!status.ok(), "failure without a code");
    CheckCode(status, "semaphore failure");
  }

  static bool Resolved(Semaphore* sem, uint64_t value) {
    StatusOr<uint64_t> q = sem->Query();
    return !q.ok() || *q >= value;
  }
  bool Finished(Op& op) {
    if (op.finished) return true;
    if (!Resolved(op.done.get(), 1)) return false;
    for (auto& [sem, value] : op.signals) {
      if (!Resolved(sem.get(), value)) return false;
    }
    op.finished = true;
    return true;
  }
  bool BufferQuiet(uint64_t id) {
    for (Op& op : ops_) {
      if (Finished(op)) continue;
      if (std::find(op.buffer_ids.begin(), op.buffer_ids.end(), id) !=
          op.buffer_ids.end()) {
        return false;
      }
    }
    return true;
  }
  bool Signalled(uint64_t sem_id) {
    for (Op& op : ops_) {
      if (Finished(op)) continue;
      if (std::find(op.signal_ids.begin(), op.signal_ids.end(), sem_id) !=
          op.signal_ids.end()) {
        return true;
      }
    }
    return false;
  }

  // --- generators ----------------------------------------------------------
  // Each read of the input is its own statement (or a sequenced part of
  // one): the order of function arguments differs between GCC and Clang,
  // and a corpus must replay the same in both builds.

  void NewSemaphore(int slot, uint64_t initial) {
    StatusOr<Ref<Semaphore>> s = device_->CreateSemaphore(initial);
    Check(s.status(), {StatusCode::kResourceExhausted}, "CreateSemaphore");
    if (!s.ok()) return;
    if (sems_[slot].sem) graveyard_.push_back(sems_[slot].sem);
    sems_[slot].sem = s.value();
    sems_[slot].id = next_id_++;
    sems_[slot].seen = Observed{};
    Observe(sems_[slot]);
  }

  QueueAffinity Affinity() {
    switch (in_->Below(8)) {
      case 0:
        return kQueueAffinityAny;
      case 1:
        return 0;  // no queue: INVALID_ARGUMENT
      case 2:
        return in_->U64();
      default:
        return QueueAffinity{1} << (in_->U8() % device_->queue_count());
    }
  }

  // Mostly small; zero; huge values near 2^64 and 2^48 that must be refused
  // without allocating (a size the host could allocate but that is above a
  // few KiB would only make the fuzzer slow or hit its memory limit).
  DeviceSize AllocSize() {
    switch (in_->Below(10)) {
      case 0:
        return 0;
      case 1:
        return ~DeviceSize{0} - in_->U8();
      case 2:
        return ~DeviceSize{0} - 100 - in_->U8() * 4096ull;
      case 3: {
        DeviceSize high = DeviceSize{1} << (48 + in_->Below(16));
        return high + in_->U8();
      }
      case 4:
        return 4096u * (1 + in_->Below(16));
      default: {
        DeviceSize words = in_->U8();
        return 1 + words * 4 + in_->Below(4);
      }
    }
  }
  // An offset or length inside (or just outside) a buffer of `size`.
  DeviceSize Range(DeviceSize size) {
    switch (in_->Below(8)) {
      case 0:
        return kWholeBuffer;
      case 1:
        return ~DeviceSize{0} - in_->U8();
      case 2:
        return size + in_->Below(8);
      case 3:
        return 0;
      default:
        if (!size) return in_->Below(8);
        DeviceSize v = in_->U32();
        return size == ~DeviceSize{0} ? v : v % (size + 1);
    }
  }

  BufferParams GenParams() {
    static constexpr MemoryType kTypes[] = {
        MemoryType::kDeviceLocal,
        MemoryType::kHostLocal | MemoryType::kHostCoherent,
        MemoryType::kDeviceLocal | MemoryType::kHostVisible |
            MemoryType::kHostCoherent,
        MemoryType::kHostLocal,
        MemoryType::kOptimal,
        MemoryType::kNone,
        MemoryType::kHostLocal | MemoryType::kHostCoherent |
            MemoryType::kHostCached,
    };
    static constexpr BufferUsage kUsages[] = {
        BufferUsage::kTransfer | BufferUsage::kMappingScoped,
        BufferUsage::kTransfer | BufferUsage::kMapping,
        BufferUsage::kTransfer,
        BufferUsage::kDefault,
        BufferUsage::kTransferTarget,
        BufferUsage::kTransferSource | BufferUsage::kMappingPersistent,
        BufferUsage::kNone,
        BufferUsage::kDefault | BufferUsage::kMapping,
    };
    BufferParams p;
    p.type = kTypes[in_->Below(std::size(kTypes))];
    p.usage = kUsages[in_->Below(std::size(kUsages))];
    if (in_->Below(4) == 3) p.access = static_cast<MemoryAccess>(in_->Below(8));
    switch (in_->Below(6)) {
      case 0:
        p.min_alignment = DeviceSize{1} << in_->Below(17);
        break;
      case 1:
        p.min_alignment = in_->U32();
        break;  // often not a power of two
      default:
        break;
    }
    if (in_->Below(6) == 5) p.queue_affinity = Affinity();
    return p;
  }

  // Points from the slots: duplicates, reached and unreached values,
  // non-increasing signals, huge values, sometimes a null semaphore.
  void GenPoints(std::vector<SemaphorePoint>& out, bool signal) {
    int n = in_->Below(4);
    for (int i = 0; i < n; ++i) {
      SemSlot& s = sems_[in_->Below(kSemSlots)];
      uint64_t v;
      switch (in_->Below(8)) {
        case 0:
          v = in_->U64();
          break;
        case 1:
          v = s.seen.payload;
          break;  // reached; not above it
        case 2:
          v = s.seen.payload ? s.seen.payload - 1 : 0;
          break;
        default:
          v = s.seen.payload + 1 + in_->Below(3);
          break;
      }
      out.push_back({in_->Below(32) == 31 ? nullptr : s.sem.get(), v});
    }
    (void)signal;
  }

  Buffer* BufferArg() {
    int i = in_->Below(kBufSlots + 1);
    return i < kBufSlots ? bufs_[i].buffer.get() : nullptr;
  }
  uint64_t BufferId(Buffer* b) const {
    if (!b) return 0;
    for (const BufSlot& s : bufs_) {
      if (s.buffer.get() == b) return s.id;
    }
    return 0;
  }

  // --- submission with the model --------------------------------------------

  struct Submission {
    std::vector<SemaphorePoint> wait, signal;
    std::vector<uint64_t> buffer_ids;
    QueueAffinity affinity = 0;
    // Filled by Begin: the signal list with the done semaphore at its end.
    std::vector<SemaphorePoint> signal_with_done;
    Ref<Semaphore> done;
    struct Snapshot {
      Semaphore* sem;
      StatusOr<uint64_t> value;
    };
    std::vector<Snapshot> snapshot;
  };

  void Gen(Submission& sub) {
    sub.affinity = Affinity();
    GenPoints(sub.wait, false);
    GenPoints(sub.signal, true);
  }

  uint64_t SemId(Semaphore* sem) const {
    for (const SemSlot& s : sems_) {
      if (s.sem.get() == sem) return s.id;
    }
    return 0;
  }

  // Before the call: the done semaphore, and the state of every named
  // semaphore that no unfinished operation may change meanwhile.
  void Begin(Submission& sub) {
    sub.done = device_->CreateSemaphore(0).value();
    sub.signal_with_done = sub.signal;
    sub.signal_with_done.push_back({sub.done.get(), 1});
    for (auto* list : {&sub.wait, &sub.signal}) {
      for (const SemaphorePoint& p : *list) {
        if (!p.semaphore || Signalled(SemId(p.semaphore))) continue;
        sub.snapshot.push_back({p.semaphore, p.semaphore->Query()});
      }
    }
  }

  // After the call: an error changed nothing; success adds an op.
  void End(Submission& sub, const Status& status, Codes allowed,
           const char* what) {
    Check(status, allowed, what);
    if (!status.ok()) {
      for (auto& snap : sub.snapshot) {
        StatusOr<uint64_t> now = snap.sem->Query();
        bool same =
            now.ok() == snap.value.ok() &&
            (now.ok() ? *now == *snap.value
                      : now.status().code() == snap.value.status().code());
        HAL_FUZZ_CHECK(same, "%s failed (%s) but changed a semaphore: %s -> %s",
                       what, status.ToString().c_str(),
                       snap.value.ok() ? std::to_string(*snap.value).c_str()
                                       : snap.value.status().ToString().c_str(),
                       now.ok() ? std::to_string(*now).c_str()
                                : now.status().ToString().c_str());
      }
      HAL_FUZZ_CHECK(sub.done->Query().ok() && *sub.done->Query() == 0,
                     "%s failed but signalled its done semaphore", what);
      return;
    }
    Op op;
    op.done = sub.done;
    for (const SemaphorePoint& p : sub.signal) {
      op.signals.emplace_back(Ref<Semaphore>(p.semaphore), p.value);
      op.signal_ids.push_back(SemId(p.semaphore));
    }
    op.buffer_ids = sub.buffer_ids;
    ops_.push_back(std::move(op));
  }

  // --- the ops ---------------------------------------------------------------

  void Step() {
    static constexpr const char* kNames[] = {"create_semaphore",
                                             "signal",
                                             "fail",
                                             "wait",
                                             "wait_semaphores",
                                             "allocate",
                                             "queue_alloca",
                                             "queue_dealloca",
                                             "queue_fill",
                                             "queue_update",
                                             "queue_copy",
                                             "queue_barrier",
                                             "queue_host_call",
                                             "record",
                                             "queue_execute",
                                             "queue_execute",
                                             "map",
                                             "unmap",
                                             "map_helpers",
                                             "verified_transfer",
                                             "verified_transfer",
                                             "fault",
                                             "wait_idle",
                                             "subspan"};
    uint32_t op = in_->Below(24);
    if (verbose_) std::fprintf(stderr, "op %s\n", kNames[op]);
    switch (op) {
      case 0: {
        int slot = in_->Below(kSemSlots);
        NewSemaphore(slot, in_->Bool() ? in_->Below(4) : in_->U64());
        break;
      }
      case 1:
        HostSignal();
        break;
      case 2:
        HostFail();
        break;
      case 3:
        HostWait();
        break;
      case 4:
        MultiWait();
        break;
      case 5:
        Allocate();
        break;
      case 6:
        Alloca();
        break;
      case 7:
        Dealloca();
        break;
      case 8:
        Fill();
        break;
      case 9:
        Update();
        break;
      case 10:
        Copy();
        break;
      case 11:
        Barrier();
        break;
      case 12:
        HostCall();
        break;
      case 13:
        Record();
        break;
      case 14:
      case 15:
        Execute();
        break;
      case 16:
        MapOp();
        break;
      case 17:
        UnmapOp();
        break;
      case 18:
        MapHelpers();
        break;
      case 19:
      case 20:
        VerifiedTransfer();
        break;
      case 21:
        Fault();
        break;
      case 22:
        Idle();
        break;
      case 23:
        SubspanOp();
        break;
    }
  }

  void HostSignal() {
    SemSlot& s = sems_[in_->Below(kSemSlots)];
    Observe(s);
    uint64_t v = in_->Bool() ? s.seen.payload + in_->Below(4) : in_->U64();
    Status st = s.sem->Signal(v);
    CheckCode(st, "Signal");
    if (st.ok()) {
      HAL_FUZZ_CHECK(v > s.seen.payload,
                     "Signal(%llu) at or below %llu succeeded",
                     (unsigned long long)v, (unsigned long long)s.seen.payload);
    } else if (st.code() == StatusCode::kInvalidArgument) {
      StatusOr<uint64_t> q = s.sem->Query();
      HAL_FUZZ_CHECK(!q.ok() || *q >= v,
                     "INVALID_ARGUMENT for a signal above the payload");
    } else {
      StatusOr<uint64_t> q = s.sem->Query();
      HAL_FUZZ_CHECK(!q.ok() && q.status().code() == st.code(),
                     "Signal: %s is neither INVALID_ARGUMENT nor the failure",
                     st.ToString().c_str());
    }
    Observe(s);
  }

  void HostFail() {
    SemSlot& s = sems_[in_->Below(kSemSlots)];
    Observe(s);
    bool was_failed = s.seen.failed;
    int n = static_cast<int>(std::size(kInjected));
    int pick = static_cast<int>(in_->Below(n + 1));
    if (pick == n) {
      failed_with_ok_ = true;
      s.sem->Fail(OkStatus());
    } else {
      s.sem->Fail(Status(kInjected[pick], "fuzz"));
    }
    Observe(s);
    HAL_FUZZ_CHECK(was_failed || s.seen.failed,
                   "Fail did not fail the semaphore");
  }

  Timeout ShortTimeout() {
    return in_->Bool()
               ? Timeout::Immediate()
               : Timeout::After(std::chrono::microseconds(100 * in_->Below(8)));
  }

  void HostWait() {
    SemSlot& s = sems_[in_->Below(kSemSlots)];
    Observe(s);
    uint64_t v = s.seen.payload + (in_->Bool() ? 0 : in_->Below(4));
    bool reached = !s.seen.failed && s.seen.payload >= v;
    Status st = s.sem->Wait(v, ShortTimeout());
    CheckCode(st, "Wait");
    Observe(s);
    if (reached) {
      HAL_FUZZ_CHECK(st.code() != StatusCode::kDeadlineExceeded,
                     "a wait for a reached value timed out");
    }
    if (st.ok()) {
      HAL_FUZZ_CHECK(s.seen.failed || s.seen.payload >= v,
                     "Wait OK below its value");
    } else if (st.code() != StatusCode::kDeadlineExceeded) {
      HAL_FUZZ_CHECK(s.seen.failed && st.code() == s.seen.code,
                     "Wait: %s is neither a timeout nor the failure",
                     st.ToString().c_str());
    }
  }

  void MultiWait() {
    std::vector<SemaphorePoint> points;
    GenPoints(points, false);
    bool has_null = false;
    for (auto& p : points) has_null |= !p.semaphore;
    WaitMode mode = in_->Bool() ? WaitMode::kAll : WaitMode::kAny;
    Status st = WaitSemaphores(mode, points, ShortTimeout());
    CheckCode(st, "WaitSemaphores");
    if (points.empty())
      HAL_FUZZ_CHECK(st.ok(), "empty wait list: %s", st.ToString().c_str());
    if (has_null) {
      HAL_FUZZ_CHECK(st.code() == StatusCode::kInvalidArgument,
                     "a null semaphore in a wait list gave %s",
                     st.ToString().c_str());
    } else if (!st.ok() && st.code() != StatusCode::kDeadlineExceeded) {
      bool from_failure = false;
      for (auto& p : points) {
        StatusOr<uint64_t> q = p.semaphore->Query();
        from_failure |= !q.ok() && q.status().code() == st.code();
      }
      HAL_FUZZ_CHECK(from_failure,
                     "WaitSemaphores: %s is neither a timeout nor a failure",
                     st.ToString().c_str());
    }
  }

  void PutBuffer(Ref<Buffer> b, uint64_t id) {
    BufSlot& slot = bufs_[in_->Below(kBufSlots)];
    slot.buffer = std::move(b);
    slot.id = id;
  }

  void Allocate() {
    BufferParams p = GenParams();
    DeviceSize size = AllocSize();
    StatusOr<Ref<Buffer>> b = device_->allocator()->AllocateBuffer(p, size);
    Check(b.status(),
          {StatusCode::kInvalidArgument, StatusCode::kResourceExhausted},
          "AllocateBuffer");
    if (!b.ok()) return;
    HAL_FUZZ_CHECK(b.value()->byte_length() == size,
                   "AllocateBuffer(%llu) gave %llu bytes",
                   (unsigned long long)size,
                   (unsigned long long)b.value()->byte_length());
    HAL_FUZZ_CHECK(size < (DeviceSize{1} << 40),
                   "AllocateBuffer(%llu) succeeded", (unsigned long long)size);
    PutBuffer(b.value(), next_id_++);
  }

  void Alloca() {
    Submission sub;
    Gen(sub);
    BufferParams p = GenParams();
    DeviceSize size = AllocSize();
    uint64_t id = next_id_++;
    sub.buffer_ids.push_back(id);
    Begin(sub);
    StatusOr<Ref<Buffer>> b = device_->QueueAlloca(
        sub.affinity, sub.wait, sub.signal_with_done, p, size);
    End(sub, b.status(),
        {StatusCode::kInvalidArgument, StatusCode::kOutOfRange,
         StatusCode::kFailedPrecondition, StatusCode::kResourceExhausted},
        "QueueAlloca");
    if (b.ok()) PutBuffer(b.value(), id);
  }

  void Dealloca() {
    Submission sub;
    Gen(sub);
    Buffer* b = BufferArg();
    sub.buffer_ids.push_back(BufferId(b));
    Begin(sub);
    End(sub,
        device_->QueueDealloca(sub.affinity, sub.wait, sub.signal_with_done, b),
        kQueueCodes, "QueueDealloca");
  }

  uint32_t Pattern(size_t* length) {
    static constexpr size_t kLengths[] = {1, 2, 4, 3, 0, 8};
    *length = kLengths[in_->Below(std::size(kLengths))];
    return in_->U32();
  }

  void Fill() {
    Submission sub;
    Gen(sub);
    Buffer* b = BufferArg();
    DeviceSize size = b ? b->byte_length() : 0;
    DeviceSize offset = Range(size), length = Range(size);
    size_t plen;
    uint32_t pattern = Pattern(&plen);
    sub.buffer_ids.push_back(BufferId(b));
    Begin(sub);
    End(sub,
        device_->QueueFill(sub.affinity, sub.wait, sub.signal_with_done, b,
                           offset, length,
                           in_->Below(16) == 15 ? nullptr : &pattern, plen),
        kQueueCodes, "QueueFill");
  }

  void Update() {
    Submission sub;
    Gen(sub);
    Buffer* b = BufferArg();
    DeviceSize size = b ? b->byte_length() : 0;
    DeviceSize offset = Range(size), length = Range(size);
    std::vector<uint8_t> source(std::min<DeviceSize>(length, 70000));
    for (size_t i = 0; i < source.size(); ++i) source[i] = uint8_t(i * 7 + 1);
    sub.buffer_ids.push_back(BufferId(b));
    Begin(sub);
    End(sub,
        device_->QueueUpdate(sub.affinity, sub.wait, sub.signal_with_done,
                             source.empty() ? nullptr : source.data(), b,
                             offset,
                             std::min<DeviceSize>(length, source.size())),
        kQueueCodes, "QueueUpdate");
  }

  void Copy() {
    Submission sub;
    Gen(sub);
    Buffer* src = BufferArg();
    Buffer* dst = BufferArg();
    DeviceSize src_size = src ? src->byte_length() : 0;
    DeviceSize dst_size = dst ? dst->byte_length() : 0;
    DeviceSize src_offset = Range(src_size), dst_offset = Range(dst_size);
    DeviceSize length = Range(std::min(src_size, dst_size));
    sub.buffer_ids = {BufferId(src), BufferId(dst)};
    Begin(sub);
    End(sub,
        device_->QueueCopy(sub.affinity, sub.wait, sub.signal_with_done, src,
                           src_offset, dst, dst_offset, length),
        kQueueCodes, "QueueCopy");
  }

  void Barrier() {
    Submission sub;
    Gen(sub);
    Begin(sub);
    End(sub,
        device_->QueueBarrier(sub.affinity, sub.wait, sub.signal_with_done),
        kQueueCodes, "QueueBarrier");
  }

  void HostCall() {
    Submission sub;
    Gen(sub);
    int result = in_->Below(8);
    Status returns = result < int(std::size(kInjected))
                         ? Status(kInjected[result], "host call")
                         : OkStatus();
    std::vector<std::pair<Ref<Semaphore>, uint64_t>> waits;
    for (auto& p : sub.wait) {
      if (p.semaphore) waits.emplace_back(Ref<Semaphore>(p.semaphore), p.value);
    }
    Begin(sub);
    auto violations = violations_;
    End(sub,
        device_->QueueHostCall(sub.affinity, sub.wait, sub.signal_with_done,
                               [waits, violations, returns]() -> Status {
                                 for (auto& [w, v] : waits) {
                                   StatusOr<uint64_t> q = w->Query();
                                   if (q.ok() && *q < v)
                                     violations->fetch_add(1);
                                 }
                                 return returns;
                               }),
        kQueueCodes, "QueueHostCall");
  }

  BufferRef GenRef(CbSlot& slot, uint32_t capacity) {
    if (in_->Below(3) == 2) {
      uint32_t s = in_->Below(capacity + 2);
      DeviceSize offset = Range(64), length = Range(64);
      return BufferRef::Slot(s, offset, length);
    }
    Buffer* b = BufferArg();
    DeviceSize size = b ? b->byte_length() : 0;
    slot.buffer_ids.push_back(BufferId(b));
    DeviceSize offset = Range(size), length = Range(size);
    return BufferRef::Direct(b, offset, length);
  }

  // Creates a command buffer in a slot and records a short program into it.
  void Record() {
    CbSlot& slot = cbs_[in_->Below(kCbSlots)];
    static constexpr CommandCategory kCategories[] = {
        CommandCategory::kTransfer, CommandCategory::kAny,
        CommandCategory::kNone, CommandCategory::kDispatch};
    auto mode = in_->Bool() ? CommandBufferMode::kOneShot
                            : CommandBufferMode::kReusable;
    uint32_t capacity = in_->Below(4);
    CommandCategory categories = kCategories[in_->Below(4)];
    QueueAffinity affinity = Affinity();
    StatusOr<Ref<CommandBuffer>> created =
        device_->CreateCommandBuffer(mode, categories, affinity, capacity);
    Check(created.status(), {StatusCode::kInvalidArgument},
          "CreateCommandBuffer");
    if (!created.ok()) return;
    slot.cb = created.value();
    slot.buffer_ids.clear();
    CommandBuffer* cb = slot.cb.get();
    if (in_->Below(8) != 7) Check(cb->Begin(), kQueueCodes, "Begin");
    int n = in_->Below(8);
    std::vector<uint8_t> bytes(300);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 13 + 5);
    for (int i = 0; i < n; ++i) {
      Status st;
      switch (in_->Below(7)) {
        case 0:
          st = cb->ExecutionBarrier();
          break;
        case 1: {
          size_t plen;
          uint32_t pattern = Pattern(&plen);
          st = cb->FillBuffer(GenRef(slot, capacity), &pattern, plen);
          break;
        }
        case 2:
        case 3: {
          BufferRef ref = GenRef(slot, capacity);
          if (ref.length != kWholeBuffer) ref.length %= bytes.size() + 1;
          st = cb->UpdateBuffer(bytes.data(), ref);
          break;
        }
        case 4: {
          BufferRef src = GenRef(slot, capacity);
          BufferRef dst = GenRef(slot, capacity);
          st = cb->CopyBuffer(src, dst, Range(64));
          break;
        }
        case 5:
          st = in_->Bool() ? cb->BeginDebugGroup("g") : cb->EndDebugGroup();
          break;
        case 6:
          st = cb->Begin();
          break;
      }
      Check(st, kQueueCodes, "recording");
    }
    if (in_->Below(8) != 7) Check(cb->End(), kQueueCodes, "End");
  }

  void Execute() {
    Submission sub;
    Gen(sub);
    CbSlot& slot = cbs_[in_->Below(kCbSlots)];
    CommandBuffer* cb = in_->Below(8) == 7 ? nullptr : slot.cb.get();
    std::vector<Binding> table(in_->Below(5));
    for (Binding& b : table) {
      b.buffer = BufferArg();
      DeviceSize size = b.buffer ? b.buffer->byte_length() : 0;
      b.offset = in_->Below(3) ? 0 : Range(size);
      b.length = Range(size);
      sub.buffer_ids.push_back(BufferId(b.buffer));
    }
    if (cb) {
      sub.buffer_ids.insert(sub.buffer_ids.end(), slot.buffer_ids.begin(),
                            slot.buffer_ids.end());
    }
    Begin(sub);
    End(sub,
        device_->QueueExecute(sub.affinity, sub.wait, sub.signal_with_done, cb,
                              table),
        kQueueCodes, "QueueExecute");
  }

  void MapOp() {
    Buffer* b = BufferArg();
    if (!b) return;
    auto mode = in_->Bool() ? MappingMode::kScoped : MappingMode::kPersistent;
    auto access = static_cast<MemoryAccess>(in_->Below(8));
    DeviceSize size = b->byte_length();
    DeviceSize offset = Range(size), length = Range(size);
    StatusOr<BufferMapping> m = b->Map(mode, access, offset, length);
    Check(m.status(), kQueueCodes, "Map");
    if (!m.ok()) return;
    DeviceSize resolved;
    HAL_FUZZ_CHECK(
        ResolveRange(size, offset, length, &resolved) && m->size() == resolved,
        "a mapping of [%llu, +%llu) of %llu bytes has %zu bytes",
        (unsigned long long)offset, (unsigned long long)length,
        (unsigned long long)size, m->size());
    // Writes only to a buffer no operation touches now (a write under an
    // operation would be the program's race, not the HAL's).
    if (Any(access & MemoryAccess::kWrite) && BufferQuiet(BufferId(b)) &&
        in_->Bool()) {
      std::fill(m->data(), m->data() + m->size(), uint8_t(in_->U8()));
    }
    maps_[in_->Below(kMapSlots)] = std::move(m).value();
  }

  void UnmapOp() {
    BufferMapping& m = maps_[in_->Below(kMapSlots)];
    int what = in_->Below(4);
    DeviceSize offset = Range(m.size()), length = Range(m.size());
    switch (what) {
      case 0:
        Check(m.Unmap(), kQueueCodes, "Unmap");
        break;
      case 1:
        Check(m.Flush(offset, length), kQueueCodes, "Flush");
        break;
      case 2:
        Check(m.Invalidate(offset, length), kQueueCodes, "Invalidate");
        break;
      case 3:
        m = BufferMapping();
        break;
    }
  }

  void MapHelpers() {
    Buffer* b = BufferArg();
    if (!b) return;
    bool quiet = BufferQuiet(BufferId(b));
    DeviceSize size = b->byte_length();
    DeviceSize offset = Range(size);
    DeviceSize length = std::min<DeviceSize>(Range(size), 1 << 16);
    std::vector<uint8_t> bytes(length, 0x5A);
    switch (in_->Below(3)) {
      case 0:
        Check(b->MapRead(offset, bytes.data(), length), kQueueCodes, "MapRead");
        break;
      case 1:
        if (quiet)
          Check(b->MapWrite(offset, bytes.data(), length), kQueueCodes,
                "MapWrite");
        break;
      case 2: {
        size_t plen;
        uint32_t pattern = Pattern(&plen);
        if (quiet)
          Check(b->MapFill(offset, length, &pattern, plen), kQueueCodes,
                "MapFill");
        break;
      }
    }
  }

  void SubspanOp() {
    int from = in_->Below(kBufSlots);
    if (!bufs_[from].buffer) return;
    DeviceSize size = bufs_[from].buffer->byte_length();
    DeviceSize offset = Range(size), length = Range(size);
    StatusOr<Ref<Buffer>> s = bufs_[from].buffer->Subspan(offset, length);
    Check(s.status(), {StatusCode::kOutOfRange, StatusCode::kInvalidArgument},
          "Subspan");
    if (s.ok()) PutBuffer(s.value(), bufs_[from].id);
  }

  void Idle() {
    Status st = device_->WaitIdle(ShortTimeout());
    Check(st, {StatusCode::kDeadlineExceeded}, "WaitIdle");
    if (st.ok()) {
      for (Op& op : ops_) {
        HAL_FUZZ_CHECK(Resolved(op.done.get(), 1),
                       "WaitIdle returned OK with an operation unfinished");
      }
    }
  }

  void Fault() {
    if (is_sim_) {
      sim::SimFaultPlan plan;
      static constexpr uint32_t kPpm[] = {0, 0, 1000, 100000, 500000};
      plan.fail_alloc = in_->Below(4);
      plan.alloc_fail_ppm = kPpm[in_->Below(std::size(kPpm))];
      plan.fail_op = in_->Below(6);
      plan.op_fail_ppm = kPpm[in_->Below(std::size(kPpm))];
      plan.slow_ppm = kPpm[in_->Below(std::size(kPpm))];
      if (in_->Below(4) == 3) {
        StatusOr<uint64_t> now = sim::SimVirtualTimeNs(device_.get());
        plan.lose_device_at = (now.ok() ? *now : 0) + 1 + in_->U8() * 1000ull;
      }
      sim_faults_ |= plan.fail_op || plan.op_fail_ppm || plan.lose_device_at;
      Check(sim::SimSetFaults(device_.get(), plan), {}, "SimSetFaults");
    } else if (vendor_sim_ && vendor_sim_->set_faults) {
      // The fault grammar's names (sim/core/fault_plan.h), and the older
      // aliases in the last two.
      static const char* kPlans[] = {
          "",
          "fail_alloc=1",
          "fail_alloc=2",
          "fail_op=1",
          "fail_op=3",
          "op_fail_ppm=100000",
          "alloc_fail_ppm=200000",
          "late_signal_us=500,late_signal_ppm=250000",
          "slow_ppm=300000",
          "late_event_us=500,late_event_ppm=250000",
          "op=2,alloc=2"};
      HAL_FUZZ_CHECK(
          vendor_sim_->set_faults(kPlans[in_->Below(std::size(kPlans))]) == 0,
          "halsim_set_faults refused a plan");
    }
  }

  // A fill or update of a buffer nothing else touches, waited for, reads
  // back as written. Mappable buffers are read whole before and after (the
  // rest must not change); others through a staging copy of the range.
  void VerifiedTransfer() {
    int slot = in_->Below(kBufSlots);
    bool update = in_->Bool();
    uint32_t pattern = in_->U32();
    size_t plen = size_t{1} << in_->Below(3);
    QueueAffinity affinity = QueueAffinity{1}
                             << (in_->U8() % device_->queue_count());
    DeviceSize offset_pick = in_->U32(), length_pick = in_->U32();
    Buffer* b = bufs_[slot].buffer.get();
    if (!b || b->state() != BufferState::kLive || !BufferQuiet(bufs_[slot].id))
      return;
    if (!AllOf(b->allowed_usage(), BufferUsage::kTransferTarget)) return;
    DeviceSize size = b->byte_length();
    if (size < plen || size > (1 << 20)) return;
    // Aligned on the allocation, so the rule on absolute offsets holds.
    DeviceSize base = b->byte_offset();
    DeviceSize first = (base + plen - 1) / plen * plen - base;
    if (first >= size) return;
    DeviceSize units = (size - first) / plen;
    if (units == 0) return;
    DeviceSize offset = first + (offset_pick % units) * plen;
    DeviceSize length =
        (1 + length_pick % (units - (offset - first) / plen)) * plen;
    if (update) length = std::min<DeviceSize>(length, 4096);

    std::vector<uint8_t> expected;
    bool mappable = Any(b->memory_type() & MemoryType::kHostVisible) &&
                    Any(b->allowed_usage() & BufferUsage::kMappingScoped) &&
                    Any(b->allowed_access() & MemoryAccess::kRead);
    if (mappable) {
      expected.resize(size);
      if (!b->MapRead(0, expected.data(), size).ok()) mappable = false;
    }
    std::vector<uint8_t> written(length);
    for (DeviceSize i = 0; i < length; ++i) {
      written[i] = update ? uint8_t(pattern + i * 31)
                          : uint8_t(pattern >> (8 * (i % plen)));
    }
    Ref<Semaphore> sem = device_->CreateSemaphore(0).value();
    SemaphorePoint signal{sem.get(), 1};
    Status st = update ? device_->QueueUpdate(affinity, {}, {&signal, 1},
                                              written.data(), b, offset, length)
                       : device_->QueueFill(affinity, {}, {&signal, 1}, b,
                                            offset, length, &pattern, plen);
    Check(st, kQueueCodes,
          update ? "verified QueueUpdate" : "verified QueueFill");
    if (!st.ok()) return;
    Status done = sem->Wait(1, Timeout::After(kMustFinish));
    HAL_FUZZ_CHECK(done.code() != StatusCode::kDeadlineExceeded,
                   "a transfer with no waits did not finish in 10 s");
    if (!done.ok()) return;  // a fault, a hazard or a lost device
    std::vector<uint8_t> actual;
    if (mappable) {
      std::copy(written.begin(), written.end(), expected.begin() + offset);
      actual.resize(size);
      if (!b->MapRead(0, actual.data(), size).ok()) return;
    } else {
      expected = written;
      if (!ReadThroughStaging(b, offset, length, &actual)) return;
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      HAL_FUZZ_CHECK(
          actual[i] == expected[i],
          "%s of [%llu, +%llu) (pattern 0x%08x/%zu) read back 0x%02x at %zu, "
          "expected 0x%02x",
          update ? "update" : "fill", (unsigned long long)offset,
          (unsigned long long)length, pattern, plen, actual[i], i, expected[i]);
    }
  }

  bool ReadThroughStaging(Buffer* b, DeviceSize offset, DeviceSize length,
                          std::vector<uint8_t>* out) {
    if (!AllOf(b->allowed_usage(), BufferUsage::kTransferSource)) return false;
    BufferParams p;
    p.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
    p.usage = BufferUsage::kTransfer | BufferUsage::kMappingScoped;
    StatusOr<Ref<Buffer>> staging =
        device_->allocator()->AllocateBuffer(p, length);
    Check(staging.status(), {StatusCode::kResourceExhausted},
          "staging AllocateBuffer");
    if (!staging.ok()) return false;
    Ref<Semaphore> sem = device_->CreateSemaphore(0).value();
    SemaphorePoint signal{sem.get(), 1};
    Status st = device_->QueueCopy(kQueueAffinityAny, {}, {&signal, 1}, b,
                                   offset, staging.value().get(), 0, length);
    Check(st, kQueueCodes, "staging QueueCopy");
    if (!st.ok()) return false;
    Status done = sem->Wait(1, Timeout::After(kMustFinish));
    HAL_FUZZ_CHECK(done.code() != StatusCode::kDeadlineExceeded,
                   "a copy with no waits did not finish in 10 s");
    if (!done.ok()) return false;
    out->resize(length);
    Status read = staging.value()->MapRead(0, out->data(), length);
    HAL_FUZZ_CHECK(read.ok(), "staging MapRead: %s", read.ToString().c_str());
    return true;
  }

  // --- the end ---------------------------------------------------------------

  void Finish(bool fail_all) {
    for (SemSlot& s : sems_) Observe(s);
    for (BufferMapping& m : maps_) m = BufferMapping();
    for (CbSlot& c : cbs_) c = CbSlot();
    for (BufSlot& b : bufs_) b = BufSlot();
    if (fail_all) {
      // Everything that waits can now go: every operation must finish.
      for (SemSlot& s : sems_) {
        if (s.sem) s.sem->Fail(Status(StatusCode::kCancelled, "fuzz: end"));
      }
      for (auto& s : graveyard_)
        s->Fail(Status(StatusCode::kCancelled, "fuzz: end"));
      Status idle = device_->WaitIdle(Timeout::After(kMustFinish));
      HAL_FUZZ_CHECK(idle.ok(), "WaitIdle after failing every semaphore: %s",
                     idle.ToString().c_str());
    }
    for (SemSlot& s : sems_) s = SemSlot();
    graveyard_.clear();
    device_.reset();  // must not hang; cancels what still waits
    for (size_t i = 0; i < ops_.size(); ++i) {
      StatusOr<uint64_t> q = ops_[i].done->Query();
      HAL_FUZZ_CHECK(
          !q.ok() || *q == 1,
          "operation %zu of %zu neither finished nor failed when its device "
          "was %s",
          i, ops_.size(), fail_all ? "idle" : "destroyed");
      if (!q.ok()) CheckFailureCode(q.status());
    }
    HAL_FUZZ_CHECK(violations_->load() == 0,
                   "%d host call(s) started before their waits were reached",
                   violations_->load());
  }

  FuzzInput* in_ = nullptr;
  Ref<Device> device_;
  bool is_sim_;
  const sim::HalsimControl* vendor_sim_;  // null: not over a vendor simulator
  // HAL_FUZZ_VERBOSE=1: print each op and status (to see what an input does).
  bool verbose_ = std::getenv("HAL_FUZZ_VERBOSE") != nullptr;
  bool sim_faults_ = false;
  bool failed_with_ok_ = false;
  uint64_t next_id_ = 1;
  SemSlot sems_[kSemSlots];
  BufSlot bufs_[kBufSlots];
  CbSlot cbs_[kCbSlots];
  BufferMapping maps_[kMapSlots];
  std::vector<Ref<Semaphore>> graveyard_;
  std::vector<Op> ops_;
  std::shared_ptr<std::atomic<int>> violations_ =
      std::make_shared<std::atomic<int>>(0);
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Two header bytes: the seed (sim:// without seed=, and a simulated vendor
  // library's schedule) and flags (bit 0: fail every semaphore and
  // WaitIdle at the end rather than destroy the device with work pending).
  FuzzInput header(data, std::min<size_t>(size, 2));
  uint8_t seed = header.U8();
  bool fail_all_at_end = header.U8() & 1;
  bool is_sim;
  const sim::HalsimControl* vendor_sim;
  std::string uri = DeviceUriFor(seed, &is_sim, &vendor_sim);
  if (vendor_sim) {
    // Per input: no faults left from the last one, and the schedule
    // restarted under the input's seed so that it replays.
    if (vendor_sim->set_faults) vendor_sim->set_faults("");
    vendor_sim->reset_schedule(seed);
  }
  StatusOr<Ref<Device>> device = DefaultDriverRegistry().CreateDevice(uri);
  if (!device.ok()) {
    std::fprintf(stderr, "cannot create device '%s': %s\n", uri.c_str(),
                 device.status().ToString().c_str());
    std::abort();
  }
  size_t skip = std::min<size_t>(size, 2);
  Program(std::move(device).value(), is_sim, vendor_sim)
      .Run(data + skip, size - skip, fail_all_at_end);
  return 0;
}
