#ifndef GRAFT_PASSES_REPLACE_PATTERN_H_
#define GRAFT_PASSES_REPLACE_PATTERN_H_

#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/pass_context.h"

namespace graft::passes {

// One occurrence of a pattern in a graph, before it is replaced.
struct PatternMatch {
  // Graph node bound to each pattern node (placeholders included).
  absl::flat_hash_map<const Node*, Node*> nodes_map;
  // Graph nodes bound to the pattern's placeholders, in placeholder order.
  std::vector<Node*> inputs;
  // Graph nodes matched by the pattern's outputs, in output order.
  std::vector<Node*> anchors;
};

// A match that was replaced: what it matched and what took its place.
// Node pointers stay valid until the graph's Cleanup().
struct ReplacedPattern {
  Node* anchor;                      // The first output's old node.
  std::vector<Node*> matched;        // Old nodes of the match (now erased).
  std::vector<Node*> replacements;   // New nodes, in graph order.
};

// Vetoes a match: return false to leave it alone (FX's match_filters).
using MatchFilter = std::function<bool(const PatternMatch&, const Graph& graph)>;

struct ReplaceOptions {
  // Literal arguments of the pattern match any literal (FX's ignore_literals).
  bool ignore_literals = false;
  std::vector<MatchFilter> filters;
};

// FX's subgraph rewriter. Finds every non-overlapping occurrence of
// `pattern` in `module` and replaces it with `replacement`. Both are modules
// whose graphs take the same number of placeholders (wildcards that bind any
// node) and return the same number of values.
//
// Matching rules: anchored at the pattern's outputs and walked upwards
// through operands; op codes and targets equal; literal operands equal
// (numerically, for numbers) unless ignored; a pattern node that is not an
// output may not have users outside the match; matches do not overlap; a
// match whose replacement would have to sit before one of its inputs and
// after a use of one of its outputs (a cycle) is skipped; filters may veto.
// Cost is linear in the graph size for patterns of bounded size.
//
// Tensors of the replacement module (read by its get_attr nodes) are copied
// into `module` under fresh names. New nodes record provenance from `ctx`.
absl::StatusOr<std::vector<ReplacedPattern>> ReplacePattern(
    Module& module, const Module& pattern, const Module& replacement,
    const ReplaceOptions& options = {}, const PassContext* ctx = nullptr);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_REPLACE_PATTERN_H_
