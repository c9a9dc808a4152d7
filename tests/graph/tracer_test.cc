#include "graph/tracer.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/random_tensor.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

TensorType T(DType dtype, std::initializer_list<int64_t> dims) {
  return TensorType{dtype, ShapeFromDims(std::vector<int64_t>(dims))};
}
TensorType F32(std::initializer_list<int64_t> dims) {
  return T(DType::kF32, dims);
}

std::string TypeOf(const Proxy& p) {
  return p.type().has_value() ? p.type()->ToString() : "<unknown>";
}

// ---- docs/tracer.md: keep this function identical to the example there ----

absl::StatusOr<graft::Module> TraceMlp() {
  using namespace graft;
  Tracer t;
  Proxy x = t.Input("x", TensorType{DType::kF32, {32, 1024}});
  uint64_t seed = 0;
  auto layer = [&](Proxy input, const std::string& name, int64_t in,
                   int64_t out) {
    Proxy weight = t.Parameter(name + ".weight",
                               RandomTensor(DType::kF32, {out, in}, seed++));
    Proxy bias =
        t.Parameter(name + ".bias", RandomTensor(DType::kF32, {out}, seed++));
    return linear(input, weight, bias);
  };
  Proxy h = relu(layer(x, "fc1", 1024, 4096));
  h = relu(layer(h, "fc2", 4096, 4096));
  Proxy y = layer(h, "fc3", 4096, 1024);
  return t.Finish({y});
}

// ---- end of the docs/tracer.md example ----

TEST(TracerDocTest, BenchmarkMlpExample) {
  absl::StatusOr<Module> m = TraceMlp();
  ASSERT_TRUE(m.ok()) << m.status();
  const Graph& g = m->graph();
  EXPECT_EQ(g.num_nodes(), 13u);
  const Node* out = g.output();
  ASSERT_NE(out, nullptr);
  ASSERT_TRUE(out->arg(0).is_node());
  EXPECT_EQ(out->arg(0).node()->type(), F32({32, 1024}));
  EXPECT_EQ(m->tensors().size(), 6u);
  ASSERT_NE(m->FindTensor("fc2.weight"), nullptr);
  EXPECT_EQ(m->FindTensor("fc2.weight")->TypeString(), "f32[4096,4096]");
  EXPECT_TRUE(Verify(*m).ok());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The text strictly between the line holding `begin` and the line holding
// `end`; empty if either is missing.
std::string Between(const std::string& text, const std::string& begin,
                    const std::string& end) {
  size_t b = text.find(begin);
  if (b == std::string::npos) return "";
  b = text.find('\n', b);
  size_t e = text.find(end, b);
  if (b == std::string::npos || e == std::string::npos) return "";
  e = text.rfind('\n', e);
  return text.substr(b + 1, e - b);
}

TEST(TracerDocTest, DocShowsTheTestedCode) {
  // ctest sets GRAFT_SOURCE_DIR; __FILE__ may be relative to the build dir.
  const char* source_dir = std::getenv("GRAFT_SOURCE_DIR");
  if (source_dir == nullptr) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  std::string root = std::string(source_dir) + "/";
  std::string source = root + "tests/graph/tracer_test.cc";
  std::string doc = ReadFile(root + "docs/tracer.md");
  ASSERT_FALSE(doc.empty()) << "cannot read " << root << "docs/tracer.md";
  std::string in_doc =
      Between(doc, "<!-- begin example: TraceMlp", "<!-- end example -->");
  in_doc = Between(in_doc, "```cpp", "```");
  std::string in_test =
      Between(ReadFile(source), "// ---- docs/tracer.md: keep",
              "// ---- end of the docs/tracer.md example");
  // The test's copy has blank lines around it.
  absl::StripAsciiWhitespace(&in_test);
  absl::StripAsciiWhitespace(&in_doc);
  ASSERT_FALSE(in_doc.empty());
  EXPECT_EQ(in_doc, in_test);
}

// ---- Operators ----

TEST(TracerTest, OperatorsRecordArithmetic) {
  Tracer t;
  Proxy x = t.Input("x", F32({4}));
  Proxy y = t.Input("y", F32({4}));
  Proxy sum = x + y;
  Proxy scaled = 2 * x;
  Proxy shifted = x - 1.5;
  Proxy ratio = 1.0 / y;
  Proxy negated = -x;
  EXPECT_TRUE(sum.node()->is_call("add"));
  EXPECT_EQ(sum.node()->arg(0), Argument(x.node()));
  EXPECT_EQ(sum.node()->arg(1), Argument(y.node()));
  EXPECT_TRUE(scaled.node()->is_call("mul"));
  EXPECT_EQ(scaled.node()->arg(0), Argument(int64_t{2}));
  EXPECT_TRUE(shifted.node()->is_call("sub"));
  EXPECT_EQ(shifted.node()->arg(1), Argument(1.5));
  EXPECT_TRUE(ratio.node()->is_call("div"));
  EXPECT_EQ(ratio.node()->arg(0), Argument(1.0));
  EXPECT_TRUE(negated.node()->is_call("neg"));
  EXPECT_EQ(negated.node()->num_args(), 1u);
  EXPECT_EQ(x.node()->num_uses(), 4u);
  for (const Proxy& p : {sum, scaled, shifted, negated}) {
    EXPECT_EQ(TypeOf(p), "f32[4]") << p.Ref();
  }
  absl::StatusOr<Module> m = t.Finish({sum, scaled, shifted, ratio, negated});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->graph().output()->arg(0).list().size(), 5u);
}

