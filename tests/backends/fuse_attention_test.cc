// passes/fuse_attention.h and the interpreter's graft::attention: the
// fused module computes what the written-out attention computes (run by the
// interpreter's separate matmul, where and softmax kernels), in every form
// the pass accepts; what it must not fuse stays as it was.

#include "passes/fuse_attention.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "graph/float_limits.h"
#include "graph/fused_ops.h"
#include "graph/op_registry.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tests/backends/attention_models.h"
#include "tests/backends/interp_test_util.h"
#include "tests/backends/model_files.h"
#include "passes/shape_prop.h"
#include "serialize/model_io.h"

namespace graft::differential {
namespace {

using Mask = AttentionSpec::Mask;

// A fresh seed per test, printed with every failure of the test.
#define ATTENTION_TEST_SEED(rng)                               \
  const uint32_t seed_##rng = interp_test::FreshSeed();        \
  SCOPED_TRACE(::testing::Message() << "seed " << seed_##rng); \
  std::mt19937_64 rng(seed_##rng)

std::vector<const Node*> AttentionNodes(const Module& m) {
  std::vector<const Node*> found;
  for (const Node* n : m.graph().nodes()) {
    if (n->is_call(kAttentionOp)) found.push_back(n);
  }
  return found;
}

// Fuses a copy of `b`'s module (accepting every fusion) and checks it
// against the written-out module on the interpreter; returns the copy.
Module FuseAndCompare(const ModuleBuilder& b, double tol) {
  Module fused = b.module().Clone();
  absl::StatusOr<int> n =
      passes::FuseAttention(fused, [](const Node&) { return true; });
  EXPECT_OK(n.status());
  fused.graph().Cleanup();
  std::unique_ptr<Executable> want_exe =
      Interp().Compile(b.module(), {}).value();
  std::unique_ptr<Executable> got_exe = Interp().Compile(fused, {}).value();
  std::vector<Tensor> want = want_exe->Run(b.inputs()).value();
  std::vector<Tensor> got = got_exe->Run(b.inputs()).value();
  ExpectAllClose(got, want, tol);
  return fused;
}

// Filled with -inf or with the dtype's lowest value (torch.finfo's min,
// which a bf16 cast of an f32 model keeps finite).
TEST(FuseAttention, ACausalMaskTensorBecomesCausal) {
  ATTENTION_TEST_SEED(rng);
  for (DType dtype : {DType::kF64, DType::kF32}) {
    for (bool packed : {false, true}) {
      for (bool lowest : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(dtype) << (packed ? " packed q, k, v" : "")
                     << (lowest ? " lowest fill" : ""));
        ModuleBuilder b(rng);
        AttentionSpec spec;
        spec.dtype = dtype;
        spec.packed_qkv = packed;
        if (lowest) spec.fill = -LargestFinite(dtype);
        b.Out({WrittenOutAttention(b, spec, rng)});
        Module fused = FuseAndCompare(b, dtype == DType::kF64 ? 1e-12 : 1e-5);
        std::vector<const Node*> found = AttentionNodes(fused);
        ASSERT_EQ(found.size(), 1u) << PrintModule(fused);
        ASSERT_OK_AND_ASSIGN(OpCall call, OpCall::Bind(*found[0]));
        EXPECT_TRUE(call.Bool("causal"));
        EXPECT_TRUE(call.IsNone("mask"));
        EXPECT_DOUBLE_EQ(call.Float("scale"), 0.35);
        for (const char* gone : {"softmax", "where", "mul"}) {
          for (const Node* n : fused.graph().nodes())
            EXPECT_FALSE(n->is_call(gone)) << gone;
        }
      }
    }
  }
}

TEST(FuseAttention, OtherMasksScalesAndKeysStayExact) {
  ATTENTION_TEST_SEED(rng);
  struct Case {
    Mask mask;
    double fill;
    bool divide, permute;
    std::vector<int64_t> lead;
    int64_t t, s;
  };
  const std::vector<Case> cases = {
      {Mask::kFillWhereTrue, -INFINITY, false, true, {2, 3}, 9, 9},
      {Mask::kFillWhereTrue, -1e9, true, false, {2, 3}, 5, 11},
      {Mask::kKeepWhereTrue, -INFINITY, false, false, {4}, 7, 3},
      {Mask::kNone, 0, true, true, {2, 2}, 6, 6},
      // A finite fill above the diagonal is a mask, not causal.
      {Mask::kCausalTensor, -1e4, false, true, {1, 2}, 6, 6},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "mask " << static_cast<int>(c.mask) << " fill " << c.fill
                 << " t " << c.t << " s " << c.s);
    ModuleBuilder b(rng);
    AttentionSpec spec{.dtype = DType::kF64,
                       .lead = c.lead,
                       .t = c.t,
                       .s = c.s,
                       .d = 4,
                       .dv = 5,
                       .mask = c.mask,
                       .fill = c.fill,
                       .divide = c.divide,
                       .keys_by_permute = c.permute};
    b.Out({WrittenOutAttention(b, spec, rng)});
    Module fused = FuseAndCompare(b, 1e-12);
    std::vector<const Node*> found = AttentionNodes(fused);
    ASSERT_EQ(found.size(), 1u) << PrintModule(fused);
    ASSERT_OK_AND_ASSIGN(OpCall call, OpCall::Bind(*found[0]));
    EXPECT_FALSE(call.Bool("causal"));
    EXPECT_EQ(call.IsNone("mask"), c.mask == Mask::kNone);
  }
}

// A row whose keys are all masked is NaN both ways; so is one masked with
// f32's lowest in bf16, where the written-out where stores -inf (the fused
// op takes the fill as where stores it).
TEST(FuseAttention, ARowWithEveryKeyMaskedIsNaNBothWays) {
  ATTENTION_TEST_SEED(rng);
  for (const auto& [dtype, fill] :
       {std::pair<DType, double>{DType::kF64, -INFINITY},
        std::pair<DType, double>{DType::kBF16, -3.4028234663852886e38}}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b(rng);
    AttentionSpec spec{.dtype = dtype,
                       .lead = {1, 2},
                       .t = 3,
                       .s = 4,
                       .d = 4,
                       .dv = 5,
                       .mask = Mask::kFillWhereTrue,
                       .fill = fill,
                       .lo = -1,
                       .hi = 1};
    b.Out({WrittenOutAttention(b, spec, rng)});
    const Tensor& mask =
        b.inputs().back();  // [1, 1, 3, 4]: row 1 all masked, the rest none.
    for (int64_t j = 0; j < 12; ++j) mask.data<bool>()[j] = j / 4 == 1;
    Module fused = FuseAndCompare(b, dtype == DType::kF64 ? 1e-12 : 2e-2);
    std::vector<Tensor> got =
        Interp().Compile(fused, {}).value()->Run(b.inputs()).value();
    EXPECT_TRUE(std::isnan(got[0].GetAsDouble(1 * 5)));  // Head 0, query 1.
    EXPECT_FALSE(std::isnan(got[0].GetAsDouble(0)));
  }
}

// A mask tensor that broadcasts along the keys (all false: nothing is
// masked) is not the causal pattern, though it is false wherever j <= i.
TEST(FuseAttention, AMaskOfOtherDimsIsNotCausal) {
  ATTENTION_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* q = b.In(DType::kF64, {2, 6, 4});
  Node* k = b.In(DType::kF64, {2, 6, 4});
  Node* v = b.In(DType::kF64, {2, 6, 4});
  Node* none = b.Const(Tensor(DType::kBool, {1, 6, 1}));
  Node* scores = b.Call(
      "mul", {b.Call("matmul", {q, b.Call("transpose", {k, 1, 2})}), 0.5});
  scores = b.Call("where", {none, -INFINITY, scores});
  b.Out({b.Call("matmul", {b.Call("softmax", {scores, -1}), v})});
  Module fused = FuseAndCompare(b, 1e-12);
  std::vector<const Node*> found = AttentionNodes(fused);
  ASSERT_EQ(found.size(), 1u);
  ASSERT_OK_AND_ASSIGN(OpCall call, OpCall::Bind(*found[0]));
  EXPECT_FALSE(call.Bool("causal"));
  EXPECT_FALSE(call.IsNone("mask"));
}

TEST(FuseAttention, LeavesWhatItMustNotFuse) {
  ATTENTION_TEST_SEED(rng);
  auto unchanged = [](const ModuleBuilder& b, bool accept) {
    Module m = b.module().Clone();
    const std::string before = PrintModule(m);
    absl::StatusOr<int> n =
        passes::FuseAttention(m, [&](const Node&) { return accept; });
    ASSERT_OK(n.status());
    EXPECT_EQ(*n, 0);
    m.graph().Cleanup();
    EXPECT_EQ(PrintModule(m), before);
  };
  {
    // Refused by the backend.
    ModuleBuilder b(rng);
    b.Out({WrittenOutAttention(b, AttentionSpec{}, rng)});
    unchanged(b, false);
  }
  {
    // The probabilities are also an output.
    ModuleBuilder b(rng);
    Node* q = b.In(DType::kF32, {2, 5, 4});
    Node* k = b.In(DType::kF32, {2, 5, 4});
    Node* v = b.In(DType::kF32, {2, 5, 4});
    Node* p = b.Call(
        "softmax", {b.Call("matmul", {q, b.Call("transpose", {k, 1, 2})}), -1});
    b.Out({b.Call("matmul", {p, v}), p});
    unchanged(b, true);
  }
  {
    // The product broadcasts q over the heads; a softmax along dim 1.
    ModuleBuilder b(rng);
    Node* q = b.In(DType::kF32, {5, 4});
    Node* kt = b.In(DType::kF32, {3, 4, 5});
    Node* v = b.In(DType::kF32, {3, 5, 4});
    b.Out({b.Call("matmul",
                  {b.Call("softmax", {b.Call("matmul", {q, kt}), -1}), v}),
           b.Call("matmul",
                  {b.Call("softmax", {b.Call("matmul", {v, kt}), 1}), v})});
    unchanged(b, true);
  }
}

// ONNX's Attention (opset 23) imports as the ops the pass fuses where it
// has no mask: causal (a constant of the causal pattern once the lengths
// are known) and plain, grouped-query heads included; the fused module
// gives what the imported one gives.
TEST(FuseAttention, OnnxAttentionWithoutAMaskIsFused) {
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  absl::StatusOr<Module> m =
      LoadModel(backend_test::SourceDir() + "/tests/onnx_models/newer_opsets/attention/model.onnx");
  if (absl::IsUnimplemented(m.status())) GTEST_SKIP() << m.status();  // A build without ONNX.
  ASSERT_OK(m.status());
  ASSERT_OK(passes::PropagateShapes(*m).status());
  Module fused = m->Clone();
  ASSERT_OK_AND_ASSIGN(int n, passes::FuseAttention(fused, [](const Node&) { return true; }));
  fused.graph().Cleanup();
  // Of its five Attention nodes: causal with grouped-query heads (causal),
  // causal after past keys (a mask: its diagonal is shifted), and plain on
  // 3-D inputs; the two with attn_mask inputs stay.
  EXPECT_EQ(n, 3) << PrintModule(fused);
  int causal = 0;
  for (const Node* node : AttentionNodes(fused)) {
    ASSERT_OK_AND_ASSIGN(OpCall call, OpCall::Bind(*node));
    causal += call.Bool("causal") ? 1 : 0;
  }
  EXPECT_EQ(causal, 1);
  std::unique_ptr<Executable> want_exe = Interp().Compile(*m, {}).value();
  std::unique_ptr<Executable> got_exe = Interp().Compile(fused, {}).value();
  const std::vector<Tensor> inputs = backend_test::RandomInputs(want_exe->input_signature(), 7);
  ExpectAllClose(got_exe->Run(inputs).value(), want_exe->Run(inputs).value(), 1e-5);
}

}  // namespace
}  // namespace graft::differential
