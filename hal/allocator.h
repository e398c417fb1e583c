// Allocators: where buffers come from.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "hal/buffer.h"
#include "hal/ref.h"
#include "hal/status.h"
#include "hal/types.h"

namespace hal {

struct BufferParams {
  MemoryType type = MemoryType::kDeviceLocal;
  BufferUsage usage = BufferUsage::kDefault;
  MemoryAccess access = MemoryAccess::kAll;
  QueueAffinity queue_affinity = kQueueAffinityAny;
  // 0 means the allocator's default; otherwise a power of two up to
  // kMaxAlignment.
  DeviceSize min_alignment = 0;
};

inline constexpr DeviceSize kMaxAlignment = 64 * 1024;

enum class BufferCompatibility : uint32_t {
  kNone = 0,
  kAllocatable = 1u << 0,
  kImportable = 1u << 1,
  kExportable = 1u << 2,
  kLowPerformance = 1u << 3,
};
HAL_BITFLAG_OPS(BufferCompatibility)

struct AllocatorStatistics {
  DeviceSize host_bytes_allocated = 0;  // live now
  DeviceSize host_bytes_peak = 0;
  DeviceSize host_bytes_total = 0;      // ever allocated
  DeviceSize device_bytes_allocated = 0;
  DeviceSize device_bytes_peak = 0;
  DeviceSize device_bytes_total = 0;
  uint64_t live_allocations = 0;
  uint64_t total_allocations = 0;
  uint64_t imports = 0;
};

class Allocator : public RefCounted {
 public:
  // Called exactly once when an imported buffer is destroyed. Never called
  // when the import fails (the caller keeps ownership then).
  using ReleaseCallback = std::function<void()>;

  // Whether buffers with `params` and `size` can be allocated/imported here.
  // `out_resolved` (optional) gets the params the allocator would use (with
  // kOptimal resolved and implied bits added).
  BufferCompatibility QueryCompatibility(const BufferParams& params,
                                         DeviceSize size,
                                         BufferParams* out_resolved = nullptr);

  // INVALID_ARGUMENT for bad params (no usage, bad alignment, type the
  // device lacks), RESOURCE_EXHAUSTED when out of memory. Zero-size
  // allocations are allowed and give a zero-length buffer.
  StatusOr<Ref<Buffer>> AllocateBuffer(const BufferParams& params,
                                       DeviceSize size);

  // Wraps caller-owned host memory. `params.type` must be HOST_VISIBLE (the
  // memory is host memory); `ptr` may be null only when `size` is 0; it must
  // satisfy `params.min_alignment`.
  StatusOr<Ref<Buffer>> ImportHostAllocation(const BufferParams& params,
                                             void* ptr, DeviceSize size,
                                             ReleaseCallback release);

  AllocatorStatistics statistics() const;

  // The parameter checks AllocateBuffer makes (INVALID_ARGUMENT), for
  // callers that allocate later (queue_alloca).
  Status ValidateParams(const BufferParams& params) const;

  // Accounting, for drivers: call when memory is committed and released.
  void RecordAllocate(MemoryType type, DeviceSize size);
  void RecordFree(MemoryType type, DeviceSize size);
  void RecordImport() { imports_.fetch_add(1, std::memory_order_relaxed); }

  // The Buffer::Params of a buffer of this allocator with resolved `params`.
  Buffer::Params MakeBufferParams(const BufferParams& params, DeviceSize size,
                                  BufferState initial_state);

 protected:
  Allocator() = default;

  // Called with validated params; fill `out_resolved` with what an
  // allocation would get.
  virtual BufferCompatibility QueryCompatibilityImpl(
      const BufferParams& params, DeviceSize size,
      BufferParams* out_resolved) = 0;
  // Called with resolved params (alignment resolved to a power of two).
  virtual StatusOr<Ref<Buffer>> AllocateBufferImpl(const BufferParams& params,
                                                   DeviceSize size) = 0;
  virtual StatusOr<Ref<Buffer>> ImportHostAllocationImpl(
      const BufferParams& params, void* ptr, DeviceSize size,
      ReleaseCallback release) = 0;

 private:

  std::atomic<DeviceSize> host_bytes_{0}, host_peak_{0}, host_total_{0};
  std::atomic<DeviceSize> device_bytes_{0}, device_peak_{0}, device_total_{0};
  std::atomic<uint64_t> live_{0}, total_{0}, imports_{0};
};

}  // namespace hal
