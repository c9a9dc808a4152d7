#include "passes/inferred_type_cache.h"

#include <algorithm>

#include "graph/op_registry.h"
#include "graph/shape.h"
#include "passes/node_util.h"

namespace graft::passes {
namespace {

// Appends the types of the nodes `a` refers to, depth first; false if one
// has no tensor type.
bool AppendTypes(const Argument& a, std::vector<TensorType>& out) {
  if (a.is_node()) {
    // getitem reads tuple types; such operands are not part of the key.
    if (!a.node()->type().has_value() || !a.node()->meta().tuple_types.empty()) {
      return false;
    }
    out.push_back(*a.node()->type());
    return true;
  }
  if (!a.is_list()) return true;
  for (const Argument& e : a.list()) {
    if (!AppendTypes(e, out)) return false;
  }
  return true;
}

bool AllStatic(const std::vector<TensorType>& types) {
  return std::all_of(types.begin(), types.end(),
                     [](const TensorType& t) { return IsStatic(t.shape); });
}

}  // namespace

bool InferredTypeCache::OperandTypes(const Node& copy) {
  operand_types_.clear();
  for (const Argument& a : copy.args()) {
    if (!AppendTypes(a, operand_types_)) return false;
  }
  for (const auto& [key, value] : copy.kwargs()) {
    if (!AppendTypes(value, operand_types_)) return false;
  }
  return true;
}

// Core ops' type rules read only literals and operand types (and the node's
// name, for a fresh symbolic dimension); an extension op's rule ("ns::op")
// may read more of its node, so its copies always run it.
bool IsCoreOp(const Node& n) {
  return n.schema() != nullptr &&
         absl::string_view(n.schema()->name).find("::") == absl::string_view::npos;
}

void InferredTypeCache::Apply(const Node* template_node, Node* copy) {
  const bool cacheable = IsCoreOp(*copy) && OperandTypes(*copy);
  std::vector<Entry>* entries = nullptr;
  if (cacheable) {
    entries = &entries_[template_node];
    for (const Entry& e : *entries) {
      if (e.operand_types == operand_types_) {
        SetInferredTypes(copy, e.types);
        return;
      }
    }
  }
  absl::StatusOr<std::optional<std::vector<TensorType>>> inferred = InferNodeTypes(*copy);
  std::vector<TensorType> types;
  if (inferred.ok() && inferred->has_value()) types = **std::move(inferred);
  SetInferredTypes(copy, types);
  if (cacheable && entries->size() < kMaxEntries && AllStatic(types)) {
    entries->push_back(Entry{operand_types_, std::move(types)});
  }
}

}  // namespace graft::passes
