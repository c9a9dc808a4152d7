// Nodes imported as other nodes: local functions (ModelProto.functions),
// If with a known condition, and ONNX Runtime's fused operators: what they
// become, attribute defaults of newer ONNX versions, and the errors of
// malformed ones. Expected values are worked out here from the
// definitions.

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"
#include "tests/onnx/onnx_test_util.h"

namespace graft::onnx_test {
namespace {

using ::testing::HasSubstr;

// Scale(x; factor) = x * factor, factor from the call (ref_attr_name).
onnx::FunctionProto* AddScaleFunction(ModelBuilder& b) {
  onnx::ModelProto& m = b.model();
  onnx::OperatorSetIdProto* id = m.add_opset_import();
  id->set_domain("local");
  id->set_version(1);
  onnx::FunctionProto* f = m.add_functions();
  f->set_name("Scale");
  f->set_domain("local");
  f->add_input("x");
  f->add_output("y");
  f->add_attribute("factor");
  *f->add_opset_import() = m.opset_import(0);
  onnx::NodeProto* c = f->add_node();
  c->set_op_type("Constant");
  c->add_output("f");
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value_float");
  a->set_ref_attr_name("factor");
  a->set_type(onnx::AttributeProto::FLOAT);
  onnx::NodeProto* mul = f->add_node();
  mul->set_op_type("Mul");
  mul->add_input("x");
  mul->add_input("f");
  mul->add_output("y");
  return f;
}

onnx::NodeProto* Call(ModelBuilder& b, const std::string& function, const std::string& in,
                      const std::string& out, const std::string& name) {
  onnx::NodeProto* n = b.Node(function, {in}, {out}, name);
  n->set_domain("local");
  return n;
}

TEST(OnnxLocalFunctions, EachCallTakesItsOwnAttributes) {
  ModelBuilder b;
  b.FloatInput("x", {3});
  AddScaleFunction(b);
  AttrFloat(Call(b, "Scale", "x", "a", "twice"), "factor", 2.0f);
  AttrFloat(Call(b, "Scale", "a", "y", "thrice"), "factor", 3.0f);
  b.Output("y");
  std::vector<Tensor> out = RunModel(b, {Tensor::FromVector<float>(DType::kF32, {3}, {1, -2, 0.5f})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {3}, {6, -12, 3});
}

// IR version 9 gives functions attribute defaults (attribute_proto, field
// 11), which graft's protobuf classes predate: they are read from the
// unknown fields.
TEST(OnnxLocalFunctions, AnOmittedAttributeTakesTheFunctionsDefault) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  onnx::FunctionProto* f = AddScaleFunction(b);
  f->clear_attribute();
  onnx::AttributeProto fallback;
  fallback.set_name("factor");
  fallback.set_type(onnx::AttributeProto::FLOAT);
  fallback.set_f(5.0f);
  f->mutable_unknown_fields()->AddLengthDelimited(11, fallback.SerializeAsString());
  Call(b, "Scale", "x", "y", "call");
  b.Output("y");
  std::vector<Tensor> out = RunModel(b, {Tensor::FromVector<float>(DType::kF32, {2}, {1, 2})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2}, {5, 10});
}

TEST(OnnxLocalFunctions, MalformedCallsAreRefusedByName) {
  ModelBuilder unknown_attribute;
  unknown_attribute.FloatInput("x", {2});
  AddScaleFunction(unknown_attribute);
  AttrFloat(Call(unknown_attribute, "Scale", "x", "y", "call"), "gain", 2.0f);
  unknown_attribute.Output("y");
  EXPECT_EQ(ImportError(unknown_attribute),
            "test.onnx: node 'call' (local.Scale): attribute 'gain' is not an attribute of local "
            "function 'Scale'");

  ModelBuilder too_many_inputs;
  too_many_inputs.FloatInput("x", {2});
  AddScaleFunction(too_many_inputs);
  onnx::NodeProto* n = Call(too_many_inputs, "Scale", "x", "y", "call");
  n->add_input("x");
  AttrFloat(n, "factor", 1.0f);
  too_many_inputs.Output("y");
  EXPECT_THAT(ImportError(too_many_inputs),
              HasSubstr("the call has 2 inputs and 1 outputs, but local function 'Scale' takes 1 and gives 1"));

  // A function that calls itself ends in an error, not a crash.
  ModelBuilder recursive;
  recursive.FloatInput("x", {2});
  onnx::FunctionProto* f = AddScaleFunction(recursive);
  f->mutable_node(1)->set_op_type("Scale");
  f->mutable_node(1)->set_domain("local");
  f->mutable_node(1)->clear_input();
  f->mutable_node(1)->add_input("x");
  onnx::AttributeProto* passed = f->mutable_node(1)->add_attribute();
  passed->set_name("factor");
  passed->set_ref_attr_name("factor");
  passed->set_type(onnx::AttributeProto::FLOAT);
  AttrFloat(Call(recursive, "Scale", "x", "y", "call"), "factor", 1.0f);
  recursive.Output("y");
  EXPECT_THAT(ImportError(recursive), HasSubstr("local function 'Scale' calls itself, directly or through others"));

  // Functions that each call the next twice: 2^30 calls of the last are
  // refused, not expanded.
  ModelBuilder doubling;
  doubling.FloatInput("x", {2});
  onnx::OperatorSetIdProto* local = doubling.model().add_opset_import();
  local->set_domain("local");
  local->set_version(1);
  for (int level = 0; level < 30; ++level) {
    onnx::FunctionProto* fn = doubling.model().add_functions();
    fn->set_name(absl::StrCat("F", level));
    fn->set_domain("local");
    fn->add_input("x");
    fn->add_output("y");
    for (int half = 0; half < 2; ++half) {
      onnx::NodeProto* inner = fn->add_node();
      inner->set_op_type(level == 29 ? "Relu" : absl::StrCat("F", level + 1));
      if (level != 29) inner->set_domain("local");
      inner->add_input(half == 0 ? "x" : "h");
      inner->add_output(half == 0 ? "h" : "y");
    }
  }
  Call(doubling, "F0", "x", "y", "call");
  doubling.Output("y");
  EXPECT_THAT(ImportError(doubling), HasSubstr("expand into more than 4194304 nodes"));

  // A chain of functions deeper than the importer inlines is refused while
  // it is sized, whatever its length.
  ModelBuilder deep;
  deep.FloatInput("x", {2});
  onnx::OperatorSetIdProto* deep_domain = deep.model().add_opset_import();
  deep_domain->set_domain("local");
  deep_domain->set_version(1);
  for (int level = 0; level < 5000; ++level) {
    onnx::FunctionProto* fn = deep.model().add_functions();
    fn->set_name(absl::StrCat("D", level));
    fn->set_domain("local");
    fn->add_input("x");
    fn->add_output("y");
    onnx::NodeProto* inner = fn->add_node();
    inner->set_op_type(level == 4999 ? "Relu" : absl::StrCat("D", level + 1));
    if (level != 4999) inner->set_domain("local");
    inner->add_input("x");
    inner->add_output("y");
  }
  Call(deep, "D0", "x", "y", "call");
  deep.Output("y");
  EXPECT_THAT(ImportError(deep), HasSubstr("local functions call each other more than 64 deep"));

  // A body holding a subgraph is refused (its names are not renamed).
  ModelBuilder nested_graph;
  nested_graph.FloatInput("x", {2});
  onnx::FunctionProto* h = AddScaleFunction(nested_graph);
  onnx::AttributeProto* branch = h->mutable_node(1)->add_attribute();
  branch->set_name("then_branch");
  branch->set_type(onnx::AttributeProto::GRAPH);
  branch->mutable_g()->set_name("branch");
  AttrFloat(Call(nested_graph, "Scale", "x", "y", "call"), "factor", 1.0f);
  nested_graph.Output("y");
  EXPECT_THAT(ImportError(nested_graph), HasSubstr("holds a subgraph (If, Loop, Scan), which graft does not inline"));

  // The error inside a body names the call and the body's node.
  ModelBuilder bad_body;
  bad_body.FloatInput("x", {2});
  onnx::FunctionProto* g = AddScaleFunction(bad_body);
  g->mutable_node(1)->set_op_type("NoSuchOp");
  AttrFloat(Call(bad_body, "Scale", "x", "y", "call"), "factor", 1.0f);
  bad_body.Output("y");
  EXPECT_THAT(ImportError(bad_body), HasSubstr("node 'call' (local.Scale): its NoSuchOp 'call/NoSuchOp1': op type 'NoSuchOp'"));
}

// An If on "is dim 0 of x above 2", folded from x's shape: Relu(x) when
// it is, Neg(x) * 2 (the 2 a branch initializer) when not.
ModelBuilder IfOnTheBatch(int64_t batch) {
  ModelBuilder b;
  b.FloatInput("x", {batch});
  b.Node("Shape", {"x"}, {"shape"});
  b.Int64Initializer("zero", {}, {0});
  b.Int64Initializer("two", {}, {2});
  b.Node("Gather", {"shape", "zero"}, {"dim"});
  b.Node("Greater", {"dim", "two"}, {"big"});
  onnx::NodeProto* n = b.Node("If", {"big"}, {"y"}, "if");
  onnx::AttributeProto* then_branch = n->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* g = then_branch->mutable_g();
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("x");
  relu->add_output("relu_out");
  g->add_output()->set_name("relu_out");
  onnx::AttributeProto* else_branch = n->add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* h = else_branch->mutable_g();
  onnx::TensorProto* factor = h->add_initializer();
  factor->set_name("factor");
  factor->set_data_type(onnx::TensorProto::FLOAT);
  factor->add_float_data(2.0f);
  onnx::NodeProto* neg = h->add_node();
  neg->set_op_type("Neg");
  neg->add_input("x");
  neg->add_output("neg_out");
  onnx::NodeProto* mul = h->add_node();
  mul->set_op_type("Mul");
  mul->add_input("neg_out");
  mul->add_input("factor");
  mul->add_output("scaled_out");
  h->add_output()->set_name("scaled_out");
  b.Output("y");
  return b;
}

TEST(OnnxControlFlow, AnIfWithAKnownConditionIsTheBranchItTakes) {
  ModelBuilder big = IfOnTheBatch(3);
  std::vector<Tensor> out = RunModel(big, {Tensor::FromVector<float>(DType::kF32, {3}, {-1, 2, -3})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {3}, {0, 2, 0});
  ModelBuilder small = IfOnTheBatch(2);
  out = RunModel(small, {Tensor::FromVector<float>(DType::kF32, {2}, {-1, 2})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2}, {2, -4});
}

// Two Ifs whose branches use the same local names (ONNX allows it: only
// outer names may not be shadowed).
TEST(OnnxControlFlow, SiblingBranchesMayShareLocalNames) {
  ModelBuilder b = IfOnTheBatch(3);
  onnx::NodeProto second = b.model().graph().node(3);
  second.set_name("if2");
  second.set_output(0, "y2");
  *b.model().mutable_graph()->add_node() = second;
  b.Output("y2");
  std::vector<Tensor> out = RunModel(b, {Tensor::FromVector<float>(DType::kF32, {3}, {-1, 2, -3})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[1], DType::kF32, {3}, {0, 2, 0});
}

TEST(OnnxControlFlow, AnIfOnARunTimeValueIsRefused) {
  ModelBuilder b = IfOnTheBatch(3);
  b.model().mutable_graph()->mutable_node(3)->set_input(0, "flag");
  b.Input("flag", onnx::TensorProto::BOOL, std::vector<int64_t>{});
  EXPECT_THAT(ImportError(b), HasSubstr("node 'if' (If): the condition is computed at run time: graft imports an "
                                        "If only when its condition is known at import"));
}

onnx::NodeProto* Microsoft(ModelBuilder& b, const std::string& op, std::vector<std::string> inputs,
                           std::vector<std::string> outputs) {
  onnx::NodeProto* n = b.Node(op, inputs, outputs, "fused");
  n->set_domain("com.microsoft");
  return n;
}

// BiasAdd has no CPU kernel in ONNX Runtime, so no committed model; its
// definition is X + bias + skip.
TEST(OnnxFusedOperators, BiasAddAddsBothTerms) {
  ModelBuilder b;
  b.FloatInput("x", {1, 2, 2});
  b.FloatInitializer("bias", {2}, {10, 20});
  b.FloatInitializer("skip", {1, 2, 2}, {1, 2, 3, 4});
  Microsoft(b, "BiasAdd", {"x", "bias", "skip"}, {"y"});
  b.Output("y");
  std::vector<Tensor> out = RunModel(b, {Tensor::FromVector<float>(DType::kF32, {1, 2, 2}, {0.5f, 0.25f, -1, -2})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {1, 2, 2}, {11.5, 22.25, 12, 22});
}

// BiasSoftmax has no CPU kernel either: softmax(data + bias) over the
// last dim, worked out here.
TEST(OnnxFusedOperators, BiasSoftmaxIsTheSoftmaxOfTheSum) {
  ModelBuilder b;
  b.FloatInput("x", {1, 2, 2});
  b.FloatInitializer("bias", {1, 1, 2}, {0, 1});
  AttrInt(Microsoft(b, "BiasSoftmax", {"x", "bias"}, {"y"}), "axis", 2);
  b.Output("y");
  std::vector<Tensor> out = RunModel(b, {Tensor::FromVector<float>(DType::kF32, {1, 2, 2}, {0, 0, 1, 0})});
  ASSERT_EQ(out.size(), 1u);
  const double e = std::exp(1.0);
  ExpectTensor(out[0], DType::kF32, {1, 2, 2}, {1 / (1 + e), e / (1 + e), 0.5, 0.5});
}

TEST(OnnxFusedOperators, WhatIsNotSupportedIsRefusedByName) {
  ModelBuilder past;
  past.FloatInput("x", {1, 2, 8});
  past.FloatInitializer("w", {8, 24}, std::vector<float>(8 * 24, 0.1f));
  past.FloatInitializer("bias", {24}, std::vector<float>(24, 0.0f));
  past.FloatInitializer("past", {2, 1, 2, 1, 4}, std::vector<float>(16, 0.0f));
  AttrInt(Microsoft(past, "Attention", {"x", "w", "bias", "", "past"}, {"y"}), "num_heads", 2);
  past.Output("y");
  EXPECT_THAT(ImportError(past),
              HasSubstr("(com.microsoft.Attention): past keys and values (inputs 4 and 6, output 1) are not "
                        "supported"));

  ModelBuilder heads;
  heads.FloatInput("x", {1, 2, 8});
  heads.FloatInitializer("w", {8, 24}, std::vector<float>(8 * 24, 0.1f));
  AttrInt(Microsoft(heads, "Attention", {"x", "w"}, {"y"}), "num_heads", 3);
  heads.Output("y");
  EXPECT_THAT(ImportError(heads), HasSubstr("hidden sizes 8 and 8 are not multiples of 3 heads"));

  ModelBuilder batch;
  batch.FloatInput("a", {2, 3, 4});
  batch.FloatInput("b", {2, 4, 5});
  AttrInt(Microsoft(batch, "FusedMatMul", {"a", "b"}, {"y"}), "transBatchA", 1);
  batch.Output("y");
  EXPECT_THAT(ImportError(batch), HasSubstr("transBatchA and transBatchB other than 0 are not supported"));

  ModelBuilder activation;
  activation.FloatInput("a", {2, 3});
  activation.FloatInput("b", {3, 2});
  AttrString(Microsoft(activation, "FusedGemm", {"a", "b"}, {"y"}), "activation", "Swish");
  activation.Output("y");
  EXPECT_THAT(ImportError(activation), HasSubstr("activation 'Swish' is not supported"));

  // An output the expansion does not make is refused where it is read.
  ModelBuilder mean;
  mean.FloatInput("x", {1, 2, 4});
  mean.FloatInitializer("gamma", {4}, {1, 1, 1, 1});
  Microsoft(mean, "SkipLayerNormalization", {"x", "x", "gamma"}, {"y", "mean"});
  mean.Output("y");
  mean.Output("mean");
  EXPECT_THAT(ImportError(mean),
              HasSubstr("(com.microsoft.SkipLayerNormalization): output 1 'mean' is not supported"));

  // ONNX's Attention (opset 23): a non-positive scale, and head counts no
  // model has (a Q of zero columns splits into any number).
  ModelBuilder scale(23);
  scale.FloatInput("q", {1, 2, 3, 4});
  AttrFloat(scale.Node("Attention", {"q", "q", "q"}, {"y"}, "attention"), "scale", 0.0f);
  scale.Output("y");
  EXPECT_THAT(ImportError(scale), HasSubstr("(Attention): scale 0 is not positive"));
  ModelBuilder heads23(23);
  heads23.FloatInput("q", {1, 2, 0});
  onnx::NodeProto* attention = heads23.Node("Attention", {"q", "q", "q"}, {"y"}, "attention");
  AttrInt(attention, "q_num_heads", int64_t{1} << 40);
  AttrInt(attention, "kv_num_heads", 1);
  heads23.Output("y");
  EXPECT_THAT(ImportError(heads23), HasSubstr("are beyond what graft imports"));

  // An attribute of the wrong type is an error, not its default.
  ModelBuilder typed;
  typed.FloatInput("x", {1, 2, 4});
  typed.FloatInitializer("gamma", {4}, {1, 1, 1, 1});
  AttrInt(Microsoft(typed, "SkipLayerNormalization", {"x", "x", "gamma"}, {"y"}), "epsilon", 0);
  typed.Output("y");
  EXPECT_THAT(ImportError(typed), HasSubstr("attribute 'epsilon' is of type INT, not FLOAT"));

  // MatMulNBits's weights must match K, N and block_size.
  ModelBuilder nbits;
  nbits.FloatInput("a", {2, 32});
  onnx::TensorProto* b = nbits.NewTensor("b", onnx::TensorProto::UINT8, {4, 2, 7});
  b->set_raw_data(std::string(4 * 2 * 7, '\0'));
  nbits.FloatInitializer("scales", {4, 2}, std::vector<float>(8, 1.0f));
  onnx::NodeProto* mm = Microsoft(nbits, "MatMulNBits", {"a", "b", "scales"}, {"y"});
  AttrInt(mm, "K", 32);
  AttrInt(mm, "N", 4);
  AttrInt(mm, "bits", 4);
  AttrInt(mm, "block_size", 16);
  nbits.Output("y");
  EXPECT_THAT(ImportError(nbits),
              HasSubstr("(com.microsoft.MatMulNBits): B has 56 elements, but K, N and block_size make 64"));
}

}  // namespace
}  // namespace graft::onnx_test
