// Seed streams and simulated op durations, shared by every simulator (the
// HAL simulator driver and the simulated-GPU engine under the vendor-API
// simulators). Header-only and free of HAL types, so that a C ABI library
// loaded in place of a vendor library uses the same code.
#pragma once

#include <cstdint>

namespace hal::sim {

// SplitMix64: tiny, fast, and the same on every platform (std::
// distributions are not, so none is used).
class SimRandom {
 public:
  explicit SimRandom(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0. (The modulo bias is irrelevant here.)
  uint64_t Below(uint64_t n) { return Next() % n; }
  // True with probability `p` (parts per million).
  bool Chance(uint32_t ppm) { return ppm && Below(1000000) < ppm; }

 private:
  uint64_t state_;
};

// Faults draw from their own stream (seed ^ this), so that turning faults on
// does not change the schedule a seed explores.
constexpr uint64_t kFaultStreamSalt = 0x5DEECE66Dull;
// The stream of host-side choices a simulator makes (Engine::DrawHostChoice).
constexpr uint64_t kHostChoiceSalt = 0x2545F4914F6CDD1Dull;

// A simulated op's duration in virtual ns: 1 to 16 us, with a tail (one op
// in eight takes up to 8x longer).
inline uint64_t DrawOpDuration(SimRandom& random) {
  uint64_t d = 1000 + random.Below(15000);
  if (random.Below(8) == 0) d *= 1 + random.Below(8);
  return d;
}

}  // namespace hal::sim
