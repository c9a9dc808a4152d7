#include "viz/dot_writer.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/file_io.h"
#include "graph/op_registry.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "viz/graphviz_render.h"
#include "workloads/chain_graph.h"

namespace graft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Module Parse(absl::string_view text) {
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Module();
}

size_t Count(absl::string_view haystack, absl::string_view needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != absl::string_view::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

// The DOT statement (one line) that declares box `name`'s label, found by
// the bold name the label starts with.
std::string BoxLine(const std::string& dot, absl::string_view name) {
  std::string key = absl::StrCat("<B>", name, "</B>");
  size_t at = dot.find(key);
  if (at == std::string::npos) return "";
  size_t begin = dot.rfind('\n', at) + 1;
  size_t end = dot.find('\n', at);
  return dot.substr(begin, end - begin);
}

// Ends the test as skipped where its remaining checks need Graphviz; the
// checks before it have run. Tests put their Graphviz checks last.
#define SKIP_REST_WITHOUT_GRAPHVIZ()                                          \
  if (!HaveGraphviz()) {                                                      \
    GTEST_SKIP() << "graft was built without Graphviz (libgraphviz-dev), so " \
                    "libcgraph cannot check the DOT text";                    \
  }

// Checks the text with libcgraph and returns its node and edge counts;
// {-1, -1} (and a failure) if Graphviz does not accept it.
DotGraphSummary ParseWithGraphviz(const std::string& dot) {
  absl::StatusOr<DotGraphSummary> s = ParseDot(dot);
  EXPECT_TRUE(s.ok()) << s.status() << "\n" << dot;
  return s.ok() ? *s : DotGraphSummary{-1, -1};
}

constexpr absl::string_view kMlp = R"(
tensor w1 : f32[16,8] = random(seed=1)
tensor b1 : f32[16] = zeros
tensor w2 : f32[4,16] = random(seed=2)

graph():
    %x : f32[batch,8] = placeholder[target=x]
    %w1 : f32[16,8] = get_attr[target=w1]
    %b1 : f32[16] = get_attr[target=b1]
    %linear : f32[batch,16] = call_function[target=linear](args = (%x, %w1), kwargs = {bias: %b1})
    %relu : f32[batch,16] = call_function[target=relu](args = (%linear,), kwargs = {})
    %w2 = get_attr[target=w2]
    %linear_1 : f32[batch,4] = call_function[target=linear](args = (%relu, %w2), kwargs = {})
    %reshape : f32[batch,2,2] = call_function[target=reshape](args = (%linear_1, [-1, 2, 2]), kwargs = {})
    %softmax : f32[batch,2,2] = call_function[target=softmax](args = (%reshape,), kwargs = {dim: -1})
    return softmax
)";

TEST(DotWriterTest, MlpBoxesShowNameOpcodeTargetAndType) {
  Module m = Parse(kMlp);
  DotResult dot = ModuleToDot(m);
  EXPECT_TRUE(absl::StartsWith(dot.text, "digraph \"graft\" {\n"));
  EXPECT_TRUE(absl::EndsWith(dot.text, "}\n"));
  EXPECT_TRUE(dot.warning.empty());
  EXPECT_EQ(dot.boxes, 10u);  // Every node, output included.

  std::string linear = BoxLine(dot.text, "linear");
  EXPECT_THAT(linear, HasSubstr("call_function: linear"));
  EXPECT_THAT(linear, HasSubstr("f32[batch,16]"));
  EXPECT_THAT(BoxLine(dot.text, "x"), HasSubstr("placeholder"));
  EXPECT_THAT(BoxLine(dot.text, "x"), HasSubstr("f32[batch,8]"));
  // Literal arguments, named after the op's parameters.
  EXPECT_THAT(BoxLine(dot.text, "reshape"), HasSubstr("shape=[-1, 2, 2]"));
  EXPECT_THAT(BoxLine(dot.text, "softmax"), HasSubstr("dim=-1"));
  // No record shapes anywhere: Graphviz fails on big record graphs.
  EXPECT_THAT(dot.text, Not(HasSubstr("record")));
  EXPECT_THAT(dot.text, HasSubstr("node [shape=plain"));
}

