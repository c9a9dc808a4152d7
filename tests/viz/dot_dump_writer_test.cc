#include "viz/dot_dump_writer.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/file_io.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "passes/pass_context.h"
#include "passes/pipeline.h"
#include "viz/graphviz_render.h"

namespace graft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::string_view kModel = R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %dead : f32[4] = call_function[target=neg](args = (%x,), kwargs = {})
    %mul : f32[4] = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %add : f32[4] = call_function[target=add](args = (%mul, 1.0), kwargs = {})
    %relu : f32[4] = call_function[target=relu](args = (%add,), kwargs = {})
    %t : f32[4] = call_function[target=tanh](args = (%relu,), kwargs = {})
    return t
)";

Module Parse() {
  absl::StatusOr<Module> m = ParseModule(kModel);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : Module();
}

// What the pipeline handed a dump writer, copied while the modules live.
struct SeenDump {
  std::string pass;
  std::string path;
  bool has_before = false;
  bool before_has_dead = false;
  bool module_has_dead = false;
};

TEST(DotDumpWriterTest, AfterDumpsGetTheModuleBeforeThePass) {
  std::vector<SeenDump> seen;
  passes::PassContext ctx;
  ctx.dump_writer = [&](const passes::DumpRequest& r) {
    SeenDump s;
    s.pass = r.pass;
    s.path = r.path;
    s.has_before = r.before != nullptr;
    s.before_has_dead =
        r.before && r.before->graph().FindNode("dead") != nullptr;
    s.module_has_dead = r.module->graph().FindNode("dead") != nullptr;
    seen.push_back(s);
    return absl::OkStatus();
  };
  Module m = Parse();
  absl::StatusOr<passes::Pipeline> p = passes::Pipeline::FromString("dce");
  ASSERT_TRUE(p.ok()) << p.status();
  ctx.dump_dir = ::testing::TempDir() + "/dot_dump_requests";
  ctx.dump_format = passes::DumpFormat::kDot;
  ASSERT_TRUE(p->Run(m, ctx).ok());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].pass, "dce");
  EXPECT_TRUE(absl::EndsWith(seen[0].path, "/01-dce-before.dot"));
  EXPECT_FALSE(seen[0].has_before);
  EXPECT_TRUE(seen[0].module_has_dead);
  EXPECT_TRUE(absl::EndsWith(seen[1].path, "/01-dce-after.dot"));
  EXPECT_TRUE(seen[1].has_before);
  EXPECT_TRUE(seen[1].before_has_dead);
  EXPECT_FALSE(seen[1].module_has_dead);
}

TEST(DotDumpWriterTest, DotDumpsMarkWhatEachPassDid) {
  Module m = Parse();
  absl::StatusOr<passes::Pipeline> p =
      passes::Pipeline::FromString("dce,fuse-elementwise");
  ASSERT_TRUE(p.ok()) << p.status();
  passes::PassContext ctx;
  ctx.dump_writer = WriteDotDump;
  ctx.dump_dir = ::testing::TempDir() + "/dot_dumps";
  ctx.dump_format = passes::DumpFormat::kDot;
  absl::StatusOr<bool> changed = p->Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();

  absl::StatusOr<std::string> before =
      ReadFile(ctx.dump_dir + "/01-dce-before.dot");
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_THAT(*before, HasSubstr("<B>before dce</B>"));
  EXPECT_THAT(*before, HasSubstr("<B>dead</B>"));
  EXPECT_THAT(*before, Not(HasSubstr("removed")));

  absl::StatusOr<std::string> dce =
      ReadFile(ctx.dump_dir + "/01-dce-after.dot");
  ASSERT_TRUE(dce.ok()) << dce.status();
  EXPECT_THAT(*dce, HasSubstr("<B>after dce</B>"));
  EXPECT_THAT(*dce, HasSubstr("<S>dead</S>"));
  EXPECT_THAT(*dce, HasSubstr("created (0)"));
  EXPECT_THAT(*dce, HasSubstr("removed (1)"));

  // mul, add, relu, tanh become one group: a cluster of new nodes, with
  // the four old ones as ghosts replaced by their copies.
  absl::StatusOr<std::string> fuse =
      ReadFile(ctx.dump_dir + "/02-fuse-elementwise-after.dot");
  ASSERT_TRUE(fuse.ok()) << fuse.status();
  EXPECT_THAT(*fuse, HasSubstr("subgraph \"cluster_0\""));
  EXPECT_THAT(*fuse, HasSubstr("new: fuse-elementwise"));
  EXPECT_THAT(*fuse, HasSubstr("<S>relu</S>"));
  EXPECT_THAT(*fuse, HasSubstr("replaced by"));
  if (!HaveGraphviz()) {
    GTEST_SKIP() << "graft was built without Graphviz (libgraphviz-dev), so "
                    "libcgraph cannot check the dumps";
  }
  for (const std::string* text : {&*before, &*dce, &*fuse}) {
    absl::StatusOr<DotGraphSummary> s = ParseDot(*text);
    EXPECT_TRUE(s.ok()) << s.status() << "\n" << *text;
  }
}

TEST(DotDumpWriterTest, SvgDumps) {
  if (!HaveGraphviz()) {
    GTEST_SKIP() << "graft was built without Graphviz: SVG dumps need it";
  }
  Module m = Parse();
  absl::StatusOr<passes::Pipeline> p = passes::Pipeline::FromString("dce");
  ASSERT_TRUE(p.ok());
  passes::PassContext ctx;
  ctx.dump_writer = WriteDotDump;
  ctx.dump_dir = ::testing::TempDir() + "/svg_dumps";
  ctx.dump_format = passes::DumpFormat::kSvg;
  ASSERT_TRUE(p->Run(m, ctx).ok());
  absl::StatusOr<std::string> svg =
      ReadFile(ctx.dump_dir + "/01-dce-after.svg");
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_THAT(*svg, HasSubstr("<svg"));
  for (absl::string_view name : {"x", "mul", "add", "relu", "t", "dead"}) {
    EXPECT_THAT(*svg, HasSubstr(absl::StrCat(">", name, "</text>"))) << name;
  }
}

}  // namespace
}  // namespace graft
