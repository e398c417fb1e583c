// The shared queue-operation path of hal::Device (validation, the dealloca
// state transition, submission with a failed wait), on a fake driver that
// only counts what reaches it.
#include "hal/device.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "hal/testing/fake_buffer.h"
#include "hal/wait_graph.h"

namespace hal {
namespace {

Ref<Buffer> NewBuffer(BufferState initial, DeviceSize length = 64) {
  return testutil::NewFakeBuffer(length, BufferUsage::kDefault, initial);
}

// Counts the ...Impl calls; queues nothing.
class FakeDevice final : public Device {
 public:
  static Ref<FakeDevice> Create() {
    DeviceInfo info;
    info.driver = "fake";
    info.queue_count = 2;
    return Ref<FakeDevice>::Adopt(new FakeDevice(std::move(info)));
  }
  std::atomic<int> impl_calls{0};
  QueueAffinity last_execute_affinity = 0;
  std::vector<SemaphorePoint> last_execute_waits;

 protected:
  explicit FakeDevice(DeviceInfo info) : Device(std::move(info), nullptr) {}

  StatusOr<Ref<Buffer>> QueueAllocaImpl(QueueAffinity, SemaphoreList,
                                        SemaphoreList, const BufferParams&,
                                        DeviceSize size) override {
    ++impl_calls;
    return NewBuffer(BufferState::kReserved, size);
  }
  Status QueueDeallocaImpl(QueueAffinity, SemaphoreList, SemaphoreList,
                           Buffer*) override {
    ++impl_calls;
    return OkStatus();
  }
  Status QueueReadImpl(QueueAffinity, SemaphoreList, SemaphoreList, File*,
                       uint64_t, Buffer*, DeviceSize, DeviceSize) override {
    ++impl_calls;
    return OkStatus();
  }
  Status QueueWriteImpl(QueueAffinity, SemaphoreList, SemaphoreList, Buffer*,
                        DeviceSize, File*, uint64_t, DeviceSize) override {
    ++impl_calls;
    return OkStatus();
  }
  Status QueueExecuteImpl(QueueAffinity affinity, SemaphoreList wait,
                          SemaphoreList, CommandBuffer*,
                          BindingTable) override {
    ++impl_calls;
    last_execute_affinity = affinity;
    last_execute_waits.assign(wait.begin(), wait.end());
    return OkStatus();
  }
  Status QueueHostCallImpl(QueueAffinity, SemaphoreList, SemaphoreList,
                           HostCallFn) override {
    ++impl_calls;
    return OkStatus();
  }
  Status WaitIdleImpl(Timeout) override { return OkStatus(); }
};

// A dealloca submitted while the buffer's alloca commits on another thread
// is legal and must be accepted every time. Before the state word, the
// dealloca read kReserved, the commit moved it to kLive, and the dealloca's
// transition from kReserved failed ("raced with another dealloca").
TEST(DeviceDealloca, RacingTheAllocaCommitIsAlwaysAccepted) {
  Ref<FakeDevice> device = FakeDevice::Create();
  Ref<Semaphore> gate = Semaphore::Create(0);
  SemaphorePoint wait{gate.get(), 1};
  constexpr int kIterations = 50000;
  int refused = 0;
  std::string first_error;
  for (int i = 0; i < kIterations; ++i) {
    Ref<Buffer> buffer = NewBuffer(BufferState::kReserved);
    std::atomic<bool> go{false};
    std::thread commit([&] {
      while (!go.load(std::memory_order_acquire)) {
      }
      for (int spin = i % 64; spin > 0; --spin)
        std::atomic_signal_fence(std::memory_order_seq_cst);
      buffer->MarkCommitted();  // what an alloca's completion does
    });
    go.store(true, std::memory_order_release);
    Status s = device->QueueDealloca(1, {&wait, 1}, {}, buffer.get());
    commit.join();
    if (!s.ok()) {
      if (refused++ == 0) first_error = s.ToString();
    }
    // Whichever came first, the dealloca is queued and knows the memory is
    // committed: undoing it leaves a live buffer.
    EXPECT_EQ(buffer->state(), BufferState::kDeallocaQueued);
    buffer->CancelDealloca();
    EXPECT_EQ(buffer->state(), BufferState::kLive);
  }
  EXPECT_EQ(refused, 0) << refused << " of " << kIterations
                        << " legal deallocas refused; first: " << first_error;
}

TEST(DeviceDealloca, SecondDeallocaIsFailedPrecondition) {
  Ref<FakeDevice> device = FakeDevice::Create();
  Ref<Semaphore> gate = Semaphore::Create(0);
  SemaphorePoint wait{gate.get(), 1};
  Ref<Buffer> buffer = NewBuffer(BufferState::kLive);
  ASSERT_TRUE(device->QueueDealloca(1, {&wait, 1}, {}, buffer.get()).ok());
  Status s = device->QueueDealloca(1, {&wait, 1}, {}, buffer.get());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(buffer->state(), BufferState::kDeallocaQueued);
  EXPECT_EQ(device->impl_calls.load(), 1);
}

// An alloca that commits while its dealloca is queued, and a dealloca that
// is then undone (its wait failed): the buffer is live, not reserved.
TEST(DeviceDealloca, UndoneAfterTheCommitLeavesTheBufferLive) {
  Ref<Buffer> buffer = NewBuffer(BufferState::kReserved);
  ASSERT_TRUE(buffer->BeginDealloca().ok());
  buffer->MarkCommitted();
  EXPECT_EQ(buffer->state(), BufferState::kDeallocaQueued);
  buffer->CancelDealloca();
  EXPECT_EQ(buffer->state(), BufferState::kLive);

  Ref<Buffer> uncommitted = NewBuffer(BufferState::kReserved);
  ASSERT_TRUE(uncommitted->BeginDealloca().ok());
  uncommitted->CancelDealloca();
  EXPECT_EQ(uncommitted->state(), BufferState::kReserved);
}

// A wait that failed before the submission fails the signals before the
// call returns, and the driver never sees the operation.
TEST(DeviceSubmission, AlreadyFailedWaitFailsSignalsWithoutTheDriver) {
  Ref<FakeDevice> device = FakeDevice::Create();
  Ref<Semaphore> failed = Semaphore::Create(0);
  failed->Fail(DataLossError("lost"));
  Ref<Buffer> buffer = NewBuffer(BufferState::kLive);
  SemaphorePoint wait{failed.get(), 1};
  uint32_t pattern = 0;
  const char* what[] = {"barrier", "host_call", "fill", "update", "copy"};
  for (int i = 0; i < 5; ++i) {
    Ref<Semaphore> signal = Semaphore::Create(0);
    SemaphorePoint point{signal.get(), 1};
    SemaphoreList w{&wait, 1}, sig{&point, 1};
    Status s;
    switch (i) {
      case 0:
        s = device->QueueBarrier(1, w, sig);
        break;
      case 1:
        s = device->QueueHostCall(1, w, sig, [] { return OkStatus(); });
        break;
      case 2:
        s = device->QueueFill(1, w, sig, buffer.get(), 0, 16, &pattern, 4);
        break;
      case 3:
        s = device->QueueUpdate(1, w, sig, &pattern, buffer.get(), 0, 4);
        break;
      case 4: {
        Ref<Buffer> other = NewBuffer(BufferState::kLive);
        s = device->QueueCopy(1, w, sig, buffer.get(), 0, other.get(), 0, 16);
        break;
      }
    }
    EXPECT_TRUE(s.ok()) << what[i] << ": " << s.ToString();
    StatusOr<uint64_t> q = signal->Query();
    EXPECT_EQ(q.status().code(), StatusCode::kDataLoss)
        << what[i] << ": the signal should have failed at submission";
  }
  EXPECT_EQ(device->impl_calls.load(), 0);
}

TEST(DeviceSubmission, AlreadyFailedWaitLeavesTheDeallocaUndone) {
  Ref<FakeDevice> device = FakeDevice::Create();
  Ref<Semaphore> failed = Semaphore::Create(0);
  failed->Fail(AbortedError("aborted"));
  Ref<Semaphore> signal = Semaphore::Create(0);
  SemaphorePoint wait{failed.get(), 1}, point{signal.get(), 1};
  Ref<Buffer> buffer = NewBuffer(BufferState::kLive);
  ASSERT_TRUE(
      device->QueueDealloca(1, {&wait, 1}, {&point, 1}, buffer.get()).ok());
  EXPECT_EQ(buffer->state(), BufferState::kLive);
  EXPECT_EQ(signal->Query().status().code(), StatusCode::kAborted);
  EXPECT_EQ(device->impl_calls.load(), 0);
}

TEST(DeviceSubmission, InvalidSignalListIsInvalidArgumentAndChangesNothing) {
  Ref<FakeDevice> device = FakeDevice::Create();
  Ref<Semaphore> a = Semaphore::Create(3);
  Ref<Semaphore> b = Semaphore::Create(0);
  SemaphorePoint duplicate[] = {{a.get(), 4}, {b.get(), 1}, {a.get(), 5}};
  SemaphorePoint equal[] = {{b.get(), 1}, {a.get(), 3}};
  SemaphorePoint below[] = {{a.get(), 2}};
  for (SemaphoreList list :
       {SemaphoreList(duplicate), SemaphoreList(equal), SemaphoreList(below)}) {
    Status s = device->QueueBarrier(1, {}, list);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    s = device->QueueHostCall(1, {}, list, [] { return OkStatus(); });
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  }
  EXPECT_EQ(*a->Query(), 3u);
  EXPECT_EQ(*b->Query(), 0u);
  EXPECT_EQ(device->impl_calls.load(), 0);
  // A failed signal semaphore is not misuse: the operation just cannot
  // signal it.
  b->Fail(CancelledError("gone"));
  SemaphorePoint to_failed{b.get(), 1};
  EXPECT_TRUE(device->QueueBarrier(1, {}, {&to_failed, 1}).ok());
}

// The queues an execution may run on are the intersection of what the caller
// asked for and what the command buffer was recorded for: a driver given
// the caller's affinity alone could run the buffer on a queue it was never
// recorded for (the mutant device-execute-ignores-command-buffer-affinity).
TEST(DeviceAffinity, ExecuteNarrowsToTheCommandBuffersQueues) {
  Ref<FakeDevice> device = FakeDevice::Create();
  Ref<CommandBuffer> cb =
      CommandBuffer::Create(CommandBufferMode::kReusable, CommandCategory::kAny,
                            /*affinity=*/0b10, 0)
          .value();
  ASSERT_TRUE(cb->Begin().ok());
  ASSERT_TRUE(cb->End().ok());
  ASSERT_TRUE(
      device->QueueExecute(kQueueAffinityAny, {}, {}, cb.get(), {}).ok());
  EXPECT_EQ(device->last_execute_affinity, QueueAffinity{0b10});
  ASSERT_TRUE(device->QueueExecute(0b11, {}, {}, cb.get(), {}).ok());
  EXPECT_EQ(device->last_execute_affinity, QueueAffinity{0b10});
  const int calls = device->impl_calls.load();
  EXPECT_EQ(device->QueueExecute(0b01, {}, {}, cb.get(), {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(device->impl_calls.load(), calls) << "a refused execute ran";
}

// The wait-for graph over a device that drops every operation: the
// liveness check reports a runnable operation that never finishes, with
// the graph, and leaves alone one whose wait nobody reached; the lifetime
// check reports a semaphore released while a pending operation needs it.
class WaitGraphOn : public ::testing::Test {
 protected:
  void SetUp() override { EnableWaitGraph(true); }
  void TearDown() override { EnableWaitGraph(false); }
};

TEST_F(WaitGraphOn, LivenessReportsARunnableOperationThatNeverFinishes) {
  Ref<FakeDevice> device = FakeDevice::Create();
  Ref<Semaphore> gate = Semaphore::Create(0), done = Semaphore::Create(0),
                 later = Semaphore::Create(0);
  SemaphorePoint gate_1{gate.get(), 1}, done_1{done.get(), 1},
      later_1{later.get(), 1};
  // Waits on a gate nobody opened: blocked, not lost.
  ASSERT_TRUE(device->QueueBarrier(1, {&gate_1, 1}, {&done_1, 1}).ok());
  EXPECT_TRUE(
      CheckWaitGraphLiveness(device.get(), std::chrono::milliseconds(20)).ok());
  const std::string graph = DescribeWaitGraph(device.get());
  EXPECT_NE(graph.find("queue_barrier"), std::string::npos) << graph;
  EXPECT_NE(graph.find("no pending operation signals it"), std::string::npos)
      << graph;
  // Behind it, an operation waiting on its signal names it.
  ASSERT_TRUE(device->QueueBarrier(1, {&done_1, 1}, {&later_1, 1}).ok());
  EXPECT_NE(DescribeWaitGraph(device.get()).find("<- op#"), std::string::npos);
  // The gate opens: the fake device never runs the barrier, which is lost
  // work now.
  ASSERT_TRUE(gate->Signal(1).ok());
  Status live =
      CheckWaitGraphLiveness(device.get(), std::chrono::milliseconds(20));
  EXPECT_EQ(live.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(live.ToString().find("RUNNABLE"), std::string::npos)
      << live.ToString();
  // Finished (its signal reached): pruned, and nothing is runnable.
  ASSERT_TRUE(done->Signal(1).ok());
  ASSERT_TRUE(later->Signal(1).ok());
  EXPECT_TRUE(
      CheckWaitGraphLiveness(device.get(), std::chrono::milliseconds(20)).ok());
  EXPECT_EQ(DescribeWaitGraph(device.get()), "");
}

TEST_F(WaitGraphOn, ASemaphoreReleasedWhileAnOperationNeedsItIsReported) {
  Ref<FakeDevice> device = FakeDevice::Create();
  const uint64_t before = WaitGraphLifetimeViolations();
  {
    Ref<Semaphore> gate = Semaphore::Create(0), done = Semaphore::Create(0);
    SemaphorePoint gate_1{gate.get(), 1}, done_1{done.get(), 1};
    ASSERT_TRUE(device->QueueBarrier(1, {&gate_1, 1}, {&done_1, 1}).ok());
    // The fake device keeps no references: both die with the op pending.
  }
  EXPECT_EQ(WaitGraphLifetimeViolations(), before + 1)
      << "one report for the first release, then the op forgets it";
  {
    // A wait already reached, or an operation finished, needs nothing.
    Ref<Semaphore> gate = Semaphore::Create(1), done = Semaphore::Create(0);
    SemaphorePoint gate_1{gate.get(), 1}, done_1{done.get(), 1};
    ASSERT_TRUE(device->QueueBarrier(1, {&gate_1, 1}, {&done_1, 1}).ok());
    gate.reset();
    EXPECT_EQ(WaitGraphLifetimeViolations(), before + 1);
    ASSERT_TRUE(done->Signal(1).ok());
  }
  EXPECT_EQ(WaitGraphLifetimeViolations(), before + 1);
}

// Holds (Device::HoldNextOperation) are taken by kind, in the order they
// were made, add one wait that Resume (or the hold's destruction) reaches,
// and a hold resumed before any operation took it holds nothing.
TEST(DeviceHold, TakenByKindInOrderAndResumedOnce) {
  Ref<FakeDevice> device = FakeDevice::Create();
  Ref<Semaphore> s = Semaphore::Create(0);
  SemaphorePoint s1{s.get(), 1};
  Ref<OperationHold> any = device->HoldNextOperation("").value();
  Ref<OperationHold> fill = device->HoldNextOperation("queue_fill").value();
  ASSERT_TRUE(device->QueueBarrier(1, {&s1, 1}, {}).ok());
  EXPECT_TRUE(any->taken());
  EXPECT_FALSE(fill->taken()) << "a barrier is no queue_fill";
  ASSERT_EQ(device->last_execute_waits.size(), 2u);
  EXPECT_EQ(device->last_execute_waits[0].semaphore, s.get());
  Semaphore* gate = device->last_execute_waits[1].semaphore;
  EXPECT_FALSE(gate->Reached(1));
  any->Resume();
  EXPECT_TRUE(gate->Reached(1));
  any->Resume();  // idempotent
  // The next barrier is not held; the fill hold waits for a fill.
  ASSERT_TRUE(device->QueueBarrier(1, {&s1, 1}, {}).ok());
  EXPECT_EQ(device->last_execute_waits.size(), 1u);
  // Resumed before any fill took it: holds nothing; destroying it is fine.
  fill->Resume();
  fill.reset();
  // A hold destroyed after it was taken resumes its operation.
  Ref<OperationHold> dropped = device->HoldNextOperation("").value();
  ASSERT_TRUE(device->QueueBarrier(1, {}, {}).ok());
  ASSERT_EQ(device->last_execute_waits.size(), 1u);
  Ref<Semaphore> held_gate(device->last_execute_waits[0].semaphore);
  dropped.reset();
  EXPECT_TRUE(held_gate->Reached(1));
}

}  // namespace
}  // namespace hal
