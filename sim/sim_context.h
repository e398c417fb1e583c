// Per-device simulator state shared by the scheduler, the device and the
// allocator: the seed and its random streams, the virtual clock, the trace,
// the hazard checker and the fault plan.
//
// Everything here is deterministic given the seed and the order of calls;
// the threaded scheduler calls in from worker threads (under `mutex`), which
// keeps it safe but not deterministic.
#pragma once

#include <atomic>
#include <charconv>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hal/buffer.h"
#include "hal/status.h"
#include "hal/types.h"
#include "hal/uri.h"
#include "sim/core/fault_plan.h"
#include "sim/sim_core.h"

namespace hal::sim {

// One buffer range an operation touches.
struct SimAccess {
  Buffer* buffer = nullptr;  // allocated buffer (kept alive by the op)
  uint64_t buffer_id = 0;
  DeviceSize offset = 0;
  DeviceSize length = 0;
  bool write = false;
  bool free = false;  // the op releases the buffer (dealloca)
};

// Faults on request, in the one fault grammar of every simulator
// (sim/core/fault_plan.h): from the URI (fail_alloc=N, alloc_fail_ppm=P,
// fail_op=N, op_fail_ppm=P, slow_ppm=P, lose_device_at=T) or SetFaults().
// The late_signal_* faults are the vendor simulators' (no URI parameter).
struct SimFaultPlan : FaultPlan {
  static StatusOr<SimFaultPlan> FromUri(const DeviceUri& uri);
};

class SimContext;

// Builds one trace line in the context's reusable buffer (no allocation
// once warm) and records it when destroyed. Use with the context lock held.
class TraceLine {
 public:
  explicit TraceLine(SimContext& context);
  ~TraceLine();
  TraceLine& operator<<(std::string_view text) {
    line_.append(text);
    return *this;
  }
  TraceLine& operator<<(const char* text) {
    return *this << std::string_view(text);
  }
  TraceLine& operator<<(uint64_t value) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), value);
    line_.append(buf, r.ptr);
    return *this;
  }

 private:
  SimContext& context_;
  std::string& line_;
};

class SimContext {
 public:
  SimContext(uint64_t seed, bool checking, SimFaultPlan faults,
             std::string trace_path);
  ~SimContext();

  uint64_t seed() const { return seed_; }
  bool checking() const { return checking_; }

  std::mutex& mutex() { return mutex_; }

  // --- All below: call with mutex() held. ---
  SimRandom& schedule_random() { return schedule_random_; }
  uint64_t now_ns() const { return now_ns_; }
  void AdvanceTo(uint64_t t) {
    if (t > now_ns_) now_ns_ = t;
  }
  // A seeded duration for an op's execution, in virtual ns.
  uint64_t DrawDuration();
  uint64_t NextBufferId() { return ++buffer_ids_; }

  // Trace: every host call and device event, in order. The hash is FNV-1a
  // over the lines.
  void Trace(std::string_view line);
  uint64_t trace_hash() const { return trace_hash_.value(); }
  size_t trace_size() const { return trace_hash_.lines(); }
  const std::vector<std::string>& trace_lines() const { return trace_lines_; }

  // Checker: operations in flight and the ranges they touch. Returns the
  // hazard with an in-flight op, if any, as FAILED_PRECONDITION. A hazard
  // with a mapping the host holds is recorded for the op instead (see
  // TakeMappingHazard).
  Status BeginAccess(uint64_t op_id, const std::string& op_name,
                     const std::vector<SimAccess>& accesses);
  void EndAccess(uint64_t op_id);
  // The host maps a range (write: the host may write it) and holds it until
  // EndHostAccess with the same arguments. Mapping a range that an in-flight
  // op writes (or writing one it reads) is a hazard of that op; so is an op
  // that becomes in flight while the host holds a write mapping of a range it
  // writes, or any mapping of a buffer it frees. Mapping itself never fails:
  // the op does, when it runs (TakeMappingHazard), as every hazard does.
  void BeginHostAccess(uint64_t buffer_id, DeviceSize offset, DeviceSize length,
                       bool write);
  void EndHostAccess(uint64_t buffer_id, DeviceSize offset, DeviceSize length,
                     bool write);
  // The first mapping hazard recorded for the op, taken (OK when none).
  Status TakeMappingHazard(uint64_t op_id);
  // Without the lock: whether any mapping hazard waits to be taken.
  bool has_mapping_hazards() const {
    return mapping_hazard_count_.load(std::memory_order_acquire) != 0;
  }
  // Reports from the checker, in order (also returned as op statuses).
  std::vector<std::string> reports() const { return reports_; }
  void Report(const std::string& report);

  // Faults.
  const SimFaultPlan& faults() const { return faults_; }
  void set_faults(const SimFaultPlan& plan) { faults_ = plan; }
  // Counts an allocation; RESOURCE_EXHAUSTED when the plan fails it.
  Status OnAllocate(DeviceSize size);
  // Counts an op about to run; its injected failure, if any.
  Status OnRunOp(const char* op_name, uint64_t op_id);
  bool DrawSlow() { return fault_random_.Chance(faults_.slow_ppm); }
  // Device loss: OK while alive.
  const Status& lost() const { return lost_; }
  void LoseDevice(const Status& status) {
    if (lost_.ok()) lost_ = status;
  }

 private:
  // The checker's table, indexed by buffer so that an op is compared only
  // with in-flight ops on the same buffers (insertion order kept, so reports
  // are deterministic).
  struct Holder {
    uint64_t op_id;
    SimAccess access;
  };
  struct InFlightOp {
    std::string name;
    std::vector<uint64_t> buffer_ids;
  };

  const uint64_t seed_;
  const bool checking_;
  std::mutex mutex_;
  SimRandom schedule_random_;
  SimRandom fault_random_;
  uint64_t now_ns_ = 0;
  uint64_t buffer_ids_ = 0;
  TraceHash trace_hash_;
  friend class TraceLine;
  std::string trace_scratch_;
  std::string trace_path_;
  std::vector<std::string> trace_lines_;  // kept only when tracing to a file
  std::unordered_map<uint64_t, std::vector<Holder>> by_buffer_;
  std::unordered_map<uint64_t, InFlightOp> in_flight_;
  // Host mappings held now, by buffer id; `write` as for SimAccess.
  std::unordered_map<uint64_t, std::vector<SimAccess>> host_mappings_;
  // Mapping hazards not yet taken by their op, by op id.
  std::unordered_map<uint64_t, Status> mapping_hazards_;
  std::atomic<size_t> mapping_hazard_count_{0};  // mapping_hazards_.size()
  void AddMappingHazard(uint64_t op_id, const std::string& report);
  std::vector<std::string> reports_;
  SimFaultPlan faults_;
  uint64_t allocations_ = 0;
  uint64_t ops_run_ = 0;
  Status lost_;
};

}  // namespace hal::sim
