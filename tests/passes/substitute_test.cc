#include "passes/substitute.h"

#include <fstream>
#include <string>

#include "graph/verifier.h"
#include "passes/pipeline.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;
using ::testing::HasSubstr;

constexpr char kModel[] = R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %a : f32[4] = call_function[target=relu](args = (%x,), kwargs = {})
    %b : f32[4] = call_function[target=sigmoid](args = (%a,), kwargs = {})
    %c : f32[4] = call_function[target=relu](args = (%b,), kwargs = {})
    return c
)";

// relu(x) -> leaky_relu(x, 0.1), and sigmoid(x) -> 1 / (1 + exp(-x)).
constexpr char kTable[] = R"(# Two substitutions.

--- pattern relu_to_leaky
graph():
    %x = placeholder[target=x]
    %r = call_function[target=relu](args = (%x,), kwargs = {})
    return r
--- replacement relu_to_leaky
graph():
    %x = placeholder[target=x]
    %r = call_function[target=leaky_relu](args = (%x, 0.1), kwargs = {})
    return r
--- replacement sigmoid_by_exp
graph():
    %x = placeholder[target=x]
    %n = call_function[target=neg](args = (%x,), kwargs = {})
    %e = call_function[target=exp](args = (%n,), kwargs = {})
    %d = call_function[target=add](args = (%e, 1.0), kwargs = {})
    %r = call_function[target=reciprocal](args = (%d,), kwargs = {})
    return r
--- pattern sigmoid_by_exp
graph():
    %x = placeholder[target=x]
    %s = call_function[target=sigmoid](args = (%x,), kwargs = {})
    return s
)";

std::string WriteTemp(absl::string_view name, absl::string_view text) {
  std::string path = ::testing::TempDir() + std::string(name);
  std::ofstream(path) << text;
  return path;
}

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<std::vector<Substitution>> t =
      ParseSubstitutionTable(text, "t.txt");
  return t.ok() ? "(parsed)" : std::string(t.status().message());
}

TEST(SubstituteTest, TableFromCxx) {
  std::vector<std::pair<Module, Module>> table;
  table.emplace_back(Parse(R"(
graph():
    %x = placeholder[target=x]
    %r = call_function[target=relu](args = (%x,), kwargs = {})
    return r
)"),
                     Parse(R"(
graph():
    %x = placeholder[target=x]
    %r = call_function[target=clamp](args = (%x,), kwargs = {min: 0.0})
    return r
)"));
  SubstitutePass pass(std::move(table));
  EXPECT_EQ(pass.table()[0].name, "substitution_0");
  Module m = Parse(kModel);
  PassContext ctx;
  absl::StatusOr<bool> changed = pass.Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed);
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "clamp sigmoid clamp");
  Node* first = m.graph().first()->next();
  ASSERT_TRUE(first->is_call("clamp"));
  EXPECT_EQ(first->arg(0).node()->name(), "x");
  EXPECT_EQ(first->kwarg("min")->double_value(), 0.0);
  EXPECT_EQ(*first->type(), (TensorType{DType::kF32, {4}}));
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(SubstituteTest, TableFromFileInPatternOrder) {
  absl::StatusOr<std::vector<Substitution>> table =
      ParseSubstitutionTable(kTable);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 2u);
  // Entries follow their pattern sections.
  EXPECT_EQ((*table)[0].name, "relu_to_leaky");
  EXPECT_EQ((*table)[1].name, "sigmoid_by_exp");
  // Nodes carry the file's own line numbers.
  EXPECT_EQ((*table)[1].pattern.graph().FindNode("s")->meta().location->line,
            24);

  Module m = Parse(kModel);
  PassContext ctx;
  SubstitutePass pass(*std::move(table));
  absl::StatusOr<bool> changed = pass.Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed);
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "leaky_relu neg exp add reciprocal leaky_relu");
  Node* last = m.graph().output()->arg(0).node();
  ASSERT_TRUE(last->is_call("leaky_relu"));
  EXPECT_EQ(last->arg(1).double_value(), 0.1);
  EXPECT_TRUE(last->arg(0).node()->is_call("reciprocal"));
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(SubstituteTest, PipelineOption) {
  const std::string path = WriteTemp("substitute_test_table.txt", kTable);
  absl::StatusOr<Pipeline> p =
      Pipeline::FromString("substitute{file=" + path + "}");
  ASSERT_TRUE(p.ok()) << p.status();
  Module m = Parse(kModel);
  PassContext ctx;
  absl::StatusOr<bool> changed = p->Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed);
  EXPECT_EQ(Ops(m.graph()), "leaky_relu neg exp add reciprocal leaky_relu");
  ASSERT_TRUE(m.graph().FindNode("reciprocal")->meta().provenance.has_value());
  EXPECT_EQ(m.graph().FindNode("reciprocal")->meta().provenance->pass,
            "substitute");
}

