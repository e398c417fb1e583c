// Property 1: timeline-semaphore ordering.
//
// Random sequences of host signals, host failures, queue operations (host
// calls and barriers on random queues, with wait lists that are often not
// satisfiable yet; some host calls fail: their work returns an error, an
// operation fault every driver can take), waits with timeouts and queries,
// checked against a model that computes which operations may have run.
//
// The model is exact because the commands keep every observable outcome
// deterministic: payloads only grow, so the order in which runnable
// operations signal does not matter; and before anything whose result
// depends on a failure that is still propagating (a host fail, a signal or
// wait on a semaphore the model says failed), the command first waits,
// bounded, for the device to reach the model's state ("settle").
//
// Checked: payloads never go down and never pass the model; no operation
// starts before its waits are reached (host calls look for themselves); a
// signal is seen only after the work of an operation that signals it; failures
// (host fails and failing operations) reach exactly the dependent signals,
// with the original code, and no operation behind one runs; every operation
// whose waits are satisfiable completes (bounded waits, so a hang fails the
// case); polls and timeouts agree with the model.
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "drivers/sim/sim_device.h"
#include "hal/device.h"
#include "hal/semaphore.h"
#include "hal/uri.h"
#include "property_tests/property_util.h"

namespace hal::prop {
namespace {

constexpr int kMaxSemaphores = 4;
const std::vector<StatusCode> kFailCodes = {
    StatusCode::kDataLoss, StatusCode::kAborted, StatusCode::kInternal,
    StatusCode::kUnavailable};

// ---------------------------------------------------------------------------
// Model

struct SemModel {
  uint64_t value = 0;    // the payload once every runnable operation ran
  uint64_t planned = 0;  // highest value any signal so far used
  bool failed = false;
  std::set<StatusCode> codes;  // the failure code is one of these
};

enum class OpState { kPending, kRan, kFailed };

struct Point {
  int sem = 0;
  uint64_t value = 0;
};

struct OpModel {
  bool host_call = true;
  StatusCode fails = StatusCode::kOk;  // its work returns this error
  std::vector<Point> waits;
  std::vector<Point> signals;
  OpState state = OpState::kPending;
};

struct Model {
  int queue_count = 1;
  bool can_lose = false;  // the simulator (sim://): LoseDevice
  bool lost = false;
  std::vector<SemModel> sems;
  std::vector<OpModel> ops;
};

void FailSem(Model& m, int sem, const std::set<StatusCode>& codes,
             std::set<int>& failed_now) {
  SemModel& s = m.sems[sem];
  if (!s.failed) {
    s.failed = true;
    s.codes = codes;
    failed_now.insert(sem);
  } else if (failed_now.count(sem)) {
    // Two failures racing within one cascade: either code may win.
    s.codes.insert(codes.begin(), codes.end());
  }
}

// Runs every pending operation whose waits are all reached and fails every
// one with an unreached wait on a failed semaphore, until nothing changes.
// (The generators keep signals from being overtaken; should one be, the
// semaphore fails as hal/device.h says.)
void Propagate(Model& m, std::set<int>& failed_now) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (OpModel& op : m.ops) {
      if (op.state != OpState::kPending) continue;
      bool all_reached = true;
      std::set<StatusCode> codes;
      for (const Point& w : op.waits) {
        const SemModel& s = m.sems[w.sem];
        if (s.value >= w.value) continue;
        all_reached = false;
        if (s.failed) codes.insert(s.codes.begin(), s.codes.end());
      }
      if (!codes.empty()) {
        op.state = OpState::kFailed;
        for (const Point& p : op.signals) FailSem(m, p.sem, codes, failed_now);
        changed = true;
      } else if (all_reached && m.lost) {
        // A lost device runs nothing: the operation fails with DATA_LOSS.
        op.state = OpState::kFailed;
        for (const Point& p : op.signals) {
          FailSem(m, p.sem, {StatusCode::kDataLoss}, failed_now);
        }
        changed = true;
      } else if (all_reached && op.fails != StatusCode::kOk) {
        // The work ran and failed: its signals fail with its code.
        op.state = OpState::kRan;
        for (const Point& p : op.signals) {
          FailSem(m, p.sem, {op.fails}, failed_now);
        }
        changed = true;
      } else if (all_reached) {
        op.state = OpState::kRan;
        for (const Point& p : op.signals) {
          SemModel& s = m.sems[p.sem];
          if (s.failed) continue;
          if (p.value > s.value) {
            s.value = p.value;
          } else {
            // Overtaken since submission (a host signal raised it while the
            // operation was blocked): the semaphore fails (hal/device.h).
            FailSem(m, p.sem, {StatusCode::kInvalidArgument}, failed_now);
          }
        }
        changed = true;
      }
    }
  }
}

