// The HSA skin's BARRIER_OR and AMD BARRIER_VALUE packets, as engine ops
// that only wait (zero time). BARRIER_AND stays in sim_hsa_queue.cc's
// BuildOp.
#include <cstring>
#include <string>

#include "sim/hsa/sim_hsa_internal.h"

namespace hal::sim::hsa {

std::string BuildBarrierOr(const uint8_t* bytes, engine::Op* op,
                           hsa_signal_t* completion) {
  hsa_barrier_or_packet_t p;
  std::memcpy(&p, bytes, sizeof(p));
  *completion = p.completion_signal;
  op->name = "hsa_barrier_or";
  op->zero_time = true;
  // Satisfied once any dependency is 0. Null handles are ignored, so a
  // packet of only null handles does not wait (wait_any with no waits).
  op->wait_any = true;
  for (hsa_signal_t dep : p.dep_signal) {
    if (!dep.handle) continue;
    op->waits.push_back({SignalOf(dep)->signal, engine::Cond::kEq, 0});
  }
  return "";
}

std::string BuildBarrierValue(const uint8_t* bytes, engine::Op* op,
                              hsa_signal_t* completion) {
  hsa_amd_barrier_value_packet_t p;
  std::memcpy(&p, bytes, sizeof(p));
  *completion = p.completion_signal;
  if (p.header.AmdFormat != HSA_AMD_PACKET_TYPE_BARRIER_VALUE) {
    return "unknown AMD vendor packet format " +
           std::to_string(p.header.AmdFormat);
  }
  op->name = "hsa_barrier_value";
  op->zero_time = true;
  engine::Cond cond;
  if (!ToEngineCond(p.cond, &cond)) return "unknown barrier-value condition";
  if (p.signal.handle) {
    // (value & mask) cond compare, with HSA's signed signal values.
    engine::Wait wait;
    wait.signal = SignalOf(p.signal)->signal;
    wait.cond = cond;
    wait.value = static_cast<uint64_t>(p.value);
    wait.mask = static_cast<uint64_t>(p.mask);
    wait.is_signed = true;
    op->waits.push_back(std::move(wait));
  }
  return "";
}

}  // namespace hal::sim::hsa