TEST(SubstituteTest, PipelineErrors) {
  absl::StatusOr<Pipeline> none = Pipeline::FromString("substitute");
  EXPECT_THAT(none.status().message(), HasSubstr("substitute{file=PATH}"));
  absl::StatusOr<Pipeline> missing =
      Pipeline::FromString("substitute{file=/nonexistent/table.txt}");
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/table.txt"));
  const std::string path =
      WriteTemp("substitute_test_bad.txt",
                "--- pattern p\ngraph():\n    %x = oops\n--- replacement p\n");
  absl::StatusOr<Pipeline> bad =
      Pipeline::FromString("substitute{file=" + path + "}");
  EXPECT_THAT(bad.status().message(), HasSubstr(path + ":3:"));
}

TEST(SubstituteTest, FormatErrorsNameTheLine) {
  EXPECT_EQ(ErrorOf("graph():\n"),
            "t.txt:1: expected a '--- pattern NAME' line before any graph text "
            "(only comments may come first)");
  EXPECT_EQ(
      ErrorOf("# c\n--- pattern\n"),
      "t.txt:2: expected '--- pattern NAME' or '--- replacement NAME', got "
      "'--- pattern'");
  EXPECT_EQ(
      ErrorOf("--- swap a\n"),
      "t.txt:1: expected '--- pattern NAME' or '--- replacement NAME', got "
      "'--- swap a'");
  EXPECT_EQ(
      ErrorOf("--- pattern 9a\n"),
      "t.txt:1: '9a' is not a valid name (letters, digits, '_' and '.', not "
      "starting with a digit)");
  EXPECT_EQ(ErrorOf("--- pattern a\n--- replacement a\n--- pattern a\n"),
            "t.txt:3: pattern 'a' is already defined at line 1");
  EXPECT_EQ(ErrorOf("--- pattern a\n"),
            "t.txt:1: pattern 'a' has no '--- replacement a' section");
  EXPECT_EQ(ErrorOf("--- replacement b\n"),
            "t.txt:1: replacement 'b' has no '--- pattern b' section");
  EXPECT_EQ(ErrorOf("--- pattern a\n# nothing\n--- replacement a\n"),
            "t.txt:1: pattern 'a' has no graph");
  EXPECT_EQ(ErrorOf(""),
            "t.txt: no '--- pattern NAME' section: the table is empty");
}

TEST(SubstituteTest, SectionErrorsNameTheLine) {
  // A parse error inside a section points at the file's line.
  std::string text =
      "--- pattern a\n"
      "graph():\n"
      "    %x = placeholder[target=x]\n"
      "    %r = call_function[target=relu](args = (%x,), kwargs = {})\n"
      "    return r\n"
      "--- replacement a\n"
      "graph():\n"
      "    %x = placeholder[target=x]\n"
      "    %r = call_function[target=relu](args = (%y,), kwargs = {})\n"
      "    return r\n";
  EXPECT_THAT(ErrorOf(text), HasSubstr("t.txt:9:"));
  // An op nobody registered.
  std::string unknown = text;
  unknown.replace(unknown.find("(%y,)"), 5, "(%x,)");
  unknown.replace(unknown.rfind("target=relu"), 11, "target=nope");
  EXPECT_THAT(ErrorOf(unknown), HasSubstr("t.txt:6: replacement 'a': verify:"));
  // Mismatched signatures.
  std::string two_inputs =
      "--- pattern a\n"
      "graph():\n"
      "    %x = placeholder[target=x]\n"
      "    %r = call_function[target=relu](args = (%x,), kwargs = {})\n"
      "    return r\n"
      "--- replacement a\n"
      "graph():\n"
      "    %x = placeholder[target=x]\n"
      "    %y = placeholder[target=y]\n"
      "    %r = call_function[target=add](args = (%x, %y), kwargs = {})\n"
      "    return r\n";
  EXPECT_EQ(
      ErrorOf(two_inputs),
      "t.txt:6: replacement 'a' takes 2 inputs and returns 1 values, but its "
      "pattern (line 1) takes 1 and returns 1");
}

}  // namespace
}  // namespace graft::passes
