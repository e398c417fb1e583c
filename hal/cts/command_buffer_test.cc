// CTS: command buffers: recording, validation, binding tables, execution.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hal/cts/cts.h"

namespace hal::cts {
namespace {

using HalBuffer = ::hal::Buffer;
using HalCommandBuffer = ::hal::CommandBuffer;

using Mode = CommandBufferMode;
using Category = CommandCategory;

class CommandBuffer : public CtsTest {
 protected:
  StatusOr<Ref<HalCommandBuffer>> Create(
      Mode mode, Category categories = Category::kTransfer,
      uint32_t binding_capacity = 0) {
    return device()->CreateCommandBuffer(mode, categories, 1, binding_capacity);
  }
  // Submits on queue 0 and waits for completion.
  Status SubmitAndWait(HalCommandBuffer* cb, BindingTable table = {}) {
    auto s = NewSemaphore(0);
    HAL_RETURN_IF_ERROR(
        device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb, table));
    return WaitFor(s.get(), 1);
  }
};

TEST_F(CommandBuffer, CreateValidatesArguments) {
  CTS_EXPECT_CODE(kInvalidArgument, device()->CreateCommandBuffer(
                                        Mode::kOneShot, Category::kNone, 1, 0));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->CreateCommandBuffer(Mode::kOneShot, Category::kTransfer, 0, 0));
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalCommandBuffer> cb,
      device()->CreateCommandBuffer(Mode::kReusable, Category::kAny,
                                    kQueueAffinityAny, 3));
  EXPECT_EQ(cb->mode(), Mode::kReusable);
  EXPECT_EQ(cb->categories(), Category::kAny);
  EXPECT_EQ(cb->binding_capacity(), 3u);
  EXPECT_NE(cb->queue_affinity() & 1, 0u);
  EXPECT_EQ(cb->queue_affinity() & ~device()->queue_mask(), 0u);
}

TEST_F(CommandBuffer, OneShotSubmittedTwiceIsFailedPrecondition) {
  auto buffer = NewHostBuffer(16, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  const uint8_t p = 0x61;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(buffer.get()), &p, 1));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get()));
  CTS_EXPECT_CODE(
      kFailedPrecondition,
      device()->QueueExecute(1, {}, Points{{s.get(), 2}}, cb.get()));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(Payload(s.get()), 1u) << "the refused submission signalled";
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(16, 0x61));
}

TEST_F(CommandBuffer, ReusableWithDifferentBindingTables) {
  auto b1 = NewHostBuffer(32, 0xEE);
  auto b2 = NewDeviceBuffer(32);
  auto b3 = NewHostBuffer(96, 0xEE);
  ASSERT_TRUE(b1 && b2 && b3);
  const uint8_t sentinel = 0xEE;
  {
    auto s = NewSemaphore(0);
    ASSERT_TRUE(s);
    CTS_ASSERT_OK(device()->QueueFill(1, {}, Points{{s.get(), 1}}, b2.get(), 0,
                                      32, &sentinel, 1));
    CTS_ASSERT_OK(WaitFor(s.get(), 1));
  }
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kReusable, Category::kTransfer, 1));
  const uint32_t pattern = 0x44434241;
  const Bytes update{1, 2, 3, 4, 5, 6, 7, 8};
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Slot(0, 0, 16), &pattern, 4));
  CTS_ASSERT_OK(cb->UpdateBuffer(update.data(), BufferRef::Slot(0, 16, 8)));
  CTS_ASSERT_OK(cb->End());

  Bytes want(32, 0xEE);
  for (int i = 0; i < 16; i += 4) std::memcpy(&want[i], &pattern, 4);
  std::copy(update.begin(), update.end(), want.begin() + 16);

  const Binding t1[] = {{b1.get(), 0, kWholeBuffer}};
  CTS_ASSERT_OK(SubmitAndWait(cb.get(), t1));
  EXPECT_EQ(Diff(ReadBack(b1.get()), want), "");
  EXPECT_EQ(Diff(ReadBack(b2.get()), Bytes(32, 0xEE)), "")
      << "second buffer written early";

  const Binding t2[] = {{b2.get(), 0, kWholeBuffer}};
  CTS_ASSERT_OK(SubmitAndWait(cb.get(), t2));
  EXPECT_EQ(Diff(ReadBack(b2.get()), want), "");

  // A table entry's range offsets the slot.
  const Binding t3[] = {{b3.get(), 32, 32}};
  CTS_ASSERT_OK(SubmitAndWait(cb.get(), t3));
  Bytes want3(96, 0xEE);
  std::copy(want.begin(), want.end(), want3.begin() + 32);
  EXPECT_EQ(Diff(ReadBack(b3.get()), want3), "");
}

