#include "drivers/amdgpu/amdgpu_block_pool.h"

#include <algorithm>

namespace hal::amdgpu {

namespace {

bool PowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

StatusOr<std::unique_ptr<AmdgpuBlockPool>> AmdgpuBlockPool::Create(
    Options options, Backing backing) {
  if (!PowerOfTwo(options.block_alignment) ||
      !PowerOfTwo(options.min_alignment) || options.block_size == 0 ||
      options.block_size % options.block_alignment != 0 ||
      options.min_alignment > options.block_alignment) {
    return InvalidArgumentError(
        "amdgpu block pool: block size %zu, block alignment %zu and minimum "
        "alignment %zu: alignments must be powers of two, the block size a "
        "multiple of the block alignment",
        options.block_size, options.block_alignment, options.min_alignment);
  }
  if (!backing.allocate || !backing.free) {
    return InvalidArgumentError("amdgpu block pool: no backing store");
  }
  return std::unique_ptr<AmdgpuBlockPool>(
      new AmdgpuBlockPool(options, std::move(backing)));
}

AmdgpuBlockPool::~AmdgpuBlockPool() {
  for (auto& [address, live] : live_) {
    if (!live.block) backing_.free(address, live.size);
  }
  for (auto& b : blocks_) backing_.free(b->base, options_.block_size);
}

bool AmdgpuBlockPool::TakeFrom(Block* b, uint64_t size, uint64_t alignment,
                               uint64_t* out) {
  for (auto it = b->free.begin(); it != b->free.end(); ++it) {
    const uint64_t start = it->first, length = it->second;
    // Blocks are block_alignment aligned and alignment is at most that, so
    // aligning the offset aligns the address.
    const uint64_t offset = AlignUp(start, alignment);
    if (offset - start > length || length - (offset - start) < size) continue;
    b->free.erase(it);
    if (offset > start) b->free.emplace(start, offset - start);
    if (offset + size < start + length) {
      b->free.emplace(offset + size, start + length - offset - size);
    }
    b->used += size;
    *out = offset;
    return true;
  }
  return false;
}

StatusOr<uint64_t> AmdgpuBlockPool::Allocate(size_t size, size_t alignment) {
  if (size == 0) {
    return InvalidArgumentError("amdgpu block pool: zero-byte allocation");
  }
  if (!PowerOfTwo(alignment) || alignment > options_.block_alignment) {
    return InvalidArgumentError(
        "amdgpu block pool: alignment %zu is not a power of two of at most "
        "%zu",
        alignment, options_.block_alignment);
  }
  alignment = std::max(alignment, options_.min_alignment);
  if (size > SIZE_MAX - options_.block_alignment) {
    return ResourceExhaustedError("amdgpu block pool: %zu bytes", size);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (size > options_.block_size) {
    const uint64_t rounded = AlignUp(size, options_.block_alignment);
    ++stats_.backing_allocs;
    HAL_ASSIGN_OR_RETURN(uint64_t address,
                         backing_.allocate(static_cast<size_t>(rounded)));
    live_[address] = Live{nullptr, 0, rounded};
    ++stats_.dedicated;
    stats_.bytes_in_use += rounded;
    return address;
  }
  const uint64_t rounded = AlignUp(size, options_.min_alignment);
  uint64_t offset = 0;
  Block* found = nullptr;
  for (auto& b : blocks_) {
    if (TakeFrom(b.get(), rounded, alignment, &offset)) {
      found = b.get();
      break;
    }
  }
  if (!found) {
    ++stats_.backing_allocs;
    HAL_ASSIGN_OR_RETURN(uint64_t base, backing_.allocate(options_.block_size));
    auto b = std::make_unique<Block>();
    b->base = base;
    b->free.emplace(0, options_.block_size);
    found = b.get();
    blocks_.push_back(std::move(b));
    TakeFrom(found, rounded, alignment, &offset);  // fits: an empty block
  }
  if (found == spare_) spare_ = nullptr;
  live_[found->base + offset] = Live{found, offset, rounded};
  ++stats_.allocations;
  stats_.bytes_in_use += rounded;
  return found->base + offset;
}

void AmdgpuBlockPool::Release(Block* b, uint64_t offset, uint64_t size) {
  b->used -= size;
  auto next = b->free.lower_bound(offset);
  // Merge with the range before (ending at offset) and after (starting at
  // offset + size): free ranges are never adjacent.
  if (next != b->free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      b->free.erase(prev);
    }
  }
  if (next != b->free.end() && offset + size == next->first) {
    size += next->second;
    b->free.erase(next);
  }
  b->free.emplace(offset, size);
}

void AmdgpuBlockPool::ReturnBlock(Block* b) {
  backing_.free(b->base, options_.block_size);
  std::erase_if(blocks_,
                [b](const std::unique_ptr<Block>& p) { return p.get() == b; });
}

Status AmdgpuBlockPool::Free(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(address);
  if (it == live_.end()) {
    return NotFoundError(
        "amdgpu block pool: 0x%llx is not a live allocation of this pool",
        static_cast<unsigned long long>(address));
  }
  const Live live = it->second;
  live_.erase(it);
  stats_.bytes_in_use -= live.size;
  if (!live.block) {
    --stats_.dedicated;
    backing_.free(address, live.size);
    return OkStatus();
  }
  --stats_.allocations;
  Release(live.block, live.offset, live.size);
  if (live.block->used == 0) {
    // Empty: keep one as the spare, return the others.
    if (!spare_) {
      spare_ = live.block;
    } else {
      ReturnBlock(live.block);
    }
  }
  return OkStatus();
}

bool AmdgpuBlockPool::Owns(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.count(address) != 0;
}

void AmdgpuBlockPool::Trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (spare_) {
    ReturnBlock(spare_);
    spare_ = nullptr;
  }
}

AmdgpuBlockPool::Stats AmdgpuBlockPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.blocks = blocks_.size();
  return s;
}

}  // namespace hal::amdgpu