void Propagate(Model& m) {
  std::set<int> failed_now;
  Propagate(m, failed_now);
}

// ---------------------------------------------------------------------------
// System under test

// What one submitted operation reports about itself.
struct OpRecord {
  int id = 0;
  bool host_call = true;
  std::vector<std::pair<Ref<Semaphore>, uint64_t>> waits;
  std::vector<std::pair<Ref<Semaphore>, uint64_t>> signals;
  std::vector<int> signal_sems;
  std::atomic<bool> started{false};
  std::atomic<bool> done{false};
};

struct Shared {
  std::mutex mutex;
  std::vector<std::string> violations;
  // Per semaphore: who may raise it, and to what (host signals count as
  // done the moment they are made).
  struct Producer {
    uint64_t value;
    std::shared_ptr<OpRecord> op;  // null: the host
  };
  std::vector<std::vector<Producer>> producers;

  void Violation(std::string what) {
    std::lock_guard<std::mutex> lock(mutex);
    violations.push_back(std::move(what));
  }

  // Whether some producer of `sem` >= `value` has finished its work.
  bool ProducerDone(int sem, uint64_t value, const OpRecord* except = nullptr) {
    if (value == 0) return true;
    std::lock_guard<std::mutex> lock(mutex);
    for (const Producer& p : producers[sem]) {
      if (p.value < value || (except && p.op.get() == except)) continue;
      if (!p.op) return true;
      if (p.op->host_call) {
        if (p.op->done.load()) return true;
        continue;
      }
      // A barrier has no work: it is done once its waits are reached (or
      // failed: that may legitimately happen after it ran).
      bool reached = true;
      for (auto& [s, v] : p.op->waits) {
        StatusOr<uint64_t> q = s->Query();
        if (q.ok() && *q < v) reached = false;
      }
      if (reached) return true;
    }
    return false;
  }
};

struct Sut {
  Ref<Device> device;
  // Never signalled: polling it runs the device work that is ready on
  // drivers that make progress inside host waits (the deterministic
  // simulator), and just sleeps briefly elsewhere.
  Ref<Semaphore> pump;
  std::shared_ptr<Shared> shared = std::make_shared<Shared>();
  std::vector<Ref<Semaphore>> sems;
  std::vector<std::shared_ptr<OpRecord>> ops;
};

using Cmd = rc::state::Command<Model, Sut>;

bool HasSem(const Model& m, int sem) {
  return sem >= 0 && sem < static_cast<int>(m.sems.size());
}

// The lowest value that an operation still blocked on its waits signals
// `sem` to, or ~0 when none does.
uint64_t LowestBlockedSignal(const Model& m, int sem) {
  uint64_t lowest = std::numeric_limits<uint64_t>::max();
  for (const OpModel& op : m.ops) {
    if (op.state != OpState::kPending) continue;
    for (const Point& p : op.signals) {
      if (p.sem == sem) lowest = std::min(lowest, p.value);
    }
  }
  return lowest;
}

bool HasBlockedSignaller(const Model& m, int sem) {
  return LowestBlockedSignal(m, sem) != std::numeric_limits<uint64_t>::max();
}

// A random permutation of [0, n), drawn inside a command's generation.
std::vector<int> DistinctIndices(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  for (int i = n - 1; i > 0; --i)
    std::swap(v[i], v[*rc::gen::inRange(0, i + 1)]);
  return v;
}

std::string CodesString(const std::set<StatusCode>& codes) {
  std::string out;
  for (StatusCode c : codes) {
    if (!out.empty()) out += "|";
    out += StatusCodeName(c);
  }
  return out;
}

void AssertNoViolations(Sut& sut) {
  std::lock_guard<std::mutex> lock(sut.shared->mutex);
  if (!sut.shared->violations.empty()) {
    RC_FAIL(sut.shared->violations.front());
  }
}

