#include "hal/status.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace hal {
namespace {

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, ErrorCarriesCodeAndFormattedMessage) {
  Status s = InvalidArgumentError("bad %s %d", "value", 7);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "bad value 7");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: bad value 7");
  EXPECT_EQ(s.Annotate("ctx").ToString(), "INVALID_ARGUMENT: ctx: bad value 7");
}

TEST(Status, AllCodesHaveNames) {
  for (int c = 0; c <= 16; ++c) {
    EXPECT_STRNE(StatusCodeName(static_cast<StatusCode>(c)), "UNKNOWN_CODE")
        << c;
  }
  EXPECT_STREQ(StatusCodeName(static_cast<StatusCode>(99)), "UNKNOWN_CODE");
}

StatusOr<int> Half(int v) {
  if (v % 2) return InvalidArgumentError("%d is odd", v);
  return v / 2;
}

Status UseMacros(int v, int* out) {
  HAL_ASSIGN_OR_RETURN(int h, Half(v));
  HAL_RETURN_IF_ERROR(h > 10 ? OutOfRangeError("too big") : OkStatus());
  *out = h;
  return OkStatus();
}

TEST(StatusOr, ValueAndErrorPaths) {
  int out = 0;
  EXPECT_TRUE(UseMacros(8, &out).ok());
  EXPECT_EQ(out, 4);
  EXPECT_EQ(UseMacros(7, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(UseMacros(40, &out).code(), StatusCode::kOutOfRange);
}

// value() of an error used to read an empty std::optional (undefined
// behaviour: garbage, or under UBSan the end of the whole run).
TEST(StatusOrDeathTest, ValueOfAnErrorAbortsWithTheStatus) {
  StatusOr<int> error = DataLossError("lost %d", 3);
  EXPECT_DEATH((void)error.value(),
               "StatusOr::value\\(\\) on an error: DATA_LOSS: lost 3");
  EXPECT_DEATH((void)*error, "DATA_LOSS: lost 3");
  StatusOr<std::string> s = NotFoundError("gone");
  EXPECT_DEATH((void)s->size(), "NOT_FOUND: gone");
}

TEST(StatusOr, OkStatusIsTurnedIntoInternal) {
  StatusOr<int> v(OkStatus());
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
}

TEST(Status, IsOnePointer) { EXPECT_EQ(sizeof(Status), sizeof(void*)); }

TEST(Status, CopiesShareTheErrorAndOutliveTheOriginal) {
  Status copy;
  {
    Status original = DataLossError("lost %d", 3);
    copy = original;
    Status second(original);
    EXPECT_EQ(second, original);
  }
  EXPECT_EQ(copy.code(), StatusCode::kDataLoss);
  EXPECT_EQ(copy.message(), "lost 3");
  const Status& self = copy;
  copy = self;  // self-assignment keeps the error
  EXPECT_EQ(copy.ToString(), "DATA_LOSS: lost 3");
  copy = OkStatus();
  EXPECT_TRUE(copy.ok());
}

TEST(Status, MoveStealsThePointer) {
  Status a = AbortedError("gone");
  Status b = std::move(a);
  EXPECT_TRUE(a.ok());  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(b.code(), StatusCode::kAborted);
  Status c = InternalError("other");
  c = std::move(b);
  EXPECT_EQ(c.message(), "gone");
  EXPECT_TRUE(b.ok());  // NOLINT(bugprone-use-after-move)
  Status& alias = c;
  c = std::move(alias);  // self-move keeps the error
  EXPECT_EQ(c.message(), "gone");
}

TEST(Status, CopiesFromManyThreads) {
  const Status shared = UnavailableError("shared");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < 10000; ++i) {
        Status copy = shared;
        Status moved = std::move(copy);
        if (moved.code() != StatusCode::kUnavailable) std::abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(shared.message(), "shared");
}

}  // namespace
}  // namespace hal
