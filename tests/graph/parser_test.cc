#include "graph/parser.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/module.h"
#include "graph/printer.h"
#include "graph/random_tensor.h"
#include "gtest/gtest.h"
#include "workloads/chain_graph.h"

namespace graft {
namespace {

// The module of docs/ir.md's first example, slightly extended.
constexpr char kExample[] = R"graft(# comments start with #
tensor w1 : f32[16,8] = random(seed=1)
tensor b1 : f32[16] = zeros
tensor c : f32[3] = [1.0, 2.5, -3.0]

submodule fused_0 {
  graph():
      %a : f32[4,16] = placeholder[target=a]
      %relu : f32[4,16] = call_function[target=relu](args = (%a,), kwargs = {})
      return relu
}

graph():
    %x : f32[batch,8] = placeholder[target=x]
    %v : f32[4] = placeholder[target=v]
    %w1 : f32[16,8] = get_attr[target=w1]
    %linear : f32[batch,16] = call_function[target=linear](args = (%x, %w1), kwargs = {bias: None})
    %split : (f32[2], f32[2]) = call_function[target=split](args = (%v, 2), kwargs = {})
    %getitem : f32[2] = call_function[target=getitem](args = (%split, 0), kwargs = {})
    %g : f32[batch,16] = call_module[target=fused_0](args = (%linear,), kwargs = {})
    return (linear, g)
)graft";

Module Parse(absl::string_view text) {
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return Module();
  return *std::move(m);
}

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<Module> m = ParseModule(text);
  if (m.ok()) return "(parsed)";
  return std::string(m.status().message());
}

// print -> parse -> print gives the same bytes.
void ExpectRoundTrip(const Module& module) {
  const std::string text = PrintModule(module);
  absl::StatusOr<Module> parsed = ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ(PrintModule(*parsed), text);
}

// One node's args, parsed from "args = (...)".
std::vector<Argument> ParseArgs(absl::string_view args) {
  Module m =
      Parse(absl::StrCat("graph():\n  %x = placeholder[target=x]\n"
                         "  %f = call_function[target=f](args = ",
                         args, ", kwargs = {})\n  return f\n"));
  Node* f = m.graph().FindNode("f");
  if (f == nullptr) return {};
  return std::vector<Argument>(f->args().begin(), f->args().end());
}

TEST(ParserTest, ParsesTheExample) {
  Module m = Parse(kExample);
  const Graph& g = m.graph();
  ASSERT_EQ(g.num_nodes(), 8u);

  Node* x = g.FindNode("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->op(), OpCode::kPlaceholder);
  EXPECT_EQ(x->target(), "x");
  ASSERT_TRUE(x->type().has_value());
  EXPECT_EQ(*x->type(), (TensorType{DType::kF32, {Dim::Symbol("batch"), 8}}));

  Node* linear = g.FindNode("linear");
  EXPECT_EQ(linear->op(), OpCode::kCallFunction);
  EXPECT_EQ(linear->target(), "linear");
  ASSERT_EQ(linear->num_args(), 2u);
  EXPECT_EQ(linear->arg(0).node(), x);
  EXPECT_EQ(linear->arg(1).node(), g.FindNode("w1"));
  ASSERT_EQ(linear->kwargs().size(), 1u);
  EXPECT_EQ(linear->kwargs()[0].first, "bias");
  EXPECT_TRUE(linear->kwargs()[0].second.is_none());
  EXPECT_EQ(x->num_uses(), 1u);

  Node* split = g.FindNode("split");
  EXPECT_FALSE(split->type().has_value());
  ASSERT_EQ(split->meta().tuple_types.size(), 2u);
  EXPECT_EQ(split->meta().tuple_types[1], (TensorType{DType::kF32, {2}}));
  EXPECT_EQ(split->arg(1).int_value(), 2);

  Node* call = g.FindNode("g");
  EXPECT_EQ(call->op(), OpCode::kCallModule);
  EXPECT_EQ(call->target(), "fused_0");
  EXPECT_EQ(g.FindNode("w1")->op(), OpCode::kGetAttr);

  Node* out = g.output();
  ASSERT_NE(out, nullptr);
  ASSERT_TRUE(out->arg(0).is_list());
  ASSERT_EQ(out->arg(0).list().size(), 2u);
  EXPECT_EQ(out->arg(0).list()[0].node(), linear);
  EXPECT_EQ(out->arg(0).list()[1].node(), call);

  ASSERT_TRUE(linear->meta().location.has_value());
  EXPECT_EQ(linear->meta().location->file, "<input>");
  EXPECT_EQ(linear->meta().location->line, 17);
  EXPECT_EQ(linear->meta().location->column, 5);
  EXPECT_EQ(out->meta().location->line, 21);

  ASSERT_EQ(m.tensors().size(), 3u);
  EXPECT_EQ(m.tensors().at("w1").init, "random(seed=1)");
  EXPECT_TRUE(m.tensors().at("w1").value.BitwiseEqual(
      RandomTensor(DType::kF32, {16, 8}, 1)));
  EXPECT_EQ(m.tensors().at("b1").init, "zeros");
  EXPECT_EQ(m.tensors().at("c").init, "");
  EXPECT_EQ(m.tensors().at("c").value.ToDoubles(),
            (std::vector<double>{1.0, 2.5, -3.0}));

  Module* fused = m.FindSubmodule("fused_0");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->graph().num_nodes(), 3u);
  EXPECT_EQ(fused->graph().FindNode("relu")->meta().location->line, 9);
  EXPECT_EQ(fused->graph().FindNode("relu")->meta().location->column, 7);
}

