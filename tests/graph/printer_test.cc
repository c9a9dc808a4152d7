#include "graph/printer.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/module.h"
#include "graph/random_tensor.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

TensorType F32(std::vector<Dim> dims) {
  return TensorType{DType::kF32, Shape(dims.begin(), dims.end())};
}

std::string Double(double v) {
  std::string out;
  AppendDouble(&out, v);
  return out;
}

std::string Float(float v) {
  std::string out;
  AppendFloat(&out, v);
  return out;
}

TEST(PrinterTest, PrintsFxStyleNodesWithTypes) {
  Module m;
  Graph& g = m.graph();
  m.SetTensor("w", Tensor(DType::kF32, {16, 8}), "zeros");
  Node* x = g.Placeholder("x", F32({Dim::Symbol("batch"), 8}));
  Node* w = g.GetAttr("w", F32({16, 8}));
  Node* linear = g.CallFunction("linear", {x, w}, {{"bias", NoneArg{}}});
  linear->set_type(F32({Dim::Symbol("batch"), 16}));
  Node* relu = g.CallFunction("relu", {linear});
  g.Output(relu);
  EXPECT_EQ(
      PrintModule(m),
      "tensor w : f32[16,8] = zeros\n"
      "\n"
      "graph():\n"
      "    %x : f32[batch,8] = placeholder[target=x]\n"
      "    %w : f32[16,8] = get_attr[target=w]\n"
      "    %linear : f32[batch,16] = call_function[target=linear]"
      "(args = (%x, %w), kwargs = {bias: None})\n"
      "    %relu = call_function[target=relu](args = (%linear,), kwargs = {})\n"
      "    return relu\n");
}

TEST(PrinterTest, PrintsEveryLiteralKind) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* n = g.CallFunction(
      "f",
      {int64_t{3}, int64_t{-7}, std::numeric_limits<int64_t>::min(), 2.5, 1.0,
       -0.0, true, false, NoneArg{}, "a\"b\\c\n\t\x01", DType::kBF16,
       Argument::IntList({1, 2}), ArgumentList{},
       ArgumentList{x, ArgumentList{x, 1}}},
      {{"alpha", 0.1}, {"odd key", int64_t{1}}});
  EXPECT_EQ(
      PrintNode(*n),
      "%f = call_function[target=f](args = (3, -7, -9223372036854775808, "
      "2.5, 1.0, -0.0, True, False, None, \"a\\\"b\\\\c\\n\\t\\x01\", bf16, "
      "[1, 2], [], [%x, [%x, 1]]), kwargs = {alpha: 0.1, \"odd key\": 1})");
}

TEST(PrinterTest, NoArgsIsAnEmptyTuple) {
  Graph g;
  Node* n = g.CallFunction("ns::make", {});
  EXPECT_EQ(
      PrintNode(*n),
      "%ns_make = call_function[target=ns::make](args = (), kwargs = {})");
}

