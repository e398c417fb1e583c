// Pending queue actions and the worker thread that releases them (the
// seed's iree_hal_cuda_pending_queue_actions_t).
//
// Every queue operation of a GpuDevice becomes a GpuAction. The worker
// thread owns every API call that enqueues device work:
//
//   * An action whose waits are all resolved is issued. A wait is resolved
//     when the host payload reached it, or when a device timepoint (a
//     recorded event, see GpuSemaphore) of this device covers it: then the
//     stream waits on that event and no host round trip happens.
//   * An unresolved action stays pending; host timepoints (NotifyAt) and new
//     device timepoints wake the worker to look again. So wait-before-signal
//     never blocks a stream and never blocks unrelated work.
//   * Issuing records one event after the work, adds it as a device
//     timepoint to every signal semaphore, and launches a host function on
//     the queue's callback stream (which waits on the event, so the host
//     function never blocks the work stream). The host function only pushes
//     the action onto the worker's completion list: it makes no API call.
//   * On completion the worker queries the event (an API error becomes the
//     failure status, with the API's error name), waits until the action's
//     own waits are resolved on the host (a device wait on a failed upstream
//     must fail too), runs the action's completion hook and signals or fails
//     the signal semaphores.
//   * A failed wait fails the action's signals with the same status and the
//     action never runs.
//
// Host actions (host calls, the host half of file transfers) run on a
// per-queue host thread once every wait is reached on the host; they may
// call the HAL (and so the API) freely.
//
// Thread safety: Enqueue and WaitIdle may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "drivers/gpu/gpu_api.h"
#include "drivers/gpu/gpu_event_pool.h"
#include "hal/semaphore.h"
#include "hal/types.h"
#include "hal/utils/queue_op.h"

namespace hal::gpu {

struct GpuAction {
  enum class Kind { kDevice, kHost };
  Kind kind = Kind::kDevice;
  const char* name = "";
  int queue = 0;
  std::vector<utils::RetainedPoint> waits;
  // Per wait: its semaphore reached the value on the host (seen at
  // submission by SetPoints, or by a timepoint callback on the thread that
  // signalled it, or by the worker). Such a wait stays satisfied when the
  // semaphore fails later: the HAL decides a wait once, by whichever comes
  // first, the value or the failure. Shared with timepoint callbacks.
  std::shared_ptr<std::atomic<bool>[]> wait_reached;
  // The failure of a wait semaphore that had already failed at submission
  // (SetPoints): the action fails with it, even for a value that semaphore
  // reached before it failed. Waits still open at submission are decided by
  // Semaphore::Reached, which keeps values reached before a later failure.
  Status failed_at_submission;
  std::vector<utils::RetainedPoint> signals;
  // kDevice: enqueues the work on `stream`; may be empty (a barrier). Runs on
  // the worker after the stream waits were enqueued.
  std::function<Status(GpuStream stream)> issue;
  // kHost: runs on the queue's host thread.
  std::function<Status()> host_work;
  // After the work finished (OK or not) and before the signals; runs on the
  // worker (device actions) or the host thread. Returns the final status.
  std::function<Status(Status)> complete;
  // When the action will not run (a wait failed, the device is destroyed).
  std::function<void(const Status&)> abandon;

  void SetPoints(SemaphoreList wait, SemaphoreList signal);

 private:
  friend class GpuPendingActions;
  std::vector<Semaphore::TimepointId> timepoint_ids;  // host wake-ups
  std::vector<Ref<GpuEvent>> waited_events;
  Ref<GpuEvent> done_event;
  Status issue_status;
  bool registered = false;
  void* shared = nullptr;  // GpuPendingActions::Shared, for the host function
};

// Thread hand-offs the GPU layer made in this process, every device: work
// passed to another thread that must wake to take it (submission -> the
// pending-actions worker, a vendor host function -> the worker, the worker
// -> a host queue's thread). Issue 26's baseline; benchmarks report it per
// operation (benchmarks/bench_common.h, ReportCountsPerOp).
uint64_t ThreadHandOffs();

class GpuPendingActions {
 public:
  // `streams[i]` runs queue i's work; `callback_streams[i]` its host
  // functions. Neither is owned. `owner` identifies the device's semaphores.
  GpuPendingActions(std::shared_ptr<GpuApi> api,
                    std::shared_ptr<GpuEventPool> events,
                    std::vector<GpuStream> streams,
                    std::vector<GpuStream> callback_streams, const void* owner);
  // Calls Shutdown.
  ~GpuPendingActions();

  void Enqueue(std::unique_ptr<GpuAction> action);
  // OK when nothing is pending or in flight; DEADLINE_EXCEEDED otherwise.
  Status WaitIdle(Timeout timeout);
  // Fails pending actions with CANCELLED, finishes what was issued, stops
  // the threads. Idempotent.
  void Shutdown();

 private:
  struct Shared;
  struct HostQueue;
  void WorkerMain();
  // One pass over pending actions; true when something changed.
  bool ScanPending();
  void Issue(std::unique_ptr<GpuAction> action);
  // Finishes an action whose device work is done; false when it must wait
  // for its waits to resolve on the host.
  bool TryComplete(GpuAction* action);
  void Finish(std::unique_ptr<GpuAction> action, Status status);
  void Abandon(std::unique_ptr<GpuAction> action, const Status& status);
  void RegisterWakeups(GpuAction* action);
  void CancelWakeups(GpuAction* action);
  void RunHost(std::unique_ptr<GpuAction> action);
  void HostMain(HostQueue* queue);
  static void OnHostFunction(void* user_data);

  std::shared_ptr<GpuApi> api_;
  std::shared_ptr<GpuEventPool> events_;
  std::vector<GpuStream> streams_;
  std::vector<GpuStream> callback_streams_;
  const void* owner_;
  std::shared_ptr<Shared> shared_;
  // Worker-owned (no lock).
  std::list<std::unique_ptr<GpuAction>> pending_;
  std::list<std::unique_ptr<GpuAction>> in_flight_;
  std::list<std::unique_ptr<GpuAction>> completing_;  // done, waits unresolved
  std::vector<std::unique_ptr<HostQueue>> host_queues_;
  std::thread worker_;
  bool shut_down_ = false;
};

}  // namespace hal::gpu
