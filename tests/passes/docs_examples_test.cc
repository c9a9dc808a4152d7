// The C++ examples of docs/writing-passes.md, compiled and run. Each ```cpp
// block of that page appears here verbatim (DocsExamplesTest.PageMatches
// checks it), so the page cannot drift from the code.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/parser.h"
#include "graph/tracer.h"
#include "graph/verifier.h"
#include "passes/matcher.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"
#include "passes/pipeline.h"
#include "passes/plugin_api.h"
#include "passes/replace_pattern.h"
#include "passes/rewrite_driver.h"
#include "tests/passes/test_util.h"
#include "workloads/chain_graph.h"

namespace {

// x * 2.0 -> x + x, for floating-point x: an addition is cheaper than a
// multiplication, and gives exactly the same result.
class MulByTwoPass : public graft::passes::Pass {
 public:
  absl::string_view name() const override { return "mul-by-two"; }

  absl::StatusOr<bool> Run(graft::Module& module,
                           graft::passes::PassContext& ctx) override {
    graft::Graph& graph = module.graph();
    bool changed = false;
    for (graft::Node* mul : graph.nodes()) {
      if (!IsFloatTimesTwo(*mul)) continue;
      graft::Node* x = mul->arg(0).node();
      graft::Node* add;
      {
        auto at = graph.InsertingBefore(mul);  // Keeps the order topological.
        add = graph.CallFunction("add", {x, x});
      }
      add->set_type(*mul->type());
      ctx.RecordProvenance(add, {mul});
      mul->ReplaceAllUsesWith(add);
      if (absl::Status s = graph.EraseNode(mul); !s.ok()) return s;
      changed = true;
    }
    return changed;
  }

 private:
  // mul(x, 2.0) where x and the result have the same floating-point type
  // (for an integer x, x * 2.0 is f32 but x + x would stay an integer).
  static bool IsFloatTimesTwo(const graft::Node& node) {
    if (!node.is_call("mul") || node.num_args() != 2 ||
        !node.kwargs().empty()) {
      return false;
    }
    const graft::Argument& x = node.arg(0);
    const graft::Argument& factor = node.arg(1);
    return x.is_node() && factor.is_number() && factor.number() == 2.0 &&
           node.type() && x.node()->type() == node.type() &&
           graft::IsFloatingPoint(node.type()->dtype);
  }
};

graft::passes::PassInfo MulByTwoInfo() {
  graft::passes::PassInfo info;
  info.name = "mul-by-two";
  info.description = "Replaces x * 2.0 with x + x for floating-point x.";
  info.factory = [](const graft::passes::PassOptions&)
      -> absl::StatusOr<std::unique_ptr<graft::passes::Pass>> {
    return std::make_unique<MulByTwoPass>();
  };
  return info;
}

absl::Status RegisterMulByTwo() {
  return graft::passes::PassRegistry::Global().Register(MulByTwoInfo());
}

absl::Status Optimize(graft::Module& module) {
  absl::StatusOr<graft::passes::Pipeline> pipeline =
      graft::passes::Pipeline::FromString("shape-prop,mul-by-two,dce");
  if (!pipeline.ok()) return pipeline.status();
  graft::passes::PassContext ctx;  // Verifies after each pass by default.
  absl::StatusOr<bool> changed = pipeline->Run(module, ctx);
  return changed.status();
}

// "%add: made by mul-by-two from %mul", or "%x: not made by a pass".
std::string DescribeOrigin(const graft::Node& node) {
  if (!node.meta().provenance) {
    return absl::StrCat(node.Ref(), ": not made by a pass");
  }
  const graft::Provenance& p = *node.meta().provenance;
  return absl::StrCat(node.Ref(), ": made by ", p.pass, " from %",
                      absl::StrJoin(p.from, ", %"));
}

// relu(x + 1.0) -> leaky_relu(x + 1.0, 0.1), the rewrite of the chain-graph
// benchmark. Returns how many matches were replaced.
absl::StatusOr<size_t> ReluToLeaky(graft::Module& module) {
  absl::StatusOr<graft::Module> pattern =
      graft::Trace([](graft::Proxy x) { return relu(x + 1.0); }, std::nullopt);
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<graft::Module> replacement = graft::Trace(
      [](graft::Proxy x) { return leaky_relu(x + 1.0, 0.1); }, std::nullopt);
  if (!replacement.ok()) return replacement.status();
  absl::StatusOr<std::vector<graft::passes::ReplacedPattern>> replaced =
      graft::passes::ReplacePattern(module, *pattern, *replacement);
  if (!replaced.ok()) return replaced.status();
  module.graph().Cleanup();  // Frees the replaced nodes.
  return replaced->size();
}

constexpr char kSiluPattern[] = R"(
graph():
    %x = placeholder[target=x]
    %sigmoid = call_function[target=sigmoid](args = (%x,), kwargs = {})
    %mul = call_function[target=mul](args = (%x, %sigmoid), kwargs = {})
    return mul
)";

