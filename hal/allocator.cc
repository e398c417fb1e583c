#include "hal/allocator.h"

#include <unistd.h>

#include <limits>

namespace hal {

namespace {
void UpdatePeak(std::atomic<DeviceSize>& peak, DeviceSize value) {
  DeviceSize prev = peak.load(std::memory_order_relaxed);
  while (prev < value &&
         !peak.compare_exchange_weak(prev, value, std::memory_order_relaxed)) {
  }
}

// A running total that sticks at the maximum instead of wrapping to a small
// number that would look like little use.
void SaturatingAdd(std::atomic<DeviceSize>& total, DeviceSize value) {
  DeviceSize prev = total.load(std::memory_order_relaxed);
  DeviceSize next;
  do {
    if (!CheckedAdd(prev, value, &next)) {
      next = std::numeric_limits<DeviceSize>::max();
    }
  } while (!total.compare_exchange_weak(prev, next, std::memory_order_relaxed));
}

bool IsPowerOfTwo(DeviceSize v) { return v && !(v & (v - 1)); }

Status CheckMaxAllocationSize(DeviceSize size) {
  if (size <= kMaxAllocationSize) return OkStatus();
  return ResourceExhaustedError(
      "allocation of %llu bytes is larger than any allocator provides (%llu)",
      (unsigned long long)size, (unsigned long long)kMaxAllocationSize);
}

// Physical memory of the host: no single host-backed allocation can be
// larger, and asking the C allocator for more fails late (an overcommitted
// mapping that the fill with 0xCD then faults in) or aborts under ASan.
DeviceSize HostMemoryBytes() {
  static const DeviceSize bytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return kMaxAllocationSize;
    unsigned __int128 total = static_cast<unsigned __int128>(pages) *
                              static_cast<uint64_t>(page_size);
    return total > kMaxAllocationSize ? kMaxAllocationSize
                                      : static_cast<DeviceSize>(total);
  }();
  return bytes;
}
}  // namespace

bool CheckedAdd(DeviceSize a, DeviceSize b, DeviceSize* out) {
  DeviceSize sum;
  if (__builtin_add_overflow(a, b, &sum)) return false;
  *out = sum;
  return true;
}

bool CheckedAlignUp(DeviceSize value, DeviceSize alignment, DeviceSize* out) {
  DeviceSize bumped;
  if (!CheckedAdd(value, alignment - 1, &bumped)) return false;
  *out = bumped & ~(alignment - 1);
  return true;
}

bool CheckedHostSize(DeviceSize value, size_t* out) {
  if (value > std::numeric_limits<size_t>::max()) return false;
  *out = static_cast<size_t>(value);
  return true;
}

Status Allocator::ValidateParams(const BufferParams& params) const {
  if (!Any(params.type)) {
    return InvalidArgumentError("buffer memory type is NONE");
  }
  if (!Any(params.usage)) {
    return InvalidArgumentError("buffer usage is NONE");
  }
  if (!Any(params.access)) {
    return InvalidArgumentError("buffer access is NONE");
  }
  if (params.queue_affinity == 0) {
    return InvalidArgumentError("buffer queue affinity is empty");
  }
  if (params.min_alignment != 0 && (!IsPowerOfTwo(params.min_alignment) ||
                                    params.min_alignment > kMaxAlignment)) {
    return InvalidArgumentError(
        "min_alignment %llu is not a power of two up to %llu",
        (unsigned long long)params.min_alignment,
        (unsigned long long)kMaxAlignment);
  }
  if (Any(params.usage & BufferUsage::kMapping) &&
      !AllOf(params.type, MemoryType::kHostVisible) &&
      !AllOf(params.type, MemoryType::kOptimal)) {
    return InvalidArgumentError(
        "mapping usage requested for memory type %s that is not HOST_VISIBLE",
        MemoryTypeString(params.type).c_str());
  }
  return OkStatus();
}

BufferParams Allocator::ResolveOptimal(const BufferParams& params) {
  BufferParams r = params;
  if (AllOf(r.type, MemoryType::kOptimal)) {
    r.type = r.type & ~MemoryType::kOptimal;
    if (!Any(r.type)) r.type = MemoryType::kDeviceLocal;
    if (Any(r.usage & BufferUsage::kMapping)) {
      r.type |= MemoryType::kHostVisible | MemoryType::kHostCoherent;
    }
  }
  return r;
}

BufferCompatibility Allocator::QueryCompatibility(const BufferParams& params,
                                                  DeviceSize size,
                                                  BufferParams* out_resolved) {
  if (!ValidateParams(params).ok()) return BufferCompatibility::kNone;
  BufferParams resolved = params;
  BufferCompatibility c =
      QueryCompatibilityImpl(ResolveOptimal(params), size, &resolved);
  if (out_resolved) *out_resolved = resolved;
  return c;
}