// Waits (bounded) until semaphore `i` shows the model's state, and checks it.
void SettleSem(const Model& m, Sut& sut, int i) {
  const SemModel& s = m.sems[i];
  Semaphore* sem = sut.sems[i].get();
  if (s.failed) {
    Status st = sem->Wait(std::numeric_limits<uint64_t>::max(),
                          Timeout::After(kSettleTimeout));
    if (st.ok() || !s.codes.count(st.code())) {
      RC_FAIL("s" + std::to_string(i) + " should fail with " +
              CodesString(s.codes) + " but waiting on it gave " +
              st.ToString());
    }
    return;
  }
  Status st = sem->Wait(s.value, Timeout::After(kSettleTimeout));
  if (!st.ok()) {
    RC_FAIL("s" + std::to_string(i) + " should reach " +
            std::to_string(s.value) +
            " (every operation it depends on is "
            "runnable) but waiting gave " +
            st.ToString());
  }
  StatusOr<uint64_t> q = sem->Query();
  RC_ASSERT(q.ok());
  if (*q != s.value) {
    RC_FAIL("s" + std::to_string(i) + " payload is " + std::to_string(*q) +
            " but the model allows only " + std::to_string(s.value));
  }
}

// Waits until every semaphore and every runnable host call matches the model.
void SettleAll(const Model& m, Sut& sut) {
  for (int i = 0; i < static_cast<int>(m.sems.size()); ++i)
    SettleSem(m, sut, i);
  auto deadline = std::chrono::steady_clock::now() + kSettleTimeout;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const OpRecord& rec = *sut.ops[i];
    switch (m.ops[i].state) {
      case OpState::kRan:
        if (!m.ops[i].host_call) break;
        while (!rec.done.load() &&
               std::chrono::steady_clock::now() < deadline) {
          sut.pump->Wait(1, Timeout::After(std::chrono::microseconds(100)))
              .IgnoreError();
        }
        if (!rec.done.load()) {
          RC_FAIL(
              "op#" + std::to_string(i) +
              ": its waits are reached but it did not complete (deadlock?)");
        }
        break;
      case OpState::kPending:
      case OpState::kFailed:
        if (rec.started.load()) {
          RC_FAIL("op#" + std::to_string(i) + " ran but the model says it " +
                  (m.ops[i].state == OpState::kPending
                       ? "must still wait"
                       : "must not run (a wait failed)"));
        }
        break;
    }
  }
  AssertNoViolations(sut);
}

// ---------------------------------------------------------------------------
// Commands

struct CreateSemaphore : Cmd {
  uint64_t initial;
  explicit CreateSemaphore(const Model& m)
      : initial(*rc::gen::elementOf(std::vector<uint64_t>{0, 0, 1, 5})) {}
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.sems.size() < static_cast<size_t>(kMaxSemaphores));
  }
  void apply(Model& m) const override {
    SemModel s;
    s.value = s.planned = initial;
    m.sems.push_back(s);
  }
  void run(const Model& m, Sut& sut) const override {
    StatusOr<Ref<Semaphore>> sem = sut.device->CreateSemaphore(initial);
    RC_ASSERT(sem.ok());
    RC_ASSERT(sem.value()->Query().ok());
    RC_ASSERT(*sem.value()->Query() == initial);
    sut.sems.push_back(sem.value());
    std::lock_guard<std::mutex> lock(sut.shared->mutex);
    sut.shared->producers.emplace_back();
    sut.shared->producers.back().push_back({initial, nullptr});
  }
  void show(std::ostream& os) const override {
    os << "CreateSemaphore(" << initial << ")";
  }
};

