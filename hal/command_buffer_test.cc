// Driver-independent checks of the deferred command buffer's recording
// (the CTS covers execution on every driver).
#include "hal/command_buffer.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "hal/allocator.h"
#include "hal/testing/fake_buffer.h"

namespace hal {
namespace {

Ref<Buffer> NewBuffer(BufferUsage usage = BufferUsage::kDefault,
                      DeviceSize length = 1024) {
  return testutil::NewFakeBuffer(length, usage);
}

Ref<CommandBuffer> NewRecording(BlockPool* pool = nullptr,
                                uint32_t binding_capacity = 0) {
  auto cb =
      CommandBuffer::Create(CommandBufferMode::kReusable, CommandCategory::kAny,
                            1, binding_capacity, pool);
  EXPECT_TRUE(cb.ok());
  EXPECT_TRUE((*cb)->Begin().ok());
  return std::move(cb).value();
}

TEST(CommandBufferRecording, StateMachine) {
  auto cb = CommandBuffer::Create(CommandBufferMode::kOneShot,
                                  CommandCategory::kAny, 1, 2)
                .value();
  EXPECT_EQ(cb->ExecutionBarrier().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cb->Begin().ok());
  EXPECT_EQ(cb->Begin().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cb->BeginDebugGroup("g").ok());
  EXPECT_EQ(cb->End().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cb->EndDebugGroup().ok());
  EXPECT_EQ(cb->EndDebugGroup().code(), StatusCode::kFailedPrecondition);
  uint32_t pattern = 0;
  EXPECT_TRUE(cb->FillBuffer(BufferRef::Slot(1, 0, 16), &pattern, 4).ok());
  EXPECT_EQ(cb->FillBuffer(BufferRef::Slot(2, 0, 16), &pattern, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cb->FillBuffer(BufferRef::Slot(0, 2, 16), &pattern, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(cb->End().ok());
  EXPECT_EQ(cb->ExecutionBarrier().code(), StatusCode::kFailedPrecondition);
  // 1 debug begin + 1 debug end + 1 fill.
  EXPECT_EQ(cb->commands().size(), 3u);
  // Table smaller than the capacity.
  EXPECT_EQ(cb->ValidateSubmission({}).code(), StatusCode::kInvalidArgument);
}

TEST(CommandBufferRecording, CreateValidation) {
  EXPECT_EQ(CommandBuffer::Create(CommandBufferMode::kOneShot,
                                  CommandCategory::kNone, 1, 0)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CommandBuffer::Create(CommandBufferMode::kOneShot,
                                  CommandCategory::kTransfer, 0, 0)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(CommandBufferRecording, UpdateCopiesBytesAtRecordTime) {
  auto cb = CommandBuffer::Create(CommandBufferMode::kReusable,
                                  CommandCategory::kTransfer, 1, 1)
                .value();
  ASSERT_TRUE(cb->Begin().ok());
  std::vector<uint8_t> bytes = {1, 2, 3, 4};
  ASSERT_TRUE(cb->UpdateBuffer(bytes.data(), BufferRef::Slot(0, 0, 4)).ok());
  bytes[0] = 9;
  ASSERT_EQ(cb->commands().size(), 1u);
  const auto* update = std::get_if<cmd::Update>(&cb->commands()[0]);
  ASSERT_NE(update, nullptr);
  ASSERT_EQ(update->data.size(), 4u);
  EXPECT_EQ(update->data[0], 1);
  std::vector<uint8_t> big(kMaxUpdateBytes + 1);
  EXPECT_EQ(
      cb->UpdateBuffer(big.data(), BufferRef::Slot(0, 0, big.size())).code(),
      StatusCode::kInvalidArgument);
}

// The resource set: each object is retained once per command buffer, however
// often it is recorded, and released when the command buffer dies.
TEST(CommandBufferResources, EachBufferRetainedOncePerCommandBuffer) {
  Ref<Buffer> a = NewBuffer(), b = NewBuffer();
  Ref<Buffer> sub = a->Subspan(16, 64).value();
  const uint32_t a_refs = a->ref_count_for_testing();  // + sub's parent ref
  const uint32_t b_refs = b->ref_count_for_testing();
  {
    Ref<CommandBuffer> cb = NewRecording();
    const uint32_t pattern = 0;
    for (int i = 0; i < 3000; ++i) {
      ASSERT_TRUE(cb->FillBuffer(BufferRef::Direct(a.get(), (i % 16) * 4, 4),
                                 &pattern, 4)
                      .ok());
      ASSERT_TRUE(cb->CopyBuffer(BufferRef::Direct(a.get(), 0, 8),
                                 BufferRef::Direct(b.get(), 8, 8), 8)
                      .ok());
      ASSERT_TRUE(
          cb->FillBuffer(BufferRef::Direct(sub.get()), &pattern, 1).ok());
    }
    EXPECT_EQ(a->ref_count_for_testing(), a_refs + 1);
    EXPECT_EQ(b->ref_count_for_testing(), b_refs + 1);
    EXPECT_EQ(sub->ref_count_for_testing(), 2u);
    EXPECT_EQ(cb->retained_count(), 3u);
    // A command buffer keeps what it recorded alive.
    sub.reset();
    ASSERT_TRUE(cb->End().ok());
    const auto* fill = std::get_if<cmd::Fill>(&cb->commands()[2]);
    ASSERT_NE(fill, nullptr);
    EXPECT_EQ(fill->target.buffer->byte_length(), 64u);
    EXPECT_EQ(fill->target.length, 64u);
  }
  EXPECT_EQ(a->ref_count_for_testing(), a_refs - 1);  // sub died with the cb
  EXPECT_EQ(b->ref_count_for_testing(), b_refs);
}

// Objects used in turn are retained exactly once whatever their addresses
// and however many: here 3 that share one cache set (two ways) and 61
// others, more than the cache holds.
TEST(CommandBufferResources, WorkingSetIsRetainedExactlyOnce) {
  std::vector<Ref<Buffer>> pool, buffers;
  std::vector<int> per_set(64, 0);
  for (int i = 0; i < 1000 && buffers.size() < 3; ++i) {
    pool.push_back(NewBuffer());
    size_t set = CommandBuffer::RetainCacheSetForTesting(pool.back().get());
    ASSERT_LT(set, per_set.size());
    if (++per_set[set] == 3) {
      for (const Ref<Buffer>& b : pool) {
        if (CommandBuffer::RetainCacheSetForTesting(b.get()) == set) {
          buffers.push_back(b);
        }
      }
    }
  }
  ASSERT_EQ(buffers.size(), 3u);
  pool.clear();
  for (int i = 0; i < 61; ++i) buffers.push_back(NewBuffer());
  Ref<CommandBuffer> cb = NewRecording();
  const uint32_t pattern = 0;
  for (int round = 0; round < 100; ++round) {
    for (const Ref<Buffer>& b : buffers) {
      ASSERT_TRUE(cb->FillBuffer(BufferRef::Direct(b.get()), &pattern, 4).ok());
    }
  }
  EXPECT_EQ(cb->retained_count(), 64u);
  for (const Ref<Buffer>& b : buffers)
    EXPECT_EQ(b->ref_count_for_testing(), 2u);
  cb.reset();
  for (const Ref<Buffer>& b : buffers)
    EXPECT_EQ(b->ref_count_for_testing(), 1u);
}

TEST(CommandBufferResources, FailedRecordingRetainsNothing) {
  Ref<Buffer> a = NewBuffer(BufferUsage::kTransferSource);
  Ref<CommandBuffer> cb = NewRecording();
  const uint32_t pattern = 0;
  EXPECT_EQ(cb->FillBuffer(BufferRef::Direct(a.get()), &pattern, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(a->ref_count_for_testing(), 1u);
  EXPECT_EQ(cb->retained_count(), 0u);
  EXPECT_TRUE(cb->commands().empty());
}

// Commands live in fixed slots across several blocks: indexing and
// iteration agree, and a command never moves once recorded.
TEST(CommandBufferStorage, CommandsStayPutAcrossBlocks) {
  Ref<Buffer> a = NewBuffer();
  Ref<CommandBuffer> cb = NewRecording();
  const size_t n = 3 * CommandList::kPerBlock + 5;
  const Command* first = nullptr;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t pattern = static_cast<uint32_t>(i);
    ASSERT_TRUE(
        cb->FillBuffer(BufferRef::Direct(a.get(), (i % 64) * 4, 4), &pattern, 4)
            .ok());
    if (i == 0) first = &cb->commands()[0];
  }
  EXPECT_EQ(&cb->commands()[0], first);
  CommandList list = cb->commands();
  ASSERT_EQ(list.size(), n);
  size_t i = 0;
  for (const Command& c : list) {
    ASSERT_EQ(&c, &list[i]);
    const auto* fill = std::get_if<cmd::Fill>(&c);
    ASSERT_NE(fill, nullptr);
    EXPECT_EQ(fill->pattern, static_cast<uint32_t>(i));
    EXPECT_EQ(fill->target.offset, (i % 64) * 4);
    ++i;
  }
  EXPECT_EQ(i, n);
}

// Variable-size data (constants, event lists, labels, payloads up to the
// update limit) is copied and stays valid.
TEST(CommandBufferStorage, PayloadsAndLabelsAreCopies) {
  Ref<Buffer> a = NewBuffer(BufferUsage::kDefault, kMaxUpdateBytes);
  Ref<CommandBuffer> cb = NewRecording();
  std::string label(100000, 'x');
  ASSERT_TRUE(cb->BeginDebugGroup(label).ok());
  std::vector<uint8_t> small(100, 7), big(kMaxUpdateBytes, 9);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(cb->UpdateBuffer(small.data(),
                                 BufferRef::Direct(a.get(), 0, small.size()))
                    .ok());
  }
  ASSERT_TRUE(
      cb->UpdateBuffer(big.data(), BufferRef::Direct(a.get(), 0, big.size()))
          .ok());
  ASSERT_TRUE(cb->EndDebugGroup().ok());
  label.assign(label.size(), 'y');
  small.assign(small.size(), 0);
  big.assign(big.size(), 0);
  CommandList list = cb->commands();
  ASSERT_EQ(list.size(), 1003u);
  EXPECT_EQ(std::get<cmd::BeginDebugGroup>(list[0]).label,
            std::string(100000, 'x'));
  for (size_t i = 1; i <= 1001; ++i) {
    const auto& u = std::get<cmd::Update>(list[i]);
    const size_t expected_size = i <= 1000 ? 100 : kMaxUpdateBytes;
    ASSERT_EQ(u.data.size(), expected_size);
    EXPECT_EQ(u.data.front(), i <= 1000 ? 7 : 9);
    EXPECT_EQ(u.data.back(), i <= 1000 ? 7 : 9);
  }
}

TEST(CommandBufferStorage, BlocksGoBackToTheDevicePool) {
  Ref<BlockPool> pool = BlockPool::Create();
  Ref<Buffer> a = NewBuffer();
  const uint32_t pattern = 0;
  {
    Ref<CommandBuffer> cb = NewRecording(pool.get());
    for (size_t i = 0; i < 2 * CommandList::kPerBlock + 1; ++i) {
      ASSERT_TRUE(cb->FillBuffer(BufferRef::Direct(a.get()), &pattern, 4).ok());
    }
    EXPECT_EQ(pool->cached_blocks(), 0u);
  }
  EXPECT_EQ(pool->cached_blocks(), 3u);
  {
    Ref<CommandBuffer> cb = NewRecording(pool.get());
    ASSERT_TRUE(cb->FillBuffer(BufferRef::Direct(a.get()), &pattern, 4).ok());
    EXPECT_EQ(pool->cached_blocks(), 2u);  // reused, not allocated
  }
  EXPECT_EQ(pool->cached_blocks(), 3u);
}

TEST(CommandBufferStorage, PoolKeepsAtMostItsCap) {
  Ref<BlockPool> pool = BlockPool::Create(2 * BlockPool::kBlockSize);
  EXPECT_EQ(pool->max_cached_blocks(), 2u);
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) {
    blocks.push_back(pool->AcquireBlock());
    ASSERT_NE(blocks.back(), nullptr);
  }
  for (void* b : blocks) pool->ReleaseBlock(b);
  EXPECT_EQ(pool->cached_blocks(), 2u);
}

TEST(CommandBufferStorage, PoolIsThreadSafe) {
  Ref<BlockPool> pool = BlockPool::Create(4 * BlockPool::kBlockSize);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 500; ++i) {
        void* a = pool->AcquireBlock();
        void* b = pool->AcquireBlock();
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        ASSERT_NE(a, b);
        static_cast<uint8_t*>(a)[BlockPool::kBlockSize - 1] =
            static_cast<uint8_t>(t);
        pool->ReleaseBlock(a);
        pool->ReleaseBlock(b);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(pool->cached_blocks(), 4u);
}

// A command buffer holds its pool: it may outlive the device (and the
// device's pool reference).
TEST(CommandBufferStorage, CommandBufferOutlivesItsPoolOwner) {
  Ref<BlockPool> pool = BlockPool::Create();
  Ref<CommandBuffer> cb = NewRecording(pool.get());
  pool.reset();
  Ref<Buffer> a = NewBuffer();
  const uint32_t pattern = 0;
  for (size_t i = 0; i < CommandList::kPerBlock + 1; ++i) {
    ASSERT_TRUE(cb->FillBuffer(BufferRef::Direct(a.get()), &pattern, 4).ok());
  }
  cb.reset();  // gives its blocks back to the pool it kept alive
}

// The inline fast paths accept exactly what the general checks accept, with
// the same resolved range: every combination of usage, state, subspan base,
// offset, length and pattern size over a small buffer.
TEST(CommandBufferValidation, FastPathsAgreeWithTheGeneralChecks) {
  const DeviceSize kLength = 32;
  const DeviceSize kLengths[] = {0, 1,  2,  3,  4,  6,
                                 8, 16, 30, 32, 33, kWholeBuffer};
  const BufferUsage kUsages[] = {
      BufferUsage::kTransfer, BufferUsage::kTransferSource,
      BufferUsage::kTransferTarget, BufferUsage::kDispatchStorage};
  int checked = 0;
  for (BufferUsage usage : kUsages) {
    for (bool dealloca : {false, true}) {
      Ref<Buffer> root = NewBuffer(usage, kLength + 3);
      if (dealloca) {
        ASSERT_TRUE(root->BeginDealloca().ok());
      }
      for (DeviceSize base : {0, 1, 2, 3}) {
        Ref<Buffer> b = root->Subspan(base, kLength).value();
        for (DeviceSize offset = 0; offset <= kLength + 1; ++offset) {
          for (DeviceSize length : kLengths) {
            SCOPED_TRACE(testing::Message()
                         << "usage " << static_cast<uint32_t>(usage)
                         << " dealloca " << dealloca << " base " << base
                         << " offset " << offset << " length " << length);
            for (BufferUsage required :
                 {BufferUsage::kTransferSource, BufferUsage::kTransferTarget}) {
              DeviceSize fast = 0, general = 0;
              bool fast_ok = b->CheckAccess(required, offset, length, &fast);
              bool general_ok =
                  b->ValidateAccess(required, offset, length, &general, "t")
                      .ok();
              ASSERT_EQ(fast_ok, general_ok);
              if (fast_ok) {
                EXPECT_EQ(fast, general);
              }
            }
            // FillBuffer: the fast path must agree with the model built
            // from ValidateAccess and the pattern alignment rule.
            for (size_t pattern_length : {1, 2, 4}) {
              DeviceSize resolved = 0;
              bool expect_ok = b->ValidateAccess(BufferUsage::kTransferTarget,
                                                 offset, length, &resolved, "t")
                                   .ok() &&
                               (base + offset) % pattern_length == 0 &&
                               resolved % pattern_length == 0;
              Ref<CommandBuffer> cb = NewRecording();
              const uint32_t pattern = 0x01020304;
              Status s =
                  cb->FillBuffer(BufferRef::Direct(b.get(), offset, length),
                                 &pattern, pattern_length);
              ASSERT_EQ(s.ok(), expect_ok) << s.ToString();
              if (expect_ok) {
                const auto& f = std::get<cmd::Fill>(cb->commands()[0]);
                EXPECT_EQ(f.target.length, resolved);
                EXPECT_EQ(f.target.offset, offset);
              }
              ++checked;
            }
            // CopyBuffer within one allocation: ranges, usage, overlap.
            if (length != kWholeBuffer) {
              Ref<CommandBuffer> cb = NewRecording();
              Status s =
                  cb->CopyBuffer(BufferRef::Direct(b.get(), offset),
                                 BufferRef::Direct(root.get(), 0), length);
              DeviceSize r1 = 0, r2 = 0;
              bool expect_ok =
                  b->ValidateAccess(BufferUsage::kTransferSource, offset,
                                    kWholeBuffer, &r1, "t")
                      .ok() &&
                  length <= r1 &&
                  root->ValidateAccess(BufferUsage::kTransferTarget, 0,
                                       kWholeBuffer, &r2, "t")
                      .ok() &&
                  length <= r2 && (length == 0 || base + offset >= length);
              ASSERT_EQ(s.ok(), expect_ok) << s.ToString();
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace hal
