// Unit tests of hal::Semaphore's timeline logic that need its test hooks
// (the conformance suite, hal/cts/semaphore_test.cc, covers the contract on
// every driver).
#include "hal/semaphore.h"

#include <gtest/gtest.h>

#include <vector>

namespace hal {
namespace {

// Issue 11 item 5: a Fail landing between Signal raising the payload and
// Signal collecting its timepoints used to fire the reached timepoint with
// the failure. The hook runs Fail in exactly that window.
TEST(Semaphore, FailBetweenRaiseAndCollectKeepsReachedTimepointsOk) {
  Ref<Semaphore> s = Semaphore::Create(0);
  std::vector<std::pair<uint64_t, Status>> fired;
  for (uint64_t v : {1, 2, 3}) {
    s->NotifyAt(v,
                [&fired, v](const Status& st) { fired.emplace_back(v, st); });
  }
  ASSERT_EQ(s->pending_timepoint_count(), 3u);
  Semaphore* raw = s.get();
  s->SetSignalRaceHookForTesting([raw] {
    raw->Fail(DataLossError("failed while the signal was in flight"));
  });
  // The payload was raised before the failure: Signal succeeded.
  EXPECT_TRUE(s->Signal(2).ok());
  s->SetSignalRaceHookForTesting(nullptr);
  ASSERT_EQ(fired.size(), 3u);
  EXPECT_EQ(s->pending_timepoint_count(), 0u);
  for (auto& [value, status] : fired) {
    if (value <= 2) {
      EXPECT_TRUE(status.ok())
          << "timepoint " << value
          << " was reached before the failure but fired " << status.ToString();
    } else {
      EXPECT_EQ(status.code(), StatusCode::kDataLoss) << "timepoint " << value;
    }
  }
  // A timepoint registered after the failure gets the failure.
  Status late;
  s->NotifyAt(1, [&late](const Status& st) { late = st; });
  EXPECT_EQ(late.code(), StatusCode::kDataLoss);
}

TEST(Semaphore, ReachedKeepsValuesReachedBeforeFailure) {
  Ref<Semaphore> s = Semaphore::Create(5);
  EXPECT_TRUE(s->Reached(0));
  EXPECT_TRUE(s->Reached(5));
  EXPECT_FALSE(s->Reached(6));
  ASSERT_TRUE(s->Signal(7).ok());
  EXPECT_TRUE(s->Reached(7));
  EXPECT_FALSE(s->Reached(8));
  s->Fail(AbortedError("later failure"));
  // Query reports the failure; Reached still knows what was reached.
  EXPECT_EQ(s->Query().status().code(), StatusCode::kAborted);
  EXPECT_TRUE(s->Reached(5));
  EXPECT_TRUE(s->Reached(7));
  EXPECT_FALSE(s->Reached(8));
  // A signal after the failure is refused and reaches nothing.
  EXPECT_EQ(s->Signal(9).code(), StatusCode::kAborted);
  EXPECT_FALSE(s->Reached(9));
}

TEST(Semaphore, ReachedDuringRacingFailAgreesWithTimepoints) {
  // The value raised by the racing Signal counts as reached before the
  // failure, for Reached as for the timepoints.
  Ref<Semaphore> s = Semaphore::Create(0);
  Status fired = UnknownError("not fired");
  s->NotifyAt(4, [&fired](const Status& st) { fired = st; });
  Semaphore* raw = s.get();
  s->SetSignalRaceHookForTesting([raw] { raw->Fail(InternalError("race")); });
  EXPECT_TRUE(s->Signal(4).ok());
  EXPECT_TRUE(fired.ok()) << fired.ToString();
  EXPECT_TRUE(s->Reached(4));
  EXPECT_FALSE(s->Reached(5));
}

}  // namespace
}  // namespace hal
