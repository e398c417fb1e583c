#include "hal/progress.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace hal {

namespace {
std::atomic<int> g_pump_count{0};
// Work the pumps published (AddPumpWork), over all pumps.
std::atomic<int64_t> g_pump_work{0};
std::atomic<int> g_pump_sleeper_count{0};
std::mutex& SleeperMutex() {
  static auto* m = new std::mutex();
  return *m;
}
PumpSleeper* g_pump_sleepers = nullptr;  // under SleeperMutex
std::recursive_mutex& PumpMutex() {
  static auto* m = new std::recursive_mutex();
  return *m;
}
std::vector<ProgressPump*>& Pumps() {
  static auto* v = new std::vector<ProgressPump*>();
  return *v;
}
}  // namespace

void RegisterProgressPump(ProgressPump* pump) {
  std::lock_guard<std::recursive_mutex> lock(PumpMutex());
  Pumps().push_back(pump);
  g_pump_count.fetch_add(1, std::memory_order_release);
}

void UnregisterProgressPump(ProgressPump* pump) {
  std::lock_guard<std::recursive_mutex> lock(PumpMutex());
  auto& v = Pumps();
  auto it = std::find(v.begin(), v.end(), pump);
  if (it != v.end()) {
    v.erase(it);
    g_pump_count.fetch_sub(1, std::memory_order_release);
  }
}

bool HaveProgressPumps() {
  return g_pump_count.load(std::memory_order_acquire) > 0;
}

// A sleeper registers (the count, seq_cst) and then reads the work count;
// a publisher adds work and then reads the sleeper count (both seq_cst).
// Either the sleeper sees the work and does not sleep, or the publisher
// sees the sleeper and wakes it.
void AddPumpWork(int64_t delta) {
  g_pump_work.fetch_add(delta, std::memory_order_seq_cst);
  if (delta > 0 && g_pump_sleeper_count.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(SleeperMutex());
    for (PumpSleeper* s = g_pump_sleepers; s; s = s->next) s->wake(s->arg);
  }
}

void AddPumpSleeper(PumpSleeper* sleeper) {
  std::lock_guard<std::mutex> lock(SleeperMutex());
  sleeper->prev = nullptr;
  sleeper->next = g_pump_sleepers;
  if (g_pump_sleepers) g_pump_sleepers->prev = sleeper;
  g_pump_sleepers = sleeper;
  g_pump_sleeper_count.fetch_add(1, std::memory_order_seq_cst);
}

void RemovePumpSleeper(PumpSleeper* sleeper) {
  std::lock_guard<std::mutex> lock(SleeperMutex());
  if (sleeper->prev) {
    sleeper->prev->next = sleeper->next;
  } else {
    g_pump_sleepers = sleeper->next;
  }
  if (sleeper->next) sleeper->next->prev = sleeper->prev;
  g_pump_sleeper_count.fetch_sub(1, std::memory_order_seq_cst);
}

bool HavePumpWork() { return g_pump_work.load(std::memory_order_seq_cst) > 0; }

bool RunProgressPumps() {
  if (!HavePumpWork()) return false;
  // The registry lock is held while pumping, so a pump cannot be
  // unregistered (its device destroyed) while it runs. It is only tried:
  // a waiter must never block behind another thread's pumping (that thread
  // may be running a host call that waits for this one); it sleeps a slice
  // and retries instead. The lock is recursive so that work run by a pump
  // may itself wait. No copy of the list: it is walked by index, which
  // stays valid if a pump's work registers or unregisters a pump on this
  // thread (one pump may then be skipped or run twice this round; either is
  // harmless).
  std::unique_lock<std::recursive_mutex> lock(PumpMutex(), std::try_to_lock);
  if (!lock.owns_lock()) return false;
  const std::vector<ProgressPump*>& pumps = Pumps();
  bool progressed = false;
  for (size_t i = 0; i < pumps.size(); ++i) {
    progressed |= pumps[i]->Pump();
  }
  return progressed;
}

}  // namespace hal
