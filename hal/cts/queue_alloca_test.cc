// CTS: queue-ordered allocation (queue_alloca / queue_dealloca).
#include <cstring>
#include <string>
#include <vector>

#include "hal/cts/cts.h"

namespace hal::cts {
namespace {

using HalBuffer = ::hal::Buffer;

struct Usage {
  DeviceSize bytes;  // host + device bytes allocated now
  uint64_t live;
};

class QueueAlloca : public CtsTest {
 protected:
  void SetUp() override {
    CtsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!HasTag(kTagAlloca)) GTEST_SKIP() << "backend lacks tag 'alloca'";
  }
  Usage CurrentUsage() const {
    AllocatorStatistics s = allocator()->statistics();
    return Usage{s.host_bytes_allocated + s.device_bytes_allocated,
                 s.live_allocations};
  }
  // A host-visible buffer allocated by queue_alloca and committed.
  StatusOr<Ref<HalBuffer>> CommittedAlloca(DeviceSize size) {
    auto s = NewSemaphore(0);
    HAL_ASSIGN_OR_RETURN(
        Ref<HalBuffer> buffer,
        device()->QueueAlloca(1, {}, Points{{s.get(), 1}}, HostParams(), size));
    HAL_RETURN_IF_ERROR(WaitFor(s.get(), 1));
    return buffer;
  }
};

// A size that can never be allocated (wrapping rounding or padding, more
// than the device or the host has) is RESOURCE_EXHAUSTED at submission; the
// signal is left alone.
TEST_F(QueueAlloca, ImpossibleSizeIsResourceExhaustedAtOnce) {
  const DeviceSize memory = device()->info().memory_bytes;
  ASSERT_GT(memory, 0u);
  struct Case {
    BufferParams params;
    DeviceSize size;
  };
  std::vector<Case> cases;
  for (DeviceSize alignment : {DeviceSize{0}, DeviceSize{4096}}) {
    for (BufferParams params : {HostParams(), DeviceParams()}) {
      params.min_alignment = alignment;
      for (DeviceSize size :
           {~DeviceSize{0}, ~DeviceSize{0} - 100, kMaxAllocationSize + 1}) {
        cases.push_back({params, size});
      }
    }
  }
  cases.push_back({DeviceParams(), memory + 1});
  for (const Case& c : cases) {
    auto s = NewSemaphore(0);
    Usage before = CurrentUsage();
    auto buffer =
        device()->QueueAlloca(1, {}, Points{{s.get(), 1}}, c.params, c.size);
    EXPECT_EQ(buffer.status().code(), StatusCode::kResourceExhausted)
        << MemoryTypeString(c.params.type) << ", size " << c.size
        << ", alignment " << c.params.min_alignment << ": "
        << buffer.status().ToString();
    EXPECT_EQ(Payload(s.get()), 0u);
    Usage after = CurrentUsage();
    EXPECT_EQ(after.bytes, before.bytes);
    EXPECT_EQ(after.live, before.live);
  }
}

TEST_F(QueueAlloca, CommitsOnlyAfterItsWaits) {
  constexpr DeviceSize kSize = 8192;
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(gate && s);
  FailOnExit guard{{gate}};
  Usage before = CurrentUsage();
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalBuffer> buffer,
      device()->QueueAlloca(1, Points{{gate.get(), 1}}, Points{{s.get(), 1}},
                            HostParams(), kSize));
  EXPECT_EQ(buffer->byte_length(), kSize);
  EXPECT_EQ(buffer->state(), BufferState::kReserved);
  CTS_EXPECT_CODE(kDeadlineExceeded,
                  s->Wait(1, Timeout::After(std::chrono::milliseconds(20))));
  EXPECT_EQ(buffer->state(), BufferState::kReserved);
  Usage reserved = CurrentUsage();
  EXPECT_EQ(reserved.bytes, before.bytes)
      << "memory committed before the waits";
  EXPECT_EQ(reserved.live, before.live);
  // The host may not touch a reserved buffer.
  CTS_EXPECT_CODE(kFailedPrecondition,
                  buffer->Map(MappingMode::kScoped, MemoryAccess::kRead));

  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(buffer->state(), BufferState::kLive);
  Usage committed = CurrentUsage();
  EXPECT_EQ(committed.bytes, before.bytes + kSize);
  EXPECT_EQ(committed.live, before.live + 1);
  const uint8_t data[4] = {9, 8, 7, 6};
  CTS_ASSERT_OK(buffer->MapWrite(100, data, 4));
  uint8_t back[4] = {};
  CTS_ASSERT_OK(buffer->MapRead(100, back, 4));
  EXPECT_EQ(std::memcmp(back, data, 4), 0);
}

