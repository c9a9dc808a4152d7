#ifndef GRAFT_PASSES_SUBSTITUTE_H_
#define GRAFT_PASSES_SUBSTITUTE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "passes/pass.h"

namespace graft::passes {

// One entry of a substitution table: every match of `pattern` is replaced
// by `replacement` (FX replace_pattern rules, see replace_pattern.h).
struct Substitution {
  std::string name;
  Module pattern;
  Module replacement;
};

// Op substitution from a table of pattern -> replacement pairs, given from
// C++ or read from a text file (`substitute{file=PATH}`). Entries are applied
// in table order, each once over the whole graph with ReplacePattern, so an
// entry sees the result of the entries before it; a replacement is not
// searched again for its own pattern, which keeps a table such as
// relu -> leaky_relu -> relu from looping. New nodes are typed from their
// inputs and record the pass and the nodes they replace as provenance.
//
// The file format holds sections introduced by marker lines that start at
// the beginning of a line:
//
//   # Comments and blank lines may come before the first section.
//   --- pattern relu_to_leaky
//   graph():
//       %x = placeholder[target=x]
//       %r = call_function[target=relu](args = (%x,), kwargs = {})
//       return r
//   --- replacement relu_to_leaky
//   graph():
//       %x = placeholder[target=x]
//       %r = call_function[target=leaky_relu](args = (%x, 0.1), kwargs = {})
//       return r
//
// Each section's body is a whole module in the text IR (docs/ir.md), so a
// replacement may declare the tensors it reads. Every name has exactly one
// pattern and one replacement section, in either order; entries are applied
// in the order of their pattern sections. Any other line starting with
// "---" is an error. Errors name the file and line: parse errors point into
// the section's body with the file's own line numbers.
class SubstitutePass : public Pass {
 public:
  // Entries are named "substitution_0", "substitution_1", ...
  explicit SubstitutePass(std::vector<std::pair<Module, Module>> table);
  explicit SubstitutePass(std::vector<Substitution> table)
      : table_(std::move(table)) {}

  absl::string_view name() const override { return "substitute"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

  const std::vector<Substitution>& table() const { return table_; }

 private:
  std::vector<Substitution> table_;
};

// Reads a substitution table in the format above; `filename` names it in
// errors and in the nodes' locations.
absl::StatusOr<std::vector<Substitution>> ParseSubstitutionTable(
    absl::string_view text, absl::string_view filename = "<input>");
absl::StatusOr<std::vector<Substitution>> LoadSubstitutionTable(
    absl::string_view path);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_SUBSTITUTE_H_