TEST_F(CommandBuffer, FillUpdateCopyWithBarriers) {
  auto dev = NewDeviceBuffer(64);
  auto host = NewHostBuffer(64, 0xEE);
  ASSERT_TRUE(dev && host);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  const uint8_t first = 0x11, second = 0x22;
  Bytes update(16);
  for (size_t i = 0; i < 16; ++i) update[i] = static_cast<uint8_t>(0x30 + i);
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->BeginDebugGroup("stage 1"));
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(dev.get(), 0, 32), &first, 1));
  CTS_ASSERT_OK(
      cb->UpdateBuffer(update.data(), BufferRef::Direct(dev.get(), 32, 16)));
  CTS_ASSERT_OK(cb->EndDebugGroup());
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->CopyBuffer(BufferRef::Direct(dev.get(), 0, 48),
                               BufferRef::Direct(host.get(), 0, 48), 48));
  CTS_ASSERT_OK(
      cb->ExecutionBarrier());  // the copy reads before the fill writes
  CTS_ASSERT_OK(
      cb->FillBuffer(BufferRef::Direct(dev.get(), 0, 16), &second, 1));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->CopyBuffer(BufferRef::Direct(dev.get(), 0, 16),
                               BufferRef::Direct(host.get(), 48, 16), 16));
  CTS_ASSERT_OK(cb->End());
  // The update's bytes were captured at record time.
  std::fill(update.begin(), update.end(), 0);
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  Bytes want(64, first);
  for (size_t i = 0; i < 16; ++i) want[32 + i] = static_cast<uint8_t>(0x30 + i);
  std::fill(want.begin() + 48, want.end(), second);
  EXPECT_EQ(Diff(ReadBack(host.get()), want), "");
}

// A fill whose device address is not aligned to its pattern may run as
// several pieces (CUDA and HIP memsets are per element size); a barrier
// after it orders every piece before what follows. Host memory imported at
// an odd address gives such a fill; the simulators' race checks see a
// piece the barrier missed even when the order happens to be right.
TEST_F(CommandBuffer, BarrierOrdersEveryPieceOfAnUnalignedFill) {
  CTS_REQUIRE_TAG(kTagImport);
  // One page per import: CUDA registers whole pages, and a page still
  // registered by the last import would refuse the next.
  constexpr size_t kPage = 65536;  // a multiple of every host page size
  std::vector<uint8_t> memory(4 * kPage, 0xEE);
  uint8_t* pages = memory.data();
  pages += (kPage - reinterpret_cast<uintptr_t>(pages) % kPage) % kPage;
  for (size_t skew : {size_t{1}, size_t{2}, size_t{3}}) {
    uint8_t* base = pages + (skew - 1) * kPage;
    auto imported =
        allocator()->ImportHostAllocation(HostParams(), base + skew, 32, {});
    if (imported.status().code() == StatusCode::kInvalidArgument) {
      GTEST_SKIP() << "the driver imports only aligned host memory: "
                   << imported.status().ToString();
    }
    CTS_ASSERT_OK(imported.status());
    Ref<HalBuffer> buffer = std::move(imported).value();
    auto host = NewHostBuffer(32, 0xEE);
    ASSERT_TRUE(host);
    const uint8_t pattern[4] = {0x11, 0x22, 0x33, 0x44};
    const uint8_t later = 0x55;
    CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
    CTS_ASSERT_OK(cb->Begin());
    CTS_ASSERT_OK(
        cb->FillBuffer(BufferRef::Direct(buffer.get(), 0, 24), pattern, 4));
    CTS_ASSERT_OK(cb->ExecutionBarrier());
    CTS_ASSERT_OK(cb->CopyBuffer(BufferRef::Direct(buffer.get(), 0, 24),
                                 BufferRef::Direct(host.get(), 0, 24), 24));
    CTS_ASSERT_OK(cb->ExecutionBarrier());
    CTS_ASSERT_OK(
        cb->FillBuffer(BufferRef::Direct(buffer.get(), 0, 24), &later, 1));
    CTS_ASSERT_OK(cb->End());
    CTS_ASSERT_OK(SubmitAndWait(cb.get()));
    Bytes want(32, 0xEE);
    for (size_t i = 0; i < 24; ++i) want[i] = pattern[i % 4];
    EXPECT_EQ(Diff(ReadBack(host.get()), want), "") << "skew " << skew;
    Bytes final_bytes(base + skew, base + skew + 32);
    Bytes want_final(32, 0xEE);
    std::fill(want_final.begin(), want_final.begin() + 24, later);
    EXPECT_EQ(Diff(final_bytes, want_final), "") << "skew " << skew;
  }
}

