// Reductions against hand-worked values.

#include <cmath>
#include <limits>

#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// [[1,2,3],[4,5,6]]
Tensor M23(DType dtype = DType::kF32) {
  return T(dtype, {2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST(ReduceKernels, Sum) {
  GRAFT_ASSERT_OK_AND_ASSIGN(all, RunUnary("sum", M23()));
  ExpectTensor(all, DType::kF32, {}, {21});
  GRAFT_ASSERT_OK_AND_ASSIGN(d0, RunUnary("sum", M23(), {0}));
  ExpectTensor(d0, DType::kF32, {3}, {5, 7, 9});
  GRAFT_ASSERT_OK_AND_ASSIGN(d1, RunUnary("sum", M23(), {1, true}));
  ExpectTensor(d1, DType::kF32, {2, 1}, {6, 15});
  GRAFT_ASSERT_OK_AND_ASSIGN(both, RunUnary("sum", M23(), {Ints({-1, 0})}));
  ExpectTensor(both, DType::kF32, {}, {21});
  GRAFT_ASSERT_OK_AND_ASSIGN(keep_all,
                             RunUnary("sum", M23(), {}, {{"keepdim", true}}));
  ExpectTensor(keep_all, DType::kF32, {1, 1}, {21});
  // Integers and bools sum to i64.
  GRAFT_ASSERT_OK_AND_ASSIGN(ints, RunUnary("sum", M23(DType::kI32), {1}));
  ExpectTensor(ints, DType::kI64, {2}, {6, 15});
  GRAFT_ASSERT_OK_AND_ASSIGN(bools,
                             RunUnary("sum", T(DType::kBool, {3}, {1, 0, 1})));
  ExpectTensor(bools, DType::kI64, {}, {2});
  // i8 sums do not wrap at 8 bits.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      i8, RunUnary("sum", T(DType::kI8, {3}, {100, 100, 100})));
  ExpectTensor(i8, DType::kI64, {}, {300});
  // An empty reduction is 0.
  GRAFT_ASSERT_OK_AND_ASSIGN(empty, RunUnary("sum", F32({0, 3}, {}), {0}));
  ExpectTensor(empty, DType::kF32, {3}, {0, 0, 0});
  // f16 sums keep their dtype.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      half, RunUnary("sum", T(DType::kF16, {3}, {0.5, 0.25, 1})));
  ExpectTensor(half, DType::kF16, {}, {1.75}, 0);
}

TEST(ReduceKernels, SumDimErrors) {
  absl::StatusOr<Tensor> twice = RunUnary("sum", M23(), {Ints({1, -1})});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("node %sum (sum)"));
  EXPECT_THAT(twice.status().message(), HasSubstr("twice"));
  absl::StatusOr<Tensor> range = RunUnary("sum", M23(), {2});
  ASSERT_FALSE(range.ok());
  EXPECT_THAT(range.status().message(), HasSubstr("out of range"));
}

TEST(ReduceKernels, Mean) {
  GRAFT_ASSERT_OK_AND_ASSIGN(all, RunUnary("mean", M23()));
  ExpectTensor(all, DType::kF32, {}, {3.5});
  GRAFT_ASSERT_OK_AND_ASSIGN(d1, RunUnary("mean", M23(DType::kF64), {1}));
  ExpectTensor(d1, DType::kF64, {2}, {2, 5});
  GRAFT_ASSERT_OK_AND_ASSIGN(empty, RunUnary("mean", F32({0}, {})));
  ExpectTensor(empty, DType::kF32, {}, {kNaN});
  absl::StatusOr<Tensor> ints = RunUnary("mean", M23(DType::kI64));
  ASSERT_FALSE(ints.ok());
  EXPECT_THAT(ints.status().message(), HasSubstr("floating-point"));
}

TEST(ReduceKernels, AmaxAmin) {
  GRAFT_ASSERT_OK_AND_ASSIGN(mx, RunUnary("amax", M23(), {0}));
  ExpectTensor(mx, DType::kF32, {3}, {4, 5, 6});
  GRAFT_ASSERT_OK_AND_ASSIGN(mn, RunUnary("amin", M23(), {1, true}));
  ExpectTensor(mn, DType::kF32, {2, 1}, {1, 4});
  GRAFT_ASSERT_OK_AND_ASSIGN(all, RunUnary("amax", M23(DType::kI32)));
  ExpectTensor(all, DType::kI32, {}, {6});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      neg, RunUnary("amax", T(DType::kI64, {3}, {-7, -3, -5})));
  ExpectTensor(neg, DType::kI64, {}, {-3});
  // NaN propagates.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      nan, RunUnary("amax", F32({2, 2}, {1, kNaN, 3, 4}), {1}));
  ExpectTensor(nan, DType::kF32, {2}, {kNaN, 4});
  // No identity for an empty reduction.
  absl::StatusOr<Tensor> empty = RunUnary("amin", F32({0, 2}, {}), {0});
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("node %amin (amin)"));
}

