#include "hal/progress.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace hal {

namespace {
std::atomic<int> g_pump_count{0};
// Work the pumps published (AddPumpWork), over all pumps.
std::atomic<int64_t> g_pump_work{0};
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

// seq_cst on both sides: a waiter that reads no work and then sleeps is
// woken by the slice (see semaphore.cc), so no finer ordering is needed;
// seq_cst keeps the argument simple and costs nothing measurable here.
void AddPumpWork(int64_t delta) {
  g_pump_work.fetch_add(delta, std::memory_order_seq_cst);
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