TEST(DotWriterTest, ColoursByKind) {
  Module m = Parse(kMlp);
  std::string dot = ModuleToDot(m).text;
  EXPECT_THAT(BoxLine(dot, "x"), HasSubstr("BGCOLOR=\"#b3d9ff\""));  // input
  EXPECT_THAT(BoxLine(dot, "output"),
              HasSubstr("BGCOLOR=\"#ffcc99\""));                      // output
  EXPECT_THAT(BoxLine(dot, "w1"), HasSubstr("BGCOLOR=\"#eeeeee\""));  // weight
  EXPECT_THAT(BoxLine(dot, "linear"),
              HasSubstr("BGCOLOR=\"#ff9e9e\""));  // heavy
  EXPECT_THAT(BoxLine(dot, "relu"),
              HasSubstr("BGCOLOR=\"#fff3a8\""));  // pointwise
  EXPECT_THAT(BoxLine(dot, "reshape"),
              HasSubstr("BGCOLOR=\"#c8f0c8\""));  // shape
  EXPECT_THAT(BoxLine(dot, "softmax"),
              HasSubstr("BGCOLOR=\"#d9b3ff\""));  // reduction
}

TEST(DotWriterTest, ClassifiesOps) {
  Module m = Parse(R"(
graph():
    %x : f32[2,3,8,8] = placeholder[target=x]
    %w : f32[4,3,3,3] = placeholder[target=w]
    %c = call_function[target=conv2d](args = (%x, %w), kwargs = {})
    %m = call_function[target=matmul](args = (%x, %x), kwargs = {})
    %f = call_function[target=graft::linear_activation](args = (%x, %w), kwargs = {})
    %q = call_function[target=quantize_per_tensor](args = (%x, 0.5, 0, i8), kwargs = {})
    %d = call_function[target=dequantize](args = (%q, 0.5, 0), kwargs = {})
    %p = call_function[target=permute](args = (%x, [0, 2, 3, 1]), kwargs = {})
    %g = call_function[target=ext::thing](args = (%x,), kwargs = {})
    %r = call_function[target=graft::all_reduce](args = (%g, 2), kwargs = {})
    return (c, m, f, d, p, r)
)");
  auto kind = [&](absl::string_view name) {
    return ClassifyNodeForDot(*m.graph().FindNode(name));
  };
  EXPECT_EQ(kind("x"), DotNodeKind::kInput);
  EXPECT_EQ(kind("c"), DotNodeKind::kComputeHeavy);
  EXPECT_EQ(kind("m"), DotNodeKind::kComputeHeavy);
  EXPECT_EQ(kind("f"), DotNodeKind::kComputeHeavy);
  EXPECT_EQ(kind("q"), DotNodeKind::kQuantize);
  EXPECT_EQ(kind("d"), DotNodeKind::kQuantize);
  EXPECT_EQ(kind("p"), DotNodeKind::kShape);
  EXPECT_EQ(kind("g"), DotNodeKind::kOther);
  EXPECT_EQ(kind("r"), DotNodeKind::kCollective);
  EXPECT_EQ(kind("output"), DotNodeKind::kOutput);
}

TEST(DotWriterTest, EdgesFollowUsesAndCarryShapes) {
  Module m = Parse(kMlp);
  std::string dot = ModuleToDot(m).text;
  // Distinct (producer, user) pairs: x,w1,b1->linear; linear->relu;
  // relu,w2->linear_1; linear_1->reshape; reshape->softmax; softmax->output.
  EXPECT_EQ(Count(dot, " -> "), 9u);
  // Data edges show the shape; weight edges do not (the box has it).
  EXPECT_EQ(Count(dot, "[label=<[batch,16]>]"), 2u);   // linear, relu
  EXPECT_EQ(Count(dot, "[label=<[batch,2,2]>]"), 2u);  // reshape, softmax
  EXPECT_THAT(dot, Not(HasSubstr("[label=<[16,8]>]")));

  DotOptions plain;
  plain.edge_labels = false;
  EXPECT_THAT(ModuleToDot(m, plain).text, Not(HasSubstr("[label=<[")));

  SKIP_REST_WITHOUT_GRAPHVIZ();
  DotGraphSummary s = ParseWithGraphviz(dot);
  EXPECT_EQ(s.nodes, 10);
  EXPECT_EQ(s.edges, 9);
}

