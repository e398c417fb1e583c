// CTS: timeline semaphores, multi-waits and fences.
#include <atomic>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "hal/cts/cts.h"

namespace hal::cts {
namespace {

using namespace std::chrono_literals;

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

class Semaphore : public CtsTest {};

TEST_F(Semaphore, InitialValue) {
  auto zero = NewSemaphore(0);
  auto big = NewSemaphore(42);
  auto huge = NewSemaphore(uint64_t{1} << 62);
  ASSERT_TRUE(zero && big && huge);
  EXPECT_EQ(Payload(zero.get()), 0u);
  EXPECT_EQ(Payload(big.get()), 42u);
  EXPECT_EQ(Payload(huge.get()), uint64_t{1} << 62);
}

TEST_F(Semaphore, SignalRaisesPayload) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  CTS_ASSERT_OK(s->Signal(1));
  EXPECT_EQ(Payload(s.get()), 1u);
  CTS_ASSERT_OK(s->Signal(5));
  EXPECT_EQ(Payload(s.get()), 5u);
  CTS_ASSERT_OK(s->Signal(1000000));
  EXPECT_EQ(Payload(s.get()), 1000000u);
}

TEST_F(Semaphore, SignalEqualValueIsInvalidArgument) {
  auto s = NewSemaphore(7);
  ASSERT_TRUE(s);
  CTS_EXPECT_CODE(kInvalidArgument, s->Signal(7));
  EXPECT_EQ(Payload(s.get()), 7u);
  CTS_ASSERT_OK(s->Signal(9));
  CTS_EXPECT_CODE(kInvalidArgument, s->Signal(9));
  EXPECT_EQ(Payload(s.get()), 9u);
}

TEST_F(Semaphore, SignalLowerValueIsInvalidArgument) {
  auto s = NewSemaphore(10);
  ASSERT_TRUE(s);
  CTS_EXPECT_CODE(kInvalidArgument, s->Signal(3));
  CTS_EXPECT_CODE(kInvalidArgument, s->Signal(0));
  EXPECT_EQ(Payload(s.get()), 10u);
  // The semaphore is not failed by a bad signal.
  CTS_EXPECT_OK(s->Signal(11));
  EXPECT_EQ(Payload(s.get()), 11u);
}

TEST_F(Semaphore, FailFirstStatusWins) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  s->Fail(DataLossError("first failure"));
  s->Fail(AbortedError("second failure"));
  auto q = s->Query();
  ASSERT_FALSE(q.ok());
  CTS_EXPECT_CODE(kDataLoss, q);
  EXPECT_NE(q.status().message().find("first failure"), std::string::npos)
      << q.status().ToString();
  CTS_EXPECT_CODE(kDataLoss, s->Wait(1, Timeout::Immediate()));
  CTS_EXPECT_CODE(kDataLoss, s->Wait(1, Timeout::After(kCtsTimeout)));
  // Every wait after the failure returns it, also for values reached before.
  CTS_EXPECT_CODE(kDataLoss, s->Wait(0, Timeout::Immediate()));
}

TEST_F(Semaphore, FailAfterSignalsKeepsFailure) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  CTS_ASSERT_OK(s->Signal(3));
  s->Fail(ResourceExhaustedError("oom"));
  CTS_EXPECT_CODE(kResourceExhausted, s->Query());
  CTS_EXPECT_CODE(kResourceExhausted, s->Wait(4, Timeout::Immediate()));
}

TEST_F(Semaphore, FailWithOkStatusBecomesUnknown) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  s->Fail(OkStatus());
  CTS_EXPECT_CODE(kUnknown, s->Query());
  CTS_EXPECT_CODE(kUnknown, s->Wait(1, Timeout::Immediate()));
}

TEST_F(Semaphore, SignalAfterFailReturnsFailure) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  s->Fail(DataLossError("lost"));
  CTS_EXPECT_CODE(kDataLoss, s->Signal(1));
  CTS_EXPECT_CODE(kDataLoss, s->Signal(100));
  CTS_EXPECT_CODE(kDataLoss, s->Query());
}

