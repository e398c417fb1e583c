// The simulator's scheduler: decides when queue operations run.
//
// Every queue operation of the simulator becomes a SimOp: wait points, signal
// points and a function that does the work on host memory. The scheduler
// starts an op once all its waits are reached, runs it, and then signals (or
// fails) its signal points. This is the one seam where a deterministic,
// seed-driven scheduler replaces the threaded one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hal/ref.h"
#include "hal/semaphore.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal::sim {

struct SimOp {
  const char* name = "op";
  int queue = 0;
  std::vector<std::pair<Ref<Semaphore>, uint64_t>> waits;
  std::vector<std::pair<Ref<Semaphore>, uint64_t>> signals;
  // The device work; its error fails the signal points.
  std::function<Status()> run;
  // Called instead of `run` when a wait failed or the device shut down.
  std::function<void(const Status&)> abandon;

  void SetPoints(SemaphoreList wait, SemaphoreList signal) {
    for (const auto& p : wait) waits.emplace_back(Ref<Semaphore>(p.semaphore), p.value);
    for (const auto& p : signal) signals.emplace_back(Ref<Semaphore>(p.semaphore), p.value);
  }
};

class SimScheduler {
 public:
  virtual ~SimScheduler() = default;
  // Takes the op; never fails (an op that cannot run fails its signals).
  virtual void Submit(std::unique_ptr<SimOp> op) = 0;
  // Waits until no op is in flight (including ops whose waits are unmet).
  virtual Status WaitIdle(Timeout timeout) = 0;
  // Runs what is ready, then fails every op left with CANCELLED. Idempotent.
  virtual void Shutdown() = 0;
};

// One worker thread per queue; ops become ready through semaphore timepoint
// callbacks, so an op whose waits are unmet never blocks its queue.
std::unique_ptr<SimScheduler> CreateThreadedScheduler(int queue_count);

// Completes an op: signals its points on success, fails them otherwise.
void FinishSimOp(SimOp& op, const Status& status);

}  // namespace hal::sim
