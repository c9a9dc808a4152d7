// ONNX's Loop unrolled at import, and sequences kept as lists of tensors:
// what they become, and the errors where either would decide at run time.
// Expected values are worked out here from the definitions.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx/onnx_test_util.h"

namespace graft::onnx_test {
namespace {

using ::testing::HasSubstr;

onnx::NodeProto* BodyNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> inputs,
                          std::vector<std::string> outputs) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("body_" + op + std::to_string(g->node_size()));
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return n;
}

// A Loop node with `inputs`, `outputs` and an empty body, whose formal
// inputs are named `body_inputs` and outputs `body_outputs`.
onnx::GraphProto* AddLoop(ModelBuilder& b, std::vector<std::string> inputs, std::vector<std::string> outputs,
                          std::vector<std::string> body_inputs, std::vector<std::string> body_outputs) {
  onnx::NodeProto* loop = b.Node("Loop", inputs, outputs, "loop");
  onnx::AttributeProto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* g = a->mutable_g();
  g->set_name("body");
  for (const std::string& i : body_inputs) g->add_input()->set_name(i);
  for (const std::string& o : body_outputs) g->add_output()->set_name(o);
  return g;
}

// acc(k+1) = acc(k) * 0.5 + x * k, from acc(0) = [1, 1], `trips` times
// (an initializer, or the model input "n"); the final acc and every
// iteration's (a scan output). x is read from the graph around the body.
ModelBuilder DecayLoop(bool trips_known, int64_t trips = 3) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  b.FloatInitializer("acc0", {2}, {1, 1});
  if (trips_known) {
    b.Int64Initializer("trips", {}, {trips});
  } else {
    b.Input("trips", TP::INT64, std::vector<int64_t>{});
  }
  onnx::GraphProto* g = AddLoop(b, {"trips", "", "acc0"}, {"acc", "steps"}, {"i", "cond", "acc_in"},
                                {"cond_out", "acc_out", "acc_out"});
  onnx::TensorProto* half = g->add_initializer();
  half->set_name("half");
  half->set_data_type(TP::FLOAT);
  half->add_float_data(0.5f);
  BodyNode(g, "Identity", {"cond"}, {"cond_out"});
  AttrInt(BodyNode(g, "Cast", {"i"}, {"fi"}), "to", TP::FLOAT);
  BodyNode(g, "Mul", {"acc_in", "half"}, {"decayed"});
  BodyNode(g, "Mul", {"x", "fi"}, {"xi"});
  BodyNode(g, "Add", {"decayed", "xi"}, {"acc_out"});
  b.Output("acc");
  b.Output("steps");
  return b;
}

TEST(OnnxLoop, AKnownTripCountRunsTheBodyThatManyTimes) {
  ModelBuilder b = DecayLoop(true);
  std::vector<Tensor> out = RunModel(b, {F32({2}, {2, -4})});
  ASSERT_EQ(out.size(), 2u);
  // [0.5, 0.5], then [0.25 + 2, 0.25 - 4], then [1.125 + 4, -1.875 - 8].
  ExpectTensor(out[0], DType::kF32, {2}, {5.125, -9.875});
  ExpectTensor(out[1], DType::kF32, {3, 2}, {0.5, 0.5, 2.25, -3.75, 5.125, -9.875});
}

// Without a trip count, until the body's condition is false: i < 2 after
// iterations 0 and 1, false after 2, so three iterations; with a trip
// count of 2 as well, two.
TEST(OnnxLoop, AConditionKnownEachIterationEndsTheLoop) {
  for (const bool bounded : {false, true}) {
    SCOPED_TRACE(bounded ? "trip count 2" : "no trip count");
    ModelBuilder b;
    b.FloatInput("x", {1});
    b.Int64Initializer("two", {}, {2});
    onnx::TensorProto* t = b.NewTensor("go", TP::BOOL, {});
    t->add_int32_data(1);
    onnx::GraphProto* g = AddLoop(b, {bounded ? "two" : "", "go"}, {"is"}, {"i", "cond"}, {"more", "fi"});
    BodyNode(g, "Less", {"i", "two"}, {"more"});
    AttrInt(BodyNode(g, "Cast", {"i"}, {"fi"}), "to", TP::FLOAT);
    b.Node("Add", {"is", "x"}, {"y"});
    b.Output("y");
    std::vector<Tensor> out = RunModel(b, {F32({1}, {10})});
    ASSERT_EQ(out.size(), 1u);
    if (bounded) {
      ExpectTensor(out[0], DType::kF32, {2}, {10, 11});
    } else {
      ExpectTensor(out[0], DType::kF32, {3}, {10, 11, 12});
    }
  }
}

