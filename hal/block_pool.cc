#include "hal/block_pool.h"

#include <new>

// Cached blocks are poisoned under AddressSanitizer, so a use after the
// command buffer released them is still reported although the memory stays
// allocated.
#if defined(__SANITIZE_ADDRESS__)
#define HAL_BLOCK_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAL_BLOCK_POOL_ASAN 1
#endif
#endif
#ifdef HAL_BLOCK_POOL_ASAN
#include <sanitizer/asan_interface.h>
#define HAL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define HAL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define HAL_POISON(p, n) ((void)(p), (void)(n))
#define HAL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace hal {

Ref<BlockPool> BlockPool::Create(size_t max_cached_bytes) {
  return Ref<BlockPool>::Adopt(new BlockPool(max_cached_bytes));
}

BlockPool* BlockPool::Default() {
  // Leaked on purpose: command buffers may die during static destruction.
  static BlockPool* pool = new BlockPool(kDefaultMaxCachedBytes);
  return pool;
}

BlockPool::~BlockPool() {
  while (free_) {
    FreeBlock* b = free_;
    HAL_UNPOISON(b, kBlockSize);
    free_ = b->next;
    ::operator delete(b);
  }
}

void* BlockPool::AcquireBlock() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (FreeBlock* b = free_) {
      HAL_UNPOISON(b, kBlockSize);
      free_ = b->next;
      --cached_;
      return b;
    }
  }
  return ::operator new(kBlockSize, std::nothrow);
}

void BlockPool::ReleaseBlock(void* block) {
  if (!block) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ < max_cached_blocks_) {
      auto* b = static_cast<FreeBlock*>(block);
      b->next = free_;
      free_ = b;
      ++cached_;
      HAL_POISON(b + 1, kBlockSize - sizeof(FreeBlock));
      return;
    }
  }
  ::operator delete(block);
}

size_t BlockPool::cached_blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

}  // namespace hal
