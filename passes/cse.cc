#include "passes/cse.h"

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "graph/op_registry.h"

namespace graft::passes {
namespace {

size_t HashArgument(const Argument& a);

size_t HashList(const ArgumentList& list) {
  size_t h = list.size();
  for (const Argument& e : list) h = absl::HashOf(h, HashArgument(e));
  return h;
}

size_t HashArgument(const Argument& a) {
  size_t kind = a.value().index();
  if (a.is_node()) return absl::HashOf(kind, a.node());
  if (a.is_int()) return absl::HashOf(kind, a.int_value());
  if (a.is_double()) return absl::HashOf(kind, a.double_value());
  if (a.is_bool()) return absl::HashOf(kind, a.bool_value());
  if (a.is_string()) return absl::HashOf(kind, a.string_value());
  if (a.is_dtype()) return absl::HashOf(kind, static_cast<int>(a.dtype_value()));
  if (a.is_list()) return absl::HashOf(kind, HashList(a.list()));
  return kind;
}

size_t HashNode(const Node* n) {
  size_t h = absl::HashOf(static_cast<int>(n->op()), n->target());
  for (const Argument& a : n->args()) h = absl::HashOf(h, HashArgument(a));
  for (const auto& [k, v] : n->kwargs()) h = absl::HashOf(h, k, HashArgument(v));
  return h;
}

bool SameComputation(const Node* a, const Node* b) {
  if (a->op() != b->op() || a->target() != b->target()) return false;
  if (a->num_args() != b->num_args() || a->kwargs() != b->kwargs()) return false;
  for (size_t i = 0; i < a->num_args(); ++i) {
    if (!(a->arg(i) == b->arg(i))) return false;
  }
  return true;
}

struct NodeHash {
  size_t operator()(const Node* n) const { return HashNode(n); }
};
struct NodeEq {
  bool operator()(const Node* a, const Node* b) const { return SameComputation(a, b); }
};

bool IsCandidate(const Node& n) {
  if (n.op() == OpCode::kGetAttr) return true;
  return n.op() == OpCode::kCallFunction && IsPureNode(n);
}

}  // namespace

absl::StatusOr<bool> CsePass::Run(Module& module, PassContext& ctx) {
  Graph& graph = module.graph();
  absl::flat_hash_set<Node*, NodeHash, NodeEq> seen;
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (!IsCandidate(*node)) continue;
    auto [it, inserted] = seen.insert(node);
    if (inserted) continue;
    node->ReplaceAllUsesWith(*it);
    (void)graph.EraseNode(node);
    changed = true;
  }
  return changed;
}

}  // namespace graft::passes