TEST_F(CommandBuffer, ManyOneShotSubmits) {
  constexpr uint64_t kCount = 200;
  auto buffer = NewHostBuffer(kCount * 4, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  for (uint64_t i = 0; i < kCount; ++i) {
    CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
    const uint32_t pattern =
        static_cast<uint32_t>(i * 0x01010101u + 0x00010203u);
    CTS_ASSERT_OK(cb->Begin());
    CTS_ASSERT_OK(
        cb->FillBuffer(BufferRef::Direct(buffer.get(), i * 4, 4), &pattern, 4));
    CTS_ASSERT_OK(cb->End());
    // Each submission signals the next value, ordered after the previous one.
    CTS_ASSERT_OK(device()->QueueExecute(1, Points{{s.get(), i}},
                                         Points{{s.get(), i + 1}}, cb.get()));
  }
  CTS_ASSERT_OK(WaitFor(s.get(), kCount));
  EXPECT_EQ(Payload(s.get()), kCount);
  Bytes got = ReadBack(buffer.get());
  ASSERT_EQ(got.size(), kCount * 4);
  for (uint64_t i = 0; i < kCount; ++i) {
    uint32_t v;
    std::memcpy(&v, &got[i * 4], 4);
    EXPECT_EQ(v, static_cast<uint32_t>(i * 0x01010101u + 0x00010203u)) << i;
  }
}

TEST_F(CommandBuffer, ThousandsOfCommandsExecutedTwice) {
  constexpr uint32_t kCommands = 4000;
  auto buffer = NewHostBuffer(kCommands * 4, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kReusable));
  CTS_ASSERT_OK(cb->Begin());
  for (uint32_t i = 0; i < kCommands; ++i) {
    const uint32_t pattern = i * 2654435761u;
    CTS_ASSERT_OK(cb->FillBuffer(
        BufferRef::Direct(buffer.get(), uint64_t{i} * 4, 4), &pattern, 4));
  }
  CTS_ASSERT_OK(cb->End());
  Bytes want(kCommands * 4);
  for (uint32_t i = 0; i < kCommands; ++i) {
    const uint32_t pattern = i * 2654435761u;
    std::memcpy(&want[i * 4], &pattern, 4);
  }
  CTS_ASSERT_OK(device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get()));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(Diff(ReadBack(buffer.get()), want), "");
  CTS_ASSERT_OK(buffer->MapZero(0, kWholeBuffer));
  CTS_ASSERT_OK(device()->QueueExecute(1, Points{{s.get(), 1}},
                                       Points{{s.get(), 2}}, cb.get()));
  CTS_ASSERT_OK(WaitFor(s.get(), 2));
  EXPECT_EQ(Diff(ReadBack(buffer.get()), want), "");
}

