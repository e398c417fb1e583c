// The engine's address space: allocations are host RAM (unified
// addressing), filled with 0xCD; freed blocks go to a quarantine first, so
// that a late use is reported (use after free) instead of touching memory the
// process reuses. A block leaves the quarantine once every op enqueued before
// its free has completed and the quarantine is over its budget.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "sim/engine/engine.h"

namespace hal::sim::engine {
namespace {

// Physical memory of the host: the most one allocation can take (asking the
// C allocator for more aborts under ASan or faults in the 0xCD fill).
size_t HostMemoryBytes() {
  static const size_t bytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return size_t{1} << 40;
    if (static_cast<size_t>(pages) > SIZE_MAX / page_size) return SIZE_MAX;
    return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
  }();
  return bytes;
}

// `size` (> 0) rounded up to `alignment` (a power of two), or null when the
// rounding overflows or the host cannot hold it.
void* RawAlloc(size_t size, size_t alignment) {
  if (size > HostMemoryBytes() || size > SIZE_MAX - (alignment - 1)) {
    return nullptr;
  }
  size_t rounded = (size + alignment - 1) & ~(alignment - 1);
  void* p = std::aligned_alloc(alignment, rounded);
  if (p) std::memset(p, 0xCD, rounded);
  return p;
}

}  // namespace

Error Engine::Allocate(size_t size, MemoryKind kind, size_t alignment,
                       void** out) {
  if (size == 0 || kind == MemoryKind::kRegistered) {
    return Error::kInvalidValue;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (AllocFaultLocked()) return Error::kOutOfMemory;
  const size_t limit = options_.device_memory_bytes;
  bool device = kind != MemoryKind::kHost;
  if (device && (size > limit || device_bytes_ > limit - size)) {
    return Error::kOutOfMemory;
  }
  void* p = RawAlloc(size, alignment);
  if (!p) return Error::kOutOfMemory;
  if (device) device_bytes_ += size;
  uintptr_t base = reinterpret_cast<uintptr_t>(p);
  allocations_[base] = Allocation{base, size, kind};
  *out = p;
  return Error::kOk;
}

Error Engine::Free(uintptr_t base, bool host) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(base);
  if (it == allocations_.end()) return Error::kInvalidValue;
  bool is_host = it->second.kind == MemoryKind::kHost;
  if (is_host != host || it->second.kind == MemoryKind::kRegistered) {
    return Error::kInvalidValue;
  }
  if (!is_host) device_bytes_ -= it->second.size;
  // Ops enqueued up to now may still touch it: quarantine, do not free.
  quarantine_[base] = Freed{it->second.size, ops_enqueued_};
  quarantine_order_.push_back(base);
  quarantine_bytes_ += it->second.size;
  allocations_.erase(it);
  TrimQuarantineLocked();
  return Error::kOk;
}

Error Engine::Register(uintptr_t p, size_t n) {
  if (!p || n == 0 || n > UINTPTR_MAX - p) return Error::kInvalidValue;
  std::lock_guard<std::mutex> lock(mutex_);
  Allocation a;
  if (FindAllocationLocked(p, &a) || FindAllocationLocked(p + n - 1, &a)) {
    return Error::kAlreadyRegistered;
  }
  allocations_[p] = Allocation{p, n, MemoryKind::kRegistered};
  return Error::kOk;
}

Error Engine::Unregister(uintptr_t p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(p);
  if (it == allocations_.end() || it->second.kind != MemoryKind::kRegistered) {
    return Error::kNotRegistered;
  }
  allocations_.erase(it);
  return Error::kOk;
}

bool Engine::FindAllocation(uintptr_t p, Allocation* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return FindAllocationLocked(p, out);
}

bool Engine::AllocationAt(uintptr_t base, Allocation* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(base);
  if (it == allocations_.end()) return false;
  *out = it->second;
  return true;
}

bool Engine::FindAllocationLocked(uintptr_t p, Allocation* out) const {
  auto it = allocations_.upper_bound(p);
  if (it == allocations_.begin()) return false;
  --it;
  const Allocation& a = it->second;
  if (p >= a.base + a.size && !(a.size == 0 && p == a.base)) return false;
  *out = a;
  return true;
}

// A range that starts in an allocation must end in it; other addresses are
// pageable host memory (allowed with unified addressing).
bool Engine::RangeOkLocked(uintptr_t p, size_t n) const {
  Allocation a;
  return !FindAllocationLocked(p, &a) || n <= a.base + a.size - p;
}

bool Engine::TouchesFreedLocked(uintptr_t p, size_t n) const {
  uintptr_t end = Range::Of(p, n).end;
  auto it = quarantine_.lower_bound(end);
  if (it == quarantine_.begin()) return false;
  --it;
  return it->first + it->second.size > p;
}

void Engine::TrimQuarantineLocked() {
  if (quarantine_bytes_ <= options_.quarantine_bytes) return;
  // Ops complete in order within a queue, so the front of each queue is
  // its oldest.
  const uint64_t oldest_pending = OldestPendingOpLocked();
  while (quarantine_bytes_ > options_.quarantine_bytes &&
         !quarantine_order_.empty()) {
    auto it = quarantine_.find(quarantine_order_.front());
    if (it->second.freed_after >= oldest_pending) break;
    quarantine_bytes_ -= it->second.size;
    std::free(reinterpret_cast<void*>(it->first));
    quarantine_.erase(it);
    quarantine_order_.pop_front();
  }
}

std::vector<Range> Engine::KernelBindingRanges(
    const std::vector<uintptr_t>& pointers) const {
  constexpr uint64_t kElementBytes = 4;
  std::vector<Range> ranges;
  for (uintptr_t p : pointers) {
    Allocation a;
    if (!FindAllocation(p, &a) || p >= a.base + a.size) continue;
    const uint64_t left = a.base + a.size - p;
    ranges.push_back(Range::Of(p, left < kElementBytes ? left : kElementBytes));
  }
  return ranges;
}

}  // namespace hal::sim::engine