TEST(DotWriterTest, WeightsAreCompactAndShowTheirTensorsType) {
  Module m = Parse(kMlp);
  std::string dot = ModuleToDot(m).text;
  // %w2 has no type of its own: the box shows its tensor's.
  std::string w2 = BoxLine(dot, "w2");
  EXPECT_THAT(w2, HasSubstr("get_attr: w2"));
  EXPECT_THAT(w2, HasSubstr("f32[4,16]"));
  // Data is never shown (random(seed=1) gives values in [-1, 1)).
  EXPECT_THAT(BoxLine(dot, "w1"), Not(HasSubstr("0.")));
  EXPECT_THAT(w2, HasSubstr("POINT-SIZE=\"8\""));
}

TEST(DotWriterTest, QuantizationParameters) {
  Module m = Parse(R"(
tensor s : f32[4] = full(0.25)
tensor z : i32[4] = zeros

graph():
    %x : f32[4,4] = placeholder[target=x]
    %q : i8[4,4] = call_function[target=quantize_per_tensor](args = (%x, 0.05, 3, i8), kwargs = {})
    %d : f32[4,4] = call_function[target=dequantize](args = (%q, 0.05, 3), kwargs = {})
    %s = get_attr[target=s]
    %z = get_attr[target=z]
    %qc = call_function[target=quantize_per_channel](args = (%d, %s, %z), kwargs = {axis: 1, dtype: u8})
    return qc
)");
  std::string dot = ModuleToDot(m).text;
  EXPECT_THAT(BoxLine(dot, "q"),
              HasSubstr("scale=0.05, zero_point=3, dtype=i8"));
  EXPECT_THAT(BoxLine(dot, "q"), HasSubstr("BGCOLOR=\"#ffb3e6\""));
  EXPECT_THAT(BoxLine(dot, "d"), HasSubstr("scale=0.05, zero_point=3"));
  // Per-channel parameters are tensors: shown by reference.
  EXPECT_THAT(BoxLine(dot, "qc"),
              HasSubstr("scales=%s, zero_points=%z, axis=1, dtype=u8"));
}

constexpr absl::string_view kFused = R"(
submodule fused_0 {
  graph():
      %a : f32[4] = placeholder[target=a]
      %b : f32[4] = placeholder[target=b]
      %add : f32[4] = call_function[target=add](args = (%a, %b), kwargs = {})
      %relu : f32[4] = call_function[target=relu](args = (%add,), kwargs = {})
      return relu
}

graph():
    %x : f32[4] = placeholder[target=x]
    %y : f32[4] = placeholder[target=y]
    %g : f32[4] = call_module[target=fused_0](args = (%x, %y), kwargs = {})
    %neg : f32[4] = call_function[target=neg](args = (%g,), kwargs = {})
    return neg
)";

TEST(DotWriterTest, ClusterFusedDrawsSubmoduleNodesInACluster) {
  Module m = Parse(kFused);
  DotOptions options;
  options.cluster_fused = true;
  DotResult dot = ModuleToDot(m, options);
  EXPECT_EQ(Count(dot.text, "subgraph \"cluster_"), 1u);
  // x, y, add, relu, neg, output: the submodule's placeholders and output
  // are the call's operands and result, so they get no boxes.
  EXPECT_EQ(dot.boxes, 6u);
  EXPECT_THAT(dot.text, HasSubstr("label=<<B>fused_0</B>"));
  // add and relu are declared inside the cluster, neg after it.
  size_t open = dot.text.find("subgraph \"cluster_");
  size_t close = dot.text.find("  }\n", open);
  size_t add = dot.text.find("<B>add</B>");
  size_t neg = dot.text.find("<B>neg</B>");
  EXPECT_LT(open, add);
  EXPECT_LT(add, close);
  EXPECT_GT(neg, close);
  // x->add, y->add, add->relu, relu->neg, neg->output.
  EXPECT_EQ(Count(dot.text, " -> "), 5u);
  SKIP_REST_WITHOUT_GRAPHVIZ();
  DotGraphSummary s = ParseWithGraphviz(dot.text);
  EXPECT_EQ(s.nodes, 6);
  EXPECT_EQ(s.edges, 5);
}