TEST(TracerTest, ScalarsKeepTheirKind) {
  Tracer t;
  Proxy i = t.Input("i", T(DType::kI32, {3}));
  Proxy a = i + 1;    // int literal: stays i32
  Proxy b = i * 0.5;  // float literal with an int tensor: f32
  EXPECT_EQ(a.node()->arg(1), Argument(int64_t{1}));
  EXPECT_EQ(b.node()->arg(1), Argument(0.5));
  EXPECT_EQ(TypeOf(a), "i32[3]");
  EXPECT_EQ(TypeOf(b), "f32[3]");
}

TEST(TracerTest, SourceLocationOfCallsAndOperators) {
  Tracer t;
  Proxy x = t.Input("x", F32({2}));
  const int input_line = __LINE__ - 1;
  Proxy r = relu(x);
  const int relu_line = __LINE__ - 1;
  Proxy s = r + 1.0;
  const int add_line = __LINE__ - 1;
  ASSERT_TRUE(x.node()->meta().location.has_value());
  EXPECT_EQ(x.node()->meta().location->line, input_line);
  ASSERT_TRUE(r.node()->meta().location.has_value());
  EXPECT_THAT(r.node()->meta().location->file, EndsWith("tracer_test.cc"));
  EXPECT_EQ(r.node()->meta().location->line, relu_line);
  ASSERT_TRUE(s.node()->meta().location.has_value());
  EXPECT_EQ(s.node()->meta().location->line, add_line);
}

// Files are named from the source tree's root, whatever directory graft
// was built in, so saved models and error messages do not vary with it.
TEST(TracerTest, SourceFilesAreNamedFromTheSourceRoot) {
  Tracer t;
  Proxy x = t.Input("x", F32({2}));
  ASSERT_TRUE(x.node()->meta().location.has_value());
  EXPECT_EQ(x.node()->meta().location->file, "tests/graph/tracer_test.cc");
}

// ---- Errors ----

TEST(TracerTest, TypeErrorNamesOpAndLocation) {
  Tracer t;
  Proxy x = t.Input("x", F32({2}));
  Proxy y = t.Input("y", F32({3}));
  Proxy bad = add(x, y);
  const int line = __LINE__ - 1;
  Proxy after = relu(bad);  // Tracing goes on after an error.
  EXPECT_TRUE(after.valid());
  EXPECT_FALSE(bad.type().has_value());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr(absl::StrCat("tracer_test.cc:", line, ": add: ")));
  absl::StatusOr<Module> m = t.Finish({after});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("do not broadcast"));
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr(absl::StrCat("tracer_test.cc:", line, ": add: ")));
  // The rule's own "add: " prefix is not repeated.
  EXPECT_THAT(std::string(m.status().message()), Not(HasSubstr("add: add:")));
}

TEST(TracerTest, OperatorErrorCarriesLocation) {
  Tracer t;
  Proxy x = t.Input("x", F32({2}));
  Proxy y = t.Input("y", F32({3}));
  Proxy bad = x * y;
  const int line = __LINE__ - 1;
  EXPECT_TRUE(bad.valid());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr(absl::StrCat("tracer_test.cc:", line, ": mul: ")));
}