TEST_F(Semaphore, WaitOnReachedValuesReturnsAtOnce) {
  auto s = NewSemaphore(5);
  ASSERT_TRUE(s);
  CTS_EXPECT_OK(s->Wait(0, Timeout::Immediate()));
  CTS_EXPECT_OK(s->Wait(3, Timeout::Immediate()));
  CTS_EXPECT_OK(s->Wait(5, Timeout::Immediate()));
  auto start = std::chrono::steady_clock::now();
  CTS_EXPECT_OK(s->Wait(5, Timeout::After(kCtsTimeout)));
  CTS_EXPECT_OK(s->Wait(4, Timeout::After(kCtsTimeout)));
  Points reached{{s.get(), 5}};
  CTS_EXPECT_OK(
      WaitSemaphores(WaitMode::kAll, reached, Timeout::After(kCtsTimeout)));
  EXPECT_LT(MsSince(start), 1000.0);
}

TEST_F(Semaphore, WaitTimeoutIsDeadlineExceeded) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  auto start = std::chrono::steady_clock::now();
  CTS_EXPECT_CODE(kDeadlineExceeded, s->Wait(1, Timeout::After(20ms)));
  double ms = MsSince(start);
  EXPECT_GE(ms, 15.0);
  EXPECT_LT(ms, 5000.0);
  EXPECT_EQ(Payload(s.get()), 0u);
}

TEST_F(Semaphore, ZeroTimeoutIsPoll) {
  auto s = NewSemaphore(2);
  ASSERT_TRUE(s);
  CTS_EXPECT_CODE(kDeadlineExceeded, s->Wait(3, Timeout::Immediate()));
  CTS_EXPECT_CODE(kDeadlineExceeded, s->Wait(3, Timeout::After(0ns)));
  CTS_ASSERT_OK(s->Signal(3));
  CTS_EXPECT_OK(s->Wait(3, Timeout::Immediate()));
}

TEST_F(Semaphore, WaitSemaphoresEmptyListIsSatisfied) {
  CTS_EXPECT_OK(WaitSemaphores(WaitMode::kAll, {}, Timeout::Immediate()));
  CTS_EXPECT_OK(WaitSemaphores(WaitMode::kAny, {}, Timeout::Immediate()));
  CTS_EXPECT_OK(WaitSemaphores(WaitMode::kAll, {}, Timeout::After(20ms)));
  CTS_EXPECT_OK(WaitSemaphores(WaitMode::kAny, {}, Timeout::After(20ms)));
}

TEST_F(Semaphore, WaitSemaphoresNullIsInvalidArgument) {
  auto a = NewSemaphore(1);
  ASSERT_TRUE(a);
  Points points{{a.get(), 1}, {nullptr, 1}};
  CTS_EXPECT_CODE(kInvalidArgument,
                  WaitSemaphores(WaitMode::kAll, points, Timeout::Immediate()));
  CTS_EXPECT_CODE(kInvalidArgument,
                  WaitSemaphores(WaitMode::kAny, points, Timeout::Immediate()));
}

TEST_F(Semaphore, WaitAnySatisfiedByOneOfThree) {
  auto a = NewSemaphore(0), b = NewSemaphore(0), c = NewSemaphore(0);
  ASSERT_TRUE(a && b && c);
  Points points{{a.get(), 1}, {b.get(), 1}, {c.get(), 1}};
  CTS_EXPECT_CODE(kDeadlineExceeded,
                  WaitSemaphores(WaitMode::kAny, points, Timeout::Immediate()));
  CTS_EXPECT_CODE(kDeadlineExceeded,
                  WaitSemaphores(WaitMode::kAny, points, Timeout::After(20ms)));
  CTS_ASSERT_OK(b->Signal(1));
  CTS_EXPECT_OK(WaitSemaphores(WaitMode::kAny, points, Timeout::Immediate()));
  CTS_EXPECT_OK(
      WaitSemaphores(WaitMode::kAny, points, Timeout::After(kCtsTimeout)));
  // The ALL wait is still not satisfied.
  CTS_EXPECT_CODE(kDeadlineExceeded,
                  WaitSemaphores(WaitMode::kAll, points, Timeout::Immediate()));
}

TEST_F(Semaphore, WaitAllNotSatisfiedUntilAll) {
  auto a = NewSemaphore(0), b = NewSemaphore(0), c = NewSemaphore(0);
  ASSERT_TRUE(a && b && c);
  Points points{{a.get(), 1}, {b.get(), 2}, {c.get(), 3}};
  CTS_ASSERT_OK(a->Signal(1));
  CTS_ASSERT_OK(b->Signal(2));
  CTS_ASSERT_OK(c->Signal(2));
  CTS_EXPECT_CODE(kDeadlineExceeded,
                  WaitSemaphores(WaitMode::kAll, points, Timeout::Immediate()));
  CTS_EXPECT_CODE(kDeadlineExceeded,
                  WaitSemaphores(WaitMode::kAll, points, Timeout::After(20ms)));
  CTS_ASSERT_OK(c->Signal(3));
  CTS_EXPECT_OK(WaitSemaphores(WaitMode::kAll, points, Timeout::Immediate()));
  CTS_EXPECT_OK(
      WaitSemaphores(WaitMode::kAll, points, Timeout::After(kCtsTimeout)));
}

