// Unit tests of hal::Fence: a fence acts on every timepoint it holds and
// reports the first failure, in insertion order (a later success or a later
// failure must not hide it).
#include "hal/fence.h"

#include <gtest/gtest.h>

namespace hal {
namespace {

TEST(Fence, SignalReportsTheFirstFailureAndStillSignalsTheRest) {
  Ref<Semaphore> failed = Semaphore::Create(0);
  failed->Fail(DataLossError("upstream failure"));
  Ref<Semaphore> stale = Semaphore::Create(5);  // signal to 3 is not above 5
  Ref<Semaphore> fine = Semaphore::Create(0);
  Ref<Fence> fence = Fence::Create();
  ASSERT_TRUE(fence->Insert(failed.get(), 1).ok());
  ASSERT_TRUE(fence->Insert(stale.get(), 3).ok());
  ASSERT_TRUE(fence->Insert(fine.get(), 1).ok());
  Status s = fence->Signal();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(fine->Query().value(), 1u)
      << "a failed point stopped the later ones";
  EXPECT_EQ(stale->Query().value(), 5u);
}

TEST(Fence, SignalReportsAnEarlierFailureBeforeALaterSuccess) {
  Ref<Semaphore> stale = Semaphore::Create(5);
  Ref<Semaphore> fine = Semaphore::Create(0);
  Ref<Fence> fence = Fence::Create();
  ASSERT_TRUE(fence->Insert(stale.get(), 2).ok());
  ASSERT_TRUE(fence->Insert(fine.get(), 7).ok());
  Status s = fence->Signal();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(fine->Query().value(), 7u);
}

TEST(Fence, FailFailsEveryPointAndWaitReportsIt) {
  Ref<Semaphore> a = Semaphore::Create(0);
  Ref<Semaphore> b = Semaphore::Create(0);
  Ref<Fence> fence = Fence::Create();
  ASSERT_TRUE(fence->Insert(a.get(), 1).ok());
  ASSERT_TRUE(fence->Insert(b.get(), 1).ok());
  fence->Fail(AbortedError("cancelled"));
  EXPECT_EQ(fence->Wait(Timeout::Immediate()).code(), StatusCode::kAborted);
  EXPECT_EQ(fence->Query().code(), StatusCode::kAborted);
}

}  // namespace
}  // namespace hal