TEST(TracerTest, UnknownOp) {
  Tracer t;
  Proxy x = t.Input("x");
  Proxy y = t.Call("ns::missing", {x, 2});
  EXPECT_TRUE(y.node()->is_call("ns::missing"));
  EXPECT_EQ(y.node()->arg(1), Argument(int64_t{2}));
  absl::StatusOr<Module> m = t.Finish({y});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr(": ns::missing: unknown op 'ns::missing'"));
}

TEST(TracerTest, SchemaMismatchIsReported) {
  Tracer t;
  Proxy x = t.Input("x");
  t.Call("relu", {x}, {{"slope", 0.1}});
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("relu: relu has no parameter 'slope'"));
}

TEST(TracerTest, ProxiesFromTwoTracersDoNotMix) {
  Tracer a;
  Proxy x = a.Input("x", F32({2}));
  Tracer b;
  Proxy y = b.Input("y", F32({2}));
  Proxy z = x + y;
  EXPECT_FALSE(z.valid());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("add: its tensor arguments come from different "
                        "Tracers"));
  EXPECT_TRUE(b.status().ok());
  // Through the generic call the foreign node is caught too.
  Proxy w = b.Call("relu", {x});
  EXPECT_FALSE(w.valid());
  EXPECT_THAT(std::string(b.status().message()),
              HasSubstr("argument %x belongs to another Tracer"));
}

TEST(TracerTest, InvalidProxyIsReported) {
  Tracer t;
  Proxy bad = relu(Proxy());  // Recorded in the current tracer.
  EXPECT_FALSE(bad.valid());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("relu: an argument is an invalid Proxy"));
  EXPECT_FALSE(t.Finish({bad}).ok());
}

TEST(TracerTest, FinishEndsTracing) {
  Tracer t;
  Proxy x = t.Input("x", F32({2}));
  absl::StatusOr<Module> m = t.Finish({relu(x)});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(t.finished());
  EXPECT_FALSE(relu(x).valid());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("relu: the tracer has already finished"));
  EXPECT_FALSE(t.Finish({x}).ok());
  // The module handed out is intact.
  EXPECT_EQ(m->graph().num_nodes(), 3u);
  EXPECT_TRUE(Verify(*m).ok());
}

TEST(TracerTest, FinishNeedsAnOutput) {
  Tracer t;
  t.Input("x");
  absl::StatusOr<Module> m = t.Finish({});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("Finish needs at least one output"));
}

// ---- Inputs and parameters ----

TEST(TracerTest, ParametersAreModuleTensors) {
  Tracer t;
  Proxy x = t.Input("x", F32({2, 3}));
  Proxy w = t.Parameter("fc.weight", RandomTensor(DType::kF32, {4, 3}, 1),
                        "random(seed=1)");
  Proxy c = t.Constant(Tensor::Scalar(DType::kF32, 2.0));
  Proxy c2 = t.Constant(Tensor::Scalar(DType::kF32, 3.0));
  Proxy again = t.Attr("fc.weight");
  EXPECT_EQ(w.node()->op(), OpCode::kGetAttr);
  EXPECT_EQ(w.node()->target(), "fc.weight");
  EXPECT_EQ(TypeOf(w), "f32[4,3]");
  EXPECT_EQ(c.node()->target(), "constant");
  EXPECT_EQ(c2.node()->target(), "constant_1");
  EXPECT_EQ(again.node()->target(), "fc.weight");
  EXPECT_EQ(TypeOf(again), "f32[4,3]");
  Proxy y = linear(x, w) * c;
  absl::StatusOr<Module> m = t.Finish({y, c2, again});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->tensors().size(), 3u);
  EXPECT_EQ(m->tensors().at("fc.weight").init, "random(seed=1)");
  EXPECT_EQ(TypeOf(y), "f32[2,4]");
}

