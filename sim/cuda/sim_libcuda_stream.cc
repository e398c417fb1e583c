// The CUDA skin's streams, events and host functions: streams are engine
// queues, events views of engine signals (sim_libcuda_internal.h).
#include "sim/cuda/sim_libcuda_internal.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;

namespace {
Event* AsEvent(CUevent hevent) { return reinterpret_cast<Event*>(hevent); }
Stream* AsStream(CUstream hstream) {
  return reinterpret_cast<Stream*>(hstream);
}
}  // namespace

HALSIM_EXPORT CUresult cuStreamCreate(CUstream* phstream, unsigned int flags) {
  HALSIM_ENTER("cuStreamCreate");
  HALSIM_NEED_CONTEXT(ctx);
  if (!phstream || (flags & ~CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  auto* stream = new Stream();
  stream->context = ctx;
  stream->queue = E().CreateQueue();
  *phstream = reinterpret_cast<CUstream>(stream);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuStreamDestroy(CUstream hstream) {
  HALSIM_ENTER("cuStreamDestroy");
  HALSIM_NEED_INIT();
  Stream* stream = AsStream(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  // CUDA returns at once and releases the stream when its work is done; the
  // simulator drains it here, which the caller cannot tell apart.
  E().DestroyQueue(stream->queue);
  delete stream;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuStreamSynchronize(CUstream hstream) {
  HALSIM_ENTER("cuStreamSynchronize");
  HALSIM_NEED_INIT();
  Stream* stream = AsStream(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  E().Synchronize(stream->queue);
  return ToCuResult(stream->context->domain.error());
}

HALSIM_EXPORT CUresult cuEventCreate(CUevent* phevent, unsigned int flags) {
  HALSIM_ENTER("cuEventCreate");
  HALSIM_NEED_CONTEXT(ctx);
  if (!phevent) return CUDA_ERROR_INVALID_VALUE;
  if (!(flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_NOT_SUPPORTED;
  auto* event = new Event();
  event->context = ctx;
  *phevent = reinterpret_cast<CUevent>(event);
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuEventDestroy(CUevent hevent) {
  HALSIM_ENTER("cuEventDestroy");
  HALSIM_NEED_INIT();
  Event* event = AsEvent(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  // Pending records and waits hold the signal.
  delete event;
  return CUDA_SUCCESS;
}

HALSIM_EXPORT CUresult cuEventRecord(CUevent hevent, CUstream hstream) {
  HALSIM_ENTER("cuEventRecord");
  HALSIM_NEED_CONTEXT(ctx);
  Event* event = AsEvent(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  Stream* stream = AsStream(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  // The event reports the context's error when it completes.
  return ToCuResult(event->event.Record(stream->queue, &ctx->domain));
}

HALSIM_EXPORT CUresult cuEventQuery(CUevent hevent) {
  HALSIM_ENTER("cuEventQuery");
  HALSIM_NEED_INIT();
  Event* event = AsEvent(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  engine::Error status;
  if (!event->event.Query(&status)) return CUDA_ERROR_NOT_READY;
  return ToCuResult(status);
}

HALSIM_EXPORT CUresult cuEventSynchronize(CUevent hevent) {
  HALSIM_ENTER("cuEventSynchronize");
  HALSIM_NEED_INIT();
  Event* event = AsEvent(hevent);
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  return ToCuResult(event->event.Synchronize());
}

HALSIM_EXPORT CUresult cuStreamWaitEvent(CUstream hstream, CUevent hevent,
                                         unsigned int flags) {
  HALSIM_ENTER("cuStreamWaitEvent");
  HALSIM_NEED_CONTEXT(ctx);
  Event* event = AsEvent(hevent);
  if (!event || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = AsStream(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  return ToCuResult(
      event->event.EnqueueWait(stream->queue, "cuStreamWaitEvent", "CUDA"));
}

HALSIM_EXPORT CUresult cuLaunchHostFunc(CUstream hstream, CUhostFn fn,
                                        void* user_data) {
  HALSIM_ENTER("cuLaunchHostFunc");
  HALSIM_NEED_CONTEXT(ctx);
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = AsStream(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  return ToCuResult(E().EnqueueHostFunction(
      stream->queue, [fn, user_data] { fn(user_data); }));
}