TEST(PrinterTest, PrintsDoublesShortestAndAlwaysAsFloats) {
  EXPECT_EQ(Double(1.0), "1.0");
  EXPECT_EQ(Double(0.1), "0.1");
  EXPECT_EQ(Double(-2.5), "-2.5");
  EXPECT_EQ(Double(1e20), "1e+20");
  EXPECT_EQ(Double(1e-7), "1e-07");
  EXPECT_EQ(Double(123456789012345680.0), "123456789012345680.0");
  EXPECT_EQ(Double(5e-324), "5e-324");
  EXPECT_EQ(Double(-0.0), "-0.0");
  EXPECT_EQ(Double(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(Double(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(Double(std::nan("")), "nan");
  // 0.1f is not 0.1: as a float it still prints shortest.
  EXPECT_EQ(Float(0.1f), "0.1");
  EXPECT_EQ(Float(16777216.0f), "16777216.0");
  EXPECT_EQ(Double(static_cast<double>(0.1f)), "0.10000000149011612");
}

TEST(PrinterTest, ReturnForms) {
  {
    Graph g;
    Node* a = g.Placeholder("a");
    g.Output(ArgumentList{a});
    EXPECT_EQ(PrintNode(*g.output()), "return (a,)");
  }
  {
    Graph g;
    Node* a = g.Placeholder("a");
    Node* b = g.Placeholder("b");
    g.Output(ArgumentList{a, b, ArgumentList{a}});
    EXPECT_EQ(PrintNode(*g.output()), "return (a, b, [a])");
  }
  {
    // A node named like a value keeps its '%' so it does not read as None.
    Graph g;
    Node* none = g.Placeholder("None");
    Node* f32 = g.Placeholder("f32");
    g.Output(ArgumentList{none, f32, NoneArg{}});
    EXPECT_EQ(PrintNode(*g.output()), "return (%None, %f32, None)");
  }
}

TEST(PrinterTest, TupleTypesAndQuotedNames) {
  Graph g;
  Node* v = g.Placeholder("v", F32({4}));
  Node* split = g.CallFunction("split", {v, 2});
  split->meta().tuple_types = {F32({2}), F32({2})};
  Node* one = g.CallFunction("split", {v, 4});
  one->meta().tuple_types = {F32({4})};
  Node* p = g.Placeholder("p");
  p->set_type(TensorType{DType::kI64, {Dim::Symbol("seq len"), Dim()}});
  Node* scalar = g.Placeholder("s", TensorType{DType::kBool, {}});
  EXPECT_EQ(PrintNode(*split),
            "%split : (f32[2], f32[2]) = call_function[target=split]"
            "(args = (%v, 2), kwargs = {})");
  EXPECT_EQ(PrintNode(*one),
            "%split_1 : (f32[4],) = call_function[target=split]"
            "(args = (%v, 4), kwargs = {})");
  EXPECT_EQ(PrintNode(*p), "%p : i64[\"seq len\",0] = placeholder[target=p]");
  EXPECT_EQ(PrintNode(*scalar), "%s : bool[] = placeholder[target=s]");
  EXPECT_EQ(PrintType(TensorType{DType::kF16, {Dim::Symbol("n"), 3}}),
            "f16[n,3]");
}

TEST(PrinterTest, PlaceholderTargetMayDifferFromName) {
  Graph g;
  Node* n = g.CreateNode(OpCode::kPlaceholder, "input/0", {}, {}, "input_0");
  EXPECT_EQ(PrintNode(*n), "%input_0 = placeholder[target=\"input/0\"]");
}

TEST(PrinterTest, RecordedInitsPrintAsWritten) {
  Module m;
  m.SetTensor("r", RandomTensor(DType::kF32, {1000}, 7), "random(seed=7)");
  m.SetTensor("z", Tensor(DType::kI64, {3, 3}), "zeros");
  Tensor full(DType::kF16, {100});
  for (int i = 0; i < 100; ++i) full.SetFromDouble(i, 0.5);
  m.SetTensor("h", full, "full(0.5000)");  // Printed from the data.
  // An init the printer does not know is ignored.
  m.SetTensor("u", Tensor::FromVector<int>(DType::kI32, {2}, {1, -2}), "onnx");
  m.graph().Output(NoneArg{});
  EXPECT_EQ(PrintModule(m),
            "tensor h : f16[100] = full(0.5)\n"
            "tensor r : f32[1000] = random(seed=7)\n"
            "tensor u : i32[2] = [1, -2]\n"
            "tensor z : i64[3,3] = zeros\n"
            "\n"
            "graph():\n"
            "    return None\n");
}

TEST(PrinterTest, LiteralTensorsOfEveryDType) {
  Module m;
  m.SetTensor("a_f32", Tensor::FromVector<double>(DType::kF32, {2, 2},
                                                  {1, -0.5, 0.1, 3e38}));
  m.SetTensor("b_f64",
              Tensor::FromVector<double>(DType::kF64, {2}, {0.1, -1e-300}));
  m.SetTensor("c_f16",
              Tensor::FromVector<double>(DType::kF16, {3}, {0.1, 65504, -2}));
  m.SetTensor("d_bf16",
              Tensor::FromVector<double>(DType::kBF16, {2}, {0.1, 1}));
  m.SetTensor("e_i8", Tensor::FromVector<int>(DType::kI8, {2}, {-128, 127}));
  m.SetTensor("f_u8", Tensor::FromVector<int>(DType::kU8, {2}, {0, 255}));
  m.SetTensor("g_i32",
              Tensor::FromVector<int64_t>(DType::kI32, {1}, {-2147483648LL}));
  Tensor big(DType::kI64, {1});
  big.data<int64_t>()[0] = std::numeric_limits<int64_t>::max();
  m.SetTensor("h_i64", big);
  m.SetTensor("i_bool", Tensor::FromVector<int>(DType::kBool, {3}, {1, 0, 1}));
  m.SetTensor("j_scalar", Tensor::Scalar(DType::kF32, 2));
  m.SetTensor("k_empty", Tensor(DType::kF32, {0, 3}));
  Tensor special(DType::kF32, {3});
  special.data<float>()[0] = std::numeric_limits<float>::infinity();
  special.data<float>()[1] = -std::numeric_limits<float>::infinity();
  special.data<float>()[2] = std::nanf("");
  m.SetTensor("l_special", special);
  m.graph().Output(NoneArg{});
  EXPECT_EQ(PrintModule(m),
            "tensor a_f32 : f32[2,2] = [1.0, -0.5, 0.1, 3e+38]\n"
            "tensor b_f64 : f64[2] = [0.1, -1e-300]\n"
            // f16 0.1 is 0.0999755859375: the shortest float text for it.
            "tensor c_f16 : f16[3] = [0.099975586, 65504.0, -2.0]\n"
            "tensor d_bf16 : bf16[2] = [0.100097656, 1.0]\n"
            "tensor e_i8 : i8[2] = [-128, 127]\n"
            "tensor f_u8 : u8[2] = [0, 255]\n"
            "tensor g_i32 : i32[1] = [-2147483648]\n"
            "tensor h_i64 : i64[1] = [9223372036854775807]\n"
            "tensor i_bool : bool[3] = [True, False, True]\n"
            "tensor j_scalar : f32[] = [2.0]\n"
            "tensor k_empty : f32[0,3] = []\n"
            "tensor l_special : f32[3] = [inf, -inf, nan]\n"
            "\n"
            "graph():\n"
            "    return None\n");
}

TEST(PrinterTest, LargeTensorsWithoutInitAreCompactedOrElided) {
  Module m;
  m.SetTensor("big", RandomTensor(DType::kF32, {65}, 1));  // No init.
  m.SetTensor("fits", RandomTensor(DType::kI8, {64}, 1));
  m.SetTensor("zero", Tensor(DType::kF32, {100}));
  Tensor sevens(DType::kI32, {10, 10});
  for (int i = 0; i < 100; ++i) sevens.SetFromDouble(i, 7);
  m.SetTensor("sevens", sevens);
  m.SetTensor("\"odd\" name", Tensor(DType::kF32, {1}));
  m.graph().Output(NoneArg{});
  std::string text = PrintModule(m);
  EXPECT_NE(text.find("tensor big : f32[65] = elided\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tensor fits : i8[64] = ["), std::string::npos) << text;
  EXPECT_NE(text.find("tensor zero : f32[100] = zeros\n"), std::string::npos);
  EXPECT_NE(text.find("tensor sevens : i32[10,10] = full(7)\n"),
            std::string::npos);
  EXPECT_NE(text.find("tensor \"\\\"odd\\\" name\" : f32[1] = [0.0]\n"),
            std::string::npos);

  PrintOptions all;
  all.max_inline_elements = -1;
  std::string full_text = PrintModule(m, all);
  EXPECT_EQ(full_text.find("elided"), std::string::npos);
  EXPECT_NE(full_text.find("tensor zero : f32[100] = [0.0, 0.0,"),
            std::string::npos);

  PrintOptions none;
  none.max_inline_elements = 0;
  EXPECT_NE(PrintModule(m, none).find("tensor fits : i8[64] = elided\n"),
            std::string::npos);
}

TEST(PrinterTest, SubmodulesPrintBeforeTheGraphAndNest) {
  Module inner;
  Node* a = inner.graph().Placeholder("a");
  inner.graph().Output(inner.graph().CallFunction("neg", {a}));

  Module fused;
  fused.SetTensor("k", Tensor::Scalar(DType::kF32, 3), "");
  fused.AddSubmodule("inner", std::move(inner));
  Node* b = fused.graph().Placeholder("b");
  fused.graph().Output(fused.graph().CallModule("inner", {b}));

  Module m;
  m.AddSubmodule("fused_0", std::move(fused));
  Node* x = m.graph().Placeholder("x");
  m.graph().Output(m.graph().CallModule("fused_0", {x}));
  EXPECT_EQ(
      PrintModule(m),
      "submodule fused_0 {\n"
      "  tensor k : f32[] = [3.0]\n"
      "\n"
      "  submodule inner {\n"
      "    graph():\n"
      "        %a = placeholder[target=a]\n"
      "        %neg = call_function[target=neg](args = (%a,), kwargs = {})\n"
      "        return neg\n"
      "  }\n"
      "\n"
      "  graph():\n"
      "      %b = placeholder[target=b]\n"
      "      %inner = call_module[target=inner](args = (%b,), kwargs = {})\n"
      "      return inner\n"
      "}\n"
      "\n"
      "graph():\n"
      "    %x = placeholder[target=x]\n"
      "    %fused_0 = call_module[target=fused_0](args = (%x,), kwargs = {})\n"
      "    return fused_0\n");
}

TEST(PrinterTest, PrintGraphAndArgument) {
  Graph g;
  Node* x = g.Placeholder("x");
  g.Output(x);
  EXPECT_EQ(PrintGraph(g),
            "graph():\n    %x = placeholder[target=x]\n    return x\n");
  EXPECT_EQ(PrintArgument(Argument(ArgumentList{x, 1.5, "s"})),
            "[%x, 1.5, \"s\"]");
}

}  // namespace
}  // namespace graft
