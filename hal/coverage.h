// Sometimes-coverage (after Antithesis' "sometimes" assertions): named rare
// states that the suites must reach, counted per process. A state no run
// reaches is a hole in the exploration, not a pass: `hal-check --coverage`
// prints the counts of the states that apply to the driver under test, and
// `--coverage=require` fails the run when one was never reached (CI runs
// that for every driver: coverage.<device>; docs/testing.md).
//
// A new state: add it to CoverageState and kCoverageStates (its name and
// the drivers it applies to), and call Sometimes() where it happens.
#pragma once

#include <cstdint>

namespace hal {

enum class CoverageState : int {
  kSemaphoreFailedWithWaiters,
  kSignalWokeASleeper,
  kOpBehindAFailedWait,
  kWaitResolvedOnTheDevice,
  kVendorEventReused,
  kStagingRingFullWaited,
  kCount,
};

struct CoverageInfo {
  const char* name;
  // The drivers it applies to: "" for every driver, else a comma-separated
  // list of driver names ("gpu": cuda, hip, level_zero and amdgpu).
  const char* drivers;
};

inline constexpr CoverageInfo kCoverageStates[] = {
    {"semaphore failed with waiters", ""},
    {"a signal woke a sleeping host waiter", ""},
    {"an op submitted behind a failed wait", "gpu"},
    {"a wait resolved on the device", "gpu"},
    {"a vendor event reused from the pool", "gpu"},
    {"the staging ring was full and waited", "amdgpu"},
};
static_assert(sizeof(kCoverageStates) / sizeof(kCoverageStates[0]) ==
              static_cast<int>(CoverageState::kCount));

// Counts one occurrence (a relaxed atomic add).
void Sometimes(CoverageState state);
uint64_t CoverageCount(CoverageState state);
// Whether `state` applies to driver `driver` (a device URI's driver name).
bool CoverageApplies(CoverageState state, const char* driver);

}  // namespace hal
