#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "drivers/amdgpu/amdgpu_api.h"
#include "drivers/amdgpu/amdgpu_api_internal.h"
#include "hal/buggify.h"
#include "hal/coverage.h"

namespace hal::amdgpu {

StatusOr<AmdgpuBlockPool*> HsaApi::PoolFor(uint64_t agent_mask) {
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto& pool = pools_[agent_mask];
  if (pool) return pool.get();
  // Placed on the lowest agent of the mask; the others are granted access.
  size_t home = 0;
  while (!(agent_mask & (uint64_t{1} << home))) ++home;
  const size_t granule = agents_[home].granule;
  AmdgpuBlockPool::Options options;
  options.block_alignment = granule;
  options.block_size = (kMinBlockBytes + granule - 1) / granule * granule;
  options.min_alignment = std::min(kBufferAlignment, granule);
  AmdgpuBlockPool::Backing backing;
  // The pool's lock is held: these make HSA calls and take memory_mutex_
  // only (never a pool's).
  backing.allocate = [this, home,
                      agent_mask](size_t size) -> StatusOr<uint64_t> {
    void* p = nullptr;
    HSA(hsa_amd_memory_pool_allocate(agents_[home].device_pool, size, 0, &p),
        "allocating a %zu-byte block of device memory on GPU agent %zu", size,
        home);
    if (agent_mask != (uint64_t{1} << home)) {
      Status st = AllowAgents(agent_mask, p, size);
      if (!st.ok()) {
        syms_->hsa_amd_memory_pool_free(p);
        return st;
      }
    }
    Track(p, size);
    return reinterpret_cast<uint64_t>(p);
  };
  backing.free = [this](uint64_t address, size_t) {
    void* p = reinterpret_cast<void*>(address);
    Untrack(p);
    syms_->hsa_amd_memory_pool_free(p);
  };
  auto created = AmdgpuBlockPool::Create(options, std::move(backing));
  if (!created.ok()) {
    pools_.erase(agent_mask);
    return created.status();
  }
  pool = std::move(*created);
  return pool.get();
}

const AmdgpuBlockPool* HsaApi::device_blocks(uint64_t agent_mask) {
  std::lock_guard<std::mutex> lock(pools_mutex_);
  auto it = pools_.find(agent_mask);
  return it == pools_.end() ? nullptr : it->second.get();
}

void HsaApi::Track(const void* base, size_t size) {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  accessible_[reinterpret_cast<uintptr_t>(base)] = size;
}

void HsaApi::Untrack(const void* base) {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  accessible_.erase(reinterpret_cast<uintptr_t>(base));
}

bool HsaApi::Accessible(uint64_t p, size_t n) {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  auto it = accessible_.upper_bound(static_cast<uintptr_t>(p));
  if (it == accessible_.begin()) return false;
  --it;
  return p - it->first <= it->second && n <= it->second - (p - it->first);
}

Status HsaApi::MemAllocDevice(size_t size, gpu::GpuDevicePtr* out) {
  return MemAllocDeviceFor(size, ~uint64_t{0}, out);
}

Status HsaApi::MemAllocDeviceFor(size_t size, uint64_t queue_affinity,
                                 gpu::GpuDevicePtr* out) {
  // A suballocation of a block (or a dedicated block for large buffers),
  // already granted to the affinity's agents and tracked as GPU-reachable.
  HAL_ASSIGN_OR_RETURN(AmdgpuBlockPool * pool,
                       PoolFor(AgentMask(queue_affinity)));
  HAL_ASSIGN_OR_RETURN(*out, pool->Allocate(size, kBufferAlignment));
  return OkStatus();
}

Status HsaApi::MemAllocManaged(size_t size, gpu::GpuDevicePtr* out) {
  // Fine-grained system memory the GPU is granted: one address for both.
  void* p = nullptr;
  HAL_RETURN_IF_ERROR(MemAllocHost(size, &p));
  {
    std::lock_guard<std::mutex> lock(memory_mutex_);
    managed_.insert(p);
  }
  *out = reinterpret_cast<gpu::GpuDevicePtr>(p);
  return OkStatus();
}

Status HsaApi::MemFreeDevice(gpu::GpuDevicePtr ptr) {
  {
    std::lock_guard<std::mutex> lock(pools_mutex_);
    for (auto& [mask, pool] : pools_) {
      if (pool->Owns(ptr)) return pool->Free(ptr);
    }
  }
  // Managed memory (MemAllocManaged): its own host-pool allocation.
  void* p = reinterpret_cast<void*>(ptr);
  {
    std::lock_guard<std::mutex> lock(memory_mutex_);
    if (managed_.erase(p) == 0) {
      return NotFoundError(
          "amdgpu: 0x%llx is not a live device or managed allocation",
          static_cast<unsigned long long>(ptr));
    }
  }
  HSA(hsa_amd_memory_pool_free(p), "%s", "");
  Untrack(p);
  return OkStatus();
}

Status HsaApi::MemAllocHost(size_t size, void** out) {
  void* p = nullptr;
  HSA(hsa_amd_memory_pool_allocate(host_pool_, size, 0, &p),
      "allocating %zu bytes of fine-grained host memory", size);
  Status st = AllowAllAgents(p, size);
  if (!st.ok()) {
    syms_->hsa_amd_memory_pool_free(p);
    return st;
  }
  Track(p, size);
  *out = p;
  return OkStatus();
}

Status HsaApi::MemFreeHost(void* ptr) {
  HSA(hsa_amd_memory_pool_free(ptr), "%s", "");
  Untrack(ptr);
  return OkStatus();
}

Status HsaApi::MemHostRegister(void* ptr, size_t size) {
  void* agent_ptr = nullptr;
  HSA(hsa_amd_memory_lock(ptr, size, agent_handles_.data(),
                          static_cast<int>(agent_handles_.size()), &agent_ptr),
      "importing %zu bytes of host memory", size);
  Track(ptr, size);
  std::lock_guard<std::mutex> lock(memory_mutex_);
  registered_[ptr] = agent_ptr;
  return OkStatus();
}

Status HsaApi::MemHostUnregister(void* ptr) {
  HSA(hsa_amd_memory_unlock(ptr), "%s", "");
  Untrack(ptr);
  std::lock_guard<std::mutex> lock(memory_mutex_);
  registered_.erase(ptr);
  return OkStatus();
}

Status HsaApi::HostDevicePointer(void* host, gpu::GpuDevicePtr* out) {
  // Locked memory has the agent address hsa_amd_memory_lock gave; pool
  // memory is at the same address for every agent it was granted to.
  std::lock_guard<std::mutex> lock(memory_mutex_);
  auto it = registered_.find(host);
  *out = reinterpret_cast<gpu::GpuDevicePtr>(
      it != registered_.end() ? it->second : host);
  return OkStatus();
}

Status HsaApi::MemAllocAsync(size_t, gpu::GpuStream, gpu::GpuDevicePtr*) {
  return UnimplementedError(
      "amdgpu: stream-ordered allocation (the seed's block pools) is not done "
      "yet; queue_alloca allocates when its waits are met");
}

Status HsaApi::MemFreeAsync(gpu::GpuDevicePtr, gpu::GpuStream) {
  return UnimplementedError(
      "amdgpu: stream-ordered deallocation is not done yet");
}

Status HsaApi::MemcpyAsync(gpu::GpuDevicePtr dst, gpu::GpuDevicePtr src,
                           size_t size, gpu::GpuStream stream) {
  if (!device_library_) {
    return UnimplementedError(
        "amdgpu: copies need the device library, which this build lacks (no "
        "clang with -target amdgcn-amd-amdhsa -mcpu=gfx90a and ld.lld)");
  }
  HsaStream* s = AsStream(stream);
  void* staged = nullptr;
  const bool pageable_src = !Accessible(src, size);
  // BUGGIFY: the staging ring acts full (memory of its own).
  if (pageable_src &&
      (size > kStagingRingBytes || Buggify(BuggifySite::kStagingRingFull))) {
    // Pageable host memory (an update's payload, immutable) too large for
    // the staging ring: copy it now into memory of its own.
    HAL_RETURN_IF_ERROR(MemAllocHost(size, &staged));
    std::memcpy(staged, reinterpret_cast<const void*>(src), size);
    src = reinterpret_cast<uint64_t>(staged);
  }
  void* bounce = nullptr;
  void* pageable_dst = nullptr;
  if (!Accessible(dst, size)) {
    // A pageable destination (the GPU layer reads an indirect dispatch's
    // count this way): copy through memory the GPU can write, and finish
    // the copy on the host before returning (synchronous, as HIP is for
    // pageable memory).
    Status st = MemAllocHost(size, &bounce);
    if (!st.ok()) {
      if (staged) MemFreeHost(staged).IgnoreError();
      return st;
    }
    pageable_dst = reinterpret_cast<void*>(dst);
    dst = reinterpret_cast<uint64_t>(bounce);
  }
  struct {
    uint64_t src, dst;
    uint32_t length_lo, length_hi;
  } args = {src, dst, static_cast<uint32_t>(size),
            static_cast<uint32_t>(uint64_t{size} >> 32)};
  const uint64_t groups =
      (uint64_t{size} + kBlitBytesPerWorkgroup - 1) / kBlitBytesPerWorkgroup;
  const uint32_t grid[3] = {static_cast<uint32_t>(groups), 1, 1};
  const uint32_t block[3] = {64, 1, 1};
  Status st;
  if (pageable_src && !staged) {
    // Through the staging ring: the bytes are copied now, and their ring
    // space is reused once the copy's packet completed.
    std::lock_guard<std::mutex> lock(s->mutex);
    StatusOr<uint64_t> ring =
        StageLocked(s, reinterpret_cast<const void*>(src), size);
    if (ring.ok()) {
      args.src = *ring;
      st = DispatchLocked(s, agents_[s->agent].blit_copy, grid, block, 0, &args,
                          sizeof(args));
      if (!st.ok()) s->ring.CancelNewest();
    } else {
      st = ring.status();
    }
  } else {
    st = Dispatch(s, agents_[s->agent].blit_copy, grid, block, 0, &args,
                  sizeof(args));
  }
  if (bounce) {
    if (st.ok()) st = StreamSynchronize(stream);
    if (st.ok()) std::memcpy(pageable_dst, bounce, size);
    MemFreeHost(bounce).IgnoreError();
  }
  if (pageable_src && !staged) return st;
  if (staged) {
    if (!st.ok()) {
      MemFreeHost(staged).IgnoreError();
      return st;
    }
    std::lock_guard<std::mutex> lock(s->mutex);
    s->staging.push_back({s->written, staged});
    Reclaim(s);
  }
  return st;
}

Status HsaApi::MemsetAsync(gpu::GpuDevicePtr dst, uint32_t pattern,
                           size_t pattern_length, size_t count,
                           gpu::GpuStream stream) {
  if (!device_library_) {
    return UnimplementedError(
        "amdgpu: fills need the device library, which this build lacks (no "
        "clang with -target amdgcn-amd-amdhsa -mcpu=gfx90a and ld.lld)");
  }
  uint32_t replicated;
  switch (pattern_length) {
    case 1:
      replicated = (pattern & 0xffu) * 0x01010101u;
      break;
    case 2:
      replicated = (pattern & 0xffffu) * 0x00010001u;
      break;
    case 4:
      replicated = pattern;
      break;
    default:
      return InvalidArgumentError("fill pattern of %zu bytes", pattern_length);
  }
  const uint64_t bytes = uint64_t{count} * pattern_length;
  struct {
    uint64_t dst;
    uint32_t pattern, unused, length_lo, length_hi;
  } args = {dst, replicated, 0, static_cast<uint32_t>(bytes),
            static_cast<uint32_t>(bytes >> 32)};
  const uint64_t groups =
      (bytes + kBlitBytesPerWorkgroup - 1) / kBlitBytesPerWorkgroup;
  const uint32_t grid[3] = {static_cast<uint32_t>(groups), 1, 1};
  const uint32_t block[3] = {64, 1, 1};
  HsaStream* s = AsStream(stream);
  return Dispatch(s, agents_[s->agent].blit_fill, grid, block, 0, &args,
                  sizeof(args));
}

StatusOr<uint64_t> HsaApi::StageLocked(HsaStream* s, const void* src,
                                       size_t size) {
  if (!s->ring_memory) {
    void* p = nullptr;
    HAL_RETURN_IF_ERROR(MemAllocHost(kStagingRingBytes, &p));
    s->ring_memory = static_cast<uint8_t*>(p);
  }
  // Free once the packet about to be written (index s->written) completed.
  const uint64_t tag = s->written + 1;
  Reclaim(s);
  std::optional<uint64_t> position = s->ring.Reserve(size, 16, tag);
  while (!position) {
    // Full: wait for the oldest staged copy's packet, then retry.
    Sometimes(CoverageState::kStagingRingFullWaited);
    std::optional<uint64_t> oldest = s->ring.OldestTag();
    if (!oldest || *oldest > s->written) {
      return InternalError(
          "amdgpu: %zu bytes do not fit the staging ring, and no written "
          "packet holds it",
          size);
    }
    HAL_RETURN_IF_ERROR(WaitEpoch(s, *oldest));
    Reclaim(s);
    position = s->ring.Reserve(size, 16, tag);
  }
  uint8_t* dst = s->ring_memory + s->ring.Offset(*position);
  std::memcpy(dst, src, size);
  return reinterpret_cast<uint64_t>(dst);
}

}  // namespace hal::amdgpu
