// FoldDequantizedWeights: the dequantized constant weights of a quantized
// model's reference graph become module tensors whose values are the
// interpreter's dequantize, bit for bit; dequantizes that something other
// than a product's weight reads, or of values computed at run time, stay.

#include "backends/fold_dequantized_weights.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/interp/constant_evaluator.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"
#include "tests/backends/differential_test_util.h"

namespace graft::differential {
namespace {

// The interpreter's value of `dequantize`, from its inputs' module tensors.
Tensor InterpreterValue(const Module& m, const Node& dequantize) {
  std::vector<Tensor> inputs;
  for (const Node* in : dequantize.unique_inputs()) inputs.push_back(*m.FindTensor(in->target()));
  absl::StatusOr<std::vector<Tensor>> out = interp::EvaluateNode(dequantize, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

void ExpectSameBits(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.type(), want.type());
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.NumBytes()), 0);
}

TEST(FoldDequantizedWeights, ProductWeightsBecomeTheInterpretersValues) {
  std::mt19937_64 rng(7);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {2, 3, 8, 8});
  // Per channel (axis 0, zero points a tensor), as quantize-convert writes
  // convolution weights; per tensor with numbers, as a QDQ export may.
  Node* conv_w = b.Call("dequantize", {b.Const(DType::kI8, {4, 3, 3, 3}, -128, 127),
                                       b.Const(DType::kF32, {4}, 0.001, 0.1),
                                       b.Const(DType::kI64, {4}, -3, 3)},
                        {{"axis", int64_t{0}}});
  Node* y = b.Call("conv2d", {x, conv_w});
  Node* linear_w =
      b.Call("dequantize", {b.Const(DType::kU8, {5, 6}, 0, 255), 0.0371, int64_t{128}});
  Node* z = b.Call("linear", {b.Call("reshape", {y, Argument::IntList({-1, 6})}), linear_w});
  // f8e4m3 weights, as `graft quantize --dtype fp8` stores them.
  Node* fp8_w = b.Call("dequantize", {b.Const(DType::kF8E4M3, {3, 5}, -4, 4), 0.125, int64_t{0}});
  Node* fp8_product = b.Call("linear", {b.In(DType::kF32, {2, 5}), fp8_w});
  // Read as a product's input, and by an add: not weights.
  Node* as_input = b.Call("dequantize", {b.Const(DType::kI8, {3, 5}, -128, 127), 0.5, int64_t{0}});
  Node* p = b.Call("matmul", {as_input, b.Const(DType::kF32, {5, 2})});
  Node* added = b.Call("dequantize", {b.Const(DType::kI8, {2}, -128, 127), 0.25, int64_t{0}});
  b.Out({z, p, b.Call("add", {p, added}), fp8_product});
  Module m = b.module().Clone();
  // Each product's weight as the interpreter computes it, by product name.
  std::map<std::string, Tensor> want;
  for (const Node* n : m.graph().nodes()) {
    if (n->is_call("conv2d") || n->is_call("linear")) {
      want[n->name()] = InterpreterValue(m, *n->arg(1).node());
    }
  }
  ASSERT_EQ(want.size(), 3u);

  absl::StatusOr<bool> changed = FoldDequantizedWeights(m);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(m).ok()) << Verify(m) << "\n" << PrintModule(m);
  int dequantizes = 0;
  for (const Node* n : m.graph().nodes()) {
    dequantizes += n->is_call("dequantize");
    if (!n->is_call("conv2d") && !n->is_call("linear")) continue;
    const Node* weight = n->arg(1).node();
    ASSERT_EQ(weight->op(), OpCode::kGetAttr) << PrintModule(m);
    ExpectSameBits(*m.FindTensor(weight->target()), want.at(n->name()));
  }
  EXPECT_EQ(dequantizes, 2) << PrintModule(m);
  // The int8 weights no graph node reads any more are gone from it.
  int get_attrs = 0;
  for (const Node* n : m.graph().nodes()) get_attrs += n->op() == OpCode::kGetAttr;
  EXPECT_EQ(get_attrs, 3 + 2 + 1) << PrintModule(m);
}

// A weight computed at run time, or one whose scales are, is left for the
// run to compute.
TEST(FoldDequantizedWeights, LeavesWhatIsNotAConstant) {
  std::mt19937_64 rng(8);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {2, 6});
  Node* q = b.In(DType::kI8, {4, 6}, -128, 127);
  Node* computed = b.Call("dequantize", {q, 0.1, int64_t{0}});
  Node* scales = b.In(DType::kF32, {4}, 0.01, 0.1);
  Node* by_computed_scales = b.Call("dequantize", {b.Const(DType::kI8, {4, 6}, -128, 127), scales, int64_t{0}},
                     {{"axis", int64_t{0}}});
  b.Out({b.Call("linear", {x, computed}), b.Call("linear", {x, by_computed_scales})});
  Module m = b.module().Clone();
  absl::StatusOr<bool> changed = FoldDequantizedWeights(m);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace graft::differential
