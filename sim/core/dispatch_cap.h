// The simulators run every workgroup of a dispatch on a CPU. A dispatch of
// more than kMaxSimulatedWorkgroups workgroups in all is refused with an
// error that says so: the HAL's per-dimension limit (kMaxWorkgroupCount,
// 65535) still allows 65535^3, and a garbage indirect count would run for
// hours and look like a hang. Real GPUs have no such cap; a test that needs
// more splits its dispatch.
#pragma once

#include <cstdint>

namespace hal::sim {

inline constexpr uint64_t kMaxSimulatedWorkgroups = uint64_t{1} << 24;

// The number of workgroups of `count` (x, y, z), without overflow.
inline uint64_t WorkgroupTotal(const uint32_t count[3]) {
  return uint64_t{count[0]} * count[1] * uint64_t{count[2]};
}

}  // namespace hal::sim
