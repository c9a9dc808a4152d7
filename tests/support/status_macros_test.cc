#include "support/status_macros.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace graft {
namespace {

using ::graft::testing::IsOk;
using ::graft::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<int> Half(int n) {
  if (n % 2 != 0) return absl::InvalidArgumentError("odd");
  return n / 2;
}

absl::StatusOr<int> Quarter(int n) {
  ASSIGN_OR_RETURN(int half, Half(n));
  ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::Status CheckQuarter(int n, int* out) {
  RETURN_IF_ERROR(Half(n).status());
  RETURN_IF_ERROR(Quarter(n));
  *out = *Quarter(n);
  return absl::OkStatus();
}

TEST(StatusMacros, ReturnTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_THAT(Quarter(6), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("odd")));
  int out = -1;
  EXPECT_THAT(CheckQuarter(6, &out), Not(IsOk()));
  EXPECT_EQ(out, -1);
  ASSERT_OK(CheckQuarter(12, &out));
  EXPECT_EQ(out, 3);
  ASSERT_OK_AND_ASSIGN(int q, Quarter(16));
  EXPECT_EQ(q, 4);
}

}  // namespace
}  // namespace graft
