// fold-constants, which computes values with the interpreter.

#include "passes/fold_constants.h"

#include "backends/interp/constant_evaluator.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "passes/constant_evaluator.h"
#include "passes/pipeline.h"
#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

using ::testing::HasSubstr;

Module ParseOrDie(absl::string_view text) {
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Module();
}

std::string Ops(const Graph& g) {
  std::string out;
  for (const Node* n : g.nodes()) {
    if (n->op() != OpCode::kCallFunction) continue;
    if (!out.empty()) out += " ";
    out += n->target();
  }
  return out;
}

// Gives each test's pass context the interpreter as its constant evaluator.
class FoldConstantsTest : public ::testing::Test {
 protected:
  void SetUp() override { ctx_.constant_evaluator = interp::EvaluateNode; }

  // Runs `pipeline` (fold-constants with options) and checks it verifies.
  bool Fold(Module& m, absl::string_view pipeline = "fold-constants") {
    absl::StatusOr<passes::Pipeline> p = passes::Pipeline::FromString(pipeline);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return false;
    absl::StatusOr<bool> changed = p->Run(m, ctx_);
    EXPECT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(Verify(m).ok()) << Verify(m);
    return changed.ok() && *changed;
  }

  // The tensor the graph's output reads through operand `i` of its value.
  const Tensor* OperandTensor(const Module& m, size_t i) {
    Node* value = m.graph().output()->arg(0).node();
    Node* attr = value->arg(i).node();
    EXPECT_EQ(attr->op(), OpCode::kGetAttr) << attr->Ref();
    return m.FindTensor(attr->target());
  }

  passes::PassContext ctx_;
};

TEST_F(FoldConstantsTest, ChainOfConstantOpsBecomesOneTensor) {
  Module m = ParseOrDie(R"(
tensor w : f32[2,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
graph():
    %x : f32[4,3] = placeholder[target=x]
    %w : f32[2,3] = get_attr[target=w]
    %t : f32[3,2] = call_function[target=transpose](args = (%w, 0, 1), kwargs = {})
    %s : f32[3,2] = call_function[target=mul](args = (%t, 2.0), kwargs = {})
    %y : f32[4,2] = call_function[target=matmul](args = (%x, %s), kwargs = {})
    return y
)");
  ASSERT_TRUE(Fold(m));
  EXPECT_EQ(Ops(m.graph()), "matmul");
  const Tensor* folded = OperandTensor(m, 1);
  ASSERT_NE(folded, nullptr);
  // transpose([[1,2,3],[4,5,6]]) * 2 = [[2,8],[4,10],[6,12]].
  ExpectTensor(*folded, DType::kF32, {3, 2}, {2, 8, 4, 10, 6, 12});
  Node* attr = m.graph().output()->arg(0).node()->arg(1).node();
  EXPECT_EQ(attr->target(), "s_folded");
  EXPECT_EQ(*attr->type(), (TensorType{DType::kF32, {3, 2}}));
  ASSERT_TRUE(attr->meta().provenance.has_value());
  EXPECT_EQ(attr->meta().provenance->pass, "fold-constants");
  // The intermediate transpose was never stored.
  EXPECT_EQ(m.FindTensor("t_folded"), nullptr);
}

TEST_F(FoldConstantsTest, CreationOpsFeedFoldsButStayWhenAlone) {
  Module m = ParseOrDie(R"(
graph():
    %x : f32[3] = placeholder[target=x]
    %z : f32[3] = call_function[target=zeros](args = ([3],), kwargs = {})
    %a : i64[3] = call_function[target=arange](args = (0, 3), kwargs = {})
    %c : f32[3] = call_function[target=cast](args = (%a,), kwargs = {dtype: f32})
    %s : f32[3] = call_function[target=sub](args = (%z, %c), kwargs = {})
    %y : f32[3] = call_function[target=add](args = (%x, %s), kwargs = {})
    %f : f32[3] = call_function[target=full](args = ([3], 2.0), kwargs = {})
    %r : f32[3] = call_function[target=mul](args = (%y, %f), kwargs = {})
    return r
)");
  ASSERT_TRUE(Fold(m));
  EXPECT_EQ(Ops(m.graph()), "add full mul");
  Node* add = m.graph().FindNode("y");
  const Tensor* s = m.FindTensor(add->arg(1).node()->target());
  ASSERT_NE(s, nullptr);
  ExpectTensor(*s, DType::kF32, {3}, {0, -1, -2});
}

TEST_F(FoldConstantsTest, RespectsMaxSize) {
  const char* text = R"(
tensor w : f32[4,4] = random(seed=1)
graph():
    %x : f32[4,4] = placeholder[target=x]
    %w : f32[4,4] = get_attr[target=w]
    %t : f32[4,4] = call_function[target=transpose](args = (%w, 0, 1), kwargs = {})
    %y : f32[4,4] = call_function[target=add](args = (%x, %t), kwargs = {})
    return y
)";
  Module small = ParseOrDie(text);
  EXPECT_FALSE(Fold(small, "fold-constants{max-size=15}"));
  EXPECT_EQ(Ops(small.graph()), "transpose add");
  Module big = ParseOrDie(text);
  EXPECT_TRUE(Fold(big, "fold-constants{max-size=16}"));
  EXPECT_EQ(Ops(big.graph()), "add");
}