TEST(OnnxLoop, WhatWouldDecideAtRunTimeIsRefusedByName) {
  ModelBuilder runtime_trips = DecayLoop(false);
  EXPECT_THAT(ImportError(runtime_trips),
              HasSubstr("node 'loop' (Loop): the trip count is computed at run time: graft imports a Loop only "
                        "when its trip count and condition are known at import"));

  // The body's condition from x: known only at run time.
  ModelBuilder runtime_condition;
  runtime_condition.FloatInput("x", {1});
  runtime_condition.NewTensor("go", TP::BOOL, {})->add_int32_data(1);
  onnx::GraphProto* g = AddLoop(runtime_condition, {"", "go"}, {"is"}, {"i", "cond"}, {"more", "x"});
  runtime_condition.FloatInitializer("zero", {1}, {0});
  BodyNode(g, "Less", {"x", "zero"}, {"more"});
  runtime_condition.Output("is");
  EXPECT_THAT(ImportError(runtime_condition), HasSubstr("the body's condition is computed at run time"));

  ModelBuilder endless = DecayLoop(true, int64_t{1} << 40);
  EXPECT_THAT(ImportError(endless), HasSubstr("runs more than 65536 iterations (graft unrolls a Loop at import)"));

  // No iteration: the carried value is the initial one, but a scan
  // output's shape is unknown.
  ModelBuilder none = DecayLoop(true, 0);
  EXPECT_THAT(ImportError(none), HasSubstr("runs no iteration, so the shape of its scan output 'steps' is unknown"));
  none.model().mutable_graph()->mutable_output()->RemoveLast();
  std::vector<Tensor> out = RunModel(none, {F32({2}, {2, -4})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2}, {1, 1});

  ModelBuilder malformed = DecayLoop(true);
  malformed.model().mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_input()->RemoveLast();
  EXPECT_THAT(ImportError(malformed), HasSubstr("its body has 2 inputs and 3 outputs; with 1 loop-carried values it "
                                                "needs 3 inputs"));
}

// A Loop in a Loop whose bodies both call their counter "i" (ONNX lets a
// subgraph's inputs reuse outer names) and make a value named "true":
// each reads its own. Inner scan: i_inner + 10 * i_outer.
TEST(OnnxLoop, NestedLoopsReadTheirOwnCounters) {
  ModelBuilder b;
  b.FloatInput("x", {1});
  b.Int64Initializer("two", {}, {2});
  b.Int64Initializer("three", {}, {3});
  onnx::GraphProto* outer = AddLoop(b, {"two", ""}, {"grid"}, {"i", "cond"}, {"cond", "row"});
  AttrInt(BodyNode(outer, "Cast", {"i"}, {"true"}), "to", TP::FLOAT);  // 10 * i below.
  onnx::TensorProto* ten = outer->add_initializer();
  ten->set_name("ten");
  ten->set_data_type(TP::FLOAT);
  ten->add_float_data(10);
  BodyNode(outer, "Mul", {"true", "ten"}, {"tens"});
  onnx::NodeProto* inner = BodyNode(outer, "Loop", {"three", ""}, {"row"});
  onnx::AttributeProto* a = inner->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* g = a->mutable_g();
  g->add_input()->set_name("i");
  g->add_input()->set_name("c");
  g->add_output()->set_name("c");
  g->add_output()->set_name("v");
  AttrInt(BodyNode(g, "Cast", {"i"}, {"fi"}), "to", TP::FLOAT);
  BodyNode(g, "Add", {"fi", "tens"}, {"v"});
  b.Node("Add", {"grid", "x"}, {"y"});
  b.Output("y");
  std::vector<Tensor> out = RunModel(b, {F32({1}, {0.5})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2, 3}, {0.5, 1.5, 2.5, 10.5, 11.5, 12.5});
}

TEST(OnnxLoop, ANegativeOrFloatTripCount) {
  ModelBuilder negative = DecayLoop(true, -5);
  negative.model().mutable_graph()->mutable_output()->RemoveLast();
  std::vector<Tensor> out = RunModel(negative, {F32({2}, {2, -4})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2}, {1, 1});
  ModelBuilder fractional = DecayLoop(true);
  onnx::TensorProto* trips = fractional.model().mutable_graph()->mutable_initializer(1);
  trips->clear_int64_data();
  trips->set_data_type(TP::FLOAT);
  trips->add_float_data(NAN);
  EXPECT_THAT(ImportError(fractional), HasSubstr("the trip count is f32, not an integer"));
}

