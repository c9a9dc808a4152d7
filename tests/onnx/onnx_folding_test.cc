// The import-time evaluator of ONNX shape arithmetic, on its own: results
// worked out by hand from the ONNX operator specifications, and values
// with symbolic dims.

#include "gtest/gtest.h"

#ifdef GRAFT_HAVE_ONNX

#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "onnx/onnx_folding.h"

namespace graft::onnx_import {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int64_t> Ints(const FoldValue& v) {
  std::vector<int64_t> out;
  for (const FoldElem& e : v.elems) out.push_back(e.i);
  return out;
}

FoldValue IntTensor(std::vector<int64_t> dims, std::vector<int64_t> values) {
  FoldValue v = FoldValue::Ints(values);
  v.dims = std::move(dims);
  return v;
}

const Folder kFolder(1000);

TEST(OnnxFolding, GatherWithNegativeIndices) {
  FoldValue data = IntTensor({2, 3}, {0, 1, 2, 3, 4, 5});
  absl::StatusOr<FoldValue> r =
      kFolder.Gather(data, FoldValue::Ints({-1, 0}), 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->dims, ElementsAre(2, 2));
  EXPECT_THAT(Ints(*r), ElementsAre(2, 0, 5, 3));
  r = kFolder.Gather(data, FoldValue::Ints({3}), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("index 3 is out of range"));
}

TEST(OnnxFolding, SliceClampsAndStepsBackwards) {
  FoldValue v = FoldValue::Ints({0, 1, 2, 3, 4});
  absl::StatusOr<FoldValue> r =
      kFolder.Slice(v, {-1}, {std::numeric_limits<int64_t>::min()}, {}, {-2});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Ints(*r), ElementsAre(4, 2, 0));
  r = kFolder.Slice(v, {1}, {100}, {0}, {1});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Ints(*r), ElementsAre(1, 2, 3, 4));
  r = kFolder.Slice(v, {3}, {1}, {}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->elems.empty());
}