TEST_F(FoldConstantsTest, TupleElementsFold) {
  Module m = ParseOrDie(R"(
tensor w : f32[4] = [1.0, 2.0, 3.0, 4.0]
graph():
    %x : f32[2] = placeholder[target=x]
    %w : f32[4] = get_attr[target=w]
    %s : (f32[2], f32[2]) = call_function[target=split](args = (%w, 2), kwargs = {})
    %g : f32[2] = call_function[target=getitem](args = (%s, 1), kwargs = {})
    %n : f32[2] = call_function[target=neg](args = (%g,), kwargs = {})
    %y : f32[2] = call_function[target=mul](args = (%x, %n), kwargs = {})
    return y
)");
  ASSERT_TRUE(Fold(m));
  EXPECT_EQ(Ops(m.graph()), "mul");
  ExpectTensor(*OperandTensor(m, 1), DType::kF32, {2}, {-3, -4});
}

TEST_F(FoldConstantsTest, NothingConstant) {
  Module m = ParseOrDie(R"(
graph():
    %x : f32[2] = placeholder[target=x]
    %y : f32[2] = call_function[target=relu](args = (%x,), kwargs = {})
    return y
)");
  EXPECT_FALSE(Fold(m));
  EXPECT_EQ(Ops(m.graph()), "relu");
}

TEST_F(FoldConstantsTest, NeedsAnEvaluator) {
  ctx_.constant_evaluator = nullptr;
  Module m = ParseOrDie(R"(
graph():
    %x : f32[2] = placeholder[target=x]
    return x
)");
  passes::FoldConstantsPass pass;
  absl::StatusOr<bool> r = pass.Run(m, ctx_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("PassContext::constant_evaluator"));
  ctx_.constant_evaluator = interp::EvaluateNode;
  EXPECT_TRUE(pass.Run(m, ctx_).ok());
}

TEST_F(FoldConstantsTest, EvaluateNodeRunsOneNode) {
  Module m = ParseOrDie(R"(
graph():
    %a : f32[2] = placeholder[target=a]
    %b : f32[2] = call_function[target=add](args = (%a, %a), kwargs = {})
    return b
)");
  GRAFT_ASSERT_OK_AND_ASSIGN(out, interp::EvaluateNode(*m.graph().FindNode("b"),
                                                       {F32({2}, {1.5, -2})}));
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2}, {3, -4});
  auto wrong = interp::EvaluateNode(*m.graph().FindNode("b"), {});
  EXPECT_FALSE(wrong.ok());
}

}  // namespace
}  // namespace graft::interp_test
