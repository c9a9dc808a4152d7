// Views of views: the strides of a reshape of a strided view, and step
// programs where a view reads through the views before it (q, k and v
// split from one product and permuted per head: one copy each). The
// backends' results for such chains are checked against the interpreter
// in tests/orc and tests/cuda.

#include <optional>
#include <vector>

#include "backends/step_program.h"
#include "backends/strided_view.h"
#include "gtest/gtest.h"
#include "passes/shape_prop.h"
#include "support/status_matchers.h"

namespace graft {
namespace {

using Dims = std::vector<int64_t>;

TEST(ReshapeStrides, SplitsAndMergesWhatStaysStrided) {
  // A third of the last dim of [8, 256, 2304], split into 12 heads of 64.
  EXPECT_EQ(ReshapeStrides({8, 256, 768}, {589824, 2304, 1}, {8, 256, 12, 64}),
            std::optional<Dims>(Dims{589824, 2304, 64, 1}));
  // Merging rows of a dense matrix, and merging them back.
  EXPECT_EQ(ReshapeStrides({4, 6}, {6, 1}, {2, 12}), std::optional<Dims>(Dims{12, 1}));
  EXPECT_EQ(ReshapeStrides({2, 12}, {12, 1}, {24}), std::optional<Dims>(Dims{1}));
  // A column slice [4, 3] of a [4, 6] matrix keeps its rows apart.
  EXPECT_EQ(ReshapeStrides({4, 3}, {6, 1}, {2, 2, 3}), std::optional<Dims>(Dims{12, 6, 1}));
  EXPECT_EQ(ReshapeStrides({4, 3}, {6, 1}, {12}), std::nullopt);
  // A transposed matrix cannot be flattened without a copy.
  EXPECT_EQ(ReshapeStrides({2, 3}, {1, 2}, {6}), std::nullopt);
  // Element counts must agree.
  EXPECT_EQ(ReshapeStrides({2, 3}, {3, 1}, {7}), std::nullopt);
}

// x [2, 4, 12] -> split in three along the last dim -> each [2, 4, 2, 2]
// -> permute to heads [2, 2, 4, 2]; k also transposed [2, 2, 2, 4].
Module Heads(bool getitem_is_output) {
  Module module;
  Graph& g = module.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {2, 4, 12}});
  Node* split = g.CallFunction("split", {x, int64_t{4}}, {{"dim", int64_t{-1}}});
  std::vector<Node*> outs;
  for (int64_t i = 0; i < 3; ++i) {
    Node* piece = g.CallFunction("getitem", {split, i});
    Node* heads = g.CallFunction("reshape", {piece, Argument::IntList({2, 4, 2, 2})});
    Node* perm = g.CallFunction("permute", {heads, Argument::IntList({0, 2, 1, 3})});
    if (i == 1) perm = g.CallFunction("transpose", {perm, int64_t{-2}, int64_t{-1}});
    outs.push_back(perm);
    if (i == 2 && getitem_is_output) outs.push_back(piece);
  }
  ArgumentList list;
  for (Node* n : outs) list.push_back(n);
  g.Output(Argument(std::move(list)));
  EXPECT_OK(passes::PropagateShapes(module).status());
  return module;
}

StepTarget AnyTarget() {
  return {.can_lower = [](const Node&) { return absl::OkStatus(); },
          .is_library_call = [](const Node&) { return false; },
          .absorbs_activation = [](const Node&, absl::string_view) { return false; }};
}

TEST(ViewComposition, HeadsReadTheProductOnceEach) {
  const Module module = Heads(false);
  ASSERT_OK_AND_ASSIGN(
      StepProgram p,
      BuildStepProgram(module, {TensorType{DType::kF32, {2, 4, 12}}}, AnyTarget()));
  int copies = 0, elided = 0;
  for (const Step& step : p.steps) {
    ASSERT_EQ(step.kind, StepKind::kView) << step.node->name();
    if (step.elided) {
      ++elided;
      continue;
    }
    ++copies;
    // Each copy that runs reads x itself, composed through its views.
    ASSERT_EQ(step.inputs.size(), 1u);
    EXPECT_EQ(step.inputs[0]->name(), "x") << step.node->name();
    EXPECT_EQ(step.operands[0].where, BufferRef::Where::kInput);
    ASSERT_TRUE(step.view_source.has_value()) << step.node->name();
  }
  // q, k^T, v run; the three getitems and k's permute do not, and take no
  // memory: the copies write the outputs, so the arena is empty.
  EXPECT_EQ(copies, 3);
  EXPECT_EQ(elided, 4);
  EXPECT_EQ(p.arena_bytes, 0u);
  // k^T [2, 2, 2, 4]: element (b, h, d, t) of x [2, 4, 12] at
  // b*48 + t*12 + 4 (k's third) + h*2 + d.
  for (const Step& step : p.steps) {
    if (!step.node->is_call("transpose")) continue;
    EXPECT_EQ(step.view_source->offset, 4);
    EXPECT_EQ(step.view_source->strides, (Dims{48, 2, 1, 12}));
  }
}

TEST(ViewComposition, AViewThatIsAlsoAnOutputStillRuns) {
  const Module module = Heads(true);
  ASSERT_OK_AND_ASSIGN(
      StepProgram p,
      BuildStepProgram(module, {TensorType{DType::kF32, {2, 4, 12}}}, AnyTarget()));
  int getitems_run = 0;
  for (const Step& step : p.steps) {
    getitems_run += step.node->is_call("getitem") && !step.elided ? 1 : 0;
  }
  EXPECT_EQ(getitems_run, 1);  // v's piece, an output; q's and k's are read through.
}

}  // namespace
}  // namespace graft
