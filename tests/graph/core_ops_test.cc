// The core op set against its contract, docs/ops.md: every op documented
// there is registered with exactly the documented parameters, and nothing
// else is. The doc is parsed at test time so the two cannot drift.

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "tests/graph/op_type_test_util.h"

namespace graft {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct DocParam {
  std::string name;
  std::string kind;  // "Tensor|Scalar", "int[]", ...
  bool optional = false;
  std::optional<std::string> default_text;
};

struct DocOp {
  std::string section;
  std::vector<DocParam> params;
};

std::string SourceDir() {
  if (const char* dir = std::getenv("GRAFT_SOURCE_DIR")) return dir;
  // Run outside ctest: this file is <root>/tests/graph/core_ops_test.cc.
  std::string file = __FILE__;
  for (int i = 0; i < 3; ++i) file = file.substr(0, file.rfind('/'));
  return file;
}

std::string ReadOpsDoc() {
  std::ifstream in(SourceDir() + "/docs/ops.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "name: Kind? = default".
DocParam ParseDocParam(absl::string_view text) {
  DocParam p;
  std::vector<std::string> name_rest =
      absl::StrSplit(text, absl::MaxSplits(':', 1));
  p.name = std::string(absl::StripAsciiWhitespace(name_rest[0]));
  std::string rest =
      name_rest.size() > 1 ? std::string(name_rest[1]) : std::string();
  std::vector<std::string> kind_default =
      absl::StrSplit(rest, absl::MaxSplits('=', 1));
  absl::string_view kind = absl::StripAsciiWhitespace(kind_default[0]);
  if (absl::ConsumeSuffix(&kind, "?")) p.optional = true;
  p.kind = std::string(kind);
  if (kind_default.size() > 1) {
    p.default_text = std::string(absl::StripAsciiWhitespace(kind_default[1]));
  }
  return p;
}

// Core op name -> documented signature, from every
// "| op | parameters | notes |" table.
std::map<std::string, DocOp> ParseOpsDoc(const std::string& doc) {
  std::map<std::string, DocOp> ops;
  std::string section;
  bool in_op_table = false;
  for (absl::string_view line : absl::StrSplit(doc, '\n')) {
    if (absl::StartsWith(line, "## ")) section = std::string(line.substr(3));
    if (!absl::StartsWith(line, "|")) {
      in_op_table = false;
      continue;
    }
    // Cells are split on unescaped pipes; "Tensor\|Scalar" is one cell.
    std::string row = absl::StrReplaceAll(line, {{"\\|", "\x01"}});
    std::vector<std::string> cells = absl::StrSplit(row, '|');
    if (cells.size() < 4) continue;
    for (std::string& c : cells) {
      c = absl::StrReplaceAll(absl::StripAsciiWhitespace(c), {{"\x01", "|"}});
    }
    if (cells[1] == "op" && cells[2] == "parameters") {
      in_op_table = true;
      continue;
    }
    if (!in_op_table || absl::StartsWith(cells[1], "---")) continue;
    std::string params = cells[2];
    params = absl::StrReplaceAll(params, {{"`", ""}});
    DocOp op{section, {}};
    for (absl::string_view p : absl::StrSplit(params, ", ")) {
      op.params.push_back(ParseDocParam(p));
    }
    for (absl::string_view name :
         absl::StrSplit(cells[1], ' ', absl::SkipEmpty())) {
      ops[std::string(name)] = op;
    }
  }
  return ops;
}

// Whether a documented default ("None", "False", "1e-5", "\"none\"", "f32")
// is the registered default argument.
::testing::AssertionResult DefaultMatches(const std::string& text,
                                          const Argument& a) {
  bool ok = false;
  if (text == "None") {
    ok = a.is_none();
  } else if (text == "True" || text == "False") {
    ok = a.is_bool() && a.bool_value() == (text == "True");
  } else if (text.size() >= 2 && text.front() == '"') {
    ok = a.is_string() && a.string_value() == text.substr(1, text.size() - 2);
  } else if (ParseDType(text).has_value()) {
    ok = a.is_dtype() && a.dtype_value() == *ParseDType(text);
  } else if (int64_t i = 0; absl::SimpleAtoi(text, &i)) {
    ok = a.is_int() && a.int_value() == i;
  } else if (double d = 0; absl::SimpleAtod(text, &d)) {
    ok = a.is_double() && (a.double_value() == d ||  // Infinities too.
                             std::abs(a.double_value() - d) <= 1e-12 * std::abs(d));
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "documented default " << text << " does not match the registry";
}

TEST(CoreOpsTest, DocumentedOpsAreRegisteredWithDocumentedSignatures) {
  std::map<std::string, DocOp> documented = ParseOpsDoc(ReadOpsDoc());
  // Every table of docs/ops.md, so a parse that silently finds nothing
  // cannot pass.
  ASSERT_GE(documented.size(), 70u) << "docs/ops.md not found or not parsed "
                                       "under "
                                    << SourceDir();
  OpRegistry registry;
  RegisterCoreOps(registry);
  for (const auto& [name, doc] : documented) {
    SCOPED_TRACE(name);
    const OpSchema* schema = registry.Find(name);
    if (schema == nullptr) {
      ADD_FAILURE() << name << " (" << doc.section
                    << ") is documented but not registered";
      continue;
    }
    if (schema->params.size() != doc.params.size()) {
      ADD_FAILURE() << "registered as " << schema->Signature() << " with "
                    << schema->params.size() << " parameters; documented with "
                    << doc.params.size();
      continue;
    }
    for (size_t i = 0; i < doc.params.size(); ++i) {
      const DocParam& want = doc.params[i];
      const ParamSpec& got = schema->params[i];
      SCOPED_TRACE(want.name);
      EXPECT_EQ(got.name, want.name);
      EXPECT_EQ(ParamKindName(got.kind), want.kind);
      EXPECT_EQ(got.optional, want.optional);
      ASSERT_EQ(got.default_value.has_value(), want.default_text.has_value());
      if (want.default_text.has_value()) {
        EXPECT_TRUE(DefaultMatches(*want.default_text, *got.default_value));
      }
    }
  }
  for (const OpSchema* schema : registry.All()) {
    EXPECT_TRUE(documented.contains(schema->name))
        << schema->name << " is registered but not in docs/ops.md";
  }
}

TEST(CoreOpsTest, EverySchemaIsCompleteAndPure) {
  OpRegistry registry;
  RegisterCoreOps(registry);
  for (const OpSchema* schema : registry.All()) {
    SCOPED_TRACE(schema->name);
    EXPECT_TRUE(schema->pure);
    EXPECT_TRUE(static_cast<bool>(schema->infer));
    EXPECT_FALSE(schema->summary.empty());
    EXPECT_EQ(schema->summary.find('\n'), std::string::npos);
    EXPECT_EQ(schema->returns_tuple, schema->name == "split");
  }
}

TEST(CoreOpsTest, GlobalRegistryHoldsTheCoreOps) {
  for (const char* name : {"add", "conv2d", "split", "getitem"}) {
    EXPECT_NE(OpRegistry::Global().Find(name), nullptr) << name;
  }
}

using CoreOpsGuardTest = op_test::OpTypeTest;

TEST_F(CoreOpsGuardTest, TupleArgumentNeedsGetitem) {
  Node* x = Input(DType::kF32, {6, 2});
  ASSERT_TRUE(InferAll("split", {x, 3}).ok());
  Node* parts = last();
  EXPECT_THAT(
      op_test::ErrorOf(Infer("relu", {parts})),
      AllOf(HasSubstr("relu"), HasSubstr("tuple of 2"), HasSubstr("getitem")));
}

}  // namespace
}  // namespace graft