struct HostSignal : Cmd {
  int sem;
  uint64_t value;
  explicit HostSignal(const Model& m) {
    RC_PRE(!m.sems.empty());
    sem = *rc::gen::inRange<int>(0, m.sems.size());
    const SemModel& s = m.sems[sem];
    // A valid host signal stays below what a blocked operation will signal:
    // overtaking it would fail the semaphore (hal/device.h), an outcome the
    // CTS checks (Submission.SignalOvertakenBeforeCompletionFailsSemaphore)
    // and this model leaves out.
    uint64_t limit = std::min(s.planned + 2, LowestBlockedSignal(m, sem) - 1);
    if (*rc::gen::inRange(0, 8) == 0 || s.failed || limit <= s.value) {
      value = *rc::gen::inRange<uint64_t>(0, s.value + 1);  // not above: error
    } else {
      value = s.value + *rc::gen::inRange<uint64_t>(1, limit - s.value + 1);
    }
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(HasSem(m, sem));
    RC_PRE(!Valid(m) || value < LowestBlockedSignal(m, sem));
  }
  bool Valid(const Model& m) const {
    return !m.sems[sem].failed && value > m.sems[sem].value;
  }
  void apply(Model& m) const override {
    if (!Valid(m)) return;
    SemModel& s = m.sems[sem];
    s.value = value;
    s.planned = std::max(s.planned, value);
    Propagate(m);
  }
  void run(const Model& m, Sut& sut) const override {
    const SemModel& s = m.sems[sem];
    // The outcome depends on the current payload when the signal is not
    // above the model's; and a runnable operation that signals this
    // semaphore must finish first, or this signal could overtake its.
    SettleSem(m, sut, sem);
    {
      std::lock_guard<std::mutex> lock(sut.shared->mutex);
      sut.shared->producers[sem].push_back({value, nullptr});
    }
    Status st = sut.sems[sem]->Signal(value);
    if (s.failed) {
      RC_ASSERT(!st.ok());
      RC_ASSERT(s.codes.count(st.code()) == 1u);
    } else if (value <= s.value) {
      RC_ASSERT(st.code() == StatusCode::kInvalidArgument);
      StatusOr<uint64_t> q = sut.sems[sem]->Query();
      RC_ASSERT(q.ok());
      RC_ASSERT(*q == s.value);  // a rejected signal changes nothing
    } else {
      if (!st.ok()) RC_FAIL("Signal should succeed: " + st.ToString());
    }
    AssertNoViolations(sut);
  }
  void show(std::ostream& os) const override {
    os << "s" << sem << "->Signal(" << value << ")";
  }
};

struct HostFail : Cmd {
  int sem;
  StatusCode code;
  explicit HostFail(const Model& m) {
    RC_PRE(!m.sems.empty());
    sem = *rc::gen::inRange<int>(0, m.sems.size());
    code = *rc::gen::elementOf(kFailCodes);
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(HasSem(m, sem));
  }
  void apply(Model& m) const override {
    if (m.sems[sem].failed) return;  // the first failure wins
    std::set<int> failed_now;
    FailSem(m, sem, {code}, failed_now);
    Propagate(m, failed_now);
  }
  void run(const Model& m, Sut& sut) const override {
    // Everything runnable finishes first, so what the failure reaches is
    // decided by the model alone.
    SettleAll(m, sut);
    sut.sems[sem]->Fail(Status(code, "failed by the property test"));
    // The first failure wins.
    StatusOr<uint64_t> q = sut.sems[sem]->Query();
    RC_ASSERT(!q.ok());
    std::set<StatusCode> expected =
        m.sems[sem].failed ? m.sems[sem].codes : std::set<StatusCode>{code};
    RC_ASSERT(expected.count(q.status().code()) == 1u);
    AssertNoViolations(sut);
  }
  void show(std::ostream& os) const override {
    os << "s" << sem << "->Fail(" << StatusCodeName(code) << ")";
  }
};

struct Submit : Cmd {
  bool host_call;
  StatusCode fails = StatusCode::kOk;
  int queue;
  uint32_t delay_us;
  std::vector<Point> waits;
  std::vector<Point> signals;

