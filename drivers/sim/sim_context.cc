#include "drivers/sim/sim_context.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>

namespace hal::sim {

StatusOr<SimFaultPlan> SimFaultPlan::FromUri(const DeviceUri& uri) {
  SimFaultPlan p;
  for (const char* name : {"fail_alloc", "alloc_fail_ppm", "fail_op",
                           "op_fail_ppm", "slow_ppm", "lose_device_at"}) {
    if (!uri.has_param(name)) continue;
    HAL_ASSIGN_OR_RETURN(uint64_t value, uri.GetUint(name, 0));
    std::string error;
    if (!p.Set(name, value, &error)) {
      return InvalidArgumentError("device URI parameter: %s", error.c_str());
    }
  }
  return p;
}

SimContext::SimContext(uint64_t seed, bool checking, SimFaultPlan faults,
                       std::string trace_path)
    : seed_(seed),
      checking_(checking),
      schedule_random_(seed),
      fault_random_(seed ^ kFaultStreamSalt),
      trace_path_(std::move(trace_path)),
      faults_(faults) {}

SimContext::~SimContext() {
  if (trace_path_.empty()) return;
  std::ofstream f(trace_path_);
  for (const auto& line : trace_lines_) f << line << "\n";
  f << "# seed " << seed_ << " hash " << std::hex << trace_hash_ << "\n";
  std::fprintf(stderr,
               "sim: trace of seed %" PRIu64 " written to %s, hash %016" PRIx64
               "\n",
               seed_, trace_path_.c_str(), trace_hash_);
}

uint64_t SimContext::DrawDuration() {
  uint64_t d = DrawOpDuration(schedule_random_);
  if (DrawSlow()) d *= 100;
  return d;
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
  if (accesses.empty()) return OkStatus();
  Status hazard;
  if (checking_) {
    for (const SimAccess& a : accesses) {
      auto it = by_buffer_.find(a.buffer_id);
      if (it == by_buffer_.end()) continue;
      for (const Holder& h : it->second) {
        const SimAccess& b = h.access;
        if (h.op_id == op_id || !Overlaps(a, b) ||
            (!a.write && !b.write && !a.free && !b.free)) {
          continue;
        }
        char buf[512];
        std::snprintf(
            buf, sizeof(buf),
            "hazard: %s/%s on buffer #%llu [%llu, +%llu) between %s#%llu and "
            "%s#%llu, which are in flight together (no semaphore path orders "
            "them)",
            Kind(b), Kind(a), (unsigned long long)a.buffer_id,
            (unsigned long long)a.offset, (unsigned long long)a.length,
            in_flight_[h.op_id].name.c_str(), (unsigned long long)h.op_id,
            op_name.c_str(), (unsigned long long)op_id);
        Report(buf);
        if (hazard.ok()) hazard = FailedPreconditionError("%s", buf);
      }
    }
  }
  if (checking_) {
    for (const SimAccess& a : accesses) {
      if (!a.write && !a.free) continue;
      auto it = host_mappings_.find(a.buffer_id);
      if (it == host_mappings_.end()) continue;
      for (const SimAccess& m : it->second) {
        if (!Overlaps(a, m) || (!m.write && !a.free)) continue;
        // Unmapping a write mapping writes the host's bytes back (flush),
        // over what the op wrote; a freed buffer leaves the host pointer
        // dangling.
        char buf[512];
        std::snprintf(
            buf, sizeof(buf),
            "hazard: %s#%llu %ss buffer #%llu [%llu, +%llu) while the host "
            "holds a %s mapping of [%llu, +%llu)",
            op_name.c_str(), (unsigned long long)op_id, Kind(a),
            (unsigned long long)a.buffer_id, (unsigned long long)a.offset,
            (unsigned long long)a.length, m.write ? "write" : "read",
            (unsigned long long)m.offset, (unsigned long long)m.length);
        AddMappingHazard(op_id, buf);
        break;
      }
    }
  }
  InFlightOp& op = in_flight_[op_id];
  op.name = op_name;
  for (const SimAccess& a : accesses) {
    by_buffer_[a.buffer_id].push_back(Holder{op_id, a});
    op.buffer_ids.push_back(a.buffer_id);
  }
  return hazard;
}

void SimContext::EndAccess(uint64_t op_id) {
  auto it = in_flight_.find(op_id);
  if (it == in_flight_.end()) return;
  for (uint64_t id : it->second.buffer_ids) {
    auto b = by_buffer_.find(id);
    if (b == by_buffer_.end()) continue;
    auto& v = b->second;
    v.erase(std::remove_if(v.begin(), v.end(),
                           [&](const Holder& h) { return h.op_id == op_id; }),
            v.end());
    if (v.empty()) by_buffer_.erase(b);
  }
  in_flight_.erase(it);
  mapping_hazards_.erase(op_id);
  mapping_hazard_count_.store(mapping_hazards_.size(),
                              std::memory_order_release);
}

void SimContext::BeginHostAccess(uint64_t buffer_id, DeviceSize offset,
                                 DeviceSize length, bool write) {
  if (!checking_) return;
  SimAccess host{nullptr, buffer_id, offset, length, write, false};
  auto it = by_buffer_.find(buffer_id);
  if (it != by_buffer_.end()) {
    for (const Holder& h : it->second) {
      const SimAccess& b = h.access;
      if (!Overlaps(host, b) || (!write && !b.write && !b.free)) continue;
      char buf[512];
      std::snprintf(buf, sizeof(buf),
                    "hazard: host %s of buffer #%llu [%llu, +%llu) while "
                    "in-flight %s#%llu %ss it",
                    write ? "write mapping" : "read mapping",
                    (unsigned long long)buffer_id, (unsigned long long)offset,
                    (unsigned long long)length,
                    in_flight_[h.op_id].name.c_str(),
                    (unsigned long long)h.op_id, Kind(b));
      AddMappingHazard(h.op_id, buf);
    }
  }
  host_mappings_[buffer_id].push_back(host);
}

void SimContext::EndHostAccess(uint64_t buffer_id, DeviceSize offset,
                               DeviceSize length, bool write) {
  auto it = host_mappings_.find(buffer_id);
  if (it == host_mappings_.end()) return;
  auto& v = it->second;
  auto m = std::find_if(v.begin(), v.end(), [&](const SimAccess& a) {
    return a.offset == offset && a.length == length && a.write == write;
  });
  if (m != v.end()) v.erase(m);
  if (v.empty()) host_mappings_.erase(it);
}

void SimContext::AddMappingHazard(uint64_t op_id, const std::string& report) {
  Report(report);
  auto [it, added] = mapping_hazards_.emplace(op_id, Status());
  if (added) it->second = FailedPreconditionError("%s", report.c_str());
  mapping_hazard_count_.store(mapping_hazards_.size(),
                              std::memory_order_release);
}

Status SimContext::TakeMappingHazard(uint64_t op_id) {
  auto it = mapping_hazards_.find(op_id);
  if (it == mapping_hazards_.end()) return OkStatus();
  Status s = std::move(it->second);
  mapping_hazards_.erase(it);
  mapping_hazard_count_.store(mapping_hazards_.size(),
                              std::memory_order_release);
  return s;
}

void SimContext::Report(const std::string& report) {
  reports_.push_back(report);
  TraceLine(*this) << "report " << report;
}

Status SimContext::OnAllocate(DeviceSize size) {
  ++allocations_;
  bool fail = faults_.fail_alloc == allocations_ ||
              fault_random_.Chance(faults_.alloc_fail_ppm);
  if (!fail) return OkStatus();
  TraceLine(*this) << "fault alloc#" << allocations_;
  return ResourceExhaustedError(
      "injected fault: allocation #%llu (%llu bytes) failed (seed %llu)",
      (unsigned long long)allocations_, (unsigned long long)size,
      (unsigned long long)seed_);
}

Status SimContext::OnRunOp(const char* op_name, uint64_t op_id) {
  ++ops_run_;
  bool fail =
      faults_.fail_op == ops_run_ || fault_random_.Chance(faults_.op_fail_ppm);
  if (!fail) return OkStatus();
  TraceLine(*this) << "fault op#" << ops_run_;
  return InternalError(
      "injected fault: operation #%llu (%s#%llu) failed (seed %llu)",
      (unsigned long long)ops_run_, op_name, (unsigned long long)op_id,
      (unsigned long long)seed_);
}

}  // namespace hal::sim
