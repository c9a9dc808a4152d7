#ifndef GRAFT_GRAPH_OP_TRAITS_H_
#define GRAFT_GRAPH_OP_TRAITS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace graft {

class Node;
class OpCall;

// What kind of work an op does. Passes (fusion), pictures (colours), cost
// counts and code generators read it instead of keeping op lists of their
// own.
enum class OpKind : unsigned char {
  kOther,
  // Each result element depends only on the elements at the same
  // (broadcast) position of the inputs: add, relu, where, cast, ...
  kPointwise,
  // Reduces or normalizes along dims: sum, softmax, layer_norm, pooling.
  kReduction,
  // Sums products over a contracted dim: matmul, linear, conv2d.
  kContraction,
  // Moves, selects or reinterprets elements without arithmetic: reshape,
  // permute, concat, slice, gather, getitem.
  kView,
  // Converts between float and quantized values.
  kQuantize,
};

// "pointwise", "contraction", ...
absl::string_view OpKindName(OpKind kind);

// The traits of an op (OpSchema::traits).
struct OpTraits {
  OpKind kind = OpKind::kOther;
  // Pointwise ops: one result element as an expression over the elements
  // of the tensor parameters and the values of the scalar ones, each named
  // as its parameter ("input + other", "max(input, 0)"); graph/
  // scalar_formula.h has the grammar. A function of the call, since
  // attributes may choose the formula (gelu's `approximate`). A pointwise
  // op with a formula needs no code of its own in a code generator.
  std::function<std::string(const OpCall&)> formula;
  // Floating-point operations of one call from the node's static types;
  // unset: derived from the kind (PointwiseFlops, ContractionFlops, ...).
  std::function<std::optional<int64_t>(const Node&)> flops;
};

// A formula that does not depend on the call's attributes.
std::function<std::string(const OpCall&)> Formula(std::string text);

// The traits of a node's op; default traits for anything but a call of a
// registered op.
OpKind KindOf(const Node& node);
// The scalar formula of a pointwise call, or nullopt.
std::optional<std::string> PointwiseFormulaOf(const Node& node);

// Whether removing `node` when nothing uses it, or merging it with an equal
// node, keeps the program's meaning: get_attr, calls of registered pure ops
// (an unregistered op may have effects), and call_module: graft's
// submodules hold fused groups and partitions, and outlining
// (passes/outline.h) refuses impure ops, so what a call_module runs is pure.
// Placeholders and the output node are the graph's interface and never
// pure. Every pass asks this.
bool IsPureNode(const Node& node);

// The cost of one call from its static types; nullopt when a type it needs
// is unknown or symbolic.
struct OpCost {
  int64_t flops = 0;
  int64_t bytes = 0;  // Read and written: every tensor operand and result.
};
std::optional<OpCost> CostOf(const Node& node);

}  // namespace graft

#endif  // GRAFT_GRAPH_OP_TRAITS_H_
