#include "onnx/onnx_node_context.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

std::string Describe(int i, absl::string_view name, absl::string_view what) {
  std::string s = absl::StrCat("input ", i);
  if (!what.empty()) absl::StrAppend(&s, " (", what, ")");
  if (!name.empty()) absl::StrAppend(&s, " '", name, "'");
  return s;
}

}  // namespace

absl::Status NodeContext::Unsupported(absl::string_view what) {
  return absl::UnimplementedError(what);
}

absl::Status NodeContext::Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

bool NodeContext::HasInput(int i) const {
  return i >= 0 && i < node_.input_size() && !node_.input(i).empty();
}

absl::StatusOr<OnnxValue*> NodeContext::Value(int i, absl::string_view what) {
  if (!HasInput(i)) {
    return Invalid(
        absl::StrCat("needs ", Describe(i, "", what), ", which is not given"));
  }
  OnnxValue* v = state_.Find(node_.input(i));
  if (v == nullptr) {
    return Invalid(absl::StrCat(Describe(i, node_.input(i), what),
                                " is not defined before this node"));
  }
  return v;
}

absl::StatusOr<Node*> NodeContext::Input(int i, absl::string_view what) {
  ASSIGN_OR_RETURN(OnnxValue * v, Value(i, what));
  return state_.Materialize(node_.input(i), *v);
}

absl::StatusOr<TensorType> NodeContext::InputType(int i) {
  ASSIGN_OR_RETURN(OnnxValue * v, Value(i, ""));
  if (!v->type.has_value()) {
    return Invalid(absl::StrCat("the type of ", Describe(i, node_.input(i), ""),
                                " is unknown"));
  }
  return *v->type;
}

const Tensor* NodeContext::Constant(int i) {
  if (!HasInput(i)) return nullptr;
  OnnxValue* v = state_.Find(node_.input(i));
  if (v == nullptr || !v->constant.has_value()) return nullptr;
  return &*v->constant;
}

std::optional<FoldValue> NodeContext::Folded(int i) {
  if (!HasInput(i)) return std::nullopt;
  OnnxValue* v = state_.Find(node_.input(i));
  if (v == nullptr) return std::nullopt;
  return state_.Folded(*v);
}

