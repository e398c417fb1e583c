#include "sim/sim_context.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>

namespace hal::sim {

StatusOr<SimFaultPlan> SimFaultPlan::FromUri(const DeviceUri& uri) {
  SimFaultPlan p;
  HAL_ASSIGN_OR_RETURN(p.fail_alloc, uri.GetUint("fail_alloc", 0));
  HAL_ASSIGN_OR_RETURN(uint64_t a, uri.GetUint("alloc_fail_ppm", 0, 0, 1000000));
  HAL_ASSIGN_OR_RETURN(p.fail_op, uri.GetUint("fail_op", 0));
  HAL_ASSIGN_OR_RETURN(uint64_t o, uri.GetUint("op_fail_ppm", 0, 0, 1000000));
  HAL_ASSIGN_OR_RETURN(uint64_t s, uri.GetUint("slow_ppm", 0, 0, 1000000));
  HAL_ASSIGN_OR_RETURN(p.lose_device_at, uri.GetUint("lose_device_at", 0));
  p.alloc_fail_ppm = static_cast<uint32_t>(a);
  p.op_fail_ppm = static_cast<uint32_t>(o);
  p.slow_ppm = static_cast<uint32_t>(s);
  return p;
}

SimContext::SimContext(uint64_t seed, bool checking, SimFaultPlan faults,
                       std::string trace_path)
    : seed_(seed),
      checking_(checking),
      schedule_random_(seed),
      // A separate stream, so that turning faults on does not change the
      // schedule that a seed explores.
      fault_random_(seed ^ 0x5DEECE66Dull),
      trace_path_(std::move(trace_path)),
      faults_(faults) {}

SimContext::~SimContext() {
  if (trace_path_.empty()) return;
  std::ofstream f(trace_path_);
  for (const auto& line : trace_lines_) f << line << "\n";
  f << "# seed " << seed_ << " hash " << std::hex << trace_hash_ << "\n";
  std::fprintf(stderr, "sim: trace of seed %" PRIu64 " written to %s, hash %016" PRIx64 "\n",
               seed_, trace_path_.c_str(), trace_hash_);
}

uint64_t SimContext::DrawDuration() {
  // 1 to 16 us, with a tail: one in eight ops takes up to 8x longer.
  uint64_t d = 1000 + schedule_random_.Below(15000);
  if (schedule_random_.Below(8) == 0) d *= 1 + schedule_random_.Below(8);
  if (DrawSlow()) d *= 100;
  return d;
}

void SimContext::Trace(const std::string& line) {
  for (unsigned char c : line) {
    trace_hash_ ^= c;
    trace_hash_ *= 0x100000001b3ull;
  }
  trace_hash_ ^= '\n';
  trace_hash_ *= 0x100000001b3ull;
  ++trace_count_;
  if (!trace_path_.empty()) trace_lines_.push_back(line);
}

namespace {
bool Overlaps(const SimAccess& a, const SimAccess& b) {
  if (a.buffer_id != b.buffer_id) return false;
  if (a.free || b.free) return true;
  return a.offset < b.offset + b.length && b.offset < a.offset + a.length &&
         a.length && b.length;
}
const char* Kind(const SimAccess& a) {
  return a.free ? "free" : a.write ? "write" : "read";
}
}  // namespace

Status SimContext::BeginAccess(uint64_t op_id, const std::string& op_name,
                               const std::vector<SimAccess>& accesses) {
  Status hazard;
  if (checking_) {
    for (const InFlight& other : in_flight_) {
      for (const SimAccess& b : other.accesses) {
        for (const SimAccess& a : accesses) {
          if (!Overlaps(a, b) || (!a.write && !b.write && !a.free && !b.free)) continue;
          char buf[512];
          std::snprintf(
              buf, sizeof(buf),
              "hazard: %s/%s on buffer #%llu [%llu, +%llu) between %s#%llu and "
              "%s#%llu, which are in flight together (no semaphore path orders "
              "them)",
              Kind(b), Kind(a), (unsigned long long)a.buffer_id,
              (unsigned long long)a.offset, (unsigned long long)a.length,
              other.name.c_str(), (unsigned long long)other.op_id,
              op_name.c_str(), (unsigned long long)op_id);
          Report(buf);
          if (hazard.ok()) hazard = FailedPreconditionError("%s", buf);
        }
      }
    }
  }
  in_flight_.push_back(InFlight{op_id, op_name, accesses});
  return hazard;
}

void SimContext::EndAccess(uint64_t op_id) {
  for (size_t i = 0; i < in_flight_.size(); ++i) {
    if (in_flight_[i].op_id == op_id) {
      in_flight_.erase(in_flight_.begin() + i);
      return;
    }
  }
}

Status SimContext::CheckHostAccess(uint64_t buffer_id, DeviceSize offset,
                                   DeviceSize length, bool write) {
  if (!checking_) return OkStatus();
  SimAccess host{nullptr, buffer_id, offset, length, write, false};
  for (const InFlight& other : in_flight_) {
    for (const SimAccess& b : other.accesses) {
      if (!Overlaps(host, b) || (!write && !b.write && !b.free)) continue;
      char buf[512];
      std::snprintf(buf, sizeof(buf),
                    "hazard: host %s of buffer #%llu [%llu, +%llu) while "
                    "in-flight %s#%llu %ss it",
                    write ? "write mapping" : "read mapping",
                    (unsigned long long)buffer_id, (unsigned long long)offset,
                    (unsigned long long)length, other.name.c_str(),
                    (unsigned long long)other.op_id, Kind(b));
      Report(buf);
      return FailedPreconditionError("%s", buf);
    }
  }
  return OkStatus();
}

void SimContext::Report(const std::string& report) {
  reports_.push_back(report);
  Trace("report " + report);
}

Status SimContext::OnAllocate(DeviceSize size) {
  ++allocations_;
  bool fail = faults_.fail_alloc == allocations_ ||
              fault_random_.Chance(faults_.alloc_fail_ppm);
  if (!fail) return OkStatus();
  Trace("fault alloc#" + std::to_string(allocations_));
  return ResourceExhaustedError(
      "injected fault: allocation #%llu (%llu bytes) failed (seed %llu)",
      (unsigned long long)allocations_, (unsigned long long)size,
      (unsigned long long)seed_);
}

Status SimContext::OnRunOp(const std::string& op_name) {
  ++ops_run_;
  bool fail = faults_.fail_op == ops_run_ || fault_random_.Chance(faults_.op_fail_ppm);
  if (!fail) return OkStatus();
  Trace("fault op#" + std::to_string(ops_run_));
  return InternalError("injected fault: operation #%llu (%s) failed (seed %llu)",
                       (unsigned long long)ops_run_, op_name.c_str(),
                       (unsigned long long)seed_);
}

}  // namespace hal::sim