TEST_F(Semaphore, WaitAllWithOneFailedReturnsFailure) {
  auto a = NewSemaphore(0), b = NewSemaphore(0), c = NewSemaphore(0);
  ASSERT_TRUE(a && b && c);
  CTS_ASSERT_OK(a->Signal(1));
  b->Fail(DataLossError("b lost"));
  Points points{{a.get(), 1}, {b.get(), 1}, {c.get(), 1}};
  auto start = std::chrono::steady_clock::now();
  CTS_EXPECT_CODE(kDataLoss, WaitSemaphores(WaitMode::kAll, points,
                                            Timeout::After(kCtsTimeout)));
  EXPECT_LT(MsSince(start), 5000.0)
      << "a failed ALL wait must not run to its timeout";
  CTS_EXPECT_CODE(kDataLoss,
                  WaitSemaphores(WaitMode::kAll, points, Timeout::Immediate()));
}

TEST_F(Semaphore, WaitAnyFailureOnlyWhenNothingReached) {
  auto a = NewSemaphore(0), b = NewSemaphore(0);
  ASSERT_TRUE(a && b);
  b->Fail(AbortedError("b aborted"));
  CTS_ASSERT_OK(a->Signal(1));
  Points both{{a.get(), 1}, {b.get(), 1}};
  CTS_EXPECT_OK(
      WaitSemaphores(WaitMode::kAny, both, Timeout::After(kCtsTimeout)));
  Points failed_only{{b.get(), 1}};
  CTS_EXPECT_CODE(kAborted, WaitSemaphores(WaitMode::kAny, failed_only,
                                           Timeout::After(kCtsTimeout)));
}

TEST_F(Semaphore, SignalFromAnotherThreadWakesWaiter) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  std::thread signaller([&] {
    std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(s->Signal(1).ok());
  });
  Status st = s->Wait(1, Timeout::After(kCtsTimeout));
  signaller.join();
  CTS_EXPECT_OK(st);
  EXPECT_EQ(Payload(s.get()), 1u);
}

TEST_F(Semaphore, MultiWaitWokenByAnotherThread) {
  auto a = NewSemaphore(0), b = NewSemaphore(0);
  ASSERT_TRUE(a && b);
  std::thread signaller([&] {
    std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(a->Signal(2).ok());
    std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(b->Signal(3).ok());
  });
  Points points{{a.get(), 2}, {b.get(), 3}};
  Status st =
      WaitSemaphores(WaitMode::kAll, points, Timeout::After(kCtsTimeout));
  signaller.join();
  CTS_EXPECT_OK(st);
}

TEST_F(Semaphore, ManyWaitersOnOneValue) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  constexpr int kWaiters = 8;
  std::vector<Status> results(kWaiters);
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      results[i] = s->Wait(1, Timeout::After(kCtsTimeout));
      finished.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(finished.load(), 0) << "waiters returned before the signal";
  Status sig = s->Signal(1);
  for (auto& t : threads) t.join();
  CTS_EXPECT_OK(sig);
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_TRUE(results[i].ok())
        << "waiter " << i << ": " << results[i].ToString();
  }
}

TEST_F(Semaphore, PingPongBetweenThreads) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  constexpr uint64_t kRounds = 1000;
  Status ping_status, pong_status;
  // On any error, fail the semaphore so that the other side stops at once.
  auto run = [&](uint64_t first_signal, Status* out) {
    for (uint64_t i = 0; i < kRounds; ++i) {
      uint64_t mine = 2 * i + first_signal;
      if (first_signal == 2) {
        Status w = s->Wait(mine - 1, Timeout::After(kCtsTimeout));
        if (!w.ok()) {
          *out = w;
          s->Fail(AbortedError("pong wait"));
          return;
        }
      }
      Status sg = s->Signal(mine);
      if (!sg.ok()) {
        *out = sg;
        s->Fail(AbortedError("signal"));
        return;
      }
      if (first_signal == 1) {
        Status w = s->Wait(mine + 1, Timeout::After(kCtsTimeout));
        if (!w.ok()) {
          *out = w;
          s->Fail(AbortedError("ping wait"));
          return;
        }
      }
    }
  };
  std::thread pong([&] { run(2, &pong_status); });
  run(1, &ping_status);
  pong.join();
  CTS_EXPECT_OK(ping_status);
  CTS_EXPECT_OK(pong_status);
  EXPECT_EQ(Payload(s.get()), 2 * kRounds);
}