TEST_F(CommandBuffer, RecordingOutsideBeginEndIsFailedPrecondition) {
  auto buffer = NewHostBuffer(16);
  ASSERT_TRUE(buffer);
  auto event = device()->CreateEvent();
  ASSERT_TRUE(event.ok());
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  const uint8_t p = 1;
  Bytes data(4, 1);
  auto check_refused = [&] {
    CTS_EXPECT_CODE(kFailedPrecondition,
                    cb->FillBuffer(BufferRef::Direct(buffer.get()), &p, 1));
    CTS_EXPECT_CODE(
        kFailedPrecondition,
        cb->UpdateBuffer(data.data(), BufferRef::Direct(buffer.get(), 0, 4)));
    CTS_EXPECT_CODE(kFailedPrecondition,
                    cb->CopyBuffer(BufferRef::Direct(buffer.get(), 0, 4),
                                   BufferRef::Direct(buffer.get(), 8, 4), 4));
    CTS_EXPECT_CODE(kFailedPrecondition, cb->ExecutionBarrier());
    CTS_EXPECT_CODE(kFailedPrecondition, cb->SignalEvent(event->get()));
    CTS_EXPECT_CODE(kFailedPrecondition, cb->BeginDebugGroup("x"));
    CTS_EXPECT_CODE(kFailedPrecondition, cb->End());
  };
  // Before Begin.
  check_refused();
  EXPECT_FALSE(cb->is_recording());
  CTS_ASSERT_OK(cb->Begin());
  EXPECT_TRUE(cb->is_recording());
  CTS_EXPECT_CODE(kFailedPrecondition, cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(buffer.get()), &p, 1));
  CTS_ASSERT_OK(cb->End());
  EXPECT_TRUE(cb->is_executable());
  // After End.
  check_refused();
  CTS_EXPECT_CODE(kFailedPrecondition, cb->Begin());
  EXPECT_EQ(cb->commands().size(), 1u);
}

TEST_F(CommandBuffer, DebugGroupsMustBalance) {
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  CTS_ASSERT_OK(cb->Begin());
  CTS_EXPECT_CODE(kFailedPrecondition, cb->EndDebugGroup());
  CTS_ASSERT_OK(cb->BeginDebugGroup("outer"));
  CTS_ASSERT_OK(cb->BeginDebugGroup("inner"));
  CTS_ASSERT_OK(cb->EndDebugGroup());
  CTS_EXPECT_CODE(kFailedPrecondition, cb->End());
  EXPECT_TRUE(cb->is_recording());
  CTS_ASSERT_OK(cb->EndDebugGroup());
  CTS_EXPECT_CODE(kFailedPrecondition, cb->EndDebugGroup());
  CTS_ASSERT_OK(cb->End());
  // Debug groups alone execute fine.
  CTS_EXPECT_OK(SubmitAndWait(cb.get()));
}

TEST_F(CommandBuffer, FillValidation) {
  auto buffer = NewHostBuffer(64);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  CTS_ASSERT_OK(cb->Begin());
  const uint8_t pattern[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  // Misaligned offset or length.
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 2, 8), pattern, 4));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 0, 6), pattern, 4));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 1, 2), pattern, 2));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 62, kWholeBuffer), pattern,
                     4));
  // Bad pattern length.
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 0, 12), pattern, 3));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 0, 16), pattern, 8));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 0, 16), nullptr, 4));
  // Out of bounds.
  CTS_EXPECT_CODE(
      kOutOfRange,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 0, 68), pattern, 4));
  CTS_EXPECT_CODE(
      kOutOfRange,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 68, 4), pattern, 4));
  CTS_EXPECT_CODE(
      kOutOfRange,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 60, 8), pattern, 4));
  EXPECT_TRUE(cb->commands().empty()) << "a refused command was recorded";
  CTS_ASSERT_OK(cb->End());
}

