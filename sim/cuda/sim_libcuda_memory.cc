// The CUDA skin's memory: allocations, registration and stream-ordered
// transfers, fills and frees over the engine's address space.
#include "sim/cuda/sim_libcuda_internal.h"

using namespace hal::sim::cuda;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;
using engine::MemoryKind;

namespace {

CUresult AllocateDevice(CUdeviceptr* dptr, size_t bytesize, MemoryKind kind) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  CUresult r = ToCuResult(E().Allocate(bytesize, kind, 256, &p));
  if (r == CUDA_SUCCESS) *dptr = reinterpret_cast<CUdeviceptr>(p);
  return r;
}

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
  return ToCuResult(E().Free(static_cast<uintptr_t>(dptr), /*host=*/false));
}

HALSIM_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize,
                                      unsigned int flags) {
  HALSIM_ENTER("cuMemHostAlloc");
  HALSIM_NEED_CONTEXT(ctx);
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  return ToCuResult(E().Allocate(bytesize, MemoryKind::kHost, 4096, pp));
}

HALSIM_EXPORT CUresult cuMemFreeHost(void* p) {
  HALSIM_ENTER("cuMemFreeHost");
  HALSIM_NEED_CONTEXT(ctx);
  return ToCuResult(E().Free(reinterpret_cast<uintptr_t>(p), /*host=*/true));
}

HALSIM_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize,
                                         unsigned int flags) {
  HALSIM_ENTER("cuMemHostRegister");
  HALSIM_NEED_CONTEXT(ctx);
  return ToCuResult(E().Register(reinterpret_cast<uintptr_t>(p), bytesize));
}

HALSIM_EXPORT CUresult cuMemHostUnregister(void* p) {
  HALSIM_ENTER("cuMemHostUnregister");
  HALSIM_NEED_CONTEXT(ctx);
  return ToCuResult(E().Unregister(reinterpret_cast<uintptr_t>(p)));
}

HALSIM_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p,
                                                 unsigned int flags) {
  HALSIM_ENTER("cuMemHostGetDevicePointer");
  HALSIM_NEED_CONTEXT(ctx);
  if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  engine::Allocation a;
  if (!E().FindAllocation(reinterpret_cast<uintptr_t>(p), &a) ||
      (a.kind != MemoryKind::kHost && a.kind != MemoryKind::kRegistered)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing
  return CUDA_SUCCESS;
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
  engine::Allocation a;
  if (!E().AllocationAt(static_cast<uintptr_t>(dptr), &a) ||
      a.kind == MemoryKind::kHost || a.kind == MemoryKind::kRegistered) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;  // no legacy default stream
  return ToCuResult(
      E().EnqueueFree(stream->queue, static_cast<uintptr_t>(dptr)));
}

HALSIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                     size_t bytes, CUstream hstream) {
  HALSIM_ENTER("cuMemcpyAsync");
  HALSIM_NEED_CONTEXT(ctx);
  if ((!dst || !src) && bytes) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  engine::Op op;
  op.name = "memcpy";
  op.bytes = bytes;
  op.write = {dst, dst + bytes};
  op.read = {src, src + bytes};
  op.run = E().CopyWork(&stream->context->domain, dst, src, bytes);
  return ToCuResult(E().Enqueue(stream->queue, std::move(op)));
}

namespace {

CUresult MemsetAsync(CUdeviceptr dst, uint32_t value, int size, size_t count,
                     CUstream hstream) {
  if (!dst && count) return CUDA_ERROR_INVALID_VALUE;
  if (dst % size) return CUDA_ERROR_INVALID_VALUE;
  auto* stream = reinterpret_cast<Stream*>(hstream);
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  engine::Op op;
  op.name = "memset";
  op.bytes = count * size;
  op.write = {dst, dst + count * size};
  op.run = E().FillWork(&stream->context->domain, dst, value, size, count);
  return ToCuResult(E().Enqueue(stream->queue, std::move(op)));
}

}  // namespace

HALSIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc,
                                       size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD8Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync(dst, uc, 1, n, hstream);
}

HALSIM_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short us,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD16Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync(dst, us, 2, n, hstream);
}

HALSIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui,
                                        size_t n, CUstream hstream) {
  HALSIM_ENTER("cuMemsetD32Async");
  HALSIM_NEED_CONTEXT(ctx);
  return MemsetAsync(dst, ui, 4, n, hstream);
}