TEST(ParserTest, FileNameGoesIntoLocationsAndErrors) {
  absl::StatusOr<Module> m = ParseModule(
      "graph():\n  %x = placeholder[target=x]\n  return x\n", "m.graft");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->graph().FindNode("x")->meta().location->file, "m.graft");
  absl::StatusOr<Module> bad = ParseModule("graph():\n", "dir/bad.graft");
  EXPECT_EQ(
      bad.status().message(),
      "dir/bad.graft:2:1: missing 'return': a graph ends with 'return VALUE'");
}

TEST(ParserTest, ParsesEveryLiteralKind) {
  std::vector<Argument> args = ParseArgs(
      "(3, -7, -9223372036854775808, 9223372036854775807, 2.5, 0.1, -0.0, "
      "1e-400, "
      "5e-324, inf, -inf, nan, True, False, None, \"a\\\"b\\\\c\\n\\t\\x41\", "
      "bf16, "
      "[1, 2,], [], (4, 5), (6,), [%x, [%x, 1.0]])");
  ASSERT_EQ(args.size(), 22u);
  EXPECT_EQ(args[0].int_value(), 3);
  EXPECT_EQ(args[1].int_value(), -7);
  EXPECT_EQ(args[2].int_value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(args[3].int_value(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(args[4].double_value(), 2.5);
  EXPECT_EQ(args[5].double_value(), 0.1);
  EXPECT_EQ(args[6].double_value(), 0.0);
  EXPECT_TRUE(std::signbit(args[6].double_value()));
  EXPECT_EQ(args[7].double_value(), 0.0);  // Underflow reads as zero.
  EXPECT_EQ(args[8].double_value(), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(args[9].double_value(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(args[10].double_value(), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(args[11].double_value()));
  EXPECT_EQ(args[12], Argument(true));
  EXPECT_EQ(args[13], Argument(false));
  EXPECT_TRUE(args[14].is_none());
  EXPECT_EQ(args[15].string_value(), "a\"b\\c\n\tA");
  EXPECT_EQ(args[16].dtype_value(), DType::kBF16);
  EXPECT_EQ(args[17].int_list(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(args[18].is_list());
  EXPECT_TRUE(args[18].list().empty());
  EXPECT_EQ(args[19].int_list(),
            (std::vector<int64_t>{4, 5}));  // Tuples are lists.
  EXPECT_EQ(args[20].int_list(), (std::vector<int64_t>{6}));
  ASSERT_EQ(args[21].list().size(), 2u);
  EXPECT_TRUE(args[21].list()[0].is_node());
  EXPECT_EQ(args[21].list()[1].list()[1].double_value(), 1.0);
}

TEST(ParserTest, KwargsKeepTheirOrder) {
  Module m = Parse(
      "graph():\n  %x = placeholder[target=x]\n"
      "  %f = call_function[target=f](args = (), kwargs = {z: 1, a: %x, \"odd "
      "key\": f32,})\n"
      "  return f\n");
  Node* f = m.graph().FindNode("f");
  ASSERT_EQ(f->kwargs().size(), 3u);
  EXPECT_EQ(f->kwargs()[0].first, "z");
  EXPECT_EQ(f->kwargs()[1].first, "a");
  EXPECT_EQ(f->kwargs()[1].second.node(), m.graph().FindNode("x"));
  EXPECT_EQ(f->kwargs()[2].first, "odd key");
}

TEST(ParserTest, ReturnAcceptsReferencesWithAndWithoutPercent) {
  Module m = Parse(
      "graph():\n  %a = placeholder[target=a]\n  %None = "
      "placeholder[target=n]\n"
      "  return (a, %a, %None, None, [a])\n");
  const ArgumentList& out = m.graph().output()->arg(0).list();
  ASSERT_EQ(out.size(), 5u);
  Node* a = m.graph().FindNode("a");
  EXPECT_EQ(out[0].node(), a);
  EXPECT_EQ(out[1].node(), a);
  EXPECT_EQ(out[2].node(), m.graph().FindNode("None"));
  EXPECT_TRUE(out[3].is_none());
  EXPECT_EQ(out[4].list()[0].node(), a);
  EXPECT_EQ(a->num_uses(), 3u);

  Module one = Parse("graph():\n  %a = placeholder[target=a]\n  return (a,)\n");
  ASSERT_TRUE(one.graph().output()->arg(0).is_list());
  Module plain = Parse("graph():\n  %a = placeholder[target=a]\n  return %a\n");
  EXPECT_TRUE(plain.graph().output()->arg(0).is_node());
}

TEST(ParserTest, WhitespaceCommentsAndCrLfAreFree) {
  Module m = Parse(
      "# header\r\ngraph():   # "
      "trailing\r\n\t%x:f32[n]=placeholder[target=x]\r\n"
      "%y = call_function[target=ns::op](args=(%x,),kwargs={})  return y");
  EXPECT_EQ(m.graph().FindNode("y")->target(), "ns::op");
  EXPECT_EQ(m.graph().FindNode("x")->meta().location->line, 3);
  EXPECT_EQ(m.graph().FindNode("x")->meta().location->column, 2);
}

TEST(ParserTest, CallsWithoutArgsMayOmitThem) {
  Module m = Parse("graph():\n  %f = call_function[target=f]\n  return f\n");
  EXPECT_EQ(m.graph().FindNode("f")->num_args(), 0u);
}

TEST(ParserTest, QuotedNames) {
  Module m = Parse(
      "tensor \"layer/0.w\" : f32[1] = [1.0]\n"
      "graph():\n  %w = get_attr[target=\"layer/0.w\"]\n"
      "  %p : f32[\"seq len\"] = placeholder[target=\"in put\"]\n  return (w, "
      "p)\n");
  EXPECT_NE(m.FindTensor("layer/0.w"), nullptr);
  EXPECT_EQ(m.graph().FindNode("w")->target(), "layer/0.w");
  EXPECT_EQ(m.graph().FindNode("p")->target(), "in put");
  EXPECT_EQ(m.graph().FindNode("p")->type()->shape[0].symbol(), "seq len");
  ExpectRoundTrip(m);
}

TEST(ParserTest, TensorInitsForEveryDType) {
  Module m = Parse(
      "tensor z : i32[2,2] = zeros\n"
      "tensor a : f32[2] = full(2.5)\n"
      "tensor b : f64[2] = full(0.1)\n"
      "tensor c : f16[2] = full(-0.5)\n"
      "tensor d : bf16[2] = full(1.5)\n"
      "tensor e : i8[2] = full(-3)\n"
      "tensor f : u8[2] = full(200)\n"
      "tensor g : i32[2] = full(-100000)\n"
      "tensor h : i64[2] = full(9007199254740993)\n"
      "tensor i : bool[2] = full(True)\n"
      "tensor j : f32[3] = full(inf)\n"
      "graph():\n  return None\n");
  auto values = [&](const char* name) {
    return m.FindTensor(name)->ToDoubles();
  };
  EXPECT_EQ(values("z"), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(m.tensors().at("z").init, "zeros");
  EXPECT_EQ(values("a"), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(m.tensors().at("a").init, "full(2.5)");
  EXPECT_EQ(m.FindTensor("b")->data<double>()[1], 0.1);
  EXPECT_EQ(values("c"), (std::vector<double>{-0.5, -0.5}));
  EXPECT_EQ(values("d"), (std::vector<double>{1.5, 1.5}));
  EXPECT_EQ(values("e"), (std::vector<double>{-3, -3}));
  EXPECT_EQ(values("f"), (std::vector<double>{200, 200}));
  EXPECT_EQ(values("g"), (std::vector<double>{-100000, -100000}));
  // Beyond 2^53: integers are not routed through doubles.
  EXPECT_EQ(m.FindTensor("h")->data<int64_t>()[1], 9007199254740993);
  EXPECT_EQ(values("i"), (std::vector<double>{1, 1}));
  EXPECT_TRUE(std::isinf(m.FindTensor("j")->data<float>()[2]));
}

TEST(ParserTest, RandomTensorsForEveryDType) {
  const std::vector<std::pair<const char*, DType>> dtypes = {
      {"f32", DType::kF32},   {"f64", DType::kF64}, {"f16", DType::kF16},
      {"bf16", DType::kBF16}, {"i8", DType::kI8},   {"u8", DType::kU8},
      {"i32", DType::kI32},   {"i64", DType::kI64}, {"bool", DType::kBool}};
  for (const auto& [name, dtype] : dtypes) {
    Module m = Parse(
        absl::StrCat("tensor t : ", name,
                     "[3,5] = random(seed=12)\ngraph():\n  return None\n"));
    ASSERT_NE(m.FindTensor("t"), nullptr) << name;
    EXPECT_TRUE(
        m.FindTensor("t")->BitwiseEqual(RandomTensor(dtype, {3, 5}, 12)))
        << name;
    EXPECT_EQ(m.tensors().at("t").init, "random(seed=12)");
  }
}

TEST(ParserTest, LiteralTensorsForEveryDType) {
  Module m = Parse(
      "tensor a : f32[2,2] = [1.0, -0.5, 3, 0.1]\n"
      "tensor b : f64[2] = [0.1, -1e-300]\n"
      "tensor c : f16[3] = [0.099975586, 65504.0, -2.0]\n"
      "tensor d : bf16[2] = [0.100097656, 1.0]\n"
      "tensor e : i8[2] = [-128, 127]\n"
      "tensor f : u8[2] = [0, 255]\n"
      "tensor g : i32[1] = [-2147483648]\n"
      "tensor h : i64[1] = [9223372036854775807]\n"
      "tensor i : bool[4] = [True, False, 1, 0]\n"
      "tensor j : f32[] = [2.0]\n"
      "tensor k : f32[0,3] = []\n"
      "tensor l : f32[3] = [inf, -inf, nan]\n"
      "tensor m : f8e4m3[4] = [448, -0.4, 1.06250001, 0.00097656251]\n"
      "graph():\n  return None\n");
  EXPECT_EQ(m.FindTensor("a")->data<float>()[3], 0.1f);
  EXPECT_EQ(m.FindTensor("a")->data<float>()[2], 3.0f);
  EXPECT_EQ(m.FindTensor("b")->data<double>()[1], -1e-300);
  EXPECT_EQ(m.FindTensor("c")->data<uint16_t>()[0], 0x2e66);  // f16 nearest 0.1
  EXPECT_EQ(m.FindTensor("c")->data<uint16_t>()[1], 0x7bff);  // f16 max
  EXPECT_EQ(m.FindTensor("d")->data<uint16_t>()[0],
            0x3dcd);  // bf16 nearest 0.1
  EXPECT_EQ(m.FindTensor("e")->ToDoubles(), (std::vector<double>{-128, 127}));
  EXPECT_EQ(m.FindTensor("f")->ToDoubles(), (std::vector<double>{0, 255}));
  EXPECT_EQ(m.FindTensor("g")->data<int32_t>()[0],
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(m.FindTensor("h")->data<int64_t>()[0],
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(m.FindTensor("i")->ToDoubles(), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(m.FindTensor("j")->rank(), 0);
  EXPECT_EQ(m.FindTensor("j")->data<float>()[0], 2.0f);
  EXPECT_EQ(m.FindTensor("k")->NumElements(), 0);
  EXPECT_TRUE(std::isnan(m.FindTensor("l")->data<float>()[2]));
  // f8e4m3 rounds once, from the literal: just past the halfway points
  // 1.0625 (between 1 and 1.125) and 2^-10 (between 0 and 2^-9) goes up.
  EXPECT_EQ(m.FindTensor("m")->ToDoubles(),
            (std::vector<double>{448, -0.40625, 1.125, 0x1p-9}));
}

// Random data printed as literals must come back with the same bits.
TEST(ParserTest, LiteralTensorsRoundTripBitExactly) {
  Module m;
  int i = 0;
  for (DType dtype :
       {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI8,
        DType::kU8, DType::kI32, DType::kI64, DType::kBool}) {
    m.SetTensor(absl::StrCat("t", i++), RandomTensor(dtype, {8, 8}, 99));
  }
  // Extremes: denormals, the largest values, negative zero.
  Tensor f(DType::kF32, {5});
  f.data<float>()[0] = std::numeric_limits<float>::denorm_min();
  f.data<float>()[1] = std::numeric_limits<float>::max();
  f.data<float>()[2] = -0.0f;
  f.data<float>()[3] = std::numeric_limits<float>::min();
  f.data<float>()[4] = 1.0f / 3.0f;
  m.SetTensor("extremes_f32", f);
  Tensor d(DType::kF64, {3});
  d.data<double>()[0] = std::numeric_limits<double>::denorm_min();
  d.data<double>()[1] = std::numeric_limits<double>::max();
  d.data<double>()[2] = 1.0 / 3.0;
  m.SetTensor("extremes_f64", d);
  Tensor h(DType::kF16, {3});
  h.data<uint16_t>()[0] = 0x0001;  // Smallest f16 denormal.
  h.data<uint16_t>()[1] = 0x8000;  // -0.
  h.data<uint16_t>()[2] = 0x3555;
  m.SetTensor("extremes_f16", h);
  m.graph().Output(NoneArg{});

  const std::string text = PrintModule(m);
  absl::StatusOr<Module> parsed = ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  for (const auto& [name, tensor] : m.tensors()) {
    const Tensor* back = parsed->FindTensor(name);
    ASSERT_NE(back, nullptr) << name;
    EXPECT_TRUE(back->BitwiseEqual(tensor.value)) << name;
  }
  EXPECT_EQ(PrintModule(*parsed), text);
}

TEST(ParserTest, RoundTripsTheExample) {
  Module m = Parse(kExample);
  ExpectRoundTrip(m);
  // The example is written the way the printer writes, except for the
  // comment and the order of the tensors.
  std::string printed = PrintModule(m);
  EXPECT_NE(printed.find("    return (linear, g)\n"), std::string::npos);
}

TEST(ParserTest, RoundTripsEveryLiteralKindAndNestedSubmodules) {
  Module m = Parse(R"graft(
tensor s : f32[] = [0.5]
submodule outer {
  tensor k : i64[2] = [1, 2]
  submodule inner {
    graph():
      %a = placeholder[target=a]
      return a
  }
  graph():
    %b : bf16[n,n] = placeholder[target=b]
    %c = call_module[target=inner](args = (%b,), kwargs = {})
    return (c,)
}
graph():
  %x : f32[batch,3] = placeholder[target=x]
  %None = placeholder[target=y]
  %o = call_module[target=outer](args = (%x,), kwargs = {})
  %f = call_function[target=f](args = (%x, -1, 1e+300, 0.1, -0.0, inf, -inf, nan, True, False, None, "q\"\\\n\x7f", i8, [], [[%x, 2], [3.0]]), kwargs = {k: [f32, bool], "a b": 1})
  %s : (f32[batch], i64[]) = call_function[target=ns::two](args = (%f,), kwargs = {})
  return (f, %None, None, [o, s], 3)
)graft");
  ExpectRoundTrip(m);
}

TEST(ParserTest, RoundTripsA10kNodeChain) {
  Module chain = BuildChainGraph(3333);
  ASSERT_EQ(chain.graph().num_nodes(), 10001u);
  ExpectRoundTrip(chain);
  absl::StatusOr<Module> parsed = ParseModule(PrintModule(chain));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->graph().num_nodes(), 10001u);
  // The last relu reads the add before it.
  Node* out = parsed->graph().output()->arg(0).node();
  EXPECT_TRUE(out->is_call("relu"));
  EXPECT_TRUE(out->arg(0).node()->is_call("add"));
}

TEST(ParserTest, WriteAndLoadTextFiles) {
  Module m = Parse(kExample);
  const std::string path = testing::TempDir() + "/parser_test_model.graft";
  ASSERT_TRUE(WriteTextModule(m, path).ok());
  absl::StatusOr<Module> loaded = LoadTextModule(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(PrintModule(*loaded), PrintModule(m));
  EXPECT_EQ(loaded->graph().FindNode("x")->meta().location->file, path);
  std::remove(path.c_str());

  absl::StatusOr<Module> missing = LoadTextModule(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), path));
}

// Errors: message and place, hand-counted (columns are 1-based bytes).
struct ErrorCase {
  const char* text;
  const char* message;
};

TEST(ParserTest, ErrorsNameLineAndColumn) {
  const ErrorCase cases[] = {
      {"graph():\n  %x = placeholder[target=x]\n  return (x,\n",
       "<input>:4:1: expected a value, got end of file"},
      {"graph():\n  %x = placeholder[target=x]\n"
       "  %y = call_function[target=relu](args = (%z,), kwargs = {})\n  return "
       "y\n",
       "<input>:3:43: undefined node '%z' (nodes must be defined before use)"},
      {"graph():\n  %x = placeholder[target=x]\n  return (x, zz)\n",
       "<input>:3:14: undefined node '%zz' (nodes must be defined before use)"},
      {"graph():\n  %x = placeholder[target=x]\n"
       "  %y = call_fn[target=relu](args = (%x,), kwargs = {})\n  return y\n",
       "<input>:3:8: unknown opcode 'call_fn' (expected placeholder, get_attr, "
       "call_function or call_module)"},
      {"graph():\n  %o = output[target=output](args = (), kwargs = {})\n",
       "<input>:2:8: the output node is written 'return VALUE'"},
      {"graph():\n  %x = placeholder[target=x]\n  %x = placeholder[target=y]\n "
       " return x\n",
       "<input>:3:3: duplicate node name '%x' (first defined at 2:3)"},
      {"graph():\n  %w = get_attr[target=w9]\n  return w\n",
       "<input>:2:24: get_attr of undefined tensor 'w9' (declare it before the "
       "graph with 'tensor w9 : TYPE = ...')"},
      {"graph():\n  %x = placeholder[target=x]\n"
       "  %m = call_module[target=sub](args = (%x,), kwargs = {})\n  return "
       "m\n",
       "<input>:3:27: call_module of undefined submodule 'sub'"},
      {"tensor c : f32[3] = [1.0, 2.0]\ngraph():\n  return None\n",
       "<input>:1:21: tensor 'c' has 3 element(s) but its literal has 2"},
      {"tensor c : f32[1] = [1.0, 2.0]\ngraph():\n  return None\n",
       "<input>:1:27: tensor 'c' has 1 element(s) but its literal has more"},
      {"tensor q : i8[2] = [1, 300]\ngraph():\n  return None\n",
       "<input>:1:24: value 300 is out of range for i8"},
      {"tensor q : u8[1] = [-1]\ngraph():\n  return None\n",
       "<input>:1:21: value -1 is out of range for u8"},
      {"tensor h : f16[1] = [70000.0]\ngraph():\n  return None\n",
       "<input>:1:22: value 70000.0 is out of range for f16"},
      {"tensor h : f8e4m3[1] = [448.00001]\ngraph():\n  return None\n",
       "<input>:1:25: value 448.00001 is out of range for f8e4m3"},
      {"tensor h : f32[1] = [1e39]\ngraph():\n  return None\n",
       "<input>:1:22: value 1e39 is out of range for f32"},
      {"tensor q : i32[1] = [1.5]\ngraph():\n  return None\n",
       "<input>:1:22: expected an integer for i32, got float 1.5"},
      {"tensor q : bool[1] = [2]\ngraph():\n  return None\n",
       "<input>:1:23: expected True or False for bool, got integer 2"},
      {"tensor q : f32[2] = [[1.0], [2.0]]\ngraph():\n  return None\n",
       "<input>:1:22: expected a number (tensor literals are flat lists, "
       "row-major), got '['"},
      {"graph():\n  %x = placeholder[target=x]\n",
       "<input>:3:1: missing 'return': a graph ends with 'return VALUE'"},
      {"tensor big : f32[4096,4096] = elided\ngraph():\n  return None\n",
       "<input>:1:31: tensor 'big' data is elided in this file; save the model "
       "as .gpb to keep its data"},
      {"graph():\n  return \"abc\n", "<input>:2:10: unterminated string"},
      {"graph():\n  return \"a\\qb\"\n",
       "<input>:2:12: unknown escape in string (known: \\\\ \\\" \\n \\t \\r "
       "\\xHH)"},
      {"graph():\n  %x = placeholder[target=x]\n  return x $\n",
       "<input>:3:12: unexpected character '$'"},
      {"graph():\n  return None\n  %x = placeholder[target=x]\n",
       "<input>:3:3: expected end of file, got '%x'"},
      {"tensor t : f33[1] = zeros\ngraph():\n  return None\n",
       "<input>:1:12: unknown dtype 'f33' (known: f32, f16, bf16, f64, i8, u8, "
       "i32, i64, bool, f8e4m3)"},
      {"tensor t : f32[n] = zeros\ngraph():\n  return None\n",
       "<input>:1:12: tensor 't' needs a static shape, got f32[n]"},
      {"tensor t : f32[1000000000,1000000000] = zeros\ngraph():\n  return "
       "None\n",
       "<input>:1:12: tensor 't' is larger than the limit of 68719476736 "
       "bytes"},
      {"tensor t : f32[1] = zeros\ntensor t : f32[1] = zeros\ngraph():\n  "
       "return None\n",
       "<input>:2:8: duplicate tensor 't'"},
      {"tensor t : f32[1] = ones\ngraph():\n  return None\n",
       "<input>:1:21: expected tensor data: zeros, random(seed=N), full(V), "
       "[values] or elided, got 'ones'"},
      {"graph():\n  %x : f32[-1] = placeholder[target=x]\n  return x\n",
       "<input>:2:12: dimension -1 is negative; use a symbol for an unknown "
       "size"},
      {"graph():\n  %x = placeholder[target=x]\n"
       "  %f = call_function[target=f](args = (x,), kwargs = {})\n  return f\n",
       "<input>:3:40: expected a value, got 'x' (node references start with "
       "'%')"},
      {"graph():\n  %f = call_function[target=f](args = "
       "(99999999999999999999,), "
       "kwargs = {})\n  return f\n",
       "<input>:2:40: integer 99999999999999999999 is out of range for a "
       "64-bit integer"},
      {"graph():\n  %f = call_function[target=f](args = (), kwargs = {a: 1, a: "
       "2})\n"
       "  return f\n",
       "<input>:2:59: duplicate keyword argument 'a'"},
      {"graph():\n  %f = call_function[target=f](args = (1 2), kwargs = {})\n  "
       "return f\n",
       "<input>:2:42: expected ',' or ')', got integer 2"},
      {"graph():\n  %f = call_function[target=f](kwargs = {})\n  return f\n",
       "<input>:2:32: expected 'args', got 'kwargs'"},
      {"submodule s {\n  graph():\n    return None\n}\nsubmodule s {\n"
       "  graph():\n    return None\n}\ngraph():\n  return None\n",
       "<input>:5:11: duplicate submodule 's'"},
      {"submodule s {\n  graph():\n    return None\n\ngraph():\n  return "
       "None\n",
       "<input>:5:1: expected '}' after the submodule's graph, got 'graph'"},
      {"",
       "<input>:1:1: expected 'tensor', 'submodule' or 'graph():', got end of "
       "file"},
      {"graph():\n  %x = \n",
       "<input>:3:1: expected an opcode, got end of file"},
      {"graph():\n  % x\n", "<input>:2:3: expected a node name after '%'"},
      {"graph():\n  return 1.5.2\n", "<input>:2:10: malformed number"},
      {"tensor t : f32[1] = full($$)\ngraph():\n  return None\n",
       "<input>:1:26: unexpected character '$'"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_EQ(ErrorOf(c.text), c.message) << c.text;
  }
}

TEST(ParserTest, DuplicateKwargsInLongDicts) {
  std::string dict;
  for (int i = 0; i < 40; ++i) absl::StrAppend(&dict, "k", i, ": ", i, ", ");
  const std::string head =
      "graph():\n  %f = call_function[target=f](args = (), kwargs = {";
  EXPECT_EQ(ErrorOf(absl::StrCat(head, dict, "})\n  return f\n")), "(parsed)");
  // "k7" again, after 40 keys: found by the set, not the scan.
  EXPECT_EQ(ErrorOf(absl::StrCat(head, dict, "k7: 0})\n  return f\n")),
            absl::StrCat("<input>:2:", head.size() - 9 + dict.size() + 1,
                         ": duplicate keyword argument 'k7'"));
}

TEST(ParserTest, ListNestingIsBounded) {
  auto nested = [](int depth) {
    return absl::StrCat("graph():\n  return ", std::string(depth, '['),
                        std::string(depth, ']'), "\n");
  };
  EXPECT_EQ(ErrorOf(nested(64)), "(parsed)");
  EXPECT_EQ(ErrorOf(nested(65)),
            "<input>:2:74: lists nested more than 64 deep");
  // Far deeper than the limit: an error, not a stack overflow.
  EXPECT_EQ(ErrorOf(nested(1000000)),
            "<input>:2:74: lists nested more than 64 deep");
}

TEST(ParserTest, SubmoduleNestingIsBounded) {
  auto nested = [](int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i) text += "submodule s {\n";
    text += "graph():\n  return None\n";
    for (int i = 0; i < depth; ++i) text += "}\ngraph():\n  return None\n";
    return text;
  };
  EXPECT_EQ(ErrorOf(nested(64)), "(parsed)");
  EXPECT_EQ(ErrorOf(nested(65)),
            "<input>:65:1: submodules nested more than 64 deep");
}

// A rich file cut at every byte: every prefix parses or fails cleanly.
TEST(ParserTest, TruncatedInputNeverCrashes) {
  Module m = Parse(kExample);
  m.SetTensor("lit", RandomTensor(DType::kF16, {2, 3}, 4));
  m.SetTensor("\"q\"", Tensor::FromVector<int>(DType::kI64, {2}, {-5, 5}));
  const std::string text = PrintModule(m);
  int parsed = 0;
  for (size_t n = 0; n < text.size(); ++n) {
    absl::StatusOr<Module> result =
        ParseModule(absl::string_view(text).substr(0, n));
    if (result.ok()) {
      ++parsed;
    } else {
      EXPECT_TRUE(absl::StartsWith(result.status().message(), "<input>:"))
          << result.status();
    }
  }
  // Only the prefix that stops right after the final ')' is complete.
  EXPECT_EQ(parsed, 1);
}

// Random byte flips: never a crash or hang, and whatever does parse prints
// to text that round-trips.
TEST(ParserTest, RandomByteFlipsNeverCrash) {
  const std::string text = PrintModule(Parse(kExample));
  std::mt19937_64 rng(20240601);
  const char kInteresting[] = "[](){},:=%\"#\\\n -.0123456789eExfinTNr";
  int parsed = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string mutated = text;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % mutated.size();
      if (rng() % 2 == 0) {
        mutated[at] = static_cast<char>(rng() % 256);
      } else {
        mutated[at] = kInteresting[rng() % (sizeof(kInteresting) - 1)];
      }
    }
    absl::StatusOr<Module> result = ParseModule(mutated);
    if (!result.ok()) {
      EXPECT_TRUE(absl::StartsWith(result.status().message(), "<input>:"));
      continue;
    }
    ++parsed;
    const std::string printed = PrintModule(*result);
    absl::StatusOr<Module> again = ParseModule(printed);
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << mutated;
    EXPECT_EQ(PrintModule(*again), printed) << mutated;
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace graft
