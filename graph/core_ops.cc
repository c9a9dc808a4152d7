// The core op set of docs/ops.md. Each family lives in its own
// core_ops_<family>.cc; this file holds what they share and the entry point.

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/core_ops_internal.h"
#include "graph/node.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft {
namespace core_ops {
namespace {

bool IsTensorKind(ParamKind kind) {
  return kind == ParamKind::kTensor || kind == ParamKind::kTensorOrScalar ||
         kind == ParamKind::kTensorList;
}

// Rules read argument types with InferContext::Type, which needs a typed,
// single-valued node. getitem alone reads a tuple.
absl::Status CheckTensorArgument(const InferContext& ctx, const ParamSpec& p,
                                 const Node* n) {
  if (absl::string_view(ctx.call().schema().name) == "getitem") {
    if (n->meta().tuple_types.empty()) {
      return ctx.Error(absl::StrCat(
          "input ", n->Ref(),
          " is a single tensor, not a tuple; getitem reads an element "
          "of a tuple result such as split's"));
    }
    return absl::OkStatus();
  }
  if (n->type().has_value()) return absl::OkStatus();
  if (!n->meta().tuple_types.empty()) {
    return ctx.Error(
        absl::StrCat("argument '", p.name, "' (", n->Ref(),
                     ") is a tuple of ", n->meta().tuple_types.size(),
                     " tensors; read one element with getitem"));
  }
  return ctx.Error(absl::StrCat("argument '", p.name, "' (", n->Ref(),
                                ") has no known type"));
}

// Walks the bound arguments in place (no copies): this runs for every node
// whose type is inferred.
absl::Status CheckTensorArguments(const InferContext& ctx) {
  const std::vector<ParamSpec>& params = ctx.call().schema().params;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& p = params[i];
    if (!IsTensorKind(p.kind)) continue;
    const Argument& a = ctx.call().GetAt(i);
    if (a.is_node()) {
      RETURN_IF_ERROR(CheckTensorArgument(ctx, p, a.node()));
    } else if (a.is_list() && p.kind == ParamKind::kTensorList) {
      for (const Argument& e : a.list()) {
        if (!e.is_node()) continue;
        RETURN_IF_ERROR(CheckTensorArgument(ctx, p, e.node()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

void Add(OpRegistry& registry, OpSchema schema) {
  schema.pure = true;
  if (schema.infer) {
    schema.infer = [rule = std::move(schema.infer)](const InferContext& ctx)
        -> absl::StatusOr<std::vector<TensorType>> {
      absl::Status status = CheckTensorArguments(ctx);
      if (!status.ok()) return status;
      return rule(ctx);
    };
  }
  absl::Status status = registry.Register(std::move(schema));
  if (!status.ok()) {
    std::fprintf(stderr, "graft: core op registration failed: %s\n",
                 status.ToString().c_str());
    std::abort();
  }
}

namespace {

// The static type of argument `i`, if it is a node of static type.
std::optional<TensorType> StaticArgType(const Node& node, size_t i) {
  if (node.num_args() <= i || !node.arg(i).is_node()) return std::nullopt;
  const std::optional<TensorType>& type = node.arg(i).node()->type();
  if (!type.has_value() || !IsStatic(type->shape)) return std::nullopt;
  return type;
}

std::optional<int64_t> StaticResultElements(const Node& node) {
  if (!node.type().has_value() || !IsStatic(node.type()->shape)) {
    return std::nullopt;
  }
  return NumElements(node.type()->shape);
}

}  // namespace

std::optional<int64_t> LastDimContractionFlops(const Node& node) {
  std::optional<TensorType> input = StaticArgType(node, 0);
  std::optional<int64_t> out = StaticResultElements(node);
  if (!input.has_value() || input->rank() == 0 || !out.has_value()) {
    return std::nullopt;
  }
  return 2 * *out * input->shape.back().value();
}

namespace {

// conv2d's FLOPs with its weight the positional argument `weight_arg`.
std::optional<int64_t> ConvFlops(const Node& node, int weight_arg) {
  std::optional<TensorType> weight = StaticArgType(node, weight_arg);
  std::optional<int64_t> out = StaticResultElements(node);
  if (!weight.has_value() || weight->rank() != 4 || !out.has_value()) {
    return std::nullopt;
  }
  return 2 * *out * weight->shape[1].value() * weight->shape[2].value() *
         weight->shape[3].value();
}

}  // namespace

std::optional<int64_t> Conv2dFlops(const Node& node) { return ConvFlops(node, 1); }

// 2 T S (D + Dv) per matrix of the leading dims: 2 S (D + Dv) per query
// row.
std::optional<int64_t> AttentionFlops(const Node& node) {
  std::optional<TensorType> k = StaticArgType(node, 1), v = StaticArgType(node, 2);
  std::optional<int64_t> out = StaticResultElements(node);
  if (!k.has_value() || !v.has_value() || k->rank() < 2 || !out.has_value() ||
      v->shape.back().value() == 0) {
    return std::nullopt;
  }
  const int64_t rows = *out / v->shape.back().value();
  return 2 * rows * k->shape[k->rank() - 2].value() *
         (k->shape.back().value() + v->shape.back().value());
}

std::optional<int64_t> QuantizedConv2dFlops(const Node& node) { return ConvFlops(node, 3); }

ParamSpec Param(std::string name, ParamKind kind) {
  return ParamSpec{.name = std::move(name), .kind = kind};
}

ParamSpec Optional(std::string name, ParamKind kind) {
  return ParamSpec{.name = std::move(name),
                   .kind = kind,
                   .optional = true,
                   .default_value = Argument()};
}

ParamSpec Defaulted(std::string name, ParamKind kind, Argument default_value) {
  return ParamSpec{.name = std::move(name),
                   .kind = kind,
                   .default_value = std::move(default_value)};
}

}  // namespace core_ops

void RegisterCoreOps(OpRegistry& registry) {
  core_ops::RegisterElementwiseOps(registry);
  core_ops::RegisterReductionOps(registry);
  core_ops::RegisterNnOps(registry);
  core_ops::RegisterShapeOps(registry);
  core_ops::RegisterCreationOps(registry);
  core_ops::RegisterQuantOps(registry);
  core_ops::RegisterStructureOps(registry);
  core_ops::RegisterFusedOps(registry);
  core_ops::RegisterCollectiveOps(registry);
}

}  // namespace graft