TEST_F(CommandBuffer, UpdateValidation) {
  auto buffer = NewHostBuffer(2 * kMaxUpdateBytes);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  CTS_ASSERT_OK(cb->Begin());
  Bytes data(kMaxUpdateBytes + 1, 0x5D);
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->UpdateBuffer(data.data(), BufferRef::Direct(buffer.get(), 0,
                                                      kMaxUpdateBytes + 1)));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->UpdateBuffer(data.data(), BufferRef::Direct(buffer.get(), 0)));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->UpdateBuffer(nullptr, BufferRef::Direct(buffer.get(), 0, 4)));
  CTS_EXPECT_CODE(
      kOutOfRange,
      cb->UpdateBuffer(
          data.data(),
          BufferRef::Direct(buffer.get(), 2 * kMaxUpdateBytes - 4, 8)));
  // Exactly the limit is fine.
  CTS_ASSERT_OK(cb->UpdateBuffer(
      data.data(), BufferRef::Direct(buffer.get(), 8, kMaxUpdateBytes)));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  Bytes got = ReadBack(buffer.get(), 0, kMaxUpdateBytes + 16);
  Bytes want(kMaxUpdateBytes + 16, 0);
  std::fill(want.begin() + 8, want.begin() + 8 + kMaxUpdateBytes, 0x5D);
  EXPECT_EQ(Diff(got, want), "");
}

TEST_F(CommandBuffer, CopyValidation) {
  auto a = NewHostBuffer(64);
  auto b = NewHostBuffer(32);
  ASSERT_TRUE(a && b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  CTS_ASSERT_OK(cb->Begin());
  CTS_EXPECT_CODE(kInvalidArgument,
                  cb->CopyBuffer(BufferRef::Direct(a.get(), 0),
                                 BufferRef::Direct(a.get(), 8), 16));
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> s1, a->Subspan(0, 32));
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> s2, a->Subspan(16, 32));
  CTS_EXPECT_CODE(kInvalidArgument,
                  cb->CopyBuffer(BufferRef::Direct(s1.get(), 8),
                                 BufferRef::Direct(s2.get(), 0), 16));
  CTS_EXPECT_CODE(kOutOfRange,
                  cb->CopyBuffer(BufferRef::Direct(a.get(), 0),
                                 BufferRef::Direct(b.get(), 0), 33));
  CTS_EXPECT_CODE(kOutOfRange,
                  cb->CopyBuffer(BufferRef::Direct(a.get(), 60),
                                 BufferRef::Direct(b.get(), 0), 8));
  CTS_EXPECT_CODE(kInvalidArgument,
                  cb->CopyBuffer(BufferRef::Direct(a.get(), 0),
                                 BufferRef::Direct(b.get(), 0), kWholeBuffer));
  // Same allocation, disjoint ranges: fine.
  CTS_EXPECT_OK(cb->CopyBuffer(BufferRef::Direct(a.get(), 0),
                               BufferRef::Direct(a.get(), 32), 32));
  CTS_ASSERT_OK(cb->End());
}

TEST_F(CommandBuffer, SlotBeyondCapacityIsInvalidArgument) {
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kReusable, Category::kTransfer, 2));
  CTS_ASSERT_OK(cb->Begin());
  const uint32_t p = 0;
  Bytes data(4);
  CTS_EXPECT_CODE(kInvalidArgument, cb->FillBuffer(BufferRef::Slot(2), &p, 4));
  CTS_EXPECT_CODE(kInvalidArgument,
                  cb->UpdateBuffer(data.data(), BufferRef::Slot(7, 0, 4)));
  CTS_EXPECT_CODE(kInvalidArgument,
                  cb->CopyBuffer(BufferRef::Slot(0), BufferRef::Slot(2), 4));
  CTS_EXPECT_OK(cb->FillBuffer(BufferRef::Slot(1), &p, 4));
  CTS_ASSERT_OK(cb->End());

  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> no_slots,
                           Create(Mode::kOneShot));
  CTS_ASSERT_OK(no_slots->Begin());
  CTS_EXPECT_CODE(kInvalidArgument,
                  no_slots->FillBuffer(BufferRef::Slot(0), &p, 4));
  CTS_ASSERT_OK(no_slots->End());
}

