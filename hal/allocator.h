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
  // The queues that may use the buffer: operations on other queues only
  // are INVALID_ARGUMENT at submission, and a driver may place the memory
  // where these queues reach it (the AMDGPU agent group does).
  QueueAffinity queue_affinity = kQueueAffinityAny;
  // 0 means the allocator's default; otherwise a power of two up to
  // kMaxAlignment.
  DeviceSize min_alignment = 0;
};

inline constexpr DeviceSize kMaxAlignment = 64 * 1024;

// The largest allocation any allocator accepts. No 64-bit address space holds
// more than 2^57 bytes; this bound keeps every rounding and padding a driver
// does (at most a few kMaxAlignment) far from overflow.
inline constexpr DeviceSize kMaxAllocationSize = DeviceSize{1} << 60;

// Overflow-checked size arithmetic for allocation and import paths. Each
// returns false, and leaves `*out` alone, when the result does not fit.
bool CheckedAdd(DeviceSize a, DeviceSize b, DeviceSize* out);
// Rounds `value` up to a multiple of `alignment` (a power of two).
bool CheckedAlignUp(DeviceSize value, DeviceSize alignment, DeviceSize* out);
// `value` as a size_t, for host and vendor API calls.
bool CheckedHostSize(DeviceSize value, size_t* out);

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
  DeviceSize host_bytes_total = 0;  // ever allocated
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
  // when the import fails (the caller keeps ownership then). A driver whose
  // submitted work holds the memory past the last reference (Metal) calls it
  // once that work completed, possibly on the driver's completion thread.
  using ReleaseCallback = std::function<void()>;

  // Whether buffers with `params` and `size` can be allocated/imported here.
  // `out_resolved` (optional) gets the params the allocator would use (with
  // kOptimal resolved and implied bits added). This is about the params, not
  // about room: a size larger than the memory is still kAllocatable, and
  // allocating it is RESOURCE_EXHAUSTED.
  BufferCompatibility QueryCompatibility(const BufferParams& params,
                                         DeviceSize size,
                                         BufferParams* out_resolved = nullptr);

  // INVALID_ARGUMENT for bad params (no usage, bad alignment, type the
  // device lacks). RESOURCE_EXHAUSTED when out of memory, and at once for a
  // size that can never be allocated: above kMaxAllocationSize, above the
  // device's memory for DEVICE_LOCAL, or (host-backed memory) above what the
  // host can address or hold. queue_alloca reports the same codes at
  // submission for sizes that can never be allocated. Zero-size allocations
  // are allowed and give a zero-length buffer.
  StatusOr<Ref<Buffer>> AllocateBuffer(const BufferParams& params,
                                       DeviceSize size);

  // Wraps caller-owned host memory. `params.type` must be HOST_VISIBLE (the
  // memory is host memory); `ptr` may be null only when `size` is 0; it must
  // satisfy `params.min_alignment`; [ptr, ptr+size) must not wrap the address
  // space (INVALID_ARGUMENT otherwise). A driver may need more, also
  // INVALID_ARGUMENT with the reason: Metal wraps whole pages, so `ptr` and
  // a nonzero `size` must be multiples of the host page size.
  StatusOr<Ref<Buffer>> ImportHostAllocation(const BufferParams& params,
                                             void* ptr, DeviceSize size,
                                             ReleaseCallback release);

  AllocatorStatistics statistics() const;

  // `params` with kOptimal resolved as every allocator resolves it (see
  // QueryCompatibilityImpl); params without it are returned unchanged.
  static BufferParams ResolveOptimal(const BufferParams& params);

  // The parameter checks AllocateBuffer makes (INVALID_ARGUMENT), for
  // callers that allocate later (queue_alloca).
  Status ValidateParams(const BufferParams& params) const;

  // Accounting, for drivers: call when memory is committed and released.
  // Running totals saturate instead of wrapping.
  void RecordAllocate(MemoryType type, DeviceSize size);
  void RecordFree(MemoryType type, DeviceSize size);
  void RecordImport() { imports_.fetch_add(1, std::memory_order_relaxed); }

  // The Buffer::Params of a buffer of this allocator with resolved `params`.
  Buffer::Params MakeBufferParams(const BufferParams& params, DeviceSize size,
                                  BufferState initial_state);

 protected:
  Allocator() = default;

  // For drivers, on every allocation path (AllocateBufferImpl and
  // queue_alloca's reservation), with resolved params: RESOURCE_EXHAUSTED
  // when `size` can never be allocated: above kMaxAllocationSize, DEVICE_LOCAL
  // and above `device_memory_bytes`, or `host_backed` and above the host's
  // physical memory.
  Status CheckAllocationSize(const BufferParams& params, DeviceSize size,
                             DeviceSize device_memory_bytes,
                             bool host_backed) const;

  // Called with validated params whose kOptimal is already resolved (the
  // bit cleared; DEVICE_LOCAL when no type is left; HOST_VISIBLE |
  // HOST_COHERENT added for mapping usage); fill `out_resolved` with what
  // an allocation would get.
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