  explicit Submit(const Model& m) {
    RC_PRE(!m.sems.empty());
    int n = static_cast<int>(m.sems.size());
    host_call = *rc::gen::inRange(0, 4) != 0;
    if (host_call && *rc::gen::inRange(0, 5) == 0) {
      fails = *rc::gen::elementOf(kFailCodes);
    }
    queue = *rc::gen::inRange(0, m.queue_count);
    delay_us = *rc::gen::elementOf(std::vector<uint32_t>{0, 0, 0, 20, 200});
    int wait_count = *rc::gen::inRange(0, std::min(n, 3) + 1);
    std::vector<int> order = DistinctIndices(n);
    // Waits: anything up to a little past what is planned, so some are met,
    // some are met by a pending operation and some by nothing yet.
    for (int i = 0; i < wait_count && i < static_cast<int>(order.size()); ++i) {
      const SemModel& s = m.sems[order[i]];
      waits.push_back(
          {order[i], *rc::gen::inRange<uint64_t>(0, s.planned + 3)});
    }
    int signal_count = *rc::gen::inRange(0, std::min(n, 2) + 1);
    // Two unfinished operations signalling one semaphore may finish in
    // either order, and the later value overtaken fails it: signal only
    // semaphores that no blocked operation signals (run() lets the runnable
    // ones finish first), so the model stays exact.
    std::vector<int> targets;
    for (int t : DistinctIndices(n)) {
      if (!HasBlockedSignaller(m, t)) targets.push_back(t);
    }
    for (int i = 0; i < signal_count && i < static_cast<int>(targets.size());
         ++i) {
      const SemModel& s = m.sems[targets[i]];
      signals.push_back(
          {targets[i], s.planned + *rc::gen::inRange<uint64_t>(1, 3)});
    }
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(queue < m.queue_count);
    for (const Point& p : waits) RC_PRE(HasSem(m, p.sem));
    for (const Point& p : signals) {
      RC_PRE(HasSem(m, p.sem));
      RC_PRE(!HasBlockedSignaller(m, p.sem));
      RC_PRE(m.sems[p.sem].failed || p.value > m.sems[p.sem].planned);
    }
  }
  void apply(Model& m) const override {
    OpModel op;
    op.host_call = host_call;
    op.fails = fails;
    op.waits = waits;
    op.signals = signals;
    for (const Point& p : signals) {
      m.sems[p.sem].planned = std::max(m.sems[p.sem].planned, p.value);
    }
    // A wait on a semaphore that already failed fails the operation at
    // submission, whatever the value.
    std::set<StatusCode> codes;
    for (const Point& w : waits) {
      const SemModel& s = m.sems[w.sem];
      if (s.failed) codes.insert(s.codes.begin(), s.codes.end());
    }
    // On a lost device every submission fails with DATA_LOSS (a wait that
    // had failed already may win: either code).
    if (m.lost) codes.insert(StatusCode::kDataLoss);
    m.ops.push_back(op);
    std::set<int> failed_now;
    if (!codes.empty()) {
      m.ops.back().state = OpState::kFailed;
      for (const Point& p : signals) FailSem(m, p.sem, codes, failed_now);
    }
    Propagate(m, failed_now);
  }
  void run(const Model& m, Sut& sut) const override {
    // An operation that fails at submission (a wait on a failed semaphore)
    // fails its signals at once, like a host fail: let everything runnable
    // finish first, so that what the failure reaches is the model's.
    bool fails_now = m.lost;
    for (const Point& p : waits) fails_now |= m.sems[p.sem].failed;
    if (fails_now) SettleAll(m, sut);
    // A failure still travelling towards a semaphore this operation uses
    // would race with the submission: let it land first.
    for (const Point& p : waits) {
      if (m.sems[p.sem].failed) SettleSem(m, sut, p.sem);
    }
    // Runnable operations that signal the same semaphores finish first, so
    // that this one's signals cannot overtake theirs.
    for (const Point& p : signals) SettleSem(m, sut, p.sem);
    auto rec = std::make_shared<OpRecord>();
    rec->id = static_cast<int>(sut.ops.size());
    rec->host_call = host_call;
    std::vector<SemaphorePoint> wait_list, signal_list;
    std::vector<int> wait_sems;
    for (const Point& p : waits) {
      rec->waits.emplace_back(sut.sems[p.sem], p.value);
      wait_list.push_back({sut.sems[p.sem].get(), p.value});
      wait_sems.push_back(p.sem);
    }
    for (const Point& p : signals) {
      signal_list.push_back({sut.sems[p.sem].get(), p.value});
      rec->signals.emplace_back(sut.sems[p.sem], p.value);
      rec->signal_sems.push_back(p.sem);
    }
    {
      std::lock_guard<std::mutex> lock(sut.shared->mutex);
      for (const Point& p : signals) {
        sut.shared->producers[p.sem].push_back({p.value, rec});
      }
    }
    sut.ops.push_back(rec);
    QueueAffinity affinity = QueueAffinity{1} << queue;
    Status st;
    if (host_call) {
      std::weak_ptr<Shared> weak = sut.shared;
      uint32_t delay = delay_us;
      StatusCode fails_with = fails;
      st = sut.device->QueueHostCall(
          affinity, wait_list, signal_list,
          [rec, weak, wait_sems, delay, fails_with]() -> Status {
            rec->started.store(true);
            std::shared_ptr<Shared> shared = weak.lock();
            for (size_t i = 0; i < rec->waits.size() && shared; ++i) {
              auto& [sem, value] = rec->waits[i];
              std::string where = "op#" + std::to_string(rec->id) +
                                  " started while its wait s" +
                                  std::to_string(wait_sems[i]) +
                                  ">=" + std::to_string(value);
              // A wait met at submission may see its semaphore fail later
              // (an operation submitted after this one fails it); then
              // the payload is gone and there is nothing to check.
              StatusOr<uint64_t> q = sem->Query();
              if (!q.ok()) continue;
              if (*q < value) {
                shared->Violation(where + " was not reached (payload " +
                                  std::to_string(*q) + ")");
              } else if (!shared->ProducerDone(wait_sems[i], value)) {
                shared->Violation(where +
                                  " was reached before the work of any "
                                  "operation that signals it finished");
              }
            }
            // This is the work: none of its signals may be visible yet,
            // unless someone else already raised the semaphore that far.
            for (size_t i = 0; i < rec->signals.size() && shared; ++i) {
              auto& [sem, value] = rec->signals[i];
              StatusOr<uint64_t> q = sem->Query();
              if (q.ok() && *q >= value &&
                  !shared->ProducerDone(rec->signal_sems[i], value,
                                        rec.get())) {
                shared->Violation(
                    "op#" + std::to_string(rec->id) + "'s signal s" +
                    std::to_string(rec->signal_sems[i]) + "=" +
                    std::to_string(value) +
                    " was visible while its work was still running");
              }
            }
            if (delay)
              std::this_thread::sleep_for(std::chrono::microseconds(delay));
            rec->done.store(true);
            if (fails_with != StatusCode::kOk) {
              return Status(fails_with, "op#" + std::to_string(rec->id) +
                                            " failed by the property test");
            }
            return OkStatus();
          });
    } else {
      st = sut.device->QueueBarrier(affinity, wait_list, signal_list);
    }
    if (!st.ok()) RC_FAIL("submission failed: " + st.ToString());
    if (fails_now) {
      // A wait that had failed already fails the signals before the call
      // returns, whatever the queues are doing (hal/device.h): no waiting.
      for (const Point& p : signals) {
        StatusOr<uint64_t> q = sut.sems[p.sem]->Query();
        if (q.ok()) {
          RC_FAIL("s" + std::to_string(p.sem) +
                  " is not failed when the submission returned, though a "
                  "wait had failed before it (payload " +
                  std::to_string(*q) + ")");
        }
      }
    }
    AssertNoViolations(sut);
  }
  void show(std::ostream& os) const override {
    os << (host_call ? "QueueHostCall" : "QueueBarrier") << "(queue=" << queue
       << ", wait={";
    for (size_t i = 0; i < waits.size(); ++i) {
      os << (i ? ", " : "") << "s" << waits[i].sem << ">=" << waits[i].value;
    }
    os << "}, signal={";
    for (size_t i = 0; i < signals.size(); ++i) {
      os << (i ? ", " : "") << "s" << signals[i].sem << "=" << signals[i].value;
    }
    os << "}";
    if (host_call && delay_us) os << ", work=" << delay_us << "us";
    if (fails != StatusCode::kOk) os << ", fails=" << StatusCodeName(fails);
    os << ")";
  }
};

