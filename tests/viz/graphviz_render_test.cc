#include "viz/graphviz_render.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/file_io.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "viz/dot_writer.h"

namespace graft {
namespace {

using ::testing::HasSubstr;

#define SKIP_WITHOUT_GRAPHVIZ()                                               \
  if (!HaveGraphviz()) {                                                      \
    GTEST_SKIP() << "graft was built without Graphviz (libgraphviz-dev), so " \
                    "nothing is rendered";                                    \
  }

constexpr absl::string_view kModel = R"(
tensor w : f32[3,4] = random(seed=1)

graph():
    %input_x : f32[2,4] = placeholder[target=input_x]
    %weight_w : f32[3,4] = get_attr[target=w]
    %linear_y : f32[2,3] = call_function[target=linear](args = (%input_x, %weight_w), kwargs = {})
    %gelu_z : f32[2,3] = call_function[target=gelu](args = (%linear_y,), kwargs = {})
    %sum_s : f32[] = call_function[target=sum](args = (%gelu_z,), kwargs = {})
    return sum_s
)";

std::string ModelDot() {
  absl::StatusOr<Module> m = ParseModule(kModel);
  EXPECT_TRUE(m.ok()) << m.status();
  return ModuleToDot(*m).text;
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

std::string FreshDir(absl::string_view name) {
  std::string dir =
      absl::StrCat(::testing::TempDir(), "/", name, "_", ::getpid());
  std::string command =
      absl::StrCat("rm -rf '", dir, "' && mkdir -p '", dir, "'");
  EXPECT_EQ(std::system(command.c_str()), 0);
  return dir;
}

TEST(GraphvizRenderTest, FormatFromExtension) {
  const std::pair<absl::string_view, PictureFormat> formats[] = {
      {"a/b.dot", PictureFormat::kDot},
      {"b.gv", PictureFormat::kDot},
      {"B.SVG", PictureFormat::kSvg},
      {"x.png", PictureFormat::kPng}};
  for (const auto& [path, format] : formats) {
    absl::StatusOr<PictureFormat> f = PictureFormatForPath(path);
    ASSERT_TRUE(f.ok()) << path << ": " << f.status();
    EXPECT_EQ(*f, format) << path;
  }
  for (absl::string_view bad : {"x.jpg", "x", "dir.svg/x", "x.svg.txt", ""}) {
    absl::StatusOr<PictureFormat> f = PictureFormatForPath(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_THAT(f.status().message(),
                HasSubstr(".dot (Graphviz text), .svg or .png"));
  }
}

TEST(GraphvizRenderTest, MissingGraphvizMessageSaysWhatToDo) {
  std::string message = GraphvizMissingMessage();
  EXPECT_EQ(
      message,
      "graft was built without Graphviz: install libgraphviz-dev "
      "(scripts/install-deps.sh) and rebuild to render SVG/PNG; .dot output "
      "needs nothing");
  if (!HaveGraphviz()) {
    absl::StatusOr<std::string> svg =
        RenderDot("digraph { a }", PictureFormat::kSvg);
    ASSERT_FALSE(svg.ok());
    EXPECT_EQ(svg.status().message(), message);
    EXPECT_FALSE(ParseDot("digraph { a }").ok());
  }
}

TEST(GraphvizRenderTest, DotNeedsNoGraphviz) {
  absl::StatusOr<std::string> dot =
      RenderDot("digraph { a }", PictureFormat::kDot);
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ(*dot, "digraph { a }");
  std::string dir = FreshDir("render_dot");
  ASSERT_TRUE(WritePicture(dir + "/g.dot", "digraph { a }").ok());
  absl::StatusOr<std::string> written = ReadFile(dir + "/g.dot");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, "digraph { a }");
  EXPECT_EQ(FilesIn(dir),
            std::vector<std::string>{"g.dot"});  // no temporary left
}

TEST(GraphvizRenderTest, ParsesWithCgraph) {
  SKIP_WITHOUT_GRAPHVIZ();
  absl::StatusOr<DotGraphSummary> s =
      ParseDot("digraph { subgraph cluster_0 { a; b } a -> b; b -> c; }");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes, 3);
  EXPECT_EQ(s->edges, 2);
  absl::StatusOr<DotGraphSummary> bad = ParseDot("digraph { a -> }");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("syntax error"));
  // A failed read leaves Graphviz usable.
  EXPECT_TRUE(ParseDot("digraph { a -> b }").ok());
}

TEST(GraphvizRenderTest, SvgHasEveryNodeName) {
  SKIP_WITHOUT_GRAPHVIZ();
  absl::StatusOr<std::string> svg = RenderDot(ModelDot(), PictureFormat::kSvg);
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_THAT(*svg, HasSubstr("<svg"));
  EXPECT_TRUE(absl::EndsWith(*svg, "</svg>\n"));
  for (absl::string_view name :
       {"input_x", "weight_w", "linear_y", "gelu_z", "sum_s", "output"}) {
    EXPECT_THAT(*svg, HasSubstr(absl::StrCat(">", name, "</text>"))) << name;
  }
  EXPECT_THAT(*svg, HasSubstr("call_function: linear"));
  EXPECT_THAT(*svg, HasSubstr("f32[2,3]"));
}

TEST(GraphvizRenderTest, Png) {
  SKIP_WITHOUT_GRAPHVIZ();
  absl::StatusOr<std::string> png = RenderDot(ModelDot(), PictureFormat::kPng);
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_TRUE(absl::StartsWith(*png, "\x89PNG\r\n\x1a\n"));
}

TEST(GraphvizRenderTest, BadHtmlLabelIsAnError) {
  SKIP_WITHOUT_GRAPHVIZ();
  absl::StatusOr<std::string> svg =
      RenderDot("digraph { a [label=<<B>x</I>>] }", PictureFormat::kSvg);
  ASSERT_FALSE(svg.ok());
  EXPECT_THAT(svg.status().message(), HasSubstr("Graphviz"));
  // And the next call works.
  EXPECT_TRUE(
      RenderDot("digraph { a [label=<<B>x</B>>] }", PictureFormat::kSvg).ok());
}

TEST(GraphvizRenderTest, WritesRenderedFilesAtomically) {
  SKIP_WITHOUT_GRAPHVIZ();
  std::string dir = FreshDir("render_files");
  ASSERT_TRUE(WritePicture(dir + "/m.svg", ModelDot()).ok());
  ASSERT_TRUE(WritePicture(dir + "/m.png", ModelDot()).ok());
  absl::StatusOr<std::string> svg = ReadFile(dir + "/m.svg");
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_THAT(*svg, HasSubstr("linear_y"));
  absl::StatusOr<std::string> png = ReadFile(dir + "/m.png");
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_TRUE(absl::StartsWith(*png, "\x89PNG"));
  // A graph Graphviz refuses leaves no file behind, not even a temporary.
  absl::Status s = WritePicture(dir + "/bad.svg", "digraph { -> }");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cannot render"));
  std::vector<std::string> files = FilesIn(dir);
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"m.png", "m.svg"}));
}

TEST(GraphvizRenderTest, ThreadsShareOneContext) {
  SKIP_WITHOUT_GRAPHVIZ();
  std::string dot = ModelDot();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);  // Not vector<bool>: threads write neighbours.
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      bool all = true;
      for (int i = 0; i < 3; ++i) {
        absl::StatusOr<std::string> svg = RenderDot(dot, PictureFormat::kSvg);
        all = all && svg.ok() && absl::StrContains(*svg, "gelu_z");
      }
      ok[t] = all ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << t;
}

}  // namespace
}  // namespace graft
