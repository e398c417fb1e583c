// Progress pumps: how drivers that run device work on host threads make
// progress while a host thread waits.
//
// The simulator's deterministic mode has no device threads: device work runs
// inside host waits, on the waiting thread, so that the device-side order is a
// function of the seed and the sequence of host calls alone. Such a driver
// registers a pump; every blocking wait in hal/ (Semaphore::Wait,
// WaitSemaphores, Fence::Wait) runs the pumps before it sleeps.
//
// Thread safety: everything here may be called from any thread. A pump must
// tolerate being called from several threads at once (it may simply return
// false when another thread is already pumping it).
#pragma once

#include <atomic>

namespace hal {

class ProgressPump {
 public:
  virtual ~ProgressPump() = default;
  // Runs some ready device work. Returns true when it did anything (so the
  // caller re-checks its condition), false when nothing can run now.
  virtual bool Pump() = 0;
};

void RegisterProgressPump(ProgressPump* pump);
void UnregisterProgressPump(ProgressPump* pump);

// True while any pump is registered (a relaxed load: the fast path of waits).
bool HaveProgressPumps();
// Runs every registered pump once; true when any made progress.
bool RunProgressPumps();

}  // namespace hal