TEST_F(CommandBuffer, BindingTableTooSmallAtSubmit) {
  auto buffer = NewHostBuffer(32, 0x12);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kOneShot, Category::kTransfer, 2));
  const uint8_t p = 0x34;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Slot(0), &p, 1));
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Slot(1), &p, 1));
  CTS_ASSERT_OK(cb->End());
  const Binding one[] = {{buffer.get(), 0, kWholeBuffer}};
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), one));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), {}));
  // An empty entry in a table of the right size.
  const Binding hole[] = {{buffer.get(), 0, kWholeBuffer},
                          {nullptr, 0, kWholeBuffer}};
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), hole));
  EXPECT_EQ(Payload(s.get()), 0u);
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(32, 0x12));
  // The refusals did not consume the one-shot submission.
  const Binding two[] = {{buffer.get(), 0, 16}, {buffer.get(), 16, 16}};
  CTS_ASSERT_OK(
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), two));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(32, 0x34));
}

TEST_F(CommandBuffer, SlotRangeOutOfBoundsAtSubmit) {
  auto small = NewHostBuffer(32, 0x12);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(small && s);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kReusable, Category::kTransfer, 1));
  const uint8_t p = 0x34;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Slot(0, 0, 64), &p, 1));
  CTS_ASSERT_OK(cb->End());
  const Binding too_small[] = {{small.get(), 0, kWholeBuffer}};
  CTS_EXPECT_CODE(
      kOutOfRange,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), too_small));
  // The entry itself lies outside its buffer.
  const Binding bad_entry[] = {{small.get(), 16, 32}};
  CTS_EXPECT_CODE(
      kOutOfRange,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), bad_entry));
  EXPECT_EQ(Payload(s.get()), 0u);
  EXPECT_EQ(ReadBack(small.get()), Bytes(32, 0x12));
}

TEST_F(CommandBuffer, SlotChecksAtSubmit) {
  auto buffer = NewHostBuffer(64, 0x12);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kReusable, Category::kTransfer, 2));
  const uint32_t p = 0;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Slot(0), &p, 4));
  CTS_ASSERT_OK(
      cb->CopyBuffer(BufferRef::Slot(0, 0, 16), BufferRef::Slot(1, 0, 16), 16));
  CTS_ASSERT_OK(cb->End());
  // Slot 0 resolves to a range that is not a multiple of the pattern.
  const Binding misaligned[] = {{buffer.get(), 2, 20}, {buffer.get(), 32, 16}};
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueExecute(1, {}, {}, cb.get(), misaligned));
  // Slots 0 and 1 resolve to overlapping ranges of one buffer.
  const Binding overlapping[] = {{buffer.get(), 0, 32}, {buffer.get(), 8, 16}};
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueExecute(1, {}, {}, cb.get(), overlapping));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(64, 0x12));
}

TEST_F(CommandBuffer, SubmitWithoutEndIsFailedPrecondition) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> never_begun,
                           Create(Mode::kOneShot));
  CTS_EXPECT_CODE(
      kFailedPrecondition,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, never_begun.get()));
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> open, Create(Mode::kReusable));
  CTS_ASSERT_OK(open->Begin());
  CTS_ASSERT_OK(open->ExecutionBarrier());
  CTS_EXPECT_CODE(
      kFailedPrecondition,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, open.get()));
  EXPECT_EQ(Payload(s.get()), 0u);
}