TEST(DotWriterTest, CollapsedModuleIsOneBoxListingItsOps) {
  Module m = Parse(kFused);
  DotResult dot = ModuleToDot(m);  // cluster_fused is off by default
  EXPECT_THAT(dot.text, Not(HasSubstr("subgraph")));
  EXPECT_EQ(dot.boxes, 5u);  // x, y, g, neg, output
  std::string g = BoxLine(dot.text, "g");
  EXPECT_THAT(g, HasSubstr("call_module: fused_0"));
  EXPECT_THAT(g, HasSubstr("2 ops: add, relu"));
  EXPECT_THAT(g, HasSubstr("BGCOLOR=\"#b3e0e0\""));
  EXPECT_EQ(Count(dot.text, " -> "), 4u);  // x->g, y->g, g->neg, neg->output
}

TEST(DotWriterTest, ClusterWithSeveralResultsFeedsEachGetitem) {
  Module m = Parse(R"(
submodule part {
  graph():
      %a : f32[4] = placeholder[target=a]
      %e : f32[4] = call_function[target=exp](args = (%a,), kwargs = {})
      %n : f32[4] = call_function[target=neg](args = (%a,), kwargs = {})
      return (e, n)
}

graph():
    %x : f32[4] = placeholder[target=x]
    %p = call_module[target=part](args = (%x,), kwargs = {})
    %g0 : f32[4] = call_function[target=getitem](args = (%p, 0), kwargs = {})
    %g1 : f32[4] = call_function[target=getitem](args = (%p, 1), kwargs = {})
    return (g0, g1)
)");
  DotOptions options;
  options.cluster_fused = true;
  std::string dot = ModuleToDot(m, options).text;
  // Box ids follow the drawing order: x n0, e n1, n n2, g0 n3, g1 n4.
  EXPECT_THAT(dot, HasSubstr("\"n1\" -> \"n3\""));  // e -> g0
  EXPECT_THAT(dot, HasSubstr("\"n2\" -> \"n4\""));  // n -> g1
  EXPECT_THAT(dot, Not(HasSubstr("\"n1\" -> \"n4\"")));
  EXPECT_THAT(BoxLine(dot, "e"), HasSubstr("call_function: exp"));
  SKIP_REST_WITHOUT_GRAPHVIZ();
  ParseWithGraphviz(dot);
}

TEST(DotWriterTest, NestedClusters) {
  Module m = Parse(R"(
submodule outer {
  submodule inner {
    graph():
        %a : f32[4] = placeholder[target=a]
        %t : f32[4] = call_function[target=tanh](args = (%a,), kwargs = {})
        return t
  }
  graph():
      %a : f32[4] = placeholder[target=a]
      %i : f32[4] = call_module[target=inner](args = (%a,), kwargs = {})
      %s : f32[4] = call_function[target=sigmoid](args = (%i,), kwargs = {})
      return s
}

graph():
    %x : f32[4] = placeholder[target=x]
    %o : f32[4] = call_module[target=outer](args = (%x,), kwargs = {})
    return o
)");
  DotOptions options;
  options.cluster_fused = true;
  DotResult dot = ModuleToDot(m, options);
  EXPECT_EQ(Count(dot.text, "subgraph \"cluster_"), 2u);
  EXPECT_EQ(dot.boxes, 4u);  // x, t, s, output
  // x -> t -> s -> output.
  EXPECT_EQ(Count(dot.text, " -> "), 3u);
  SKIP_REST_WITHOUT_GRAPHVIZ();
  EXPECT_EQ(ParseWithGraphviz(dot.text).edges, 3);
}

