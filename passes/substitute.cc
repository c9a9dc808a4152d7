#include "passes/substitute.h"

#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/file_io.h"
#include "graph/graph.h"
#include "graph/parser.h"
#include "graph/verifier.h"
#include "passes/replace_pattern.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

constexpr absl::string_view kMarker = "---";

// One "--- pattern NAME" or "--- replacement NAME" section of a table.
struct Section {
  int line = 0;  // Of the marker.
  bool is_pattern = true;
  std::string name;
  std::string body;   // The lines after the marker, up to the next one.
  int body_line = 0;  // Line number of the body's first line.
};

absl::Status LineError(absl::string_view file, int line,
                       absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(file, ":", line, ": ", message));
}

bool IsBlankOrComment(absl::string_view line) {
  absl::string_view s = absl::StripLeadingAsciiWhitespace(line);
  return s.empty() || s[0] == '#';
}

absl::StatusOr<Section> ReadMarker(absl::string_view file, int line_no,
                                   absl::string_view line) {
  std::vector<absl::string_view> words =
      absl::StrSplit(line.substr(kMarker.size()), ' ', absl::SkipWhitespace());
  Section s;
  s.line = line_no;
  if (words.size() != 2 ||
      (words[0] != "pattern" && words[0] != "replacement")) {
    return LineError(
        file, line_no,
        absl::StrCat("expected '--- pattern NAME' or '--- "
                     "replacement NAME', got '",
                     absl::StripTrailingAsciiWhitespace(line), "'"));
  }
  s.is_pattern = words[0] == "pattern";
  s.name = std::string(absl::StripTrailingAsciiWhitespace(words[1]));
  if (!IsValidName(s.name)) {
    return LineError(file, line_no,
                     absl::StrCat("'", s.name,
                                  "' is not a valid name (letters, digits, "
                                  "'_' and '.', not starting with a digit)"));
  }
  return s;
}

absl::StatusOr<std::vector<Section>> SplitSections(absl::string_view text,
                                                   absl::string_view file) {
  std::vector<Section> sections;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    absl::string_view line = lines[i];
    if (absl::StartsWith(line, kMarker)) {
      ASSIGN_OR_RETURN(Section s, ReadMarker(file, line_no, line));
      s.body_line = line_no + 1;
      sections.push_back(std::move(s));
      continue;
    }
    if (sections.empty()) {
      if (!IsBlankOrComment(line)) {
        return LineError(file, line_no,
                         "expected a '--- pattern NAME' line before any "
                         "graph text (only comments may come first)");
      }
      continue;
    }
    absl::StrAppend(&sections.back().body, line, "\n");
  }
  return sections;
}

// Parses a section's body so that parse errors and node locations carry the
// file's own line numbers: the body is preceded by as many empty lines as
// come before it in the file.
absl::StatusOr<Module> ParseSection(const Section& s, absl::string_view file) {
  bool empty = true;
  for (absl::string_view line : absl::StrSplit(s.body, '\n')) {
    if (!IsBlankOrComment(line)) empty = false;
  }
  const char* kind = s.is_pattern ? "pattern" : "replacement";
  if (empty) {
    return LineError(file, s.line,
                     absl::StrCat(kind, " '", s.name, "' has no graph"));
  }
  std::string padded(static_cast<size_t>(s.body_line - 1), '\n');
  padded += s.body;
  ASSIGN_OR_RETURN(Module m, ParseModule(padded, file));
  if (absl::Status v = Verify(m); !v.ok()) {
    return LineError(file, s.line,
                     absl::StrCat(kind, " '", s.name, "': ", v.message()));
  }
  return m;
}

size_t NumPlaceholders(const Module& m) {
  return m.graph().placeholders().size();
}

size_t NumOutputs(const Module& m) {
  const Node* out = m.graph().output();
  if (out == nullptr || out->num_args() != 1) return 0;
  return out->arg(0).is_list() ? out->arg(0).list().size() : 1;
}

}  // namespace

SubstitutePass::SubstitutePass(std::vector<std::pair<Module, Module>> table) {
  table_.reserve(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    table_.push_back({absl::StrCat("substitution_", i),
                      std::move(table[i].first), std::move(table[i].second)});
  }
}

absl::StatusOr<std::vector<Substitution>> ParseSubstitutionTable(
    absl::string_view text, absl::string_view filename) {
  ASSIGN_OR_RETURN(std::vector<Section> sections,
                   SplitSections(text, filename));
  // Name -> (pattern section, replacement section), by index.
  struct Pair {
    const Section* pattern = nullptr;
    const Section* replacement = nullptr;
  };
  std::map<std::string, Pair> pairs;
  std::vector<std::string> order;  // Names in pattern-section order.
  for (const Section& s : sections) {
    Pair& p = pairs[s.name];
    const Section*& slot = s.is_pattern ? p.pattern : p.replacement;
    if (slot != nullptr) {
      return LineError(
          filename, s.line,
          absl::StrCat(s.is_pattern ? "pattern" : "replacement", " '", s.name,
                       "' is already defined at line ", slot->line));
    }
    slot = &s;
    if (s.is_pattern) order.push_back(s.name);
  }
  for (const auto& [name, p] : pairs) {
    if (p.pattern == nullptr) {
      return LineError(
          filename, p.replacement->line,
          absl::StrCat("replacement '", name, "' has no '--- pattern ", name,
                       "' section"));
    }
    if (p.replacement == nullptr) {
      return LineError(
          filename, p.pattern->line,
          absl::StrCat("pattern '", name, "' has no '--- replacement ", name,
                       "' section"));
    }
  }
  std::vector<Substitution> table;
  for (const std::string& name : order) {
    const Pair& p = pairs.at(name);
    ASSIGN_OR_RETURN(Module pattern, ParseSection(*p.pattern, filename));
    ASSIGN_OR_RETURN(Module replacement,
                     ParseSection(*p.replacement, filename));
    if (NumPlaceholders(pattern) != NumPlaceholders(replacement) ||
        NumOutputs(pattern) != NumOutputs(replacement)) {
      return LineError(
          filename, p.replacement->line,
          absl::StrCat(
              "replacement '", name, "' takes ", NumPlaceholders(replacement),
              " inputs and returns ", NumOutputs(replacement),
              " values, but its pattern (line ", p.pattern->line, ") takes ",
              NumPlaceholders(pattern), " and returns ", NumOutputs(pattern)));
    }
    table.push_back({name, std::move(pattern), std::move(replacement)});
  }
  if (table.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        filename, ": no '--- pattern NAME' section: the table is empty"));
  }
  return table;
}

absl::StatusOr<std::vector<Substitution>> LoadSubstitutionTable(
    absl::string_view path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(std::string(path)));
  return ParseSubstitutionTable(text, path);
}

absl::StatusOr<bool> SubstitutePass::Run(Module& module, PassContext& ctx) {
  bool changed = false;
  for (const Substitution& s : table_) {
    absl::StatusOr<std::vector<ReplacedPattern>> replaced =
        ReplacePattern(module, s.pattern, s.replacement, {}, &ctx);
    if (!replaced.ok()) {
      return absl::Status(replaced.status().code(),
                          absl::StrCat("substitution '", s.name,
                                       "': ", replaced.status().message()));
    }
    changed |= !replaced->empty();
  }
  return changed;
}

}  // namespace graft::passes
