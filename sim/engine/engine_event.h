// A binary event (CUevent, hipEvent_t, ...) as a view of an engine signal,
// for the simulated vendor libraries: a record raises the signal to the
// event's next epoch; a wait, a query or a synchronize looks at the epoch
// of the last record made before it. Re-recording does not affect waits
// enqueued before. Enqueued records and waits hold the signal, so the
// event may be destroyed while they are pending, as CUDA and HIP allow.
#pragma once

#include <atomic>

#include "sim/engine/engine.h"

namespace hal::sim::engine {

class Event {
 public:
  explicit Event(Engine& engine)
      : engine_(engine), signal_(engine.CreateSignal(0)) {}

  // Enqueues a record on `queue`: the event reaches its next epoch when the
  // queue gets there (later under a late-signal fault), with `domain`'s
  // error as its status. An earlier record completing later does not move
  // it back.
  Error Record(Queue* queue, const Domain* domain);
  // Whether the last record completed (a never-recorded event has); its
  // status in `*status`.
  bool Query(Error* status) const;
  // Blocks until the last record completed; its status.
  Error Synchronize();
  // Makes `queue` wait for the last record. A never-recorded event orders
  // nothing (a no-op in CUDA and HIP): counted as an unsignalled wait, with
  // a line on stderr naming `call` and `api`.
  Error EnqueueWait(Queue* queue, const char* call, const char* api);

 private:
  Engine& engine_;
  SignalPtr signal_;
  std::atomic<uint64_t> generation_{0};  // records so far
};

}  // namespace hal::sim::engine