TEST(TracerTest, DuplicateNamesAreErrors) {
  {
    Tracer t;
    t.Input("x");
    t.Input("x");
    EXPECT_THAT(std::string(t.status().message()),
                HasSubstr("there is already an input named 'x'"));
  }
  {
    Tracer t;
    t.Parameter("w", Tensor(DType::kF32, {1}));
    t.Parameter("w", Tensor(DType::kF32, {1}));
    EXPECT_THAT(std::string(t.status().message()),
                HasSubstr("tensor 'w' is already a parameter"));
  }
  {
    Tracer t;
    t.Attr("nope");
    EXPECT_THAT(std::string(t.status().message()),
                HasSubstr("the module has no tensor 'nope'"));
  }
  {
    Tracer t;
    t.Input("not valid");
    EXPECT_THAT(std::string(t.status().message()),
                HasSubstr("input name 'not valid' is not valid"));
  }
}

// ---- Recorded form of calls ----

TEST(TracerTest, DefaultArgumentsAreLeftOut) {
  Tracer t;
  Proxy x = t.Input("x", F32({1, 3, 8, 8}));
  Proxy w = t.Input("w", F32({4, 3, 3, 3}));
  Proxy b = t.Input("b", F32({4}));
  Node* g1 = gelu(x).node();
  EXPECT_EQ(g1->num_args(), 1u);
  EXPECT_TRUE(g1->kwargs().empty());
  Node* g2 = gelu(x, "tanh").node();
  ASSERT_EQ(g2->num_args(), 2u);
  EXPECT_EQ(g2->arg(1), Argument("tanh"));
  Node* c1 = conv2d(x, w).node();
  EXPECT_EQ(c1->num_args(), 2u);
  EXPECT_TRUE(c1->kwargs().empty());
  // bias left out, so stride goes by keyword; padding 0 and dilation {1}
  // equal their defaults (0 and 1) and are left out too.
  Node* c2 = conv2d(x, w, std::nullopt, 2, 0, {1}).node();
  EXPECT_EQ(c2->num_args(), 2u);
  ASSERT_EQ(c2->kwargs().size(), 1u);
  EXPECT_EQ(c2->kwargs()[0].first, "stride");
  EXPECT_EQ(c2->kwargs()[0].second, Argument(int64_t{2}));
  Node* c3 = conv2d(x, w, b, {2, 2}, 1).node();
  ASSERT_EQ(c3->num_args(), 5u);
  EXPECT_EQ(c3->arg(3), Argument::IntList({2, 2}));
  EXPECT_EQ(c3->arg(4), Argument(int64_t{1}));
  EXPECT_EQ(TypeOf(t.Wrap(c2)), "f32[1,4,3,3]");
  EXPECT_EQ(TypeOf(t.Wrap(c3)), "f32[1,4,4,4]");
  Node* l = leaky_relu(x, 0.2).node();
  ASSERT_EQ(l->num_args(), 2u);
  EXPECT_EQ(l->arg(1), Argument(0.2));
  EXPECT_EQ(leaky_relu(x).node()->num_args(), 1u);
  // A Scalar default of 1 is an int: arange(0, 4, 1.0) keeps its float step.
  Node* r = trace::arange(0, 4, 1.0).node();
  ASSERT_EQ(r->num_args(), 3u);
  EXPECT_EQ(r->arg(2), Argument(1.0));
  EXPECT_EQ(trace::arange(0, 4, 1).node()->num_args(), 2u);
}

TEST(TracerTest, SplitReturnsGetitems) {
  Tracer t;
  Proxy x = t.Input("x", F32({2, 6}));
  std::vector<Proxy> parts = split(x, {2, 4}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[0].node()->is_call("getitem"));
  EXPECT_EQ(parts[1].node()->arg(1), Argument(int64_t{1}));
  Node* split_node = parts[0].node()->arg(0).node();
  EXPECT_TRUE(split_node->is_call("split"));
  EXPECT_EQ(split_node, parts[1].node()->arg(0).node());
  EXPECT_EQ(TypeOf(parts[0]), "f32[2,2]");
  EXPECT_EQ(TypeOf(parts[1]), "f32[2,4]");
  std::vector<Proxy> chunks = split(x, 4, 1);  // Sizes 4 and 2.
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(TypeOf(chunks[0]), "f32[2,4]");
  EXPECT_EQ(TypeOf(chunks[1]), "f32[2,2]");
  absl::StatusOr<Module> m = t.Finish({concat(parts, 1), chunks[1]});
  ASSERT_TRUE(m.ok()) << m.status();
}

