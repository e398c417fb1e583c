// The CUDA skin's memory (sim/skin/skin_queue.cc): allocations,
// registration and stream-ordered transfers, fills and frees over the
// engine's address space.
#include "sim/cuda/sim_libcuda_internal.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;
using hal::sim::engine::MemoryKind;
using hal::sim::skin::Address;

HALSIM_EXPORT CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  HALSIM_ENTER_CONTEXT("cuMemAlloc", ctx);
  return Cu(skin::Allocate(L(), dptr, bytesize, MemoryKind::kDevice, 256));
}

HALSIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER_CONTEXT("cuMemAllocManaged", ctx);
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return Cu(skin::Allocate(L(), dptr, bytesize, MemoryKind::kManaged, 256));
}

HALSIM_EXPORT CUresult cuMemFree(CUdeviceptr dptr) {
  HALSIM_ENTER_CONTEXT("cuMemFree", ctx);
  return Cu(L().engine().Free(dptr, /*host=*/false));
}

HALSIM_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize,
                                      unsigned int flags) {
  HALSIM_ENTER_CONTEXT("cuMemHostAlloc", ctx);
  return Cu(skin::Allocate(L(), pp, bytesize, MemoryKind::kHost, 4096));
}

HALSIM_EXPORT CUresult cuMemFreeHost(void* p) {
  HALSIM_ENTER_CONTEXT("cuMemFreeHost", ctx);
  return Cu(L().engine().Free(Address(p), /*host=*/true));
}

HALSIM_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER_CONTEXT("cuMemHostRegister", ctx);
  return Cu(L().engine().Register(Address(p), bytesize));
}

HALSIM_EXPORT CUresult cuMemHostUnregister(void* p) {
  HALSIM_ENTER_CONTEXT("cuMemHostUnregister", ctx);
  return Cu(L().engine().Unregister(Address(p)));
}

HALSIM_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p,
                                                 unsigned int flags) {
  HALSIM_ENTER_CONTEXT("cuMemHostGetDevicePointer", ctx);
  return Cu(skin::HostDevicePointer(L(), p, flags, pdptr));
}

HALSIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr,
                                               size_t bytesize,
                                               CUmemoryPool pool,
                                               CUstream hstream) {
  HALSIM_ENTER_CONTEXT("cuMemAllocFromPoolAsync", ctx);
  if (!dptr || !pool || !hstream) return CUDA_ERROR_INVALID_VALUE;
  // The address is handed out at once and usable in stream order.
  return Cu(skin::Allocate(L(), dptr, bytesize, MemoryKind::kPool, 256));
}

HALSIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hstream) {
  HALSIM_ENTER_CONTEXT("cuMemFreeAsync", ctx);
  return Cu(skin::FreeAsync(L(), dptr, AsStream(hstream)));
}

HALSIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                     size_t bytes, CUstream hstream) {
  HALSIM_ENTER_CONTEXT("cuMemcpyAsync", ctx);
  return Cu(skin::CopyAsync(L(), AsStream(hstream), dst, src, bytes));
}

HALSIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc,
                                       size_t n, CUstream hstream) {
  HALSIM_ENTER_CONTEXT("cuMemsetD8Async", ctx);
  return Cu(skin::FillAsync(L(), AsStream(hstream), dst, uc, 1, n));
}

HALSIM_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short us,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER_CONTEXT("cuMemsetD16Async", ctx);
  return Cu(skin::FillAsync(L(), AsStream(hstream), dst, us, 2, n));
}

HALSIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER_CONTEXT("cuMemsetD32Async", ctx);
  return Cu(skin::FillAsync(L(), AsStream(hstream), dst, ui, 4, n));
}
