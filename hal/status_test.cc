#include "hal/status.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace hal