TEST_F(Semaphore, FailWakesWaiterWithFailure) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  Status result;
  std::atomic<bool> done{false};
  auto start = std::chrono::steady_clock::now();
  std::thread waiter([&] {
    result = s->Wait(1, Timeout::After(kCtsTimeout));
    done = true;
  });
  std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(done.load());
  s->Fail(DataLossError("device lost"));
  waiter.join();
  CTS_EXPECT_CODE(kDataLoss, result);
  EXPECT_LT(MsSince(start), 5000.0);
}

TEST_F(Semaphore, FailWakesMultiWaiter) {
  auto a = NewSemaphore(0), b = NewSemaphore(0);
  ASSERT_TRUE(a && b);
  Status result;
  std::thread waiter([&] {
    Points points{{a.get(), 1}, {b.get(), 1}};
    result =
        WaitSemaphores(WaitMode::kAll, points, Timeout::After(kCtsTimeout));
  });
  std::this_thread::sleep_for(10ms);
  a->Fail(PermissionDeniedError("nope"));
  waiter.join();
  CTS_EXPECT_CODE(kPermissionDenied, result);
}

TEST_F(Semaphore, NotifyAtFiresOnceWhenReached) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  std::atomic<int> calls{0};
  Status seen = UnknownError("not called");
  auto id = s->NotifyAt(2, [&](const Status& st) {
    seen = st;
    calls.fetch_add(1);
  });
  EXPECT_NE(id, 0u);
  EXPECT_EQ(s->pending_timepoint_count(), 1u);
  CTS_ASSERT_OK(s->Signal(1));
  EXPECT_EQ(calls.load(), 0);
  CTS_ASSERT_OK(s->Signal(3));
  EXPECT_EQ(calls.load(), 1);
  CTS_EXPECT_OK(seen);
  CTS_ASSERT_OK(s->Signal(4));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(s->CancelTimepoint(id));
  // Already reached: runs inline and returns 0.
  int inline_calls = 0;
  EXPECT_EQ(s->NotifyAt(4,
                        [&](const Status& st) {
                          EXPECT_TRUE(st.ok());
                          ++inline_calls;
                        }),
            0u);
  EXPECT_EQ(inline_calls, 1);
}

TEST_F(Semaphore, CancelledTimepointNeverRunsAndFailureReachesOthers) {
  auto s = NewSemaphore(0);
  ASSERT_TRUE(s);
  int cancelled_calls = 0;
  Status failure;
  int failure_calls = 0;
  auto id = s->NotifyAt(1, [&](const Status&) { ++cancelled_calls; });
  s->NotifyAt(5, [&](const Status& st) {
    failure = st;
    ++failure_calls;
  });
  EXPECT_TRUE(s->CancelTimepoint(id));
  EXPECT_EQ(s->pending_timepoint_count(), 1u);
  s->Fail(DataLossError("gone"));
  EXPECT_EQ(cancelled_calls, 0);
  EXPECT_EQ(failure_calls, 1);
  CTS_EXPECT_CODE(kDataLoss, failure);
  EXPECT_EQ(s->pending_timepoint_count(), 0u);
}

TEST_F(Semaphore, FenceInsertKeepsLargerValue) {
  auto a = NewSemaphore(0), b = NewSemaphore(0);
  ASSERT_TRUE(a && b);
  auto fence = Fence::Create();
  CTS_ASSERT_OK(fence->Insert(a.get(), 1));
  CTS_ASSERT_OK(fence->Insert(a.get(), 3));
  CTS_ASSERT_OK(fence->Insert(a.get(), 2));
  CTS_ASSERT_OK(fence->Insert(b.get(), 4));
  ASSERT_EQ(fence->size(), 2u);
  for (const SemaphorePoint& p : fence->points()) {
    if (p.semaphore == a.get())
      EXPECT_EQ(p.value, 3u);
    else if (p.semaphore == b.get())
      EXPECT_EQ(p.value, 4u);
    else
      ADD_FAILURE() << "unexpected semaphore in fence";
  }
  CTS_EXPECT_CODE(kInvalidArgument, fence->Insert(nullptr, 1));
  EXPECT_EQ(fence->size(), 2u);
}