constexpr char kSiluReplacement[] = R"(
graph():
    %x = placeholder[target=x]
    %silu = call_function[target=silu](args = (%x,), kwargs = {})
    return silu
)";

// x * sigmoid(x) -> silu(x), where x is known to be floating point.
absl::StatusOr<size_t> FuseSilu(graft::Module& module) {
  absl::StatusOr<graft::Module> pattern = graft::ParseModule(kSiluPattern);
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<graft::Module> replacement =
      graft::ParseModule(kSiluReplacement);
  if (!replacement.ok()) return replacement.status();
  graft::passes::ReplaceOptions options;
  options.filters.push_back([](const graft::passes::PatternMatch& match,
                               const graft::Graph&) {
    const graft::Node* x = match.inputs[0];
    return x->type().has_value() && graft::IsFloatingPoint(x->type()->dtype);
  });
  absl::StatusOr<std::vector<graft::passes::ReplacedPattern>> replaced =
      graft::passes::ReplacePattern(module, *pattern, *replacement, options);
  if (!replaced.ok()) return replaced.status();
  module.graph().Cleanup();
  return replaced->size();
}

// relu(relu(x)) -> relu(x): relu is idempotent.
class ReluOfRelu : public graft::passes::RewritePattern {
 public:
  ReluOfRelu() : RewritePattern("relu-of-relu", /*benefit=*/1) {}

  absl::StatusOr<bool> MatchAndRewrite(
      graft::Node* root, graft::passes::Rewriter& rewriter) const override {
    namespace m = graft::passes::m;
    graft::Node* inner = nullptr;
    if (!m::Call("relu", m::Call("relu", {m::Any()}, &inner)).Match(root)) {
      return false;
    }
    rewriter.ReplaceNode(root, inner);
    return true;
  }
};

// x + neg(y) and neg(y) + x -> x - y, when nothing else reads the neg.
class AddNegToSub : public graft::passes::RewritePattern {
 public:
  AddNegToSub() : RewritePattern("add-neg-to-sub", /*benefit=*/2) {}

  absl::StatusOr<bool> MatchAndRewrite(
      graft::Node* root, graft::passes::Rewriter& rewriter) const override {
    namespace m = graft::passes::m;
    graft::Node* x = nullptr;
    graft::Node* y = nullptr;
    m::Pattern pattern = m::CommutativeCall(
        "add", m::Any(&x), m::OneUse(m::Call("neg", m::Any(&y))));
    if (!pattern.Match(root)) return false;
    rewriter.ReplaceNode(root, rewriter.Call("sub", {x, y}));
    return true;
  }
};

absl::StatusOr<bool> Simplify(graft::Module& module,
                              graft::passes::PassContext& ctx) {
  std::vector<std::unique_ptr<graft::passes::RewritePattern>> patterns;
  patterns.push_back(std::make_unique<ReluOfRelu>());
  patterns.push_back(std::make_unique<AddNegToSub>());
  absl::StatusOr<graft::passes::GreedyReport> report =
      graft::passes::ApplyPatternsGreedily(module, patterns, &ctx);
  if (!report.ok()) return report.status();
  return report->rewrites > 0;
}

}  // namespace

absl::Status RegisterMyPasses(graft::passes::PluginRegistrar& registrar) {
  return registrar.RegisterPass(MulByTwoInfo());
}

GRAFT_PLUGIN("my_passes", "mul-by-two and friends", RegisterMyPasses)

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;
using ::testing::HasSubstr;