TEST_F(CommandBuffer, FailedSubmissionLeavesSignalUntouched) {
  auto buffer = NewHostBuffer(16, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(buffer && s);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kOneShot, Category::kTransfer, 1));
  const uint8_t p = 9;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Slot(0), &p, 1));
  CTS_ASSERT_OK(cb->End());
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), {}));
  // Neither signalled nor failed: a later operation signals it normally.
  EXPECT_EQ(Payload(s.get()), 0u);
  CTS_ASSERT_OK(device()->QueueBarrier(1, {}, Points{{s.get(), 1}}));
  CTS_EXPECT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(16, 0));
}

TEST_F(CommandBuffer, CategoryAndAffinityChecks) {
  auto buffer = NewHostBuffer(16);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> dispatch_only,
                           Create(Mode::kOneShot, Category::kDispatch));
  CTS_ASSERT_OK(dispatch_only->Begin());
  const uint8_t p = 1;
  Bytes data(4);
  CTS_EXPECT_CODE(
      kInvalidArgument,
      dispatch_only->FillBuffer(BufferRef::Direct(buffer.get()), &p, 1));
  CTS_EXPECT_CODE(kInvalidArgument,
                  dispatch_only->UpdateBuffer(
                      data.data(), BufferRef::Direct(buffer.get(), 0, 4)));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      dispatch_only->CopyBuffer(BufferRef::Direct(buffer.get(), 0, 4),
                                BufferRef::Direct(buffer.get(), 8, 4), 4));
  CTS_EXPECT_OK(dispatch_only->ExecutionBarrier());
  CTS_ASSERT_OK(dispatch_only->End());

  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> transfer_only,
                           Create(Mode::kOneShot));
  CTS_ASSERT_OK(transfer_only->Begin());
  CTS_EXPECT_CODE(kInvalidArgument, transfer_only->Dispatch(DispatchParams{}));
  CTS_ASSERT_OK(transfer_only->End());

  if (device()->queue_count() > 1) {
    // A command buffer for queue 0 cannot run on queue 1.
    CTS_EXPECT_CODE(kInvalidArgument,
                    device()->QueueExecute(2, {}, {}, transfer_only.get()));
  }
}

TEST_F(CommandBuffer, DispatchWithoutExecutableIsInvalidArgument) {
  // Dispatch itself is covered by the Dispatch area (dispatch_test.cc).
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kOneShot, Category::kAny));
  CTS_ASSERT_OK(cb->Begin());
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(DispatchParams{}));
  EXPECT_TRUE(cb->commands().empty());
  CTS_ASSERT_OK(cb->End());
}

TEST_F(CommandBuffer, EventsRecordAndExecute) {
  auto a = NewDeviceBuffer(32);
  auto b = NewHostBuffer(32, 0);
  ASSERT_TRUE(a && b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<Event> event, device()->CreateEvent());
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kReusable));
  const uint16_t pattern = 0xBEEF;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(a.get()), &pattern, 2));
  CTS_ASSERT_OK(cb->SignalEvent(event.get()));
  Event* const events[] = {event.get()};
  CTS_ASSERT_OK(cb->WaitEvents(events));
  CTS_ASSERT_OK(cb->CopyBuffer(BufferRef::Direct(a.get()),
                               BufferRef::Direct(b.get()), 32));
  CTS_ASSERT_OK(cb->ResetEvent(event.get()));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  Bytes want(32);
  for (int i = 0; i < 32; i += 2) std::memcpy(&want[i], &pattern, 2);
  EXPECT_EQ(Diff(ReadBack(b.get()), want), "");
  // Reset at the end: the recording runs again.
  CTS_ASSERT_OK(b->MapZero(0, kWholeBuffer));
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  EXPECT_EQ(Diff(ReadBack(b.get()), want), "");
}

TEST_F(CommandBuffer, EventValidation) {
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  CTS_ASSERT_OK(cb->Begin());
  CTS_EXPECT_CODE(kInvalidArgument, cb->WaitEvents({}));
  Event* const null_event[] = {nullptr};
  CTS_EXPECT_CODE(kInvalidArgument, cb->WaitEvents(null_event));
  CTS_EXPECT_CODE(kInvalidArgument, cb->SignalEvent(nullptr));
  CTS_EXPECT_CODE(kInvalidArgument, cb->ResetEvent(nullptr));
  EXPECT_TRUE(cb->commands().empty());
  CTS_ASSERT_OK(cb->End());
}

