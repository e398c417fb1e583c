// The queue-operation rules every scheduler shares (hal/utils/queue_op.h).
#include "hal/utils/queue_op.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace hal::utils {
namespace {

TEST(QueueOp, RetainPointsKeepsSemaphoresAlive) {
  std::vector<RetainedPoint> points;
  {
    Ref<Semaphore> a = Semaphore::Create(0);
    Ref<Semaphore> b = Semaphore::Create(5);
    SemaphorePoint list[] = {{a.get(), 1}, {b.get(), 7}};
    RetainPoints(list, &points);
  }
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].second, 1u);
  EXPECT_EQ(points[1].second, 7u);
  EXPECT_EQ(points[1].first->Query().value(), 5u);
}

TEST(QueueOp, CompleteSignalsSignalsOnSuccess) {
  Ref<Semaphore> a = Semaphore::Create(0);
  Ref<Semaphore> b = Semaphore::Create(3);
  std::vector<RetainedPoint> signals = {{a, 2}, {b, 4}};
  CompleteSignals(signals, OkStatus());
  EXPECT_EQ(a->Query().value(), 2u);
  EXPECT_EQ(b->Query().value(), 4u);
}

TEST(QueueOp, OvertakenSignalFailsTheSemaphore) {
  Ref<Semaphore> a = Semaphore::Create(0);
  Ref<Semaphore> b = Semaphore::Create(0);
  std::vector<RetainedPoint> signals = {{a, 2}, {b, 1}};
  ASSERT_TRUE(a->Signal(5).ok());  // the host went past the op's value
  CompleteSignals(signals, OkStatus());
  EXPECT_EQ(a->Query().status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b->Query().value(), 1u);  // the others still signal
}

TEST(QueueOp, FailureFailsEverySignalFirstFailureWins) {
  Ref<Semaphore> a = Semaphore::Create(0);
  Ref<Semaphore> b = Semaphore::Create(0);
  b->Fail(AbortedError("earlier"));
  std::vector<RetainedPoint> signals = {{a, 1}, {b, 1}};
  CompleteSignals(signals, DataLossError("work failed"));
  EXPECT_EQ(a->Query().status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(b->Query().status().code(), StatusCode::kAborted);
}

TEST(QueueOp, AbandonRunsTheHookThenFailsSignals) {
  Ref<Semaphore> a = Semaphore::Create(0);
  std::vector<RetainedPoint> signals = {{a, 1}};
  std::vector<std::string> seen;
  std::function<void(const Status&)> abandon = [&](const Status& s) {
    // The hook runs before the signals fail.
    seen.push_back(s.ToString());
    EXPECT_TRUE(a->Query().ok());
  };
  AbandonQueueOp(abandon, signals, CancelledError("device destroyed"));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("device destroyed"), std::string::npos);
  EXPECT_EQ(a->Query().status().code(), StatusCode::kCancelled);

  // No hook: only the signals.
  Ref<Semaphore> b = Semaphore::Create(0);
  std::vector<RetainedPoint> more = {{b, 1}};
  AbandonQueueOp(std::function<void(const Status&)>(), more,
                 CancelledError("x"));
  EXPECT_EQ(b->Query().status().code(), StatusCode::kCancelled);
}

TEST(QueueOp, CheckWaitDecidesByWhateverCameFirst) {
  Ref<Semaphore> s = Semaphore::Create(0);
  Status failure;
  EXPECT_EQ(CheckWait(*s, 0, &failure), WaitState::kReached);
  EXPECT_EQ(CheckWait(*s, 1, &failure), WaitState::kOpen);
  ASSERT_TRUE(s->Signal(3).ok());
  EXPECT_EQ(CheckWait(*s, 3, &failure), WaitState::kReached);
  EXPECT_EQ(CheckWait(*s, 4, &failure), WaitState::kOpen);
  EXPECT_TRUE(failure.ok());
  s->Fail(DataLossError("lost"));
  // Reached before the failure: still reached.
  EXPECT_EQ(CheckWait(*s, 3, &failure), WaitState::kReached);
  EXPECT_TRUE(failure.ok());
  EXPECT_EQ(CheckWait(*s, 4, &failure), WaitState::kFailed);
  EXPECT_EQ(failure.code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace hal::utils