TEST(TracerTest, SplitOfUntypedInputNeedsExplicitSizes) {
  Tracer t;
  Proxy x = t.Input("x");  // Unknown type.
  EXPECT_EQ(split(x, {1, 1, 1}).size(), 3u);
  EXPECT_TRUE(t.status().ok()) << t.status();
  EXPECT_TRUE(split(x, 2).empty());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("split: cannot tell how many results"));
}

// Every op of docs/ops.md through its free function, with hand-worked
// result types.
TEST(TracerTest, EveryCoreOp) {
  Tracer t;
  Proxy a = t.Input("a", F32({2, 3}));
  Proxy b = t.Input("b", F32({3}));
  Proxy img = t.Input("img", F32({1, 3, 8, 8}));
  Proxy idx = t.Input("idx", T(DType::kI64, {2, 3}));
  Proxy idx1 = t.Input("idx1", T(DType::kI64, {2}));
  Proxy cond = t.Input("cond", T(DType::kBool, {2, 3}));
  Proxy q = t.Input("q", T(DType::kI8, {2, 3}));
  Proxy w3 = t.Input("w3", F32({3}));
  Proxy at = t.Input("at", F32({3, 4}));
  Proxy fc = t.Input("fc", F32({5, 3}));
  Proxy fcb = t.Input("fcb", F32({5}));
  Proxy cw = t.Input("cw", F32({4, 3, 3, 3}));
  Proxy table = t.Input("table", F32({10, 4}));
  Proxy zp = t.Input("zp", T(DType::kI64, {3}));

  // Three [2,1] columns; getitem is exercised on the split node directly.
  std::vector<Proxy> columns = split(a, 1, 1);
  ASSERT_EQ(columns.size(), 3u);

  struct Case {
    Proxy value;
    const char* op;
    const char* type;
  };
  std::vector<Case> cases = {
      {neg(a), "neg", "f32[2,3]"},
      {abs(a), "abs", "f32[2,3]"},
      {exp(a), "exp", "f32[2,3]"},
      {log(a), "log", "f32[2,3]"},
      {sqrt(a), "sqrt", "f32[2,3]"},
      {rsqrt(a), "rsqrt", "f32[2,3]"},
      {sin(a), "sin", "f32[2,3]"},
      {cos(a), "cos", "f32[2,3]"},
      {tanh(a), "tanh", "f32[2,3]"},
      {atan(a), "atan", "f32[2,3]"},
      {acosh(a), "acosh", "f32[2,3]"},
      {sigmoid(a), "sigmoid", "f32[2,3]"},
      {relu(a), "relu", "f32[2,3]"},
      {silu(a), "silu", "f32[2,3]"},
      {erf(a), "erf", "f32[2,3]"},
      {reciprocal(a), "reciprocal", "f32[2,3]"},
      {logical_not(a), "logical_not", "bool[2,3]"},
      {gelu(a, "tanh"), "gelu", "f32[2,3]"},
      {leaky_relu(a), "leaky_relu", "f32[2,3]"},
      {clamp(a, 0.0, 6.0), "clamp", "f32[2,3]"},
      {clamp(a, std::nullopt, 1), "clamp", "f32[2,3]"},
      {cast(a, DType::kI32), "cast", "i32[2,3]"},
      {add(a, b), "add", "f32[2,3]"},
      {sub(a, 1.0), "sub", "f32[2,3]"},
      {mul(2.0, b), "mul", "f32[3]"},
      {div(idx, 2), "div", "f32[2,3]"},
      {pow(a, 2.0), "pow", "f32[2,3]"},
      {maximum(a, b), "maximum", "f32[2,3]"},
      {minimum(b, a), "minimum", "f32[2,3]"},
      {eq(a, b), "eq", "bool[2,3]"},
      {ne(a, 0.0), "ne", "bool[2,3]"},
      {lt(a, b), "lt", "bool[2,3]"},
      {le(a, b), "le", "bool[2,3]"},
      {gt(a, b), "gt", "bool[2,3]"},
      {ge(a, b), "ge", "bool[2,3]"},
      {logical_and(cond, cond), "logical_and", "bool[2,3]"},
      {logical_or(cond, true), "logical_or", "bool[2,3]"},
      {where(cond, a, 0.0), "where", "f32[2,3]"},
      {sum(a), "sum", "f32[]"},
      {sum(a, {1}), "sum", "f32[2]"},
      {sum(a, 1, true), "sum", "f32[2,1]"},
      {sum(idx), "sum", "i64[]"},
      {mean(a, {0}), "mean", "f32[3]"},
      {amax(a, {-1}), "amax", "f32[2]"},
      {amin(a), "amin", "f32[]"},
      {argmax(a, 1), "argmax", "i64[2]"},
      {argmax(a), "argmax", "i64[]"},
      {softmax(a, 1), "softmax", "f32[2,3]"},
      {log_softmax(a, -1), "log_softmax", "f32[2,3]"},
      {layer_norm(a, {3}, w3, w3), "layer_norm", "f32[2,3]"},
      {batch_norm(img, w3, w3), "batch_norm", "f32[1,3,8,8]"},
      {matmul(a, at), "matmul", "f32[2,4]"},
      {linear(a, fc, fcb), "linear", "f32[2,5]"},
      {conv2d(img, cw, std::nullopt, 1, 1), "conv2d", "f32[1,4,8,8]"},
      {conv2d(img, cw), "conv2d", "f32[1,4,6,6]"},
      {max_pool2d(img, 2), "max_pool2d", "f32[1,3,4,4]"},
      {avg_pool2d(img, 2, 1), "avg_pool2d", "f32[1,3,7,7]"},
      {adaptive_avg_pool2d(img, {1, 1}), "adaptive_avg_pool2d", "f32[1,3,1,1]"},
      {reshape(a, {3, -1}), "reshape", "f32[3,2]"},
      {permute(a, {1, 0}), "permute", "f32[3,2]"},
      {transpose(a, 0, 1), "transpose", "f32[3,2]"},
      {flatten(img, 1), "flatten", "f32[1,192]"},
      {squeeze(adaptive_avg_pool2d(img, 1)), "squeeze", "f32[3]"},
      {unsqueeze(a, 0), "unsqueeze", "f32[1,2,3]"},
      {expand(b, {2, 3}), "expand", "f32[2,3]"},
      {trace::concat({a, a}, 0), "concat", "f32[4,3]"},
      {slice(a, 1, 0, 2), "slice", "f32[2,2]"},
      {gather(a, 1, idx), "gather", "f32[2,3]"},
      {index_select(a, 1, idx1), "index_select", "f32[2,2]"},
      {embedding(idx, table), "embedding", "f32[2,3,4]"},
      {pad(a, {1, 1}), "pad", "f32[2,5]"},
      {pad(a, {1, 1, 2, 2}, "constant", 1.0), "pad", "f32[6,5]"},
      {trace::full({2, 2}, 1.5), "full", "f32[2,2]"},
      {trace::zeros({3}, DType::kI32), "zeros", "i32[3]"},
      {trace::arange(0, 5), "arange", "i64[5]"},
      {trace::arange(0.0, 1.0, 0.25), "arange", "f32[4]"},
      {quantize_per_tensor(a, 0.1, 0, DType::kI8), "quantize_per_tensor",
       "i8[2,3]"},
      {quantize_per_channel(a, w3, zp, 1, DType::kI8), "quantize_per_channel",
       "i8[2,3]"},
      {dequantize(q, 0.1, 0), "dequantize", "f32[2,3]"},
      {identity(a), "identity", "f32[2,3]"},
      {dropout(a), "dropout", "f32[2,3]"},
      {getitem(t.Wrap(columns[0].node()->arg(0).node()), 2), "getitem",
       "f32[2,1]"},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(c.value.valid()) << c.op;
    EXPECT_TRUE(c.value.node()->is_call(c.op))
        << c.op << " recorded " << c.value.node()->target();
    EXPECT_EQ(TypeOf(c.value), c.type) << c.op << " at " << c.value.Ref();
  }
  EXPECT_TRUE(t.status().ok()) << t.status();
  std::vector<Proxy> outputs;
  for (const Case& c : cases) outputs.push_back(c.value);
  absl::StatusOr<Module> m = t.Finish(outputs);
  EXPECT_TRUE(m.ok()) << m.status();
}