TEST(OnnxFolding, ConcatUnsqueezeReshape) {
  FoldValue a = FoldValue::Scalar(DType::kI64, FoldElem::Int(2));
  absl::StatusOr<FoldValue> u = kFolder.Unsqueeze(a, {0});
  ASSERT_TRUE(u.ok());
  EXPECT_THAT(u->dims, ElementsAre(1));
  FoldValue b = FoldValue::Ints({-1, 4});
  absl::StatusOr<FoldValue> c = kFolder.Concat({&*u, &b}, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(Ints(*c), ElementsAre(2, -1, 4));
  FoldValue data = IntTensor({2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  absl::StatusOr<FoldValue> r = kFolder.Reshape(data, {0, -1, 3}, false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->dims, ElementsAre(2, 2, 3));
  r = kFolder.Reshape(data, {5, -1}, false);
  ASSERT_FALSE(r.ok());
}

TEST(OnnxFolding, RangeAndConstantOfShape) {
  auto scalar = [](int64_t v) {
    return FoldValue::Scalar(DType::kI64, FoldElem::Int(v));
  };
  absl::StatusOr<FoldValue> r =
      kFolder.Range(scalar(10), scalar(1), scalar(-4));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Ints(*r), ElementsAre(10, 6, 2));
  r = kFolder.Range(scalar(5), scalar(5), scalar(1));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->elems.empty());
  r = kFolder.Range(scalar(0), scalar(1000000), scalar(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  absl::StatusOr<FoldValue> c = kFolder.ConstantOfShape({2, 2}, scalar(3));
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(Ints(*c), ElementsAre(3, 3, 3, 3));
}

TEST(OnnxFolding, IntegerArithmeticFollowsOnnx) {
  FoldValue a = FoldValue::Ints({7, -7, 7});
  FoldValue b = FoldValue::Ints({2, 2, -2});
  absl::StatusOr<FoldValue> div = kFolder.Binary("Div", a, b);
  ASSERT_TRUE(div.ok());
  EXPECT_THAT(Ints(*div), ElementsAre(3, -3, -3));
  absl::StatusOr<FoldValue> mod = kFolder.Binary("Mod", a, b);
  ASSERT_TRUE(mod.ok());
  EXPECT_THAT(Ints(*mod), ElementsAre(1, 1, -1));
  absl::StatusOr<FoldValue> eq =
      kFolder.Binary("Equal", a, FoldValue::Ints({7}));
  ASSERT_TRUE(eq.ok());
  EXPECT_EQ(eq->dtype, DType::kBool);
  EXPECT_THAT(Ints(*eq), ElementsAre(1, 0, 1));
  absl::StatusOr<FoldValue> zero =
      kFolder.Binary("Div", a, FoldValue::Ints({0}));
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), HasSubstr("division by zero"));
}

TEST(OnnxFolding, SymbolicDims) {
  Shape shape = {Dim::Symbol("batch"), Dim(3)};
  absl::StatusOr<FoldValue> s = kFolder.Shape(shape, 0, std::nullopt);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->HasSymbols());
  EXPECT_EQ(s->SymbolNames(), "'batch'");
  // [batch, 3] * 2 = [2*batch, 6], and / 2 gives batch back.
  absl::StatusOr<FoldValue> twice =
      kFolder.Binary("Mul", *s, FoldValue::Ints({2}));
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_EQ(twice->elems[0].sym.ToString(), "2*batch");
  EXPECT_EQ(twice->elems[1].i, 6);
  absl::StatusOr<FoldValue> back =
      kFolder.Binary("Div", *twice, FoldValue::Ints({2}));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->elems[0].sym, Dim::Symbol("batch"));
  // A dim is never -1: exporters' Equal(shape, -1) folds.
  absl::StatusOr<FoldValue> eq =
      kFolder.Binary("Equal", *s, FoldValue::Ints({-1}));
  ASSERT_TRUE(eq.ok());
  EXPECT_THAT(Ints(*eq), ElementsAre(0, 0));
  // batch + 1 is no dim graft can name.
  absl::StatusOr<FoldValue> plus =
      kFolder.Binary("Add", *s, FoldValue::Ints({1}));
  ASSERT_FALSE(plus.ok());
  EXPECT_THAT(plus.status().message(), HasSubstr("symbolic dim batch"));
  // Gathering the static dim gives a plain constant.
  absl::StatusOr<FoldValue> d1 =
      kFolder.Gather(*s, FoldValue::Scalar(DType::kI64, FoldElem::Int(1)), 0);
  ASSERT_TRUE(d1.ok());
  EXPECT_FALSE(d1->HasSymbols());
  EXPECT_EQ(d1->elems[0].i, 3);
  absl::StatusOr<FoldValue> prod = kFolder.Reduce("ReduceProd", *s, {}, false);
  ASSERT_TRUE(prod.ok());
  EXPECT_EQ(prod->elems[0].sym.ToString(), "3*batch");
}

TEST(OnnxFolding, CastRoundsAndTruncates) {
  FoldValue f;
  f.dtype = DType::kF64;
  f.dims = {3};
  for (double v : {2.7, -2.7, 1e30}) f.elems.push_back(FoldElem::Float(v));
  absl::StatusOr<FoldValue> i = kFolder.Cast(f, DType::kI32);
  ASSERT_TRUE(i.ok());
  EXPECT_THAT(Ints(*i), ElementsAre(2, -2, 2147483647));
  absl::StatusOr<FoldValue> h = kFolder.Cast(f, DType::kF32);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->elems[0].f, static_cast<double>(2.7f));
}

}  // namespace
}  // namespace graft::onnx_import

#else  // !GRAFT_HAVE_ONNX

TEST(OnnxFolding, NeedsOnnx) {
  GTEST_SKIP() << "graft was built without ONNX (libonnx-dev)";
}

#endif  // GRAFT_HAVE_ONNX