// Device loss (the simulator only): every operation not yet run fails with
// DATA_LOSS and never runs, and so does every later submission; host
// signals and fails go on. The loss is planned one virtual nanosecond
// ahead, and an operation with no waits makes the clock move.
struct LoseDevice : Cmd {
  explicit LoseDevice(const Model& m) { RC_PRE(m.can_lose && !m.lost); }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(m.can_lose && !m.lost);
  }
  void apply(Model& m) const override {
    m.lost = true;
    std::set<int> failed_now;
    for (OpModel& op : m.ops) {
      if (op.state != OpState::kPending) continue;
      op.state = OpState::kFailed;
      for (const Point& p : op.signals) {
        FailSem(m, p.sem, {StatusCode::kDataLoss}, failed_now);
      }
    }
    Propagate(m, failed_now);
  }
  void run(const Model& m, Sut& sut) const override {
    // Everything runnable finishes first: the loss reaches what the model
    // says is still pending.
    SettleAll(m, sut);
    StatusOr<uint64_t> now = sim::SimVirtualTimeNs(sut.device.get());
    RC_ASSERT(now.ok());
    sim::SimFaultPlan plan;
    plan.lose_device_at = *now + 1;
    RC_ASSERT(sim::SimSetFaults(sut.device.get(), plan).ok());
    // An operation with no waits: its status once it finished or failed.
    auto tick = [&sut]() -> Status {
      Ref<Semaphore> done = sut.device->CreateSemaphore(0).value();
      SemaphorePoint d{done.get(), 1};
      RC_ASSERT(sut.device
                    ->QueueHostCall(kQueueAffinityAny, {}, {&d, 1},
                                    [] { return OkStatus(); })
                    .ok());
      return done->Wait(1, Timeout::After(kSettleTimeout));
    };
    // The tick runs (the clock passes the plan) or is itself lost.
    Status st = tick();
    RC_ASSERT(st.ok() || st.code() == StatusCode::kDataLoss);
    if (st.ok()) {
      // It ran just before the loss: one more makes sure.
      Status lost = tick();
      if (lost.code() != StatusCode::kDataLoss) {
        RC_FAIL("an operation after the planned device loss gave " +
                lost.ToString() + ", not DATA_LOSS");
      }
    }
    AssertNoViolations(sut);
  }
  void show(std::ostream& os) const override {
    os << "SimSetFaults(lose_device_at=now+1); QueueHostCall(tick)";
  }
};

