// Progress pumps: how drivers that run device work on host threads make
// progress while a host thread waits.
//
// The simulator's deterministic mode has no device threads: device work runs
// inside host waits, on the waiting thread, so that the device-side order is a
// function of the seed and the sequence of host calls alone. Such a driver
// registers a pump; every blocking wait in hal/ (Semaphore::Wait,
// WaitSemaphores, Fence::Wait) runs the pumps while work is pending, and
// otherwise spins briefly and sleeps like any other wait (Semaphore::Wait
// is woken by work published meanwhile: AddPumpSleeper; the others look
// again every millisecond).
//
// Thread safety: everything here may be called from any thread. A pump must
// tolerate being called from several threads at once (it may simply return
// false when another thread is already pumping it).
#pragma once

#include <atomic>
#include <cstdint>

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

// True while any pump is registered (an atomic load: the fast path of waits).
bool HaveProgressPumps();

// Pumps publish how much work they could run now (for the simulator: ops
// that are ready or started and not yet taken to complete), so that waits
// find out without a lock whether pumping can help. `delta` may be negative;
// a pump's additions and removals must balance before it unregisters.
void AddPumpWork(int64_t delta);
// True while some pump published work (one atomic load).
bool HavePumpWork();

// A waiter that sleeps while pumps exist and none has work registers how
// to wake it: publishing work (AddPumpWork with a positive delta) wakes
// every registered sleeper, since one of them may be the only thread that
// would run it. Register before the last check for work and unregister
// after the sleep; `wake` runs under a registry lock and must not block.
struct PumpSleeper {
  void (*wake)(void* arg) = nullptr;
  void* arg = nullptr;
  PumpSleeper* prev = nullptr;
  PumpSleeper* next = nullptr;
};
void AddPumpSleeper(PumpSleeper* sleeper);
void RemovePumpSleeper(PumpSleeper* sleeper);

// Runs every registered pump once; true when any made progress. Returns
// false at once, without a lock, when no pump published work, and when
// another thread is pumping (a waiter must never block behind it).
bool RunProgressPumps();

}  // namespace hal