// An extension op whose name needs care in every format: `::` and a
// string argument with all of HTML's special characters.
void RegisterScaleOp() {
  static bool done = [] {
    OpSchema schema;
    schema.name = "dottest::scale";
    schema.params = {{"input", ParamKind::kTensor},
                     {"factor", ParamKind::kFloat},
                     {"mode", ParamKind::kString, false, Argument("plain")}};
    absl::Status s = OpRegistry::Global().Register(std::move(schema));
    EXPECT_TRUE(s.ok()) << s;
    return true;
  }();
  (void)done;
}

constexpr absl::string_view kEscapes = R"(
tensor "w<1>&\"x\"'" : f32[2] = zeros

submodule "sub<&>::\"q\"" {
  graph():
      %a : f32["seq<len>"] = placeholder[target=a]
      %r : f32["seq<len>"] = call_function[target=relu](args = (%a,), kwargs = {})
      return r
}

graph():
    %x : f32["seq<len>"] = placeholder[target="in<put>"]
    %w = get_attr[target="w<1>&\"x\"'"]
    %s : f32["seq<len>"] = call_function[target=dottest::scale](args = (%x, 0.5), kwargs = {mode: "a<b>&\"c\"'"})
    %c : f32["seq<len>"] = call_module[target="sub<&>::\"q\""](args = (%s,), kwargs = {})
    return (c, w)
)";

TEST(DotWriterTest, EscapesNamesTargetsAndArguments) {
  RegisterScaleOp();
  Module m = Parse(kEscapes);
  std::vector<std::string> dots;
  for (bool cluster : {false, true}) {
    DotOptions options;
    options.cluster_fused = cluster;
    const std::string& dot = dots.emplace_back(ModuleToDot(m, options).text);
    EXPECT_THAT(dot, HasSubstr("get_attr: w&lt;1&gt;&amp;&quot;x&quot;&#39;"));
    EXPECT_THAT(dot, HasSubstr("placeholder: in&lt;put&gt;"));
    EXPECT_THAT(dot, HasSubstr("call_function: dottest::scale"));
    // The string argument as the text format writes it, then escaped.
    EXPECT_THAT(
        dot,
        HasSubstr("factor=0.5, "
                  "mode=&quot;a&lt;b&gt;&amp;\\&quot;c\\&quot;&#39;&quot;"));
    EXPECT_THAT(dot, HasSubstr("f32[&quot;seq&lt;len&gt;&quot;]"));
    EXPECT_THAT(dot, HasSubstr("sub&lt;&amp;&gt;::&quot;q&quot;"));
    // No raw user text: every '<' in the file opens a label or a tag.
    EXPECT_THAT(dot, Not(HasSubstr("<1>")));
    EXPECT_THAT(dot, Not(HasSubstr("a<b")));
  }
  SKIP_REST_WITHOUT_GRAPHVIZ();
  for (const std::string& dot : dots) {
    EXPECT_GT(ParseWithGraphviz(dot).nodes, 0);
    absl::StatusOr<std::string> svg = RenderDot(dot, PictureFormat::kSvg);
    ASSERT_TRUE(svg.ok()) << svg.status();
    EXPECT_THAT(*svg, HasSubstr("dottest::scale"));
    EXPECT_THAT(*svg, HasSubstr("w&lt;1&gt;&amp;"));
  }
}

