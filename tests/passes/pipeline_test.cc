#include "passes/pipeline.h"

#include "graph/printer.h"
#include "passes/pass_registry.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Parse;
using ::testing::HasSubstr;

TEST(PipelineTest, ParsesNamesAndOptions) {
  auto entries = ParsePipeline(" shape-prop, dce ,fold-constants{max-size=1024, x=y}");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "shape-prop");
  EXPECT_EQ((*entries)[1].name, "dce");
  EXPECT_EQ((*entries)[2].name, "fold-constants");
  EXPECT_EQ((*entries)[2].options.at("max-size"), "1024");
  EXPECT_EQ((*entries)[2].options.at("x"), "y");
}

TEST(PipelineTest, SyntaxErrorsGiveTheColumn) {
  auto entries = ParsePipeline("dce,,cse");
  ASSERT_FALSE(entries.ok());
  EXPECT_THAT(entries.status().message(), HasSubstr("column 5"));
  EXPECT_FALSE(ParsePipeline("dce{a=1").ok());
  EXPECT_FALSE(ParsePipeline("").ok());
}

TEST(PipelineTest, UnknownPassesAndOptionsAreErrors) {
  auto p = Pipeline::FromString("dce,no-such-pass");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("unknown pass 'no-such-pass'"));
  EXPECT_THAT(p.status().message(), HasSubstr("dce"));
  auto q = Pipeline::FromString("dce{bogus=1}");
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.status().message(), HasSubstr("no option 'bogus'"));
}

// A pass that damages the graph, then fails or breaks the verifier.
class VandalPass : public Pass {
 public:
  explicit VandalPass(bool fail) : fail_(fail) {}
  absl::string_view name() const override { return "vandal"; }
  absl::StatusOr<bool> Run(Module& module, PassContext&) override {
    Graph& g = module.graph();
    Node* relu = g.FindNode("relu");
    relu->SetArgs({});  // relu with no input: the verifier rejects it.
    if (fail_) return absl::InternalError("something broke");
    return true;
  }

 private:
  bool fail_;
};

constexpr char kModel[] = R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %relu : f32[4] = call_function[target=relu](args = (%x,), kwargs = {})
    return relu
)";

TEST(PipelineTest, FailingPassLeavesModuleUntouched) {
  for (bool fail : {true, false}) {
    Module m = Parse(kModel);
    std::string before = PrintModule(m);
    Pipeline p;
    p.Add(std::make_unique<VandalPass>(fail));
    PassContext ctx;
    auto r = p.Run(m, ctx);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("pass 'vandal'"));
    EXPECT_THAT(r.status().message(),
                HasSubstr(fail ? "something broke" : "left an invalid graph"));
    EXPECT_EQ(PrintModule(m), before);
  }
}

TEST(PipelineTest, RunsPassesRecordsTimingsAndDumps) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %dead = call_function[target=neg](args = (%x,), kwargs = {})
    %relu = call_function[target=relu](args = (%x,), kwargs = {})
    return relu
)");
  auto p = Pipeline::FromString("shape-prop,dce");
  ASSERT_TRUE(p.ok());
  PassContext ctx;
  ctx.dump_dir = ::testing::TempDir() + "/pipeline_dumps";
  ctx.dump_format = DumpFormat::kText;
  auto r = p->Run(m, ctx);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(*r);
  EXPECT_EQ(m.graph().FindNode("dead"), nullptr);
  ASSERT_TRUE(m.graph().FindNode("relu")->type().has_value());
  EXPECT_EQ(m.graph().FindNode("relu")->type()->ToString(), "f32[4]");
  ASSERT_EQ(ctx.timings().size(), 2u);
  EXPECT_EQ(ctx.timings()[1].pass, "dce");
  EXPECT_TRUE(ctx.timings()[1].changed);
  auto after = LoadTextModule(ctx.dump_dir + "/02-dce-after.graft");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->graph().FindNode("dead"), nullptr);
  auto before = LoadTextModule(ctx.dump_dir + "/02-dce-before.graft");
  ASSERT_TRUE(before.ok());
  EXPECT_NE(before->graph().FindNode("dead"), nullptr);
}

}  // namespace
}  // namespace graft::passes
