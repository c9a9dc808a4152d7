// Type rules of the creation ops (graph/core_ops_creation.cc).

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/op_type_test_util.h"

namespace graft {
namespace {

using op_test::ErrorOf;
using op_test::HasType;
using op_test::Ints;
using op_test::T;
using ::testing::AllOf;
using ::testing::HasSubstr;

using CreationTest = op_test::OpTypeTest;

TEST_F(CreationTest, FullAndZerosUseTheDTypeParameter) {
  EXPECT_TRUE(
      HasType(Infer("full", {Ints({2, 3}), 1.5}), T(DType::kF32, {2, 3})));
  // The documented default is f32 even for an int fill value.
  EXPECT_TRUE(HasType(Infer("full", {Ints({4}), 7}), T(DType::kF32, {4})));
  EXPECT_TRUE(
      HasType(Infer("full", {Ints({4}), 7, DType::kI64}), T(DType::kI64, {4})));
  EXPECT_TRUE(HasType(Infer("full", {3, true}, {{"dtype", DType::kBool}}),
                      T(DType::kBool, {3})));
  EXPECT_TRUE(HasType(Infer("zeros", {Ints({2, 0})}), T(DType::kF32, {2, 0})));
  EXPECT_TRUE(HasType(Infer("zeros", {Ints({})}, {{"dtype", DType::kBF16}}),
                      T(DType::kBF16, {})));
  EXPECT_THAT(ErrorOf(Infer("zeros", {Ints({2, -1})})),
              AllOf(HasSubstr("zeros: size [2,-1]"), HasSubstr("negative")));
}

TEST_F(CreationTest, ArangeLengthAndDType) {
  EXPECT_TRUE(HasType(Infer("arange", {0, 10}), T(DType::kI64, {10})));
  // 0, 3, 6, 9.
  EXPECT_TRUE(HasType(Infer("arange", {0, 10, 3}), T(DType::kI64, {4})));
  // 10, 7, 4, 1.
  EXPECT_TRUE(HasType(Infer("arange", {10, 0, -3}), T(DType::kI64, {4})));
  EXPECT_TRUE(HasType(Infer("arange", {5, 5}), T(DType::kI64, {0})));
  // 0.5, 1.5, 2.5.
  EXPECT_TRUE(HasType(Infer("arange", {0.5, 3}), T(DType::kF32, {3})));
  // 0, 0.25, 0.5, 0.75.
  EXPECT_TRUE(HasType(Infer("arange", {0, 1, 0.25}), T(DType::kF32, {4})));
  EXPECT_TRUE(HasType(Infer("arange", {0, 6}, {{"dtype", DType::kF16}}),
                      T(DType::kF16, {6})));
}

TEST_F(CreationTest, ArangeErrors) {
  EXPECT_THAT(ErrorOf(Infer("arange", {0, 10, 0})),
              HasSubstr("arange: step must not be zero"));
  EXPECT_THAT(ErrorOf(Infer("arange", {10, 0})),
              AllOf(HasSubstr("arange: step 1"), HasSubstr("start 10"),
                    HasSubstr("end 0")));
  EXPECT_THAT(ErrorOf(Infer("arange", {0, 3}, {{"dtype", DType::kBool}})),
              HasSubstr("arange: dtype bool"));
}

}  // namespace
}  // namespace graft
