#include "hal/coverage.h"

#include <atomic>
#include <cstring>
#include <string>

namespace hal {
namespace {
std::atomic<uint64_t> g_counts[static_cast<int>(CoverageState::kCount)];
}  // namespace

void Sometimes(CoverageState state) {
  g_counts[static_cast<int>(state)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t CoverageCount(CoverageState state) {
  return g_counts[static_cast<int>(state)].load(std::memory_order_relaxed);
}

bool CoverageApplies(CoverageState state, const char* driver) {
  const std::string list = kCoverageStates[static_cast<int>(state)].drivers;
  if (list.empty()) return true;
  const std::string name = driver;
  const bool gpu = name == "cuda" || name == "hip" || name == "level_zero" ||
                   name == "amdgpu";
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(start, end - start);
    if (item == name || (item == "gpu" && gpu)) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace hal