TEST_F(QueueAlloca, AllocaFillReadbackDeallocaChain) {
  constexpr DeviceSize kSize = 4096;
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  auto staging = NewHostBuffer(kSize, 0x00);
  ASSERT_TRUE(gate && s && staging);
  FailOnExit guard{{gate}};
  Usage before = CurrentUsage();
  // The whole chain is queued before the alloca may commit; the fill and the
  // copy use the buffer while it is still reserved, ordered by semaphores.
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalBuffer> buffer,
      device()->QueueAlloca(1, Points{{gate.get(), 1}}, Points{{s.get(), 1}},
                            DeviceParams(), kSize));
  const uint32_t pattern = 0xCAFEF00D;
  CTS_ASSERT_OK(device()->QueueFill(1, Points{{s.get(), 1}},
                                    Points{{s.get(), 2}}, buffer.get(), 0,
                                    kSize, &pattern, 4));
  CTS_ASSERT_OK(device()->QueueCopy(1, Points{{s.get(), 2}},
                                    Points{{s.get(), 3}}, buffer.get(), 0,
                                    staging.get(), 0, kSize));
  CTS_ASSERT_OK(device()->QueueDealloca(1, Points{{s.get(), 3}},
                                        Points{{s.get(), 4}}, buffer.get()));
  EXPECT_EQ(buffer->state(), BufferState::kDeallocaQueued);
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 4));
  Bytes want(kSize);
  for (size_t i = 0; i < kSize; i += 4) std::memcpy(&want[i], &pattern, 4);
  Bytes got(kSize);
  CTS_ASSERT_OK(staging->MapRead(0, got.data(), kSize));
  EXPECT_TRUE(got == want) << "staging does not hold the filled pattern";
  EXPECT_EQ(buffer->state(), BufferState::kFreed);
  Usage after = CurrentUsage();
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(after.live, before.live);
}

TEST_F(QueueAlloca, UseAfterDeallocaIsFailedPrecondition) {
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> buffer, CommittedAlloca(256));
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> sub, buffer->Subspan(64, 64));
  auto other = NewHostBuffer(256);
  auto gate = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(other && gate && s);
  FailOnExit guard{{gate}};
  // Recorded while the buffer is live, submitted after its dealloca.
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<::hal::CommandBuffer> cb,
      device()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                    CommandCategory::kTransfer, 1, 0));
  const uint8_t p = 0x5C;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(buffer.get(), 0, 64), &p, 1));
  CTS_ASSERT_OK(cb->End());

  CTS_ASSERT_OK(device()->QueueDealloca(1, Points{{gate.get(), 1}},
                                        Points{{s.get(), 1}}, buffer.get()));
  auto check_all_refused = [&] {
    CTS_EXPECT_CODE(kFailedPrecondition,
                    device()->QueueFill(1, {}, {}, buffer.get(), 0, 64, &p, 1));
    CTS_EXPECT_CODE(kFailedPrecondition,
                    device()->QueueFill(1, {}, {}, sub.get(), 0, 64, &p, 1));
    CTS_EXPECT_CODE(
        kFailedPrecondition,
        device()->QueueCopy(1, {}, {}, buffer.get(), 0, other.get(), 0, 16));
    CTS_EXPECT_CODE(
        kFailedPrecondition,
        device()->QueueCopy(1, {}, {}, other.get(), 0, buffer.get(), 0, 16));
    CTS_EXPECT_CODE(kFailedPrecondition,
                    buffer->Map(MappingMode::kScoped, MemoryAccess::kRead));
    CTS_EXPECT_CODE(kFailedPrecondition,
                    sub->Map(MappingMode::kScoped, MemoryAccess::kRead));
    CTS_EXPECT_CODE(kFailedPrecondition,
                    device()->QueueExecute(1, {}, {}, cb.get()));
  };
  // Queued but not yet run.
  EXPECT_EQ(buffer->state(), BufferState::kDeallocaQueued);
  check_all_refused();
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  EXPECT_EQ(buffer->state(), BufferState::kFreed);
  check_all_refused();
}

TEST_F(QueueAlloca, DoubleDeallocaIsFailedPrecondition) {
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> buffer, CommittedAlloca(128));
  auto gate = NewSemaphore(0), s = NewSemaphore(0), t = NewSemaphore(0);
  ASSERT_TRUE(gate && s && t);
  FailOnExit guard{{gate}};
  CTS_ASSERT_OK(device()->QueueDealloca(1, Points{{gate.get(), 1}},
                                        Points{{s.get(), 1}}, buffer.get()));
  CTS_EXPECT_CODE(
      kFailedPrecondition,
      device()->QueueDealloca(1, {}, Points{{t.get(), 1}}, buffer.get()));
  CTS_ASSERT_OK(gate->Signal(1));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  CTS_EXPECT_CODE(
      kFailedPrecondition,
      device()->QueueDealloca(1, {}, Points{{t.get(), 1}}, buffer.get()));
  // The refused deallocas touched no semaphore.
  auto t_value = t->Query();
  ASSERT_TRUE(t_value.ok()) << t_value.status().ToString();
  EXPECT_EQ(*t_value, 0u);
}

