// The seed's blocked allocation: a suballocator over fixed-size blocks that
// are allocated from HSA rarely (hsa_amd_memory_pool_allocate is a syscall,
// page-table updates and sometimes a device synchronisation), so that
// creating and freeing buffers costs a free-list search, not a trip into
// the kernel driver.
//
// * Allocations of at most block_size bytes come from blocks: first fit over
//   each block's free ranges (ordered by offset), the leading and trailing
//   remainders stay free, and a free merges with its neighbours
//   (coalescing), so a block that becomes empty is one range again.
// * A block that becomes empty goes back to the backing store, except one
//   empty block kept as a spare (so a loop that allocates and frees one
//   buffer does not allocate a block each time); Trim() returns the spare.
// * Larger allocations are dedicated backing allocations.
// * Sizes round up to min_alignment; an alignment is a power of two of at
//   most block_alignment (the backing store's, HSA's allocation granule).
// * The backing store's failure (HSA's OUT_OF_RESOURCES) is returned as is:
//   RESOURCE_EXHAUSTED, with the pool unchanged.
//
// The backing store is two callbacks, so the pool is tested without HSA
// (tests/amdgpu_memory_test.cc). Thread safety: every method may be called
// from any thread (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hal/status.h"

namespace hal::amdgpu {

class AmdgpuBlockPool {
 public:
  struct Backing {
    // `size` bytes aligned to the pool's block_alignment; the callbacks are
    // called with the pool's lock held and must not call the pool.
    std::function<StatusOr<uint64_t>(size_t size)> allocate;
    std::function<void(uint64_t address, size_t size)> free;
  };
  struct Options {
    size_t block_size = size_t{1} << 20;  // a multiple of block_alignment
    size_t block_alignment = 4096;        // a power of two
    size_t min_alignment = 256;           // a power of two
  };
  struct Stats {
    size_t blocks = 0;            // blocks held now (the spare included)
    size_t dedicated = 0;         // dedicated allocations live now
    size_t allocations = 0;       // suballocations live now
    uint64_t bytes_in_use = 0;    // rounded sizes of live allocations
    uint64_t backing_allocs = 0;  // calls to Backing::allocate so far
  };

  // INVALID_ARGUMENT for options that break the rules above.
  static StatusOr<std::unique_ptr<AmdgpuBlockPool>> Create(Options options,
                                                           Backing backing);
  // Returns every block and dedicated allocation to the backing store
  // (allocations still live are the caller's leak, freed with the blocks).
  ~AmdgpuBlockPool();

  // `size` > 0. INVALID_ARGUMENT for a bad alignment; the backing store's
  // error when it cannot allocate.
  StatusOr<uint64_t> Allocate(size_t size, size_t alignment);
  // NOT_FOUND when `address` is not a live allocation of this pool.
  Status Free(uint64_t address);
  bool Owns(uint64_t address) const;
  // Returns the spare empty block, if any.
  void Trim();
  Stats stats() const;
  const Options& options() const { return options_; }

 private:
  struct Block {
    uint64_t base = 0;
    std::map<uint64_t, uint64_t> free;  // offset -> size, never adjacent
    uint64_t used = 0;                  // bytes allocated from it
  };
  struct Live {
    Block* block = nullptr;  // null: dedicated
    uint64_t offset = 0;     // within the block
    uint64_t size = 0;       // rounded
  };

  AmdgpuBlockPool(Options options, Backing backing)
      : options_(options), backing_(std::move(backing)) {}
  // First fit in `b`, or false.
  bool TakeFrom(Block* b, uint64_t size, uint64_t alignment, uint64_t* out);
  void Release(Block* b, uint64_t offset, uint64_t size);
  void ReturnBlock(Block* b);

  const Options options_;
  Backing backing_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::unordered_map<uint64_t, Live> live_;  // address -> allocation
  Block* spare_ = nullptr;                   // an empty block kept
  Stats stats_;
};

}  // namespace hal::amdgpu
