#include "sim/engine/engine_event.h"

#include <cstdio>

namespace hal::sim::engine {

Error Event::Record(Queue* queue, const Domain* domain) {
  const uint64_t epoch = ++generation_;
  const uint64_t late_ns = engine_.DrawLateSignalNs();
  Op op;
  op.name = late_ns ? "record(late)" : "record";
  op.extra_ns = late_ns;
  op.signals.push_back({signal_, SignalOp::kMax, epoch, domain});
  return engine_.Enqueue(queue, std::move(op));
}

bool Event::Query(Error* status) const {
  const uint64_t epoch = generation_.load();
  return engine_.SignalValue(signal_, status) >= epoch;
}

Error Event::Synchronize() {
  return engine_.WaitSignal(signal_, Cond::kGe, generation_.load());
}

Error Event::EnqueueWait(Queue* queue, const char* call, const char* api) {
  const uint64_t epoch = generation_.load();  // the record it captures
  if (epoch == 0) {
    // Nothing orders the queue after whatever the caller meant to record
    // later: the "record before wait" rule.
    engine_.CountUnsignalledWait();
    std::fprintf(stderr,
                 "%s: %s on an event that was never recorded: a no-op in %s "
                 "(record the event first)\n",
                 engine_.log_prefix(), call, api);
    return Error::kOk;
  }
  Op op;
  op.name = "wait";
  op.zero_time = true;
  op.waits.push_back({signal_, Cond::kGe, epoch});
  return engine_.Enqueue(queue, std::move(op));
}

}  // namespace hal::sim::engine
