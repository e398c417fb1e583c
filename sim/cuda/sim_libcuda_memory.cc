// The CUDA skin's memory (sim/skin/skin_queue.cc): allocations,
// registration and stream-ordered transfers, fills and frees over the
// engine's address space.
#include "sim/cuda/sim_libcuda_internal.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;
using hal::sim::engine::MemoryKind;

namespace {

CUresult AllocateDevice(CUdeviceptr* dptr, size_t bytesize, MemoryKind kind) {
  void* p = nullptr;
  CUresult r =
      Cu(skin::Allocate(L(), dptr ? &p : nullptr, bytesize, kind, 256));
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

HALSIM_EXPORT CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  HALSIM_ENTER("cuMemAlloc");
  HALSIM_NEED_CONTEXT(ctx);
  return AllocateDevice(dptr, bytesize, MemoryKind::kDevice);
}

HALSIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER("cuMemAllocManaged");
  HALSIM_NEED_CONTEXT(ctx);
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return AllocateDevice(dptr, bytesize, MemoryKind::kManaged);
}

HALSIM_EXPORT CUresult cuMemFree(CUdeviceptr dptr) {
  HALSIM_ENTER("cuMemFree");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(L().engine().Free(dptr, /*host=*/false));
}

HALSIM_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize,
                                      unsigned int flags) {
  HALSIM_ENTER("cuMemHostAlloc");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(skin::Allocate(L(), pp, bytesize, MemoryKind::kHost, 4096));
}

HALSIM_EXPORT CUresult cuMemFreeHost(void* p) {
  HALSIM_ENTER("cuMemFreeHost");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(L().engine().Free(Address(p), /*host=*/true));
}

HALSIM_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER("cuMemHostRegister");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(L().engine().Register(Address(p), bytesize));
}

HALSIM_EXPORT CUresult cuMemHostUnregister(void* p) {
  HALSIM_ENTER("cuMemHostUnregister");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(L().engine().Unregister(Address(p)));
}

HALSIM_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p,
                                                 unsigned int flags) {
  HALSIM_ENTER("cuMemHostGetDevicePointer");
  HALSIM_NEED_CONTEXT(ctx);
  if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = Cu(skin::CheckHostPointer(L(), p));
  if (r == CUDA_SUCCESS) *pdptr = Address(p);  // unified addressing
  return r;
}

HALSIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr,
                                               size_t bytesize,
                                               CUmemoryPool pool,
                                               CUstream hstream) {
  HALSIM_ENTER("cuMemAllocFromPoolAsync");
  HALSIM_NEED_CONTEXT(ctx);
  if (!dptr || !pool || !hstream) return CUDA_ERROR_INVALID_VALUE;
  // The address is handed out at once and usable in stream order.
  return AllocateDevice(dptr, bytesize, MemoryKind::kPool);
}

HALSIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hstream) {
  HALSIM_ENTER("cuMemFreeAsync");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(skin::FreeAsync(L(), dptr, AsStream(hstream)));
}

HALSIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                     size_t bytes, CUstream hstream) {
  HALSIM_ENTER("cuMemcpyAsync");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(skin::CopyAsync(L(), AsStream(hstream), dst, src, bytes));
}

HALSIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc,
                                       size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD8Async");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(skin::FillAsync(L(), AsStream(hstream), dst, uc, 1, n));
}

HALSIM_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short us,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD16Async");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(skin::FillAsync(L(), AsStream(hstream), dst, us, 2, n));
}

HALSIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD32Async");
  HALSIM_NEED_CONTEXT(ctx);
  return Cu(skin::FillAsync(L(), AsStream(hstream), dst, ui, 4, n));
}
