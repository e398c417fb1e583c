// The FNV-1a line hash of the simulated GPU engine's trace (sim/engine/),
// which every simulated vendor library reports as halsim_trace_hash: same
// seed and same host calls give the same hash, across runs and processes.
// The HAL simulator driver (drivers/sim/) hashes its own trace its own way
// (TraceMix in drivers/sim/sim_context.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace hal::sim {

// FNV-1a over trace lines (each line followed by '\n').
class TraceHash {
 public:
  void AddLine(std::string_view line) {
    for (unsigned char c : line) Mix(c);
    Mix('\n');
    ++lines_;
  }
  uint64_t value() const { return hash_; }
  uint64_t lines() const { return lines_; }

 private:
  void Mix(unsigned char c) {
    hash_ ^= c;
    hash_ *= 0x100000001b3ull;
  }
  uint64_t hash_ = 0xcbf29ce484222325ull;
  uint64_t lines_ = 0;
};

}  // namespace hal::sim