StatusOr<Ref<Buffer>> Allocator::AllocateBuffer(const BufferParams& params,
                                                DeviceSize size) {
  HAL_RETURN_IF_ERROR(ValidateParams(params));
  BufferParams resolved = params;
  BufferCompatibility c =
      QueryCompatibilityImpl(ResolveOptimal(params), size, &resolved);
  if (!Any(c & BufferCompatibility::kAllocatable)) {
    return InvalidArgumentError(
        "allocator cannot allocate %llu bytes of memory type %s with usage %s",
        (unsigned long long)size, MemoryTypeString(params.type).c_str(),
        BufferUsageString(params.usage).c_str());
  }
  // Drivers check again with their own limits (CheckAllocationSize); this
  // bound holds for every driver, whatever its arithmetic.
  HAL_RETURN_IF_ERROR(CheckMaxAllocationSize(size));
  return AllocateBufferImpl(resolved, size);
}

Status Allocator::CheckAllocationSize(const BufferParams& params,
                                      DeviceSize size,
                                      DeviceSize device_memory_bytes,
                                      bool host_backed) const {
  HAL_RETURN_IF_ERROR(CheckMaxAllocationSize(size));
  if (AllOf(params.type, MemoryType::kDeviceLocal) &&
      size > device_memory_bytes) {
    return ResourceExhaustedError(
        "allocation of %llu bytes of %s is larger than the device's %llu "
        "bytes of memory",
        (unsigned long long)size, MemoryTypeString(params.type).c_str(),
        (unsigned long long)device_memory_bytes);
  }
  size_t host_size;
  if (host_backed &&
      (!CheckedHostSize(size, &host_size) || size > HostMemoryBytes())) {
    return ResourceExhaustedError(
        "allocation of %llu bytes of host-backed %s is larger than the host's "
        "%llu bytes of physical memory",
        (unsigned long long)size, MemoryTypeString(params.type).c_str(),
        (unsigned long long)HostMemoryBytes());
  }
  return OkStatus();
}

StatusOr<Ref<Buffer>> Allocator::ImportHostAllocation(
    const BufferParams& params, void* ptr, DeviceSize size,
    ReleaseCallback release) {
  HAL_RETURN_IF_ERROR(ValidateParams(params));
  if (!ptr && size != 0) {
    return InvalidArgumentError("import of a null host pointer");
  }
  if (!AllOf(params.type, MemoryType::kHostVisible)) {
    return InvalidArgumentError(
        "host allocations import as HOST_VISIBLE memory, not %s",
        MemoryTypeString(params.type).c_str());
  }
  if (params.min_alignment &&
      reinterpret_cast<uintptr_t>(ptr) % params.min_alignment != 0) {
    return InvalidArgumentError("host pointer %p is not aligned to %llu", ptr,
                                (unsigned long long)params.min_alignment);
  }
  DeviceSize end;
  if (!CheckedAdd(reinterpret_cast<uintptr_t>(ptr), size, &end) ||
      end > std::numeric_limits<uintptr_t>::max()) {
    return InvalidArgumentError(
        "host range %p + %llu bytes wraps the address space", ptr,
        (unsigned long long)size);
  }
  BufferParams resolved = params;
  BufferCompatibility c =
      QueryCompatibilityImpl(ResolveOptimal(params), size, &resolved);
  if (!Any(c & BufferCompatibility::kImportable)) {
    return InvalidArgumentError("allocator cannot import memory type %s",
                                MemoryTypeString(params.type).c_str());
  }
  return ImportHostAllocationImpl(resolved, ptr, size, std::move(release));
}

void Allocator::RecordAllocate(MemoryType type, DeviceSize size) {
  bool device = AllOf(type, MemoryType::kDeviceLocal);
  auto& bytes = device ? device_bytes_ : host_bytes_;
  // Live bytes are bounded by the memory the drivers hand out; running
  // totals are not.
  DeviceSize now = bytes.fetch_add(size, std::memory_order_relaxed) + size;
  UpdatePeak(device ? device_peak_ : host_peak_, now);
  SaturatingAdd(device ? device_total_ : host_total_, size);
  live_.fetch_add(1, std::memory_order_relaxed);
  total_.fetch_add(1, std::memory_order_relaxed);
}

void Allocator::RecordFree(MemoryType type, DeviceSize size) {
  bool device = AllOf(type, MemoryType::kDeviceLocal);
  (device ? device_bytes_ : host_bytes_)
      .fetch_sub(size, std::memory_order_relaxed);
  live_.fetch_sub(1, std::memory_order_relaxed);
}

Buffer::Params Allocator::MakeBufferParams(const BufferParams& params,
                                           DeviceSize size,
                                           BufferState initial_state) {
  Buffer::Params p;
  p.allocator = Ref<Allocator>(this);
  p.memory_type = params.type;
  p.allowed_usage = params.usage;
  p.allowed_access = params.access;
  p.queue_affinity = params.queue_affinity;
  p.byte_length = size;
  p.initial_state = initial_state;
  return p;
}

AllocatorStatistics Allocator::statistics() const {
  AllocatorStatistics s;
  s.host_bytes_allocated = host_bytes_.load();
  s.host_bytes_peak = host_peak_.load();
  s.host_bytes_total = host_total_.load();
  s.device_bytes_allocated = device_bytes_.load();
  s.device_bytes_peak = device_peak_.load();
  s.device_bytes_total = device_total_.load();
  s.live_allocations = live_.load();
  s.total_allocations = total_.load();
  s.imports = imports_.load();
  return s;
}

}  // namespace hal