TEST_F(QueueAlloca, DeallocaWithFailedWaitFreesNothing) {
  constexpr DeviceSize kSize = 512;
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> buffer, CommittedAlloca(kSize));
  Bytes data(kSize);
  for (size_t i = 0; i < kSize; ++i) data[i] = static_cast<uint8_t>(i ^ 0x5A);
  CTS_ASSERT_OK(buffer->MapWrite(0, data.data(), kSize));
  auto w = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(w && s);
  Usage before = CurrentUsage();
  CTS_ASSERT_OK(device()->QueueDealloca(1, Points{{w.get(), 1}},
                                        Points{{s.get(), 1}}, buffer.get()));
  EXPECT_EQ(buffer->state(), BufferState::kDeallocaQueued);
  w->Fail(DataLossError("upstream lost"));
  CTS_EXPECT_CODE(kDataLoss, WaitFor(s.get(), 1));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_EQ(buffer->state(), BufferState::kLive);
  Usage after = CurrentUsage();
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(after.live, before.live);
  Bytes got(kSize);
  CTS_ASSERT_OK(buffer->MapRead(0, got.data(), kSize));
  EXPECT_TRUE(got == data) << "contents changed by a dealloca that did not run";
  // The buffer is usable and can be deallocated again.
  auto t = NewSemaphore(0);
  ASSERT_TRUE(t);
  const uint8_t p = 0x01;
  CTS_ASSERT_OK(device()->QueueFill(1, {}, Points{{t.get(), 1}}, buffer.get(),
                                    0, 4, &p, 1));
  CTS_ASSERT_OK(device()->QueueDealloca(1, Points{{t.get(), 1}},
                                        Points{{t.get(), 2}}, buffer.get()));
  CTS_ASSERT_OK(WaitFor(t.get(), 2));
  EXPECT_EQ(buffer->state(), BufferState::kFreed);
}

TEST_F(QueueAlloca, AllocaWithFailedWaitFailsSignal) {
  auto w = NewSemaphore(0), s = NewSemaphore(0);
  ASSERT_TRUE(w && s);
  Usage before = CurrentUsage();
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalBuffer> buffer,
      device()->QueueAlloca(1, Points{{w.get(), 1}}, Points{{s.get(), 1}},
                            DeviceParams(), 1024));
  w->Fail(AbortedError("aborted upstream"));
  CTS_EXPECT_CODE(kAborted, WaitFor(s.get(), 1));
  CTS_ASSERT_OK(device()->WaitIdle(Timeout::After(kCtsTimeout)));
  EXPECT_NE(buffer->state(), BufferState::kLive);
  EXPECT_EQ(CurrentUsage().bytes, before.bytes);
}

TEST_F(QueueAlloca, InvalidRequestsAreRejected) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  BufferParams params = DeviceParams();
  params.usage = BufferUsage::kNone;
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueAlloca(1, {}, Points{{s.get(), 1}}, params, 64));
  params = DeviceParams();
  params.min_alignment = 3;
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueAlloca(1, {}, Points{{s.get(), 1}}, params, 64));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueAlloca(0, {}, Points{{s.get(), 1}}, DeviceParams(), 64));
  // Dealloca of a subspan or of nothing.
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> buffer, CommittedAlloca(128));
  CTS_ASSERT_OK_AND_ASSIGN(Ref<HalBuffer> sub, buffer->Subspan(0, 64));
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueDealloca(1, {}, Points{{s.get(), 1}}, sub.get()));
  CTS_EXPECT_CODE(kInvalidArgument, device()->QueueDealloca(
                                        1, {}, Points{{s.get(), 1}}, nullptr));
  EXPECT_EQ(buffer->state(), BufferState::kLive);
  auto v = s->Query();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 0u);
}

TEST_F(QueueAlloca, DeallocaOnAnotherQueue) {
  CTS_REQUIRE_QUEUES(2);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  Usage before = CurrentUsage();
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<HalBuffer> buffer,
      device()->QueueAlloca(2, {}, Points{{s.get(), 1}}, DeviceParams(), 2048));
  const uint8_t p = 0x3E;
  CTS_ASSERT_OK(device()->QueueFill(1, Points{{s.get(), 1}},
                                    Points{{s.get(), 2}}, buffer.get(), 0, 2048,
                                    &p, 1));
  CTS_ASSERT_OK(WaitFor(s.get(), 2));
  EXPECT_EQ(ReadBack(buffer.get(), 1000, 8), Bytes(8, 0x3E));
  CTS_ASSERT_OK(device()->QueueDealloca(1, Points{{s.get(), 2}},
                                        Points{{s.get(), 3}}, buffer.get()));
  CTS_ASSERT_OK(WaitFor(s.get(), 3));
  EXPECT_EQ(buffer->state(), BufferState::kFreed);
  EXPECT_EQ(CurrentUsage().bytes, before.bytes);
}

}  // namespace
}  // namespace hal::cts
