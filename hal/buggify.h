// BUGGIFY (after FoundationDB): seeded fault sites inside our own drivers,
// so that exploration reaches the paths a friendly run never takes (a
// worker that is late, a pool that is empty, a query that says "not yet").
// Off unless HAL_BUGGIFY=<seed> is in the environment (read once per
// process; `hal-check --swarm` sets it for half of its seeds). Then each
// site is active with probability 1/4 for the whole process (drawn from the
// seed and the site's name), and an active site fires on 1 in 4 of its
// evaluations (drawn from the seed, the name and how often the site was
// evaluated), so a seed names the same behaviour every run.
//
// Every site, what it does when it fires, and where (docs/testing.md,
// "BUGGIFY"):
//   gpu.pending.worker_delay   the pending-actions worker sleeps 0-255 us
//                              before it looks at its work
//                              (drivers/gpu/gpu_pending_actions.cc)
//   gpu.pending.not_ready      a completion query answers "not ready", so
//                              the blocking path runs (same file)
//   gpu.event_pool.empty       the event pool acts empty: a fresh vendor
//                              event is created (drivers/gpu/gpu_event_pool.cc)
//   amdgpu.staging_ring.full   the staging ring acts full: the copy source
//                              gets memory of its own
//                              (drivers/amdgpu/amdgpu_api_memory.cc)
//   semaphore.wake_anyway      a host Signal with nobody asleep takes the
//                              slow path and wakes (hal/semaphore.cc)
// A site that is not in this list is a build error (kBuggifySites).
#pragma once

#include <atomic>

namespace hal {

namespace internal {
// -1: not read yet; 0: off; 1: on.
extern std::atomic<int> g_buggify_state;
bool BuggifyFires(int site);
int BuggifyEnabledSlow();
}  // namespace internal

enum class BuggifySite : int {
  kWorkerDelay,
  kNotReady,
  kEventPoolEmpty,
  kStagingRingFull,
  kWakeAnyway,
  kCount,
};
// The sites' names, in BuggifySite order.
inline constexpr const char* kBuggifySites[] = {
    "gpu.pending.worker_delay", "gpu.pending.not_ready", "gpu.event_pool.empty",
    "amdgpu.staging_ring.full", "semaphore.wake_anyway",
};
static_assert(sizeof(kBuggifySites) / sizeof(kBuggifySites[0]) ==
              static_cast<int>(BuggifySite::kCount));

inline bool BuggifyEnabled() {
  int state = internal::g_buggify_state.load(std::memory_order_relaxed);
  if (state < 0) state = internal::BuggifyEnabledSlow();
  return state == 1;
}

// Whether `site` fires now (always false when BUGGIFY is off: one relaxed
// load).
inline bool Buggify(BuggifySite site) {
  return BuggifyEnabled() && internal::BuggifyFires(static_cast<int>(site));
}

// How often each site fired in this process (for tests and --coverage).
uint64_t BuggifyFired(BuggifySite site);

}  // namespace hal
