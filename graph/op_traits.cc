#include "graph/op_traits.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "graph/node.h"
#include "graph/op_registry.h"
#include "graph/scalar_formula.h"

namespace graft {
namespace {

std::optional<int64_t> StaticElements(const std::optional<TensorType>& type) {
  if (!type.has_value() || !IsStatic(type->shape)) return std::nullopt;
  return NumElements(type->shape);
}

std::optional<int64_t> StaticBytes(const std::optional<TensorType>& type) {
  std::optional<int64_t> n = StaticElements(type);
  if (!n.has_value()) return std::nullopt;
  return *n * static_cast<int64_t>(DTypeSize(type->dtype));
}

// Operations per element of a formula, parsed once per formula text.
int FormulaOps(const std::string& formula) {
  static std::mutex mu;
  static auto* counts = new absl::flat_hash_map<std::string, int>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = counts->find(formula);
  if (it != counts->end()) return it->second;
  absl::StatusOr<std::unique_ptr<ScalarExpr>> e = ParseScalarFormula(formula);
  const int ops = e.ok() ? std::max(1, CountScalarOps(**e)) : 1;
  counts->emplace(formula, ops);
  return ops;
}

const OpSchema* SchemaOf(const Node& node) {
  return node.op() == OpCode::kCallFunction ? node.schema() : nullptr;
}

// FLOPs from the kind: a formula's operations per result element for
// pointwise ops, a few per input element for reductions, none for data
// movement.
std::optional<int64_t> KindFlops(const Node& node, const OpSchema& schema) {
  switch (schema.traits.kind) {
    case OpKind::kPointwise: {
      std::optional<int64_t> n = StaticElements(node.type());
      std::optional<std::string> formula = PointwiseFormulaOf(node);
      if (!n.has_value()) return std::nullopt;
      return *n * (formula.has_value() ? FormulaOps(*formula) : 1);
    }
    case OpKind::kReduction:
    case OpKind::kQuantize: {
      if (node.num_args() == 0 || !node.arg(0).is_node()) return std::nullopt;
      return StaticElements(node.arg(0).node()->type());
    }
    case OpKind::kContraction:  // Each op says how (OpTraits::flops).
    case OpKind::kView:
    case OpKind::kOther:
      return 0;
  }
  return 0;
}

}  // namespace

absl::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kOther:
      return "other";
    case OpKind::kPointwise:
      return "pointwise";
    case OpKind::kReduction:
      return "reduction";
    case OpKind::kContraction:
      return "contraction";
    case OpKind::kView:
      return "view";
    case OpKind::kQuantize:
      return "quantize";
  }
  return "other";
}

std::function<std::string(const OpCall&)> Formula(std::string text) {
  return [text = std::move(text)](const OpCall&) { return text; };
}

OpKind KindOf(const Node& node) {
  const OpSchema* schema = SchemaOf(node);
  return schema == nullptr ? OpKind::kOther : schema->traits.kind;
}

std::optional<std::string> PointwiseFormulaOf(const Node& node) {
  const OpSchema* schema = SchemaOf(node);
  if (schema == nullptr || schema->traits.kind != OpKind::kPointwise ||
      !schema->traits.formula) {
    return std::nullopt;
  }
  absl::StatusOr<OpCall> call = OpCall::Bind(node);
  if (!call.ok()) return std::nullopt;
  return schema->traits.formula(*call);
}

bool IsPureNode(const Node& node) {
  switch (node.op()) {
    case OpCode::kGetAttr:
    case OpCode::kCallModule:
      return true;
    case OpCode::kCallFunction:
      return node.schema() != nullptr && node.schema()->pure;
    case OpCode::kPlaceholder:
    case OpCode::kOutput:
      return false;
  }
  return false;
}

std::optional<OpCost> CostOf(const Node& node) {
  const OpSchema* schema = SchemaOf(node);
  if (schema == nullptr) return std::nullopt;
  OpCost cost;
  std::optional<int64_t> flops = schema->traits.flops
                                     ? schema->traits.flops(node)
                                     : KindFlops(node, *schema);
  if (!flops.has_value()) return std::nullopt;
  cost.flops = *flops;
  std::optional<int64_t> out = StaticBytes(node.type());
  if (!out.has_value()) return std::nullopt;
  cost.bytes = *out;
  for (const Node* input : node.unique_inputs()) {
    std::optional<int64_t> in = StaticBytes(input->type());
    if (!in.has_value()) return std::nullopt;
    cost.bytes += *in;
  }
  return cost;
}

}  // namespace graft
