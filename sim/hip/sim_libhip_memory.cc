// The HIP skin's memory (sim/skin/skin_queue.cc): allocations, registration
// and stream-ordered transfers, fills and frees over the engine's address
// space.
#include "sim/hip/sim_libhip_internal.h"

using namespace hal::sim::hip;  // NOLINT: the C ABI edge
namespace skin = hal::sim::skin;
using hal::sim::engine::MemoryKind;
using hal::sim::skin::Address;

namespace {

// HIP: a size of 0 gives a null pointer and success.
hipError_t Allocate(void** out, size_t size, MemoryKind kind,
                    size_t alignment) {
  return ToHip(skin::Allocate(L(), out, size, kind, alignment,
                              /*zero_is_null=*/true));
}

}  // namespace

HALSIM_EXPORT hipError_t hipMalloc(void** ptr, size_t size) {
  HALSIM_ENTER_DEVICE("hipMalloc", dev);
  return Allocate(ptr, size, MemoryKind::kDevice, 256);
}

HALSIM_EXPORT hipError_t hipMallocManaged(void** ptr, size_t size,
                                          unsigned int flags) {
  HALSIM_ENTER_DEVICE("hipMallocManaged", dev);
  if (flags != hipMemAttachGlobal && flags != hipMemAttachHost) {
    return hipErrorInvalidValue;
  }
  return Allocate(ptr, size, MemoryKind::kManaged, 256);
}

HALSIM_EXPORT hipError_t hipFree(void* ptr) {
  HALSIM_ENTER_DEVICE("hipFree", dev);
  if (!ptr) return hipSuccess;
  return ToHip(L().engine().Free(Address(ptr), /*host=*/false));
}

HALSIM_EXPORT hipError_t hipHostMalloc(void** ptr, size_t size,
                                       unsigned int flags) {
  HALSIM_ENTER_DEVICE("hipHostMalloc", dev);
  constexpr unsigned kKnown =
      hipHostMallocPortable | hipHostMallocMapped | hipHostMallocWriteCombined |
      hipHostMallocNumaUser | hipHostMallocCoherent | hipHostMallocNonCoherent;
  if (flags & ~kKnown) return hipErrorInvalidValue;
  if ((flags & hipHostMallocCoherent) && (flags & hipHostMallocNonCoherent)) {
    return hipErrorInvalidValue;
  }
  return Allocate(ptr, size, MemoryKind::kHost, 4096);
}

HALSIM_EXPORT hipError_t hipHostFree(void* ptr) {
  HALSIM_ENTER_DEVICE("hipHostFree", dev);
  if (!ptr) return hipSuccess;
  return ToHip(L().engine().Free(Address(ptr), /*host=*/true));
}

HALSIM_EXPORT hipError_t hipHostRegister(void* ptr, size_t size,
                                         unsigned int flags) {
  HALSIM_ENTER_DEVICE("hipHostRegister", dev);
  if (!ptr || !size) return hipErrorInvalidValue;
  return ToHip(L().engine().Register(Address(ptr), size));
}

HALSIM_EXPORT hipError_t hipHostUnregister(void* ptr) {
  HALSIM_ENTER_DEVICE("hipHostUnregister", dev);
  return ToHip(L().engine().Unregister(Address(ptr)));
}

HALSIM_EXPORT hipError_t hipHostGetDevicePointer(void** out, void* host,
                                                 unsigned int flags) {
  HALSIM_ENTER_DEVICE("hipHostGetDevicePointer", dev);
  return ToHip(skin::HostDevicePointer(L(), host, flags, out));
}

HALSIM_EXPORT hipError_t hipMallocFromPoolAsync(void** ptr, size_t size,
                                                hipMemPool_t pool,
                                                hipStream_t stream) {
  HALSIM_ENTER_DEVICE("hipMallocFromPoolAsync", dev);
  if (!pool) return hipErrorInvalidValue;
  if (!stream) return hipErrorInvalidHandle;  // no null stream
  // The address is handed out at once and usable in stream order.
  return Allocate(ptr, size, MemoryKind::kPool, 256);
}

HALSIM_EXPORT hipError_t hipFreeAsync(void* ptr, hipStream_t hstream) {
  HALSIM_ENTER_DEVICE("hipFreeAsync", dev);
  return ToHip(skin::FreeAsync(L(), Address(ptr), AsStream(hstream)));
}

HALSIM_EXPORT hipError_t hipMemcpyAsync(void* dst, const void* src,
                                        size_t bytes, hipMemcpyKind kind,
                                        hipStream_t hstream) {
  HALSIM_ENTER_DEVICE("hipMemcpyAsync", dev);
  // Addresses are unified: every kind is checked by the ranges alone.
  if (kind < hipMemcpyHostToHost || kind > hipMemcpyDefault) {
    return hipErrorInvalidValue;
  }
  return ToHip(skin::CopyAsync(L(), AsStream(hstream), Address(dst),
                               Address(src), bytes));
}

HALSIM_EXPORT hipError_t hipMemsetD8Async(hipDeviceptr_t dst,
                                          unsigned char value, size_t count,
                                          hipStream_t stream) {
  HALSIM_ENTER_DEVICE("hipMemsetD8Async", dev);
  return ToHip(
      skin::FillAsync(L(), AsStream(stream), Address(dst), value, 1, count));
}

HALSIM_EXPORT hipError_t hipMemsetD16Async(hipDeviceptr_t dst,
                                           unsigned short value, size_t count,
                                           hipStream_t stream) {
  HALSIM_ENTER_DEVICE("hipMemsetD16Async", dev);
  return ToHip(
      skin::FillAsync(L(), AsStream(stream), Address(dst), value, 2, count));
}

HALSIM_EXPORT hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value,
                                           size_t count, hipStream_t stream) {
  HALSIM_ENTER_DEVICE("hipMemsetD32Async", dev);
  return ToHip(skin::FillAsync(L(), AsStream(stream), Address(dst),
                               static_cast<uint32_t>(value), 4, count));
}