// x [2, 5] split into pieces along dim 1, the pieces rearranged by
// position, and joined again.
TEST(OnnxSequences, SplitRearrangeAndJoin) {
  ModelBuilder b;
  b.FloatInput("x", {2, 5});
  b.Int64Initializer("sizes", {2}, {2, 3});
  b.Int64Initializer("first", {}, {0});
  b.Int64Initializer("last", {}, {-1});
  AttrInt(b.Node("SplitToSequence", {"x", "sizes"}, {"pieces"}), "axis", 1);
  b.Node("SequenceAt", {"pieces", "last"}, {"tail"});                // x[:, 2:5]
  b.Node("SequenceInsert", {"pieces", "tail", "first"}, {"three"});  // tail, head, tail
  b.Node("SequenceErase", {"three"}, {"two"});                       // tail, head
  AttrInt(b.Node("ConcatFromSequence", {"two"}, {"rotated"}), "axis", 1);
  b.Node("SequenceLength", {"three"}, {"length"});
  // Columns one by one without their dim, stacked as rows: x transposed.
  onnx::NodeProto* columns = b.Node("SplitToSequence", {"x"}, {"columns"});
  AttrInt(columns, "axis", 1);
  AttrInt(columns, "keepdims", 0);
  onnx::NodeProto* stacked = b.Node("ConcatFromSequence", {"columns"}, {"transposed"});
  AttrInt(stacked, "axis", 0);
  AttrInt(stacked, "new_axis", 1);
  for (const char* o : {"rotated", "length", "transposed"}) b.Output(o);
  std::vector<Tensor> out = RunModel(b, {F32({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF32, {2, 5}, {2, 3, 4, 0, 1, 7, 8, 9, 5, 6});
  ExpectTensor(out[1], DType::kI64, {}, {3});
  ExpectTensor(out[2], DType::kF32, {5, 2}, {0, 5, 1, 6, 2, 7, 3, 8, 4, 9});
}

// A list a scripted loop appends to: an empty sequence carried through the
// iterations, each inserting its value, joined after the loop.
TEST(OnnxSequences, ALoopAppendsToACarriedSequence) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  b.Int64Initializer("trips", {}, {3});
  b.Node("SequenceEmpty", {}, {"empty"});
  onnx::GraphProto* g = AddLoop(b, {"trips", "", "empty"}, {"list"}, {"i", "cond", "list_in"},
                                {"cond", "list_out"});
  AttrInt(BodyNode(g, "Cast", {"i"}, {"fi"}), "to", TP::FLOAT);
  BodyNode(g, "Mul", {"x", "fi"}, {"xi"});
  BodyNode(g, "SequenceInsert", {"list_in", "xi"}, {"list_out"});
  AttrInt(b.Node("ConcatFromSequence", {"list"}, {"y"}), "axis", 0);
  b.Output("y");
  std::vector<Tensor> out = RunModel(b, {F32({2}, {1, -2})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {6}, {0, 0, 1, -2, 2, -4});
}

TEST(OnnxSequences, PositionsMustBeKnownAndInRange) {
  ModelBuilder runtime;
  runtime.FloatInput("x", {2, 4});
  runtime.Input("p", TP::INT64, std::vector<int64_t>{});
  runtime.Node("SplitToSequence", {"x"}, {"rows"});
  runtime.Node("SequenceAt", {"rows", "p"}, {"y"}, "at");
  runtime.Output("y");
  EXPECT_THAT(ImportError(runtime), HasSubstr("node 'at' (SequenceAt): the position 'p' is computed at run time"));

  ModelBuilder outside;
  outside.FloatInput("x", {2, 4});
  outside.Int64Initializer("p", {}, {-3});
  outside.Node("SplitToSequence", {"x"}, {"rows"});
  outside.Node("SequenceAt", {"rows", "p"}, {"y"}, "at");
  outside.Output("y");
  EXPECT_THAT(ImportError(outside), HasSubstr("the position -3 is outside [-2, 1] for a sequence of 2"));

  ModelBuilder as_tensor;
  as_tensor.FloatInput("x", {2, 4});
  as_tensor.Node("SplitToSequence", {"x"}, {"rows"});
  as_tensor.Node("Relu", {"rows"}, {"y"}, "relu");
  as_tensor.Output("y");
  EXPECT_THAT(ImportError(as_tensor), HasSubstr("node 'relu' (Relu): input 'rows' is a sequence, where a tensor is "
                                                "expected"));

  ModelBuilder as_output;
  as_output.FloatInput("x", {2, 4});
  as_output.Node("SplitToSequence", {"x"}, {"rows"});
  as_output.Output("rows");
  EXPECT_THAT(ImportError(as_output), HasSubstr("graph output 'rows' is a sequence: graft's outputs are tensors"));

  ModelBuilder empty;
  empty.Node("SequenceEmpty", {}, {"none"});
  AttrInt(empty.Node("ConcatFromSequence", {"none"}, {"y"}, "concat"), "axis", 0);
  empty.Output("y");
  EXPECT_THAT(ImportError(empty), HasSubstr("concatenates an empty sequence"));
}

}  // namespace
}  // namespace graft::onnx_test
