// The Level Zero skin's memory: zeMemAlloc{Device,Host,Shared} over the
// engine's allocations, zeMemFree, zeMemGetAllocProperties.
#include "sim/level_zero/sim_ze_internal.h"

using namespace hal::sim::ze;  // NOLINT: the C ABI edge
namespace engine = hal::sim::engine;
using engine::MemoryKind;

namespace {

bool PowerOfTwoOrZero(size_t n) { return (n & (n - 1)) == 0; }

ze_result_t Allocate(ze_context_handle_t context, size_t size, size_t alignment,
                     MemoryKind kind, void** out) {
  if (!context) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (!PowerOfTwoOrZero(alignment))
    return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  size_t align = alignment < 256 ? 256 : alignment;
  if (kind == MemoryKind::kHost && align < 4096) align = 4096;
  ze_result_t r = ToZeResult(E().Allocate(size, kind, align, out));
  if (r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY && kind == MemoryKind::kHost) {
    r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (r == ZE_RESULT_SUCCESS) CountCreated(Kind::kMemory);
  return r;
}

ze_result_t SimMemAllocDevice(ze_context_handle_t context,
                              const ze_device_mem_alloc_desc_t* desc,
                              size_t size, size_t alignment,
                              ze_device_handle_t device, void** out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!AsDevice(device)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return Allocate(context, size, alignment, MemoryKind::kDevice, out);
}

ze_result_t SimMemAllocHost(ze_context_handle_t context,
                            const ze_host_mem_alloc_desc_t* desc, size_t size,
                            size_t alignment, void** out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return Allocate(context, size, alignment, MemoryKind::kHost, out);
}

ze_result_t SimMemAllocShared(ze_context_handle_t context,
                              const ze_device_mem_alloc_desc_t* device_desc,
                              const ze_host_mem_alloc_desc_t* host_desc,
                              size_t size, size_t alignment,
                              ze_device_handle_t device, void** out) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (device && !AsDevice(device)) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!device_desc || !host_desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return Allocate(context, size, alignment, MemoryKind::kManaged, out);
}

ze_result_t SimMemFree(ze_context_handle_t context, void* ptr) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!context) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  engine::Allocation a;
  const auto base = reinterpret_cast<uintptr_t>(ptr);
  if (!E().AllocationAt(base, &a)) {
    return Violation(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zeMemFree",
                     "%p is not the start of a live allocation (freed twice, "
                     "or never allocated)",
                     ptr);
  }
  // Work still pending on it is reported by the engine when it runs (a use
  // of quarantined memory), as a device page fault.
  ze_result_t r =
      ToZeResult(E().Free(base, /*host=*/a.kind == MemoryKind::kHost));
  if (r == ZE_RESULT_SUCCESS) CountDestroyed(Kind::kMemory);
  return r;
}

ze_result_t SimMemGetAllocProperties(ze_context_handle_t context,
                                     const void* ptr,
                                     ze_memory_allocation_properties_t* props,
                                     ze_device_handle_t* device) {
  HALSIM_ZE_ENTER();
  HALSIM_ZE_NEED_INIT();
  if (!context) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr || !props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  engine::Allocation a;
  props->type = ZE_MEMORY_TYPE_UNKNOWN;
  props->id = 0;
  props->pageSize = 4096;
  if (device) *device = nullptr;
  if (!E().FindAllocation(reinterpret_cast<uintptr_t>(ptr), &a)) {
    return ZE_RESULT_SUCCESS;
  }
  props->id = a.base;
  switch (a.kind) {
    case MemoryKind::kDevice:
    case MemoryKind::kPool:
      props->type = ZE_MEMORY_TYPE_DEVICE;
      break;
    case MemoryKind::kManaged:
      props->type = ZE_MEMORY_TYPE_SHARED;
      break;
    case MemoryKind::kHost:
    case MemoryKind::kRegistered:
      props->type = ZE_MEMORY_TYPE_HOST;
      break;
  }
  if (device && props->type != ZE_MEMORY_TYPE_HOST) {
    *device = reinterpret_cast<ze_device_handle_t>(&TheDriver()->devices[0]);
  }
  return ZE_RESULT_SUCCESS;
}

}  // namespace

namespace hal::sim::ze {

void FillMemTable(ze_mem_dditable_t* t) {
  t->pfnAllocDevice = SimMemAllocDevice;
  t->pfnAllocHost = SimMemAllocHost;
  t->pfnAllocShared = SimMemAllocShared;
  t->pfnFree = SimMemFree;
  t->pfnGetAllocProperties = SimMemGetAllocProperties;
}

}  // namespace hal::sim::ze