// ---- Tracing functions ----

TEST(TraceTest, OneInputPattern) {
  absl::StatusOr<Module> m =
      Trace([](Proxy x) { return relu(x + 1.0); }, std::nullopt);
  ASSERT_TRUE(m.ok()) << m.status();
  const Graph& g = m->graph();
  ASSERT_EQ(g.num_nodes(), 4u);
  EXPECT_EQ(g.first()->op(), OpCode::kPlaceholder);
  EXPECT_EQ(g.first()->name(), "x0");
  EXPECT_FALSE(g.first()->type().has_value());
  EXPECT_TRUE(g.first()->next()->is_call("add"));
  EXPECT_TRUE(g.output()->arg(0).node()->is_call("relu"));
}

TEST(TraceTest, SeveralInputsAndOutputs) {
  absl::StatusOr<Module> m =
      Trace([](Proxy a, Proxy b) { return std::pair(a * b, a + b); }, F32({4}),
            F32({4}));
  ASSERT_TRUE(m.ok()) << m.status();
  const Node* out = m->graph().output();
  ASSERT_TRUE(out->arg(0).is_list());
  ASSERT_EQ(out->arg(0).list().size(), 2u);
  EXPECT_TRUE(out->arg(0).list()[0].node()->is_call("mul"));
  EXPECT_EQ(out->arg(0).list()[1].node()->type(), F32({4}));
  EXPECT_EQ(m->graph().placeholders().size(), 2u);
}

