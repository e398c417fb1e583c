// BlockPool: fixed-size memory blocks for command-buffer storage.
//
// Command buffers record into blocks of kBlockSize bytes taken from a pool
// and give them back when they die, so a program that records command
// buffers over and over reuses the same memory: no reallocation, no page
// faults in steady state. Each device owns a pool for its command buffers;
// BlockPool::Default() serves command buffers created without a device.
//
// Ownership: a pool is refcounted; every command buffer holds a reference to
// its pool, so a pool outlives the blocks it lent. The pool keeps at most
// `max_cached_bytes` of returned blocks and frees the rest, so it never holds
// more than that beyond what live command buffers use.
//
// Thread safety: AcquireBlock and ReleaseBlock may be called from any thread at
// once.
#pragma once

#include <cstddef>
#include <mutex>

#include "hal/ref.h"

namespace hal {

class BlockPool : public RefCounted {
 public:
  static constexpr size_t kBlockSize = 64 * 1024;
  static constexpr size_t kDefaultMaxCachedBytes = 16 * 1024 * 1024;

  static Ref<BlockPool> Create(
      size_t max_cached_bytes = kDefaultMaxCachedBytes);
  // The process-wide pool (never destroyed).
  static BlockPool* Default();

  // A block of kBlockSize bytes, 16-byte aligned; nullptr when out of memory.
  void* AcquireBlock();
  // Returns a block from AcquireBlock of this pool.
  void ReleaseBlock(void* block);

  // Blocks held for reuse now.
  size_t cached_blocks() const;
  size_t max_cached_blocks() const { return max_cached_blocks_; }

 private:
  explicit BlockPool(size_t max_cached_bytes)
      : max_cached_blocks_(max_cached_bytes / kBlockSize) {}
  ~BlockPool() override;

  struct FreeBlock {
    FreeBlock* next;
  };
  const size_t max_cached_blocks_;
  mutable std::mutex mutex_;
  FreeBlock* free_ = nullptr;  // a list threaded through the cached blocks
  size_t cached_ = 0;
};

}  // namespace hal
