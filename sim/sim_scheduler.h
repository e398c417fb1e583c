// The simulator's schedulers: they decide when queue operations run.
//
// Every queue operation of the simulator becomes a SimOp: wait points,
// signal points, the buffer ranges it touches, and a function that does the
// work on host memory. A scheduler starts an op once all its waits are
// reached (or dispatches it at once, to fail, when one wait failed), runs it,
// and then signals or fails its signal points.
//
// Two schedulers share this interface:
// - deterministic (default): no device threads. Work runs inside host waits
//   (through hal/progress.h), one step at a time, on a virtual clock. Among
//   ready ops the seed picks the start order and each op's duration, so
//   independent ops complete in a seed-chosen order; an op's memory effects
//   happen at its completion. Same seed + same host calls = same trace.
// - threaded: one worker thread per queue runs ready ops as they come; the
//   same checks and faults apply, without the determinism.
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
#include "sim/sim_context.h"

namespace hal::sim {

struct SimOp {
  uint64_t id = 0;  // per device, in submission order
  const char* name = "op";
  int queue = 0;
  std::vector<std::pair<Ref<Semaphore>, uint64_t>> waits;
  std::vector<std::pair<Ref<Semaphore>, uint64_t>> signals;
  std::vector<SimAccess> accesses;  // for the hazard checker
  std::vector<Ref<Buffer>> retained;  // keeps `accesses` buffers alive
  // The device work; its error fails the signal points.
  std::function<Status()> run;
  // Called instead of `run` when a wait failed, the device was lost, or the
  // device shut down.
  std::function<void(const Status&)> abandon;

  void SetPoints(SemaphoreList wait, SemaphoreList signal) {
    for (const auto& p : wait) waits.emplace_back(Ref<Semaphore>(p.semaphore), p.value);
    for (const auto& p : signal) signals.emplace_back(Ref<Semaphore>(p.semaphore), p.value);
  }
  void AddAccess(Buffer* allocated, uint64_t buffer_id, DeviceSize offset,
                 DeviceSize length, bool write, bool free = false) {
    accesses.push_back(SimAccess{allocated, buffer_id, offset, length, write, free});
    retained.emplace_back(allocated);
  }
};

class SimScheduler {
 public:
  virtual ~SimScheduler() = default;
  // Takes the op; never fails (an op that cannot run fails its signals).
  virtual void Submit(std::unique_ptr<SimOp> op) = 0;
  // Waits until no op is in flight (including ops whose waits are unmet);
  // the deterministic scheduler runs work meanwhile.
  virtual Status WaitIdle(Timeout timeout) = 0;
  // Runs what can run, then fails every op left with CANCELLED. Idempotent.
  virtual void Shutdown() = 0;
};

std::unique_ptr<SimScheduler> CreateThreadedScheduler(
    int queue_count, std::shared_ptr<SimContext> context);
std::unique_ptr<SimScheduler> CreateDeterministicScheduler(
    std::shared_ptr<SimContext> context);

// Completes an op: signals its points on success, fails them otherwise.
void FinishSimOp(SimOp& op, const Status& status);

}  // namespace hal::sim