TEST(ReduceKernels, Argmax) {
  const Tensor x = F32({2, 3}, {1, 5, 5, 7, 0, 7});
  // Ties go to the first maximum.
  GRAFT_ASSERT_OK_AND_ASSIGN(d1, RunUnary("argmax", x, {1}));
  ExpectTensor(d1, DType::kI64, {2}, {1, 0});
  GRAFT_ASSERT_OK_AND_ASSIGN(d0, RunUnary("argmax", x, {0, true}));
  ExpectTensor(d0, DType::kI64, {1, 3}, {1, 0, 1});
  GRAFT_ASSERT_OK_AND_ASSIGN(flat, RunUnary("argmax", x));
  ExpectTensor(flat, DType::kI64, {}, {3});
  GRAFT_ASSERT_OK_AND_ASSIGN(flat_keep,
                             RunUnary("argmax", x, {}, {{"keepdim", true}}));
  ExpectTensor(flat_keep, DType::kI64, {1, 1}, {3});
  GRAFT_ASSERT_OK_AND_ASSIGN(nan, RunUnary("argmax", F32({3}, {1, kNaN, 3})));
  ExpectTensor(nan, DType::kI64, {}, {1});
  GRAFT_ASSERT_OK_AND_ASSIGN(ints, RunUnary("argmax", I64({3}, {-5, -1, -9})));
  ExpectTensor(ints, DType::kI64, {}, {1});
  EXPECT_FALSE(RunUnary("argmax", F32({0}, {})).ok());
}

TEST(ReduceKernels, Cumsum) {
  const Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  GRAFT_ASSERT_OK_AND_ASSIGN(rows, RunUnary("cumsum", x, {1}));
  ExpectTensor(rows, DType::kF32, {2, 3}, {1, 3, 6, 4, 9, 15});
  GRAFT_ASSERT_OK_AND_ASSIGN(cols, RunUnary("cumsum", x, {0}));
  ExpectTensor(cols, DType::kF32, {2, 3}, {1, 2, 3, 5, 7, 9});
  GRAFT_ASSERT_OK_AND_ASSIGN(excl, RunUnary("cumsum", x, {-1}, {{"exclusive", true}}));
  ExpectTensor(excl, DType::kF32, {2, 3}, {0, 1, 3, 0, 4, 9});
  GRAFT_ASSERT_OK_AND_ASSIGN(rev, RunUnary("cumsum", x, {1}, {{"reverse", true}}));
  ExpectTensor(rev, DType::kF32, {2, 3}, {6, 5, 3, 15, 11, 6});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      both, RunUnary("cumsum", x, {1}, {{"reverse", true}, {"exclusive", true}}));
  ExpectTensor(both, DType::kF32, {2, 3}, {5, 3, 0, 11, 6, 0});
  // Integers and bool sum in i64, as torch.cumsum does: no i8 overflow.
  GRAFT_ASSERT_OK_AND_ASSIGN(i8, RunUnary("cumsum", T(DType::kI8, {3}, {100, 100, 100}), {0}));
  ExpectTensor(i8, DType::kI64, {3}, {100, 200, 300});
  GRAFT_ASSERT_OK_AND_ASSIGN(b, RunUnary("cumsum", T(DType::kBool, {3}, {1, 0, 1}), {0}));
  ExpectTensor(b, DType::kI64, {3}, {1, 1, 2});
  // A scalar is its own sum; NaN spreads from where it is.
  GRAFT_ASSERT_OK_AND_ASSIGN(scalar, RunUnary("cumsum", F32({}, {7}), {0}));
  ExpectTensor(scalar, DType::kF32, {}, {7});
  GRAFT_ASSERT_OK_AND_ASSIGN(nan, RunUnary("cumsum", F32({3}, {1, kNaN, 3}), {0}));
  ExpectTensor(nan, DType::kF32, {3}, {1, kNaN, kNaN});
  EXPECT_FALSE(RunUnary("cumsum", x, {2}).ok());
}

}  // namespace
}  // namespace graft::interp_test
