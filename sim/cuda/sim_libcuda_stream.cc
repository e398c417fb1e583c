// The CUDA skin's streams, events and host functions (sim/skin/
// skin_queue.cc): streams are engine queues, events views of engine signals.
#include "sim/cuda/sim_libcuda_internal.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;

HALSIM_EXPORT CUresult cuStreamCreate(CUstream* phstream, unsigned int flags) {
  HALSIM_ENTER_CONTEXT("cuStreamCreate", ctx);
  if (!phstream || (flags & ~CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  return Cu(skin::Hand(skin::NewStream(L(), ctx), phstream));
}

HALSIM_EXPORT CUresult cuStreamDestroy(CUstream hstream) {
  HALSIM_ENTER_INIT("cuStreamDestroy");
  return Cu(skin::DestroyStream(L(), hstream));
}

HALSIM_EXPORT CUresult cuStreamSynchronize(CUstream hstream) {
  HALSIM_ENTER_INIT("cuStreamSynchronize");
  return Cu(skin::SynchronizeStream(L(), AsStream(hstream)));
}

HALSIM_EXPORT CUresult cuEventCreate(CUevent* phevent, unsigned int flags) {
  HALSIM_ENTER_CONTEXT("cuEventCreate", ctx);
  if (!phevent) return CUDA_ERROR_INVALID_VALUE;
  if (!(flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_NOT_SUPPORTED;
  return Cu(skin::Hand(L().New<skin::Event>(L().engine(), ctx), phevent));
}

HALSIM_EXPORT CUresult cuEventDestroy(CUevent hevent) {
  HALSIM_ENTER_INIT("cuEventDestroy");
  return Cu(skin::DestroyEvent(L(), hevent, "cuEventDestroy"));
}

HALSIM_EXPORT CUresult cuEventRecord(CUevent hevent, CUstream hstream) {
  HALSIM_ENTER_CONTEXT("cuEventRecord", ctx);
  // The event reports the context's error when it completes.
  return Cu(skin::RecordEvent(L(), AsEvent(hevent), AsStream(hstream),
                              &ctx->domain, "cuEventRecord"));
}

HALSIM_EXPORT CUresult cuEventQuery(CUevent hevent) {
  HALSIM_ENTER_INIT("cuEventQuery");
  return Cu(skin::QueryEvent(AsEvent(hevent)));
}

HALSIM_EXPORT CUresult cuEventSynchronize(CUevent hevent) {
  HALSIM_ENTER_INIT("cuEventSynchronize");
  return Cu(skin::SynchronizeEvent(AsEvent(hevent)));
}

HALSIM_EXPORT CUresult cuStreamWaitEvent(CUstream hstream, CUevent hevent,
                                         unsigned int flags) {
  HALSIM_ENTER_CONTEXT("cuStreamWaitEvent", ctx);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return Cu(skin::StreamWaitEvent(L(), AsStream(hstream), AsEvent(hevent),
                                  "cuStreamWaitEvent"));
}

HALSIM_EXPORT CUresult cuLaunchHostFunc(CUstream hstream, CUhostFn fn,
                                        void* user_data) {
  HALSIM_ENTER_CONTEXT("cuLaunchHostFunc", ctx);
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  return Cu(skin::LaunchHostFunction(L(), AsStream(hstream),
                                     [fn, user_data] { fn(user_data); }));
}