TEST_F(Semaphore, FenceMergeAndWait) {
  auto a = NewSemaphore(0), b = NewSemaphore(0);
  ASSERT_TRUE(a && b);
  auto f1 = Fence::Create();
  auto f2 = Fence::Create();
  CTS_ASSERT_OK(f1->Insert(a.get(), 1));
  CTS_ASSERT_OK(f2->Insert(a.get(), 2));
  CTS_ASSERT_OK(f2->Insert(b.get(), 2));
  CTS_ASSERT_OK(f1->Extend(*f2));
  ASSERT_EQ(f1->size(), 2u);
  CTS_EXPECT_CODE(kDeadlineExceeded, f1->Query());
  CTS_ASSERT_OK(a->Signal(1));
  CTS_ASSERT_OK(b->Signal(2));
  // a:2 came from the merge: still not reached.
  CTS_EXPECT_CODE(kDeadlineExceeded, f1->Query());
  CTS_EXPECT_CODE(kDeadlineExceeded, f1->Wait(Timeout::After(20ms)));
  std::thread t([&] {
    std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(a->Signal(2).ok());
  });
  Status st = f1->Wait(Timeout::After(kCtsTimeout));
  t.join();
  CTS_EXPECT_OK(st);
  CTS_EXPECT_OK(f1->Query());
  // An empty fence is satisfied.
  CTS_EXPECT_OK(Fence::Create()->Query());
}

TEST_F(Semaphore, FenceSignalAndFail) {
  auto a = NewSemaphore(0), b = NewSemaphore(0);
  ASSERT_TRUE(a && b);
  auto fence = Fence::Create();
  CTS_ASSERT_OK(fence->Insert(a.get(), 2));
  CTS_ASSERT_OK(fence->Insert(b.get(), 5));
  CTS_ASSERT_OK(fence->Signal());
  EXPECT_EQ(Payload(a.get()), 2u);
  EXPECT_EQ(Payload(b.get()), 5u);
  CTS_EXPECT_OK(fence->Wait(Timeout::Immediate()));
  // Signalling again is not an increase.
  CTS_EXPECT_CODE(kInvalidArgument, fence->Signal());

  auto c = NewSemaphore(0), d = NewSemaphore(0);
  ASSERT_TRUE(c && d);
  auto failing = Fence::Create();
  CTS_ASSERT_OK(failing->Insert(c.get(), 1));
  CTS_ASSERT_OK(failing->Insert(d.get(), 1));
  failing->Fail(DataLossError("fence failed"));
  CTS_EXPECT_CODE(kDataLoss, failing->Query());
  CTS_EXPECT_CODE(kDataLoss, failing->Wait(Timeout::After(kCtsTimeout)));
  CTS_EXPECT_CODE(kDataLoss, c->Query());
  CTS_EXPECT_CODE(kDataLoss, d->Query());
}

TEST_F(Semaphore, FenceKeepsSemaphoreAlive) {
  auto fence = Fence::Create();
  {
    auto s = NewSemaphore(0);
    ASSERT_TRUE(s);
    CTS_ASSERT_OK(fence->Insert(s.get(), 1));
  }
  ASSERT_EQ(fence->size(), 1u);
  CTS_EXPECT_CODE(kDeadlineExceeded, fence->Query());
  CTS_EXPECT_OK(fence->Signal());
  CTS_EXPECT_OK(fence->Query());
}

// Any 64-bit payload is usable: there is no reserved maximum below 2^64-1.
TEST_F(Semaphore, MaximumPayloadIsUsable) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  auto host = NewSemaphore(kMax - 1), queued = NewSemaphore(0);
  ASSERT_TRUE(host && queued);
  CTS_ASSERT_OK(host->Signal(kMax));
  EXPECT_EQ(Payload(host.get()), kMax);
  CTS_EXPECT_OK(host->Wait(kMax, Timeout::Immediate()));
  CTS_EXPECT_CODE(kInvalidArgument, host->Signal(kMax));
  // Through a queue: a barrier waiting on the maximum and signalling it.
  CTS_ASSERT_OK(device()->QueueBarrier(1, Points{{host.get(), kMax}},
                                       Points{{queued.get(), kMax}}));
  CTS_ASSERT_OK(WaitFor(queued.get(), kMax));
  EXPECT_EQ(Payload(queued.get()), kMax);
}

}  // namespace
}  // namespace hal::cts