TEST(TraceTest, VectorResultAndNamedInputs) {
  absl::StatusOr<Module> m = TraceFunction(
      [](const std::vector<Proxy>& in) {
        return std::vector<Proxy>{in[0] - in[1]};
      },
      {F32({2}), std::nullopt}, {"lhs", "rhs"});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_NE(m->graph().FindNode("lhs"), nullptr);
  EXPECT_NE(m->graph().FindNode("rhs"), nullptr);
  EXPECT_FALSE(TraceFunction([](const std::vector<Proxy>& in) { return in; },
                             {std::nullopt}, {"a", "b"})
                   .ok());
}

TEST(TraceTest, ErrorsPropagate) {
  absl::StatusOr<Module> m = Trace([](Proxy x) { return x + x; }, F32({2}));
  EXPECT_TRUE(m.ok());
  m = Trace([](Proxy x, Proxy y) { return matmul(x, y); }, F32({2, 3}),
            F32({4, 5}));
  EXPECT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("matmul: "));
}

// ---- Tracers and threads ----

TEST(TracerTest, CurrentTracerNests) {
  EXPECT_EQ(Tracer::Current(), nullptr);
  {
    Tracer outer;
    EXPECT_EQ(Tracer::Current(), &outer);
    {
      Tracer inner;
      EXPECT_EQ(Tracer::Current(), &inner);
      Proxy z = trace::zeros({2});
      EXPECT_EQ(z.tracer(), &inner);
      // A pattern traced while another tracer is live leaves it alone.
      EXPECT_TRUE(Trace([](Proxy x) { return -x; }, std::nullopt).ok());
      EXPECT_EQ(Tracer::Current(), &inner);
    }
    EXPECT_EQ(Tracer::Current(), &outer);
    EXPECT_EQ(trace::full({3}, 0).tracer(), &outer);
  }
  EXPECT_EQ(Tracer::Current(), nullptr);
}

TEST(TracerTest, TracersOnTwoThreadsAreIndependent) {
  constexpr int kSteps = 20'000;
  auto work = [](int salt, absl::StatusOr<Module>* result) {
    Tracer t;
    Proxy x = t.Input("x", F32({salt}));
    Proxy h = x;
    for (int i = 0; i < kSteps; ++i) h = i % 2 == 0 ? relu(h) : h * 2.0;
    Proxy z = trace::zeros({salt});  // Uses this thread's current tracer.
    *result = t.Finish({h + z});
  };
  absl::StatusOr<Module> r1, r2;
  std::thread t1(work, 3, &r1);
  std::thread t2(work, 5, &r2);
  t1.join();
  t2.join();
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r1->graph().num_nodes(), static_cast<size_t>(kSteps + 4));
  EXPECT_EQ(r2->graph().num_nodes(), static_cast<size_t>(kSteps + 4));
  EXPECT_EQ(r1->graph().output()->arg(0).node()->type(), F32({3}));
  EXPECT_EQ(r2->graph().output()->arg(0).node()->type(), F32({5}));
}

}  // namespace
}  // namespace graft