constexpr char kScale[] = R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %n : i32[4] = placeholder[target=n]
    %mul : f32[4] = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %mul_1 : f32[4] = call_function[target=mul](args = (%n, 2.0), kwargs = {})
    %add : f32[4] = call_function[target=add](args = (%mul, %mul_1), kwargs = {})
    return add
)";

void EnsureMulByTwoRegistered() {
  static const absl::Status* registered = new absl::Status(RegisterMulByTwo());
  ASSERT_TRUE(registered->ok()) << *registered;
}

TEST(DocsExamplesTest, FirstPassReplacesFloatTimesTwoOnly) {
  Module m = Parse(kScale);
  MulByTwoPass pass;
  PassContext ctx;
  ctx.set_current_pass("mul-by-two");
  absl::StatusOr<bool> changed = pass.Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  m.graph().Cleanup();
  // The f32 x * 2.0 became x + x; the i32 n * 2.0 (an f32 result) stayed.
  EXPECT_EQ(Ops(m.graph()), "add mul add");
  const Node* first = m.graph().FindNode("add_1");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->arg(0).node()->name(), "x");
  EXPECT_EQ(first->arg(1).node()->name(), "x");
  EXPECT_EQ(first->type(), (TensorType{DType::kF32, {4}}));
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(DocsExamplesTest, RegisteredPassRunsInAPipelineWithProvenance) {
  EnsureMulByTwoRegistered();
  Module m = Parse(kScale);
  absl::Status s = Optimize(m);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Ops(m.graph()), "add mul add");
  EXPECT_EQ(DescribeOrigin(*m.graph().FindNode("add_1")),
            "%add_1: made by mul-by-two from %mul");
  EXPECT_EQ(DescribeOrigin(*m.graph().FindNode("x")), "%x: not made by a pass");
  EXPECT_NE(PassRegistry::Global().Find("mul-by-two"), nullptr);
}

// Collects what a plugin's register function registers.
class RecordingRegistrar : public GraftPluginRegistrar {
 public:
  absl::Status RegisterPass(PassInfo info) override {
    passes.push_back(info.name);
    return absl::OkStatus();
  }
  absl::Status RegisterPattern(PatternInfo info) override {
    return absl::UnimplementedError("not in this test");
  }
  absl::Status RegisterOp(OpSchema schema) override {
    return absl::UnimplementedError("not in this test");
  }
  void Fail(absl::Status error) override { failure = error; }
  const std::string& plugin_path() const override { return path; }

  std::vector<std::string> passes;
  absl::Status failure;
  std::string path = "in-process";
};

TEST(DocsExamplesTest, PluginEntryPointDescribesAndRegistersThePass) {
  const GraftPluginInfo* info = graft_plugin_info();
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->api_version, uint32_t{GRAFT_PLUGIN_API_VERSION});
  EXPECT_STREQ(info->build_tag, GRAFT_PLUGIN_BUILD_TAG);
  EXPECT_STREQ(info->name, "my_passes");
  RecordingRegistrar registrar;
  EXPECT_EQ(info->register_fn(&registrar), 0);
  EXPECT_TRUE(registrar.failure.ok());
  EXPECT_EQ(registrar.passes, (std::vector<std::string>{"mul-by-two"}));
}