struct HostWait : Cmd {
  int sem;
  uint64_t value;
  bool poll;  // timeout zero, else a short timeout
  explicit HostWait(const Model& m) {
    RC_PRE(!m.sems.empty());
    sem = *rc::gen::inRange<int>(0, m.sems.size());
    value = *rc::gen::inRange<uint64_t>(0, m.sems[sem].planned + 3);
    poll = *rc::gen::arbitrary<bool>();
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(HasSem(m, sem));
  }
  void run(const Model& m, Sut& sut) const override {
    const SemModel& s = m.sems[sem];
    Semaphore* S = sut.sems[sem].get();
    if (s.failed) {
      SettleSem(m, sut, sem);
      Status st = S->Wait(
          value, poll ? Timeout::Immediate() : Timeout::After(kShortTimeout));
      RC_ASSERT(!st.ok());
      RC_ASSERT(s.codes.count(st.code()) == 1u);
    } else if (value <= s.value) {
      // Reachable: a bounded wait must succeed; after it a poll agrees.
      Status st = S->Wait(value, Timeout::After(kSettleTimeout));
      if (!st.ok()) {
        RC_FAIL("wait for s" + std::to_string(sem) + ">=" +
                std::to_string(value) + " should succeed: " + st.ToString());
      }
      if (!sut.shared->ProducerDone(sem, value)) {
        RC_FAIL("s" + std::to_string(sem) + ">=" + std::to_string(value) +
                " was reached before the work of any operation that signals "
                "it finished");
      }
      RC_ASSERT(S->Wait(value, Timeout::Immediate()).ok());
    } else {
      Status st = S->Wait(
          value, poll ? Timeout::Immediate() : Timeout::After(kShortTimeout));
      if (st.code() != StatusCode::kDeadlineExceeded) {
        RC_FAIL("wait for s" + std::to_string(sem) + ">=" +
                std::to_string(value) + " must time out (the model reaches " +
                std::to_string(s.value) + ") but gave " + st.ToString());
      }
    }
    AssertNoViolations(sut);
  }
  void show(std::ostream& os) const override {
    os << "s" << sem << "->Wait(" << value << ", " << (poll ? "poll" : "1ms")
       << ")";
  }
};

