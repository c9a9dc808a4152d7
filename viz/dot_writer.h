#ifndef GRAFT_VIZ_DOT_WRITER_H_
#define GRAFT_VIZ_DOT_WRITER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/module.h"
#include "graph/node.h"

namespace graft {

// What colour a node's box gets in a picture: the kind of work it does.
enum class DotNodeKind {
  kInput,         // placeholder
  kOutput,        // output
  kWeight,        // get_attr
  kComputeHeavy,  // OpKind::kContraction: matmul, linear, conv2d, ...
  kReduction,     // OpKind::kReduction: softmax, normalization, pooling
  kPointwise,     // OpKind::kPointwise
  kShape,         // OpKind::kView: reshape, permute, concat, getitem, ...
  kQuantize,      // OpKind::kQuantize
  kModule,        // call_module drawn as one box
  kCollective,    // graft::all_reduce, graft::all_gather (a sharded rank)
  kOther,
};
DotNodeKind ClassifyNodeForDot(const Node& node);
// The fill colour of a kind, as "#rrggbb".
absl::string_view DotKindColor(DotNodeKind kind);
// "input", "compute-heavy", ...: for the legend of docs/visualization.md.
absl::string_view DotKindName(DotNodeKind kind);

// A node a pass removed, drawn as a dashed grey box where it used to be:
// joined to the nodes it read and the nodes that read it (where those still
// exist) and to the nodes that replaced it (their provenance names it).
struct DotGhost {
  // The graph drawn that held it: the module's or one of its submodules'.
  const Graph* graph = nullptr;
  std::string name;
  std::string op;                   // "call_function: relu"
  std::string type;                 // "f32[4]", or empty
  std::vector<std::string> inputs;  // Names of the nodes it read.
  std::vector<std::string> users;   // Names of the nodes that read it.
};

// How ModuleToDot draws a module.
struct DotOptions {
  // call_module nodes as clusters holding their submodule's nodes (true),
  // or as one box each that lists the ops inside (false).
  bool cluster_fused = false;
  // Most boxes to draw; 0: no limit. Above it the submodules are drawn
  // collapsed, and if that is still too many, only the first max_nodes
  // nodes of the graph are drawn; a note in the picture says so. Graphviz's
  // layout time grows quickly with size, and a picture of more than a few
  // thousand boxes cannot be read anyway.
  size_t max_nodes = 5000;
  // Edges carry the shape of the value they carry.
  bool edge_labels = true;
  // A line at the top of the picture; empty: none.
  std::string title;

  // Highlighting what a pass did. A node counts as created when its
  // provenance names `created_by_pass`, or names any pass with
  // `created_by_any_pass`, or when it is in `created`.
  std::string created_by_pass;
  bool created_by_any_pass = false;
  absl::flat_hash_set<const Node*> created;
  // Removed nodes, drawn as ghosts.
  std::vector<DotGhost> ghosts;

  // Per node: a fill colour ("#rrggbb") instead of its kind's (a heat map,
  // as `graft quantize --report-svg` draws SQNR), and a last line of text.
  absl::flat_hash_map<const Node*, std::string> fill_colors;
  absl::flat_hash_map<const Node*, std::string> notes;
};

// Marks what turned `before` into `after` in `options`, for drawing
// `after`: nodes created by `pass` (any pass when `pass` is empty, for a
// whole pipeline) are highlighted, and the nodes of `before` that `after`
// lacks (by name, in the top-level graph and in each submodule both have)
// become ghosts. The ghosts refer to `after`'s graphs: draw `after` itself
// (not a copy) with these options, while it lives.
void AddPassDiff(const Module& before, const Module& after,
                 absl::string_view pass, DotOptions* options);

// A DOT text and what the user should know about it.
struct DotResult {
  std::string text;
  // Empty, or why the picture leaves things out and what to do about it.
  std::string warning;
  size_t boxes = 0;        // Node boxes drawn, ghosts included.
  bool collapsed = false;  // Submodules were collapsed to fit max_nodes.
  bool truncated = false;  // Only part of the graph was drawn.
};

// The module as a Graphviz DOT digraph: one box per node (an HTML-like
// label: name, opcode and target, type, quantization parameters and other
// literal arguments), coloured by DotNodeKind; weights as small boxes with
// their name, dtype and shape; edges labelled with shapes; submodules as
// clusters or collapsed boxes. Every identifier is quoted and every piece of
// user text escaped, so any node, tensor or op name is safe. Linear in the
// size of the module.
DotResult ModuleToDot(const Module& module, const DotOptions& options = {});

// Draws `module` into `path` in the format its extension names: DOT text
// (.dot, .gv: needs nothing) or SVG/PNG (.svg, .png: rendered through
// Graphviz, an error when graft was built without it). The file is written
// through a temporary and a rename. `warning`, if given, receives
// DotResult::warning (empty when the whole module was drawn).
absl::Status WriteModulePicture(const Module& module, const std::string& path,
                                const DotOptions& options = {},
                                std::string* warning = nullptr);

// Appends `text` to `out` escaped for an HTML-like label: & < > " ' become
// entities, control characters and bytes that are not UTF-8 become \xHH.
void AppendHtmlEscaped(std::string* out, absl::string_view text);

}  // namespace graft

#endif  // GRAFT_VIZ_DOT_WRITER_H_
