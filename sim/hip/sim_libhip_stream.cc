// The HIP skin's streams, events and stream callbacks (sim/skin/
// skin_queue.cc): streams are engine queues, events views of engine signals.
#include <cstdio>

#include "sim/hip/sim_libhip_internal.h"

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

HALSIM_EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t* out,
                                                  unsigned int flags) {
  HALSIM_ENTER_DEVICE("hipStreamCreateWithFlags", dev);
  if (!out || (flags & ~hipStreamNonBlocking)) return hipErrorInvalidValue;
  return ToHip(skin::Hand(skin::NewStream(L(), dev), out));
}

HALSIM_EXPORT hipError_t hipStreamDestroy(hipStream_t hstream) {
  HALSIM_ENTER_INIT("hipStreamDestroy");
  return ToHip(skin::DestroyStream(L(), hstream));
}

HALSIM_EXPORT hipError_t hipStreamSynchronize(hipStream_t hstream) {
  HALSIM_ENTER_INIT("hipStreamSynchronize");
  return ToHip(skin::SynchronizeStream(L(), AsStream(hstream)));
}

HALSIM_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t* out,
                                                 unsigned flags) {
  HALSIM_ENTER_DEVICE("hipEventCreateWithFlags", dev);
  if (!out) return hipErrorInvalidValue;
  if (!(flags & hipEventDisableTiming)) {
    std::fprintf(stderr,
                 "halsim_hip: timing events are not simulated (create with "
                 "hipEventDisableTiming)\n");
    return hipErrorNotSupported;
  }
  return ToHip(skin::Hand(L().New<skin::Event>(L().engine(), dev), out));
}

HALSIM_EXPORT hipError_t hipEventDestroy(hipEvent_t hevent) {
  HALSIM_ENTER_INIT("hipEventDestroy");
  return ToHip(skin::DestroyEvent(L(), hevent, "hipEventDestroy"));
}

HALSIM_EXPORT hipError_t hipEventRecord(hipEvent_t hevent,
                                        hipStream_t hstream) {
  HALSIM_ENTER_DEVICE("hipEventRecord", dev);
  skin::Stream* stream = AsStream(hstream);
  // The event reports the device's error when it completes.
  return ToHip(skin::RecordEvent(L(), AsEvent(hevent), stream,
                                 stream ? &stream->scope->domain : nullptr,
                                 "hipEventRecord"));
}

HALSIM_EXPORT hipError_t hipEventQuery(hipEvent_t hevent) {
  HALSIM_ENTER_INIT("hipEventQuery");
  return ToHip(skin::QueryEvent(AsEvent(hevent)));
}

HALSIM_EXPORT hipError_t hipEventSynchronize(hipEvent_t hevent) {
  HALSIM_ENTER_INIT("hipEventSynchronize");
  return ToHip(skin::SynchronizeEvent(AsEvent(hevent)));
}

HALSIM_EXPORT hipError_t hipStreamWaitEvent(hipStream_t hstream,
                                            hipEvent_t hevent,
                                            unsigned int flags) {
  HALSIM_ENTER_DEVICE("hipStreamWaitEvent", dev);
  if (flags != 0) return hipErrorInvalidValue;
  return ToHip(skin::StreamWaitEvent(L(), AsStream(hstream), AsEvent(hevent),
                                     "hipStreamWaitEvent"));
}

// The callback gets the stream's status (the device's sticky error) when it
// runs, as HIP passes it.
HALSIM_EXPORT hipError_t hipStreamAddCallback(hipStream_t hstream,
                                              hipStreamCallback_t callback,
                                              void* user_data,
                                              unsigned int flags) {
  HALSIM_ENTER_DEVICE("hipStreamAddCallback", dev);
  if (!callback || flags != 0) return hipErrorInvalidValue;
  skin::Stream* stream = AsStream(hstream);
  skin::Scope* scope = stream ? stream->scope : nullptr;
  return ToHip(skin::LaunchHostFunction(
      L(), stream, [callback, user_data, hstream, scope] {
        callback(hstream, ToHip(scope->domain.error()), user_data);
      }));
}