TEST(DotWriterTest, HtmlEscaping) {
  auto esc = [](absl::string_view s) {
    std::string out;
    AppendHtmlEscaped(&out, s);
    return out;
  };
  EXPECT_EQ(esc("a<b>&\"c\"'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;");
  EXPECT_EQ(esc("ns::op"), "ns::op");
  EXPECT_EQ(esc("tab\there"), "tab\\x09here");
  EXPECT_EQ(esc(absl::string_view("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(esc("caf\xC3\xA9"), "caf\xC3\xA9");            // é
  EXPECT_EQ(esc("\xE2\x82\xAC"), "\xE2\x82\xAC");          // €
  EXPECT_EQ(esc("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // U+1F600
  EXPECT_EQ(esc("bad\xFF"), "bad\\xFF");
  EXPECT_EQ(esc("cut\xC3"), "cut\\xC3");              // truncated sequence
  EXPECT_EQ(esc("\xC0\xAF"), "\\xC0\\xAF");           // overlong '/'
  EXPECT_EQ(esc("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // surrogate
}

TEST(DotWriterTest, LongArgumentListsAreCut) {
  std::string big = "[";
  for (int i = 0; i < 100; ++i) absl::StrAppend(&big, i == 0 ? "" : ", ", i);
  big += "]";
  Module m = Parse(absl::StrCat(R"(
graph():
    %x : f32[2] = placeholder[target=x]
    %r = call_function[target=reshape](args = (%x, )",
                                big, R"(), kwargs = {})
    return r
)"));
  std::string r = BoxLine(ModuleToDot(m).text, "r");
  EXPECT_THAT(r, HasSubstr("shape=[0, 1, 2"));
  EXPECT_THAT(r, HasSubstr(" \xE2\x80\xA6"));  // " …"
  EXPECT_THAT(r, Not(HasSubstr("99]")));
}

// How long this takes is measured by BM_ModuleToDotChain in
// bench/dot_writer_bench.cc.
TEST(DotWriterTest, TenThousandNodes) {
  Module m = BuildChainGraph(3333);  // x, 3 * 3333 ops, output: 10001 nodes
  ASSERT_EQ(m.graph().num_nodes(), 10001u);
  DotOptions options;
  options.max_nodes = 0;
  DotResult dot = ModuleToDot(m, options);
  EXPECT_EQ(dot.boxes, 10001u);
  EXPECT_TRUE(dot.warning.empty());
  // A chain: every node but x reads the one before it.
  EXPECT_EQ(Count(dot.text, " -> "), 10000u);
  SKIP_REST_WITHOUT_GRAPHVIZ();
  DotGraphSummary s = ParseWithGraphviz(dot.text);
  EXPECT_EQ(s.nodes, 10001);
  EXPECT_EQ(s.edges, 10000);
}

TEST(DotWriterTest, AboveMaxNodesTruncatesWithANote) {
  Module m = BuildChainGraph(3333);
  DotOptions options;
  options.max_nodes = 500;
  DotResult dot = ModuleToDot(m, options);
  EXPECT_TRUE(dot.truncated);
  EXPECT_EQ(dot.boxes, 500u);
  EXPECT_THAT(dot.text, HasSubstr("\"note\" [shape=note"));
  EXPECT_THAT(dot.text, HasSubstr("10001 nodes, above the limit of 500"));
  EXPECT_THAT(dot.warning, HasSubstr("only the first 500 are drawn"));
  EXPECT_THAT(dot.warning, HasSubstr("--max-nodes"));
  EXPECT_EQ(Count(dot.text, " -> "), 499u);  // Only between drawn boxes.
  SKIP_REST_WITHOUT_GRAPHVIZ();
  EXPECT_EQ(ParseWithGraphviz(dot.text).nodes, 501);  // And the note.
}

TEST(DotWriterTest, AboveMaxNodesCollapsesClustersFirst) {
  Module m = Parse(kFused);
  DotOptions options;
  options.cluster_fused = true;
  options.max_nodes = 5;  // 6 boxes expanded, 5 collapsed
  DotResult dot = ModuleToDot(m, options);
  EXPECT_TRUE(dot.collapsed);
  EXPECT_FALSE(dot.truncated);
  EXPECT_EQ(dot.boxes, 5u);
  EXPECT_THAT(dot.text, Not(HasSubstr("subgraph")));
  EXPECT_THAT(dot.text, HasSubstr("submodules are drawn collapsed"));
  EXPECT_THAT(dot.warning, HasSubstr("--cluster-fused"));
  SKIP_REST_WITHOUT_GRAPHVIZ();
  ParseWithGraphviz(dot.text);
}

TEST(DotWriterTest, PassDiffMarksCreatedAndRemovedNodes) {
  Module before = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %dead : f32[4] = call_function[target=neg](args = (%x,), kwargs = {})
    %mul : f32[4] = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %add : f32[4] = call_function[target=add](args = (%mul, 1.0), kwargs = {})
    %relu : f32[4] = call_function[target=relu](args = (%add,), kwargs = {})
    return relu
)");
  Module after = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %fma : f32[4] = call_function[target=ext::fma](args = (%x, 2.0, 1.0), kwargs = {})
    %relu : f32[4] = call_function[target=relu](args = (%fma,), kwargs = {})
    return relu
)");
  Node* fma = after.graph().FindNode("fma");
  fma->meta().provenance = Provenance{"my-pass", {"mul", "add"}};
  // Made by an earlier pass: not highlighted.
  after.graph().FindNode("relu")->meta().provenance = Provenance{"other", {}};

  DotOptions options;
  AddPassDiff(before, after, "my-pass", &options);
  ASSERT_EQ(options.ghosts.size(), 3u);  // dead, mul, add
  EXPECT_EQ(options.ghosts[0].name, "dead");
  EXPECT_EQ(options.ghosts[0].op, "call_function: neg");
  EXPECT_EQ(options.ghosts[0].type, "f32[4]");
  EXPECT_EQ(options.ghosts[2].inputs, std::vector<std::string>{"mul"});
  EXPECT_EQ(options.ghosts[2].users, std::vector<std::string>{"relu"});

  DotResult dot = ModuleToDot(after, options);
  // Boxes: x, fma, relu, output; ghosts g0 dead, g1 mul, g2 add.
  EXPECT_EQ(dot.boxes, 7u);
  std::string fma_box = BoxLine(dot.text, "fma");
  EXPECT_THAT(fma_box, HasSubstr("BORDER=\"3\""));
  EXPECT_THAT(fma_box, HasSubstr("new: my-pass"));
  EXPECT_THAT(BoxLine(dot.text, "relu"), HasSubstr("BORDER=\"1\""));
  EXPECT_THAT(dot.text, HasSubstr("<S>dead</S>"));
  EXPECT_THAT(dot.text, HasSubstr("removed: call_function: neg"));
  // dead read x (n0); mul read x and was replaced by fma (n1); add read the
  // ghost mul and was replaced by fma.
  EXPECT_THAT(dot.text, HasSubstr("\"n0\" -> \"g0\" [style=dashed"));
  EXPECT_THAT(dot.text, HasSubstr("\"n0\" -> \"g1\" [style=dashed"));
  EXPECT_THAT(dot.text, HasSubstr("\"g1\" -> \"g2\" [style=dashed"));
  EXPECT_THAT(dot.text, HasSubstr("\"g1\" -> \"n1\" [style=dashed"));
  EXPECT_THAT(dot.text, HasSubstr("\"g2\" -> \"n1\" [style=dashed"));
  EXPECT_EQ(Count(dot.text, "replaced by"), 2u);
  // add has a replacement, so no edge to its old user relu (n2).
  EXPECT_THAT(dot.text, Not(HasSubstr("\"g2\" -> \"n2\"")));
  EXPECT_THAT(dot.text, HasSubstr("created (1)"));
  EXPECT_THAT(dot.text, HasSubstr("removed (3)"));
  SKIP_REST_WITHOUT_GRAPHVIZ();
  EXPECT_EQ(ParseWithGraphviz(dot.text).nodes, 7);
}

TEST(DotWriterTest, CreatedSetHighlightsNodesWithoutProvenance) {
  Module m = Parse(kMlp);
  DotOptions options;
  options.created.insert(m.graph().FindNode("relu"));
  std::string dot = ModuleToDot(m, options).text;
  std::string relu = BoxLine(dot, "relu");
  EXPECT_THAT(relu, HasSubstr("BORDER=\"3\""));
  EXPECT_THAT(relu, HasSubstr(">new<"));
  EXPECT_THAT(BoxLine(dot, "linear"), HasSubstr("BORDER=\"1\""));
  EXPECT_THAT(dot, HasSubstr("created (1)"));
  EXPECT_THAT(dot, HasSubstr("removed (0)"));
}

TEST(DotWriterTest, PassDiffLooksIntoSubmodulesBothModulesHave) {
  Module before = Parse(R"(
submodule s {
  graph():
      %a : f32[4] = placeholder[target=a]
      %n : f32[4] = call_function[target=neg](args = (%a,), kwargs = {})
      %e : f32[4] = call_function[target=exp](args = (%a,), kwargs = {})
      return e
}
graph():
    %x : f32[4] = placeholder[target=x]
    %c : f32[4] = call_module[target=s](args = (%x,), kwargs = {})
    return c
)");
  Module after = Parse(R"(
submodule s {
  graph():
      %a : f32[4] = placeholder[target=a]
      %e : f32[4] = call_function[target=exp](args = (%a,), kwargs = {})
      return e
}
graph():
    %x : f32[4] = placeholder[target=x]
    %c : f32[4] = call_module[target=s](args = (%x,), kwargs = {})
    return c
)");
  DotOptions options;
  AddPassDiff(before, after, "", &options);
  EXPECT_TRUE(options.created_by_any_pass);
  ASSERT_EQ(options.ghosts.size(), 1u);
  EXPECT_EQ(options.ghosts[0].name, "n");
  EXPECT_EQ(options.ghosts[0].graph, &after.FindSubmodule("s")->graph());
  options.cluster_fused = true;
  std::string dot = ModuleToDot(after, options).text;
  // The ghost is drawn inside the cluster, fed by x through the placeholder.
  size_t open = dot.find("subgraph \"cluster_");
  size_t ghost = dot.find("<S>n</S>");
  EXPECT_LT(open, ghost);
  EXPECT_LT(ghost, dot.find("  }\n", open));
  EXPECT_THAT(dot, HasSubstr("\"n0\" -> \"g0\" [style=dashed"));
  SKIP_REST_WITHOUT_GRAPHVIZ();
  ParseWithGraphviz(dot);
}

TEST(DotWriterTest, TitleIsEscaped) {
  Module m = Parse(kFused);
  DotOptions options;
  options.title = "after <fuse> & co";
  std::string dot = ModuleToDot(m, options).text;
  EXPECT_THAT(dot, HasSubstr("label=<<B>after &lt;fuse&gt; &amp; co</B>>;"));
  SKIP_REST_WITHOUT_GRAPHVIZ();
  ParseWithGraphviz(dot);
}

TEST(DotWriterTest, WriteModulePictureByExtension) {
  Module m = Parse(kMlp);
  std::string dir = ::testing::TempDir();
  std::string warning = "unset";
  ASSERT_TRUE(
      WriteModulePicture(m, dir + "/mlp_picture.dot", {}, &warning).ok());
  EXPECT_EQ(warning, "");
  absl::StatusOr<std::string> text = ReadFile(dir + "/mlp_picture.dot");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, ModuleToDot(m).text);

  absl::Status bad = WriteModulePicture(m, dir + "/mlp_picture.pdf");
  EXPECT_THAT(bad.message(),
              HasSubstr("name the output .dot (Graphviz text), .svg or .png"));

  absl::Status svg = WriteModulePicture(m, dir + "/mlp_picture.svg");
  if (HaveGraphviz()) {
    ASSERT_TRUE(svg.ok()) << svg;
    absl::StatusOr<std::string> bytes = ReadFile(dir + "/mlp_picture.svg");
    ASSERT_TRUE(bytes.ok());
    for (absl::string_view name :
         {"x", "w1", "b1", "linear", "relu", "w2", "linear_1", "reshape",
          "softmax", "output"}) {
      EXPECT_THAT(*bytes, HasSubstr(absl::StrCat(">", name, "</text>")))
          << name;
    }
  } else {
    EXPECT_EQ(svg.message(), GraphvizMissingMessage());
  }

  DotOptions small;
  small.max_nodes = 4;
  ASSERT_TRUE(
      WriteModulePicture(m, dir + "/mlp_small.dot", small, &warning).ok());
  EXPECT_THAT(warning, HasSubstr("only the first 4 are drawn"));
}

}  // namespace
}  // namespace graft
