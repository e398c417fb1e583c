// The HIP skin's streams, events and stream callbacks: streams are engine
// queues, events views of engine signals (sim_libhip_internal.h).
#include "sim/hip/sim_libhip_internal.h"

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

namespace {
Event* AsEvent(hipEvent_t e) { return reinterpret_cast<Event*>(e); }
Stream* AsStream(hipStream_t s) { return reinterpret_cast<Stream*>(s); }
}  // namespace

HALSIM_EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t* out,
                                                  unsigned int flags) {
  HALSIM_ENTER("hipStreamCreateWithFlags");
  HALSIM_NEED_DEVICE(dev);
  if (!out || (flags & ~hipStreamNonBlocking)) return hipErrorInvalidValue;
  auto* stream = new Stream();
  stream->device = dev;
  stream->queue = E().CreateQueue();
  *out = reinterpret_cast<hipStream_t>(stream);
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipStreamDestroy(hipStream_t hstream) {
  HALSIM_ENTER("hipStreamDestroy");
  HALSIM_NEED_INIT();
  Stream* stream = AsStream(hstream);
  if (!stream) return hipErrorInvalidHandle;
  // HIP waits for the stream's work here too.
  E().DestroyQueue(stream->queue);
  delete stream;
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipStreamSynchronize(hipStream_t hstream) {
  HALSIM_ENTER("hipStreamSynchronize");
  HALSIM_NEED_INIT();
  Stream* stream = AsStream(hstream);
  if (!stream) return hipErrorInvalidHandle;  // no null stream
  E().Synchronize(stream->queue);
  return ToHipError(stream->device->domain.error());
}

HALSIM_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t* out,
                                                 unsigned flags) {
  HALSIM_ENTER("hipEventCreateWithFlags");
  HALSIM_NEED_DEVICE(dev);
  if (!out) return hipErrorInvalidValue;
  if (!(flags & hipEventDisableTiming)) {
    std::fprintf(stderr,
                 "halsim_hip: timing events are not simulated (create with "
                 "hipEventDisableTiming)\n");
    return hipErrorNotSupported;
  }
  auto* event = new Event();
  event->device = dev;
  *out = reinterpret_cast<hipEvent_t>(event);
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipEventDestroy(hipEvent_t hevent) {
  HALSIM_ENTER("hipEventDestroy");
  HALSIM_NEED_INIT();
  Event* event = AsEvent(hevent);
  if (!event) return hipErrorInvalidHandle;
  delete event;  // pending records and waits hold the signal
  return hipSuccess;
}

HALSIM_EXPORT hipError_t hipEventRecord(hipEvent_t hevent,
                                        hipStream_t hstream) {
  HALSIM_ENTER("hipEventRecord");
  HALSIM_NEED_DEVICE(dev);
  Event* event = AsEvent(hevent);
  Stream* stream = AsStream(hstream);
  if (!event || !stream) return hipErrorInvalidHandle;
  // The event reports the device's error when it completes.
  return ToHipError(
      event->event.Record(stream->queue, &stream->device->domain));
}

HALSIM_EXPORT hipError_t hipEventQuery(hipEvent_t hevent) {
  HALSIM_ENTER("hipEventQuery");
  HALSIM_NEED_INIT();
  Event* event = AsEvent(hevent);
  if (!event) return hipErrorInvalidHandle;
  engine::Error status;
  if (!event->event.Query(&status)) return hipErrorNotReady;
  return ToHipError(status);
}

HALSIM_EXPORT hipError_t hipEventSynchronize(hipEvent_t hevent) {
  HALSIM_ENTER("hipEventSynchronize");
  HALSIM_NEED_INIT();
  Event* event = AsEvent(hevent);
  if (!event) return hipErrorInvalidHandle;
  return ToHipError(event->event.Synchronize());
}

HALSIM_EXPORT hipError_t hipStreamWaitEvent(hipStream_t hstream,
                                            hipEvent_t hevent,
                                            unsigned int flags) {
  HALSIM_ENTER("hipStreamWaitEvent");
  HALSIM_NEED_DEVICE(dev);
  Event* event = AsEvent(hevent);
  if (!event || flags != 0) return hipErrorInvalidValue;
  Stream* stream = AsStream(hstream);
  if (!stream) return hipErrorInvalidHandle;  // no null stream
  return ToHipError(
      event->event.EnqueueWait(stream->queue, "hipStreamWaitEvent", "HIP"));
}

// The callback gets the stream's status (the device's sticky error) when it
// runs, as HIP passes it.
HALSIM_EXPORT hipError_t hipStreamAddCallback(hipStream_t hstream,
                                              hipStreamCallback_t callback,
                                              void* user_data,
                                              unsigned int flags) {
  HALSIM_ENTER("hipStreamAddCallback");
  HALSIM_NEED_DEVICE(dev);
  if (!callback || flags != 0) return hipErrorInvalidValue;
  Stream* stream = AsStream(hstream);
  if (!stream) return hipErrorInvalidHandle;  // no null stream
  return ToHipError(E().EnqueueHostFunction(
      stream->queue, [callback, user_data, hstream, device = stream->device] {
        callback(hstream, ToHipError(device->domain.error()), user_data);
      }));
}
