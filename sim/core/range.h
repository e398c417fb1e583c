// Byte ranges of simulated memory and the overlap test the race and hazard
// checkers share.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hal::sim {

// [begin, end) of device (or host) memory; empty when begin >= end.
struct Range {
  uintptr_t begin = 0, end = 0;
  // [p, p + n), clamped at the top of the address space.
  static Range Of(uintptr_t p, size_t n) {
    return {p, n > UINTPTR_MAX - p ? UINTPTR_MAX : p + n};
  }
  bool empty() const { return begin >= end; }
  bool Overlaps(const Range& o) const {
    return !empty() && !o.empty() && begin < o.end && o.begin < end;
  }
  // Whether [p, p + n) lies inside this range (n == 0: p inside or at end).
  bool Contains(uintptr_t p, size_t n) const {
    return p >= begin && p <= end && n <= end - p;
  }
};

}  // namespace hal::sim