TEST_F(CommandBuffer, FailedWaitSkipsExecution) {
  auto buffer = NewHostBuffer(16, 0xEE);
  auto w = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(buffer && w && s);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb, Create(Mode::kOneShot));
  const uint8_t p = 0x01;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(buffer.get()), &p, 1));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(device()->QueueExecute(1, Points{{w.get(), 1}},
                                       Points{{s.get(), 1}}, cb.get()));
  w->Fail(DataLossError("lost"));
  CTS_EXPECT_CODE(kDataLoss, WaitFor(s.get(), 1));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(ReadBack(buffer.get()), Bytes(16, 0xEE));
}

TEST_F(CommandBuffer, ReusableSubmittedConcurrently) {
  // A reusable command buffer may be in flight more than once.
  auto b1 = NewHostBuffer(64, 0), b2 = NewHostBuffer(64, 0);
  auto gate = NewSemaphore(0), s1 = NewSemaphore(0), s2 = NewSemaphore(0);
  ASSERT_TRUE(b1 && b2 && gate && s1 && s2);
  FailOnExit guard{{gate}};
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kReusable, Category::kTransfer, 1));
  const uint8_t p = 0x7A;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Slot(0), &p, 1));
  CTS_ASSERT_OK(cb->End());
  {
    // The tables are borrowed only for the call: they are gone before the
    // work runs.
    std::vector<Binding> t1{{b1.get(), 0, kWholeBuffer}};
    std::vector<Binding> t2{{b2.get(), 0, kWholeBuffer}};
    CTS_ASSERT_OK(device()->QueueExecute(1, Points{{gate.get(), 1}},
                                         Points{{s1.get(), 1}}, cb.get(), t1));
    CTS_ASSERT_OK(device()->QueueExecute(1, Points{{gate.get(), 1}},
                                         Points{{s2.get(), 1}}, cb.get(), t2));
  }
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(s1.get(), 1));
  CTS_ASSERT_OK(WaitFor(s2.get(), 1));
  EXPECT_EQ(ReadBack(b1.get()), Bytes(64, 0x7A));
  EXPECT_EQ(ReadBack(b2.get()), Bytes(64, 0x7A));
}

// Issue 11 item 10, in a command buffer: direct references (a subspan's own
// offset counts) at record time, binding-table slots at submission.
TEST_F(CommandBuffer, FillAlignmentIsOnTheOffsetInTheAllocation) {
  auto buffer = NewHostBuffer(64, 0xEE);
  ASSERT_TRUE(buffer);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> sub, buffer->Subspan(2, 32));
  const uint8_t pattern[4] = {0x11, 0x22, 0x33, 0x44};
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalCommandBuffer> cb,
                           Create(Mode::kReusable, Category::kTransfer, 1));
  CTS_ASSERT_OK(cb->Begin());
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(buffer.get(), 2, 4), pattern, 4));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      cb->FillBuffer(BufferRef::Direct(sub.get(), 0, 4), pattern, 4));
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(sub.get(), 2, 4), pattern, 4));
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Slot(0, 0, 4), pattern, 4));
  CTS_ASSERT_OK(cb->End());
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  // Slot 0 bound to the subspan: its offset 0 is absolute offset 2.
  Binding to_sub[] = {{sub.get(), 0, kWholeBuffer}};
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), to_sub));
  // Bound to the subspan at 6 (absolute 8): fine.
  Binding at_8[] = {{sub.get(), 6, 8}};
  CTS_ASSERT_OK(SubmitAndWait(cb.get(), at_8));
  Bytes want(64, 0xEE);
  for (int i = 0; i < 4; ++i) want[4 + i] = want[8 + i] = pattern[i];
  EXPECT_EQ(Diff(ReadBack(buffer.get()), want), "");
}

}  // namespace
}  // namespace hal::cts