struct HostWaitList : Cmd {
  WaitMode mode;
  std::vector<Point> points;
  bool poll;
  explicit HostWaitList(const Model& m) {
    RC_PRE(!m.sems.empty());
    mode = *rc::gen::element(WaitMode::kAll, WaitMode::kAny);
    int n = *rc::gen::inRange(0, 4);
    for (int i = 0; i < n; ++i) {
      int s = *rc::gen::inRange<int>(0, m.sems.size());
      points.push_back(
          {s, *rc::gen::inRange<uint64_t>(0, m.sems[s].planned + 3)});
    }
    poll = *rc::gen::arbitrary<bool>();
  }
  void checkPreconditions(const Model& m) const override {
    for (const Point& p : points) RC_PRE(HasSem(m, p.sem));
  }
  void run(const Model& m, Sut& sut) const override {
    std::vector<SemaphorePoint> list;
    bool any_reached = false, all_reached = true;
    std::set<StatusCode> codes;
    for (const Point& p : points) {
      SettleSem(m, sut, p.sem);
      list.push_back({sut.sems[p.sem].get(), p.value});
      const SemModel& s = m.sems[p.sem];
      if (s.failed) {
        codes.insert(s.codes.begin(), s.codes.end());
        all_reached = false;
      } else if (s.value >= p.value) {
        any_reached = true;
      } else {
        all_reached = false;
      }
    }
    Status st = WaitSemaphores(
        mode, list,
        poll ? Timeout::Immediate() : Timeout::After(kShortTimeout));
    bool ok_expected =
        points.empty() || (mode == WaitMode::kAny ? any_reached : all_reached);
    if (ok_expected) {
      if (!st.ok()) RC_FAIL("wait should succeed: " + st.ToString());
    } else if (!codes.empty()) {
      if (st.ok() || !codes.count(st.code())) {
        RC_FAIL("wait should fail with " + CodesString(codes) + ": " +
                st.ToString());
      }
    } else if (st.code() != StatusCode::kDeadlineExceeded) {
      RC_FAIL("wait should time out: " + st.ToString());
    }
    AssertNoViolations(sut);
  }
  void show(std::ostream& os) const override {
    os << "WaitSemaphores(" << (mode == WaitMode::kAll ? "ALL" : "ANY")
       << ", {";
    for (size_t i = 0; i < points.size(); ++i) {
      os << (i ? ", " : "") << "s" << points[i].sem << ">=" << points[i].value;
    }
    os << "}, " << (poll ? "poll" : "1ms") << ")";
  }
};

struct QuerySem : Cmd {
  int sem;
  explicit QuerySem(const Model& m) {
    RC_PRE(!m.sems.empty());
    sem = *rc::gen::inRange<int>(0, m.sems.size());
  }
  void checkPreconditions(const Model& m) const override {
    RC_PRE(HasSem(m, sem));
  }
  void run(const Model& m, Sut& sut) const override {
    SettleSem(m, sut, sem);  // checks Query against the model
    AssertNoViolations(sut);
  }
  void show(std::ostream& os) const override {
    os << "s" << sem << "->Query()";
  }
};

}  // namespace
}  // namespace hal::prop

int main() {
  using namespace hal::prop;
  return RunProperty("semaphore ordering", [](uint32_t sim_seed) {
    std::string uri = CaseDeviceUri(sim_seed);
    Sut sut;
    sut.device = CreateCaseDevice(uri);
    sut.pump = sut.device->CreateSemaphore(0).value();
    Model initial;
    initial.queue_count = std::min(sut.device->queue_count(), 64);
    initial.can_lose = hal::sim::AsSimDevice(sut.device.get()).ok();
    // Without semaphores only creation can be generated; with the most, no
    // creation.
    auto next = [](const Model& m) {
      if (m.sems.empty()) return OneOfCommands<Model, Sut, CreateSemaphore>(m);
      if (m.sems.size() >= static_cast<size_t>(kMaxSemaphores)) {
        return OneOfCommands<Model, Sut, HostSignal, HostSignal, HostFail,
                             Submit, Submit, Submit, Submit, HostWait, HostWait,
                             HostWaitList, QuerySem, LoseDevice>(m);
      }
      return OneOfCommands<Model, Sut, CreateSemaphore, CreateSemaphore,
                           HostSignal, HostSignal, HostFail, Submit, Submit,
                           Submit, Submit, HostWait, HostWait, HostWaitList,
                           QuerySem>(m);
    };
    const auto commands = *rc::state::gen::commands(initial, next);
    rc::state::runAll(commands, initial, sut);
    // Finally every runnable operation must have completed.
    Model final_model = initial;
    rc::state::applyAll(commands, final_model);
    SettleAll(final_model, sut);
    // Operations still waiting are cancelled with the device, never run.
    sut.device.reset();
    for (size_t i = 0; i < final_model.ops.size(); ++i) {
      if (final_model.ops[i].state != OpState::kRan) {
        RC_ASSERT(!sut.ops[i]->started.load());
      }
    }
  });
}
