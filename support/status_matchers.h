#ifndef GRAFT_SUPPORT_STATUS_MATCHERS_H_
#define GRAFT_SUPPORT_STATUS_MATCHERS_H_

// gMock matchers and assertions for absl::Status and absl::StatusOr, for
// tests:
//
//   EXPECT_THAT(Load(path), IsOk());
//   EXPECT_THAT(Load(bad), StatusIs(absl::StatusCode::kInvalidArgument,
//                                   HasSubstr("line 3")));
//   ASSERT_OK_AND_ASSIGN(Module m, Load(path));
//   ASSERT_OK(Save(m, path));
//
// A failure prints the status, so a test never dereferences an error.

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graft::testing {

namespace internal {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace internal

MATCHER(IsOk, negation ? "is an error" : "is OK") {
  const absl::Status& s = internal::GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s;
  return s.ok();
}

MATCHER_P(StatusIs, code,
          std::string(negation ? "has no" : "has") + " code " +
              absl::StatusCodeToString(code)) {
  const absl::Status& s = internal::GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           std::string(negation ? "has no" : "has") + " code " +
               absl::StatusCodeToString(code) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher,
                                                       negation)) {
  const absl::Status& s = internal::GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code &&
         ::testing::ExplainMatchResult(message_matcher,
                                       std::string(s.message()),
                                       result_listener);
}

}  // namespace graft::testing

#define GRAFT_TEST_CONCAT_INNER_(a, b) a##b
#define GRAFT_TEST_CONCAT_(a, b) GRAFT_TEST_CONCAT_INNER_(a, b)

#define ASSERT_OK(expr) \
  ASSERT_THAT((expr), ::graft::testing::IsOk())
#define EXPECT_OK(expr) \
  EXPECT_THAT((expr), ::graft::testing::IsOk())

// Asserts that a StatusOr holds a value and moves it into `lhs`.
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                     \
  GRAFT_ASSERT_OK_AND_ASSIGN_IMPL_(                                        \
      GRAFT_TEST_CONCAT_(graft_statusor_, __LINE__), lhs, expr)
#define GRAFT_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                     \
  ASSERT_TRUE(statusor.ok()) << statusor.status();            \
  lhs = *std::move(statusor)

#endif  // GRAFT_SUPPORT_STATUS_MATCHERS_H_