TEST(DocsExamplesTest, TracedPatternRewritesTheChainGraph) {
  Module m = BuildChainGraph(3);
  absl::StatusOr<size_t> replaced = ReluToLeaky(m);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(*replaced, 3u);
  EXPECT_EQ(Ops(m.graph()),
            "mul add leaky_relu mul add leaky_relu mul add leaky_relu");
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(DocsExamplesTest, TextPatternWithFilterFusesSiluOfFloatsOnly) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %n : i32[4] = placeholder[target=n]
    %sigmoid : f32[4] = call_function[target=sigmoid](args = (%x,), kwargs = {})
    %mul : f32[4] = call_function[target=mul](args = (%x, %sigmoid), kwargs = {})
    %sigmoid_1 : f32[4] = call_function[target=sigmoid](args = (%n,), kwargs = {})
    %mul_1 : f32[4] = call_function[target=mul](args = (%n, %sigmoid_1), kwargs = {})
    return (mul, mul_1)
)");
  absl::StatusOr<size_t> replaced = FuseSilu(m);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(*replaced, 1u);
  EXPECT_EQ(Ops(m.graph()), "silu sigmoid mul");
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(DocsExamplesTest, MatcherPatternsRunToAFixedPoint) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %y : f32[4] = placeholder[target=y]
    %relu : f32[4] = call_function[target=relu](args = (%x,), kwargs = {})
    %relu_1 : f32[4] = call_function[target=relu](args = (%relu,), kwargs = {})
    %relu_2 : f32[4] = call_function[target=relu](args = (%relu_1,), kwargs = {})
    %neg : f32[4] = call_function[target=neg](args = (%y,), kwargs = {})
    %add : f32[4] = call_function[target=add](args = (%neg, %relu_2), kwargs = {})
    %neg_1 : f32[4] = call_function[target=neg](args = (%x,), kwargs = {})
    %add_1 : f32[4] = call_function[target=add](args = (%y, %neg_1), kwargs = {})
    %mul : f32[4] = call_function[target=mul](args = (%add_1, %neg_1), kwargs = {})
    return (add, mul)
)");
  PassContext ctx;
  ctx.set_current_pass("simplify");
  absl::StatusOr<bool> changed = Simplify(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  m.graph().Cleanup();
  // relu(relu(relu(x))) is one relu; neg(y) + r became r - y; x's neg has a
  // second use (the mul), so y + neg(x) stays.
  EXPECT_EQ(Ops(m.graph()), "relu sub neg add mul");
  const Node* sub = m.graph().output()->arg(0).list()[0].node();
  ASSERT_TRUE(sub->is_call("sub"));
  EXPECT_EQ(sub->arg(0).node()->name(), "relu");
  EXPECT_EQ(sub->arg(1).node()->name(), "y");
  EXPECT_EQ(DescribeOrigin(*sub), "%sub: made by simplify from %add");
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

// The blocks of a Markdown page fenced with ```<language>.
std::vector<std::string> CodeBlocks(const std::string& page,
                                    absl::string_view language) {
  std::vector<std::string> blocks;
  std::istringstream in(page);
  std::string line, block;
  bool inside = false;
  const std::string fence = absl::StrCat("```", language);
  while (std::getline(in, line)) {
    if (!inside && line == fence) {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      blocks.push_back(block);
    } else if (inside) {
      absl::StrAppend(&block, line, "\n");
    }
  }
  return blocks;
}

std::string ReadSource(const std::string& root, const std::string& path) {
  std::ifstream in(root + "/" + path);
  EXPECT_TRUE(in.good()) << "cannot read " << root << "/" << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every ```cpp block of each page is a verbatim part of one of the files
// the page takes its examples from, and every ```cmake block of
// docs/plugins.md one of the CMake files it describes.
TEST(DocsExamplesTest, PagesMatchTheCode) {
  const char* root = std::getenv("GRAFT_SOURCE_DIR");
  if (root == nullptr)
    GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set (ctest sets it)";
  struct Page {
    std::string page;
    std::string language;
    std::vector<std::string> sources;
  };
  const std::vector<Page> pages = {
      {"docs/writing-passes.md",
       "cpp",
       {"tests/passes/docs_examples_test.cc",
        "examples/plugin/example_plugin.cc"}},
      {"docs/plugins.md",
       "cpp",
       {"examples/plugin/example_plugin.cc", "passes/plugin_api.h",
        "tests/passes/docs_examples_test.cc"}},
      {"docs/plugins.md",
       "cmake",
       {"examples/plugin/CMakeLists.txt", "cmake/GraftPlugin.cmake"}},
  };
  for (const Page& p : pages) {
    std::vector<std::string> blocks =
        CodeBlocks(ReadSource(root, p.page), p.language);
    EXPECT_FALSE(blocks.empty())
        << p.page << " has no ```" << p.language << " block";
    std::vector<std::string> sources;
    for (const std::string& s : p.sources)
      sources.push_back(ReadSource(root, s));
    for (const std::string& block : blocks) {
      bool found = false;
      for (const std::string& s : sources)
        found |= s.find(block) != std::string::npos;
      EXPECT_TRUE(found) << "this ```" << p.language << " block of " << p.page
                         << " is in none of " << absl::StrJoin(p.sources, ", ")
                         << ":\n"
                         << block;
    }
  }
}

}  // namespace
}  // namespace graft::passes