std::optional<std::vector<FoldValue>> NodeContext::FoldedInputs(int n) {
  if (num_inputs() != n) return std::nullopt;
  // Checked first: converting a big constant only to find the next input
  // unknown would be wasted work on every node that reads a weight.
  for (int i = 0; i < n; ++i) {
    OnnxValue* v = HasInput(i) ? state_.Find(node_.input(i)) : nullptr;
    if (v == nullptr || (!v->symbolic.has_value() &&
                         (!v->constant.has_value() ||
                          v->constant->NumElements() >
                              state_.options().max_folded_elements))) {
      return std::nullopt;
    }
  }
  std::vector<FoldValue> out;
  for (int i = 0; i < n; ++i) {
    std::optional<FoldValue> v = Folded(i);
    if (!v.has_value()) return std::nullopt;
    out.push_back(*std::move(v));
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> NodeContext::ConstantInts(
    int i, absl::string_view what) {
  ASSIGN_OR_RETURN(OnnxValue * v, Value(i, what));
  std::optional<FoldValue> f = state_.Folded(*v);
  if (!f.has_value()) {
    return Unsupported(absl::StrCat(
        what, " '", node_.input(i),
        "' must be known at import time (a constant, an initializer, or "
        "shape arithmetic on static shapes), but it is computed at run "
        "time"));
  }
  if (f->HasSymbols()) {
    return Unsupported(absl::StrCat(
        what, " '", node_.input(i), "' depends on the symbolic dim ",
        f->SymbolNames(),
        "; give the inputs static shapes (OnnxImportOptions::input_shapes "
        "or dim_values)"));
  }
  if (IsFloatingPoint(f->dtype) || f->dtype == DType::kBool) {
    return Invalid(absl::StrCat(what, " '", node_.input(i),
                                "' must hold integers, not ",
                                DTypeName(f->dtype)));
  }
  if (f->dims.size() > 1) {
    return Invalid(absl::StrCat(what, " '", node_.input(i),
                                "' must be 0-D or 1-D, got rank ",
                                f->dims.size()));
  }
  std::vector<int64_t> out;
  out.reserve(f->elems.size());
  for (const FoldElem& e : f->elems) out.push_back(e.i);
  return out;
}

absl::StatusOr<std::optional<std::vector<int64_t>>>
NodeContext::OptionalConstantInts(int i, absl::string_view what) {
  if (!HasInput(i)) return std::optional<std::vector<int64_t>>();
  ASSIGN_OR_RETURN(std::vector<int64_t> v, ConstantInts(i, what));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

absl::StatusOr<std::optional<std::vector<int64_t>>>
NodeContext::OptionalIntsOperand(int i, absl::string_view name, int64_t input_since) {
  if (opset() >= input_since) {
    if (attrs_.Has(name)) {
      return Invalid(absl::StrCat(name, " is input ", i, " from opset ", input_since,
                                  ", not an attribute (the model imports opset ", opset(), ")"));
    }
    return OptionalConstantInts(i, absl::StrCat("the ", name, " input"));
  }
  if (HasInput(i)) {
    return Invalid(absl::StrCat(name, " is an attribute before opset ", input_since,
                                ", not input ", i, " (the model imports opset ", opset(), ")"));
  }
  return attrs_.Ints(name);
}

std::optional<Argument> NodeContext::ScalarLiteral(int i) {
  const Tensor* c = Constant(i);
  if (c == nullptr || c->NumElements() != 1) return std::nullopt;
  return ScalarArgument(*c);
}

absl::StatusOr<Argument> NodeContext::NodeOrScalar(int i, int64_t other_rank) {
  const Tensor* c = Constant(i);
  if (c != nullptr && c->NumElements() == 1 && c->rank() <= other_rank) {
    return ScalarArgument(*c);
  }
  ASSIGN_OR_RETURN(Node * n, Input(i));
  return Argument(n);
}

bool NodeContext::OutputUsed(int i) const {
  return i < node_.output_size() && !node_.output(i).empty() &&
         state_.IsConsumed(node_.output(i));
}

absl::Status NodeContext::RequireUnused(int i, absl::string_view what) {
  if (!OutputUsed(i)) return absl::OkStatus();
  return Unsupported(absl::StrCat("output ", i, " (", what, ") '",
                                  node_.output(i),
                                  "' is used, and graft does not support it"));
}

absl::StatusOr<OnnxValue*> NodeContext::DefineOutput(int i) {
  if (i >= node_.output_size() || node_.output(i).empty()) return nullptr;
  return state_.Define(node_.output(i));
}

absl::Status NodeContext::SetOutput(int i, Node* node) {
  ASSIGN_OR_RETURN(OnnxValue * v, DefineOutput(i));
  if (v == nullptr) return absl::OkStatus();
  v->node = node;
  v->type = node->type();
  return absl::OkStatus();
}

absl::Status NodeContext::SetOutputValue(int i, FoldValue value) {
  if (!value.HasSymbols()) return SetOutputConstant(i, value.ToTensor());
  ASSIGN_OR_RETURN(OnnxValue * v, DefineOutput(i));
  if (v == nullptr) return absl::OkStatus();
  v->type = TensorType{value.dtype, ShapeFromDims(value.dims)};
  v->symbolic = std::move(value);
  return absl::OkStatus();
}

absl::Status NodeContext::SetOutputConstant(int i, Tensor value) {
  ASSIGN_OR_RETURN(OnnxValue * v, DefineOutput(i));
  if (v == nullptr) return absl::OkStatus();
  v->type = value.type();
  v->constant = std::move(value);
  return absl::OkStatus();
}

absl::Status NodeContext::AliasOutput(int i, int j) {
  ASSIGN_OR_RETURN(OnnxValue * target, Value(j, ""));
  ASSIGN_OR_RETURN(OnnxValue * v, DefineOutput(i));
  if (v != nullptr) v->alias = target;
  return absl::OkStatus();
}

absl::StatusOr<Node*> NodeContext::Call(absl::string_view op,
                                        std::vector<Argument> args,
                                        Kwargs kwargs) {
  Node* node = state_.module().graph().CallFunction(op, std::move(args),
                                                    std::move(kwargs));
  state_.Annotate(node);
  if (node->schema() == nullptr) {
    return absl::InternalError(absl::StrCat("graft has no op '", op, "'"));
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<TensorType>> types,
                   InferNodeTypes(*node));
  if (types.has_value() && !types->empty()) {
    if (node->schema()->returns_tuple) {
      node->meta().tuple_types = std::move(*types);
    } else {
      node->set_type(std::move((*types)[0]));
    }
  }
  return node;
}

absl::StatusOr<Node*> NodeContext::ConstantNode(Tensor value,
                                                absl::string_view suffix) {
  OnnxValue v;
  v.type = value.type();
  v.constant = std::move(value);
  std::string base = node_.output_size() > 0 ? node_.output(0) : op_type();
  return state_.Materialize(absl::StrCat(base, "_", suffix), v);
}

absl::StatusOr<TensorType> NodeContext::TypeOf(const Node* node) const {
  if (!node->type().has_value()) {
    return absl::InternalError(
        absl::StrCat("the type of ", node->Ref(), " is unknown"));
  }
  return *node->type();
}

}  // namespace graft::onnx_import
