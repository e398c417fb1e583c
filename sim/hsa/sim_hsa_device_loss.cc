// Device loss, the fault plan's lose_device_at (sim/core/fault_plan.h):
// the engine calls LoseDevice once, at the step whose virtual time reaches
// it. The plan names no agent, and every GPU agent of this library runs on
// one engine and one virtual clock, so all of them are lost together.
//
// A real ROCr reports a GPU hang or reset through the queues' error
// callbacks and the queues stop. Here every live queue reports
// HSA_STATUS_ERROR_FATAL ("not recoverable") and becomes inactive: its
// packets, those already handed over and later ones, retire without
// running (completion signals still drop, so no waiter hangs), and
// hsa_queue_create fails with HSA_STATUS_ERROR_FATAL from then on. The loss
// lasts for the rest of the process.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "sim/hsa/sim_hsa_internal.h"

namespace hal::sim::hsa {

namespace {

struct Registry {
  std::mutex mutex;  // held while the error callbacks run
  std::vector<Queue*> queues;
  bool lost = false;
};

Registry& TheRegistry() {
  static auto* registry = new Registry();
  return *registry;
}

}  // namespace

bool RegisterQueue(Queue* queue) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.lost) return false;
  r.queues.push_back(queue);
  return true;
}

void UnregisterQueue(Queue* queue) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::erase(r.queues, queue);
}

std::string QueuedPacketUsing(hsa_signal_t signal) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (Queue* q : r.queues) {
    uint64_t index = 0;
    if (PacketUsesSignal(q, signal, &index)) {
      return "packet " + std::to_string(index) + " of queue " +
             std::to_string(q->trace_id);
    }
  }
  return "";
}

void LoseDevice() {
  Registry& r = TheRegistry();
  // Held across the callbacks so that no queue is destroyed under them
  // (hsa_queue_destroy unregisters first); a callback must not create or
  // destroy queues.
  std::lock_guard<std::mutex> lock(r.mutex);
  r.lost = true;
  char what[160];
  std::snprintf(what, sizeof(what),
                "the device was lost (HALSIM_FAULTS lose_device_at, virtual "
                "t=%" PRIu64 " ns): the queue stops",
                E().virtual_time_ns());
  for (Queue* q : r.queues) ReportQueueError(q, HSA_STATUS_ERROR_FATAL, what);
}

}  // namespace hal::sim::hsa

using namespace hal::sim::hsa;  // NOLINT: the C ABI edge

// 1 once the device was lost (for tests).
HALSIM_EXPORT int halsim_hsa_device_lost(void) {
  return E().device_lost() ? 1 : 0;
}
