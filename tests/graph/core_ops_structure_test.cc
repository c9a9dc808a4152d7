// Type rules of getitem, identity and dropout (graph/core_ops_structure.cc).

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/op_type_test_util.h"

namespace graft {
namespace {

using op_test::ErrorOf;
using op_test::HasType;
using op_test::Sym;
using op_test::T;
using ::testing::HasSubstr;

using StructureTest = op_test::OpTypeTest;

TEST_F(StructureTest, IdentityAndDropoutKeepTheType) {
  Node* x = Input(DType::kBF16, {Sym("batch"), 16});
  EXPECT_TRUE(
      HasType(Infer("identity", {x}), T(DType::kBF16, {Sym("batch"), 16})));
  EXPECT_TRUE(
      HasType(Infer("dropout", {x}), T(DType::kBF16, {Sym("batch"), 16})));
  EXPECT_TRUE(HasType(Infer("dropout", {x, 0.1, true}),
                      T(DType::kBF16, {Sym("batch"), 16})));
  EXPECT_THAT(ErrorOf(Infer("dropout", {x, 1.5})),
              HasSubstr("dropout: p must be in [0, 1], got 1.5"));
}

TEST_F(StructureTest, GetitemOfATupleNode) {
  // A tuple-valued node as any producer may leave it (meta.tuple_types).
  Node* x = Input(DType::kF32, {4});
  Node* pair = graph_.CallFunction("split", {x, 2});
  pair->meta().tuple_types = {T(DType::kF32, {2}), T(DType::kI64, {2})};
  EXPECT_TRUE(HasType(Infer("getitem", {pair, 1}), T(DType::kI64, {2})));
  EXPECT_TRUE(HasType(Infer("getitem", {pair, -2}), T(DType::kF32, {2})));
  EXPECT_THAT(ErrorOf(Infer("getitem", {pair, -3})),
              HasSubstr("getitem: index -3 out of range"));
}

TEST_F(StructureTest, UntypedInputsAreUnknownNotErrors) {
  Node* x = graph_.Placeholder("x");
  Node* relu = graph_.CallFunction("relu", {x});
  absl::StatusOr<std::optional<std::vector<TensorType>>> t =
      InferNodeTypes(*relu);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(t->has_value());
}

}  // namespace
}  // namespace graft
