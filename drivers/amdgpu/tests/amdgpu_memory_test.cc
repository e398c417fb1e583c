// The AMDGPU driver's memory machinery without HSA: the block-pool
// suballocator over a fake backing store, and the absolute-index ring.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "drivers/amdgpu/amdgpu_block_pool.h"
#include "drivers/amdgpu/amdgpu_ring.h"
#include "sim/core/sim_random.h"

namespace hal::amdgpu {
namespace {

// A backing store of at most `capacity` bytes at granule-aligned addresses,
// which records what is live.
struct FakeBacking {
  explicit FakeBacking(uint64_t bytes = 0) : capacity(bytes) {}
  uint64_t capacity;
  uint64_t next = uint64_t{1} << 32;
  uint64_t in_use = 0;
  uint64_t frees = 0;
  std::map<uint64_t, size_t> live;

  AmdgpuBlockPool::Backing Make() {
    AmdgpuBlockPool::Backing b;
    b.allocate = [this](size_t size) -> StatusOr<uint64_t> {
      if (in_use + size > capacity) {
        return ResourceExhaustedError("fake backing: %zu bytes", size);
      }
      const uint64_t address = next;
      next += size + 4096;  // a gap, so neighbours never look contiguous
      in_use += size;
      live[address] = size;
      return address;
    };
    b.free = [this](uint64_t address, size_t size) {
      EXPECT_EQ(live.count(address), 1u) << address;
      EXPECT_EQ(live[address], size);
      live.erase(address);
      in_use -= size;
      ++frees;
    };
    return b;
  }
};

std::unique_ptr<AmdgpuBlockPool> MakePool(FakeBacking* backing,
                                          size_t block_size = 64 * 1024) {
  AmdgpuBlockPool::Options options;
  options.block_size = block_size;
  options.block_alignment = 4096;
  options.min_alignment = 256;
  auto pool = AmdgpuBlockPool::Create(options, backing->Make());
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return pool.ok() ? std::move(*pool) : nullptr;
}

TEST(AmdgpuBlockPool, BadOptionsAreInvalid) {
  FakeBacking backing;
  AmdgpuBlockPool::Options options;
  options.block_alignment = 3000;
  EXPECT_EQ(AmdgpuBlockPool::Create(options, backing.Make()).status().code(),
            StatusCode::kInvalidArgument);
  options = {};
  options.block_size = 4096 * 3 + 1;
  EXPECT_EQ(AmdgpuBlockPool::Create(options, backing.Make()).status().code(),
            StatusCode::kInvalidArgument);
  options = {};
  EXPECT_EQ(AmdgpuBlockPool::Create(options, {}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(AmdgpuBlockPool, AlignmentAndRounding) {
  FakeBacking backing{1 << 20};
  auto pool = MakePool(&backing);
  ASSERT_TRUE(pool);
  auto a = pool->Allocate(1, 1);  // rounds to 256 bytes, 256-aligned
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a % 256, 0u);
  auto b = pool->Allocate(300, 4096);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b % 4096, 0u);
  EXPECT_NE(*a, *b);
  auto c = pool->Allocate(10, 1024);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c % 1024, 0u);
  // The hole the 4096 alignment left before b is used by c (first fit).
  EXPECT_LT(*c, *b);
  EXPECT_EQ(pool->stats().bytes_in_use, 256u + 512u + 256u);
  EXPECT_EQ(pool->stats().backing_allocs, 1u);
  EXPECT_EQ(pool->Allocate(16, 3).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(pool->Allocate(16, 8192).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(pool->Allocate(0, 256).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(pool->Free(*a + 256).code(), StatusCode::kNotFound);
  EXPECT_TRUE(pool->Free(*a).ok());
  EXPECT_EQ(pool->Free(*a).code(), StatusCode::kNotFound);  // twice
  EXPECT_TRUE(pool->Free(*b).ok());
  EXPECT_TRUE(pool->Free(*c).ok());
  EXPECT_EQ(pool->stats().bytes_in_use, 0u);
}

TEST(AmdgpuBlockPool, ExhaustionIsResourceExhaustedAndLeavesThePool) {
  FakeBacking backing{2 * 64 * 1024};  // two blocks
  auto pool = MakePool(&backing);
  ASSERT_TRUE(pool);
  std::vector<uint64_t> live;
  for (int i = 0; i < 4; ++i) {
    auto p = pool->Allocate(32 * 1024, 256);
    ASSERT_TRUE(p.ok()) << i << ": " << p.status().ToString();
    live.push_back(*p);
  }
  auto full = pool->Allocate(256, 256);
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  auto large = pool->Allocate(1 << 20, 256);  // dedicated
  EXPECT_EQ(large.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(pool->stats().allocations, 4u);
  EXPECT_EQ(pool->stats().blocks, 2u);
  ASSERT_TRUE(pool->Free(live[1]).ok());
  auto again = pool->Allocate(32 * 1024, 256);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, live[1]);
}

TEST(AmdgpuBlockPool, FragmentationAndCoalescing) {
  FakeBacking backing{1 << 20};
  auto pool = MakePool(&backing);  // 64 KiB blocks
  ASSERT_TRUE(pool);
  std::vector<uint64_t> p;
  for (int i = 0; i < 16; ++i) {
    auto r = pool->Allocate(4096, 256);
    ASSERT_TRUE(r.ok());
    p.push_back(*r);
  }
  EXPECT_EQ(pool->stats().blocks, 1u);
  // Every other one freed: 32 KiB free, but no hole of 8 KiB.
  for (int i = 0; i < 16; i += 2) ASSERT_TRUE(pool->Free(p[i]).ok());
  auto big = pool->Allocate(8192, 256);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(pool->stats().blocks, 2u) << "fragmented: a new block";
  // The rest freed: the holes merge into one range the size of the block.
  for (int i = 1; i < 16; i += 2) ASSERT_TRUE(pool->Free(p[i]).ok());
  const uint64_t allocs = pool->stats().backing_allocs;
  auto whole = pool->Allocate(64 * 1024, 256);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, p[0]) << "coalesced back into the whole first block";
  EXPECT_EQ(pool->stats().backing_allocs, allocs);
  ASSERT_TRUE(pool->Free(*whole).ok());
  ASSERT_TRUE(pool->Free(*big).ok());
}

TEST(AmdgpuBlockPool, EmptyBlocksGoBackKeepingOneSpare) {
  FakeBacking backing{1 << 20};
  auto pool = MakePool(&backing);
  ASSERT_TRUE(pool);
  std::vector<uint64_t> p;
  for (int i = 0; i < 3; ++i) {
    auto r = pool->Allocate(64 * 1024, 256);  // one block each
    ASSERT_TRUE(r.ok());
    p.push_back(*r);
  }
  EXPECT_EQ(backing.live.size(), 3u);
  for (uint64_t a : p) ASSERT_TRUE(pool->Free(a).ok());
  EXPECT_EQ(pool->stats().blocks, 1u);
  EXPECT_EQ(backing.live.size(), 1u);
  EXPECT_EQ(backing.frees, 2u);
  // Allocating and freeing again reuses the spare: no backing call.
  const uint64_t allocs = pool->stats().backing_allocs;
  for (int i = 0; i < 10; ++i) {
    auto r = pool->Allocate(4096, 256);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(pool->Free(*r).ok());
  }
  EXPECT_EQ(pool->stats().backing_allocs, allocs);
  pool->Trim();
  EXPECT_EQ(pool->stats().blocks, 0u);
  EXPECT_TRUE(backing.live.empty());
}

TEST(AmdgpuBlockPool, LargeAllocationsAreDedicated) {
  FakeBacking backing{1 << 22};
  auto pool = MakePool(&backing);
  ASSERT_TRUE(pool);
  auto r = pool->Allocate(64 * 1024 + 1, 256);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(pool->stats().dedicated, 1u);
  EXPECT_EQ(pool->stats().blocks, 0u);
  EXPECT_EQ(backing.live.at(*r), 64 * 1024 + 4096u);  // rounded to granule
  EXPECT_TRUE(pool->Owns(*r));
  ASSERT_TRUE(pool->Free(*r).ok());
  EXPECT_TRUE(backing.live.empty());
}

TEST(AmdgpuBlockPool, DestructionReturnsEverything) {
  FakeBacking backing{1 << 22};
  {
    auto pool = MakePool(&backing);
    ASSERT_TRUE(pool);
    ASSERT_TRUE(pool->Allocate(100, 256).ok());
    ASSERT_TRUE(pool->Allocate(1 << 20, 256).ok());
  }
  EXPECT_TRUE(backing.live.empty());
}

// Seeded random allocations and frees: live allocations never overlap, are
// aligned, and stay inside the backing store's ranges.
TEST(AmdgpuBlockPool, RandomizedNeverOverlaps) {
  const uint64_t seed = 20261125;
  sim::SimRandom random(seed);
  FakeBacking backing{8 << 20};
  auto pool = MakePool(&backing);
  ASSERT_TRUE(pool);
  std::map<uint64_t, uint64_t> live;  // address -> requested size
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || random.Below(3) != 0) {
      const size_t size =
          1 + random.Below(random.Below(8) == 0 ? 100000 : 9000);
      const size_t alignment = size_t{1} << random.Below(13);
      auto r = pool->Allocate(size, alignment);
      if (!r.ok()) {
        ASSERT_EQ(r.status().code(), StatusCode::kResourceExhausted)
            << "seed " << seed << ", step " << step;
        continue;
      }
      ASSERT_EQ(*r % alignment, 0u) << "seed " << seed << ", step " << step;
      auto next = live.lower_bound(*r);
      if (next != live.end()) {
        ASSERT_LE(*r + size, next->first)
            << "seed " << seed << ", step " << step;
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, *r)
            << "seed " << seed << ", step " << step;
      }
      auto in = backing.live.upper_bound(*r);
      ASSERT_NE(in, backing.live.begin()) << "seed " << seed;
      --in;
      ASSERT_LE(*r + size, in->first + in->second)
          << "seed " << seed << ", step " << step;
      live[*r] = size;
    } else {
      auto it = live.begin();
      std::advance(it, random.Below(live.size()));
      ASSERT_TRUE(pool->Free(it->first).ok()) << "seed " << seed;
      live.erase(it);
    }
  }
  for (auto& [a, size] : live) ASSERT_TRUE(pool->Free(a).ok());
  pool->Trim();
  EXPECT_TRUE(backing.live.empty()) << "seed " << seed;
}

TEST(AmdgpuRing, WrapsWithAbsoluteIndices) {
  AmdgpuRing ring(1024);
  auto a = ring.Reserve(400, 16, 1);
  auto b = ring.Reserve(400, 16, 2);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 400u);
  EXPECT_FALSE(ring.Reserve(400, 16, 3)) << "full until packet 1 completed";
  ring.Retire(1);
  auto c = ring.Reserve(400, 16, 3);
  ASSERT_TRUE(c);
  // 800 + 400 would straddle the end: the next lap, at offset 0.
  EXPECT_EQ(*c, 1024u);
  EXPECT_EQ(ring.Offset(*c), 0u);
  // Many laps: positions only grow, every reservation is contiguous.
  uint64_t last = *c, tag = 3;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t size = 1 + (i * 37) % 500;
    auto p = ring.Reserve(size, 16, ++tag);
    if (!p) {
      ring.Retire(tag - 1);
      p = ring.Reserve(size, 16, tag);
    }
    ASSERT_TRUE(p) << i;
    ASSERT_GT(*p, last);
    ASSERT_EQ(*p % 16, 0u);
    ASSERT_LE(ring.Offset(*p) + size, ring.capacity());
    last = *p;
  }
  EXPECT_GT(last, uint64_t{1000} * ring.capacity());
}

TEST(AmdgpuRing, SpaceIsReusedOnlyAfterItsPacketCompleted) {
  AmdgpuRing ring(4096);
  ASSERT_TRUE(ring.Reserve(4096, 16, 5));
  EXPECT_FALSE(ring.Reserve(16, 16, 6));
  EXPECT_EQ(ring.OldestTag(), 5u);
  ring.Retire(4);  // packets 0..3 completed: not the one that used it
  EXPECT_FALSE(ring.Reserve(16, 16, 6));
  ring.Retire(5);
  EXPECT_TRUE(ring.empty());
  EXPECT_TRUE(ring.Reserve(16, 16, 6));
  EXPECT_FALSE(ring.Reserve(4097, 16, 7)) << "larger than the ring";
  // A reservation whose packet was never written is undone.
  const uint64_t head = ring.head();
  ASSERT_TRUE(ring.Reserve(100, 16, 7));
  ring.CancelNewest();
  EXPECT_EQ(ring.head(), head);
}

}  // namespace
}  // namespace hal::amdgpu
