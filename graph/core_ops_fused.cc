#include <string>

#include "absl/strings/str_cat.h"
#include "graph/core_ops_internal.h"
#include "graph/fused_ops.h"
#include "graph/op_registry.h"
#include "graph/type_rules.h"

namespace graft::core_ops {
namespace {

// The type of tensor parameter `name`, or an error when it is unknown.
absl::StatusOr<TensorType> TypeOf(const InferContext& ctx,
                                  absl::string_view name) {
  const Node* n = ctx.call().TensorNode(name);
  if (n == nullptr || !n->type().has_value()) {
    return ctx.Error(
        absl::StrCat("argument '", name, "' must be a tensor of known type"));
  }
  return *n->type();
}

absl::StatusOr<std::vector<TensorType>> InferLinearActivation(
    const InferContext& ctx) {
  absl::StatusOr<TensorType> x = TypeOf(ctx, "input");
  if (!x.ok()) return x.status();
  absl::StatusOr<TensorType> w = TypeOf(ctx, "weight");
  if (!w.ok()) return w.status();
  const std::string& activation = ctx.call().String("activation");
  if (activation != "relu" && activation != "gelu" &&
      activation != "gelu_tanh") {
    return ctx.Error(
        absl::StrCat("activation must be \"relu\", \"gelu\" or "
                     "\"gelu_tanh\", got \"",
                     activation, "\""));
  }
  const std::string& layout = ctx.call().String("weight_layout");
  if (layout != "out_in" && layout != "in_out") {
    return ctx.Error(
        absl::StrCat("weight_layout must be \"out_in\" or \"in_out\", got \"",
                     layout, "\""));
  }
  if (!IsFloatingPoint(x->dtype) || w->dtype != x->dtype) {
    return ctx.Error(
        absl::StrCat("input and weight must share a floating-point "
                     "dtype, got ",
                     x->ToString(), " and ", w->ToString()));
  }
  if (x->rank() == 0 || w->rank() != 2) {
    return ctx.Error(
        absl::StrCat("input needs at least one dim and weight two, got ",
                     x->ToString(), " and ", w->ToString()));
  }
  const bool out_in = layout == "out_in";
  const Dim in = w->shape[out_in ? 1 : 0];
  const Dim out = w->shape[out_in ? 0 : 1];
  if (rules::DimsConflict(x->shape.back(), in)) {
    return ctx.Error(absl::StrCat("input has ", x->shape.back().ToString(),
                                  " features but weight ", w->ToString(), " (",
                                  layout, ") expects ", in.ToString()));
  }
  if (ctx.call().TensorNode("bias") != nullptr) {
    absl::StatusOr<TensorType> b = TypeOf(ctx, "bias");
    if (!b.ok()) return b.status();
    if (b->dtype != x->dtype || b->rank() != 1 ||
        rules::DimsConflict(b->shape[0], out)) {
      return ctx.Error(absl::StrCat("bias ", b->ToString(), " must be ",
                                    DTypeName(x->dtype), "[", out.ToString(),
                                    "]"));
    }
  }
  Shape shape(x->shape.begin(), x->shape.end() - 1);
  shape.push_back(out);
  return std::vector<TensorType>{TensorType{x->dtype, std::move(shape)}};
}

}  // namespace

void RegisterFusedOps(OpRegistry& registry) {
  OpSchema schema;
  schema.name = std::string(kLinearActivationOp);
  schema.params = {
      {"input", ParamKind::kTensor},
      {"weight", ParamKind::kTensor},
      {"bias", ParamKind::kTensor, /*optional=*/true, Argument()},
      {"activation", ParamKind::kString, false, Argument("relu")},
      {"weight_layout", ParamKind::kString, false, Argument("out_in")},
  };
  schema.traits = {.kind = OpKind::kContraction,
                   .flops = LastDimContractionFlops};
  schema.infer = InferLinearActivation;
  schema.summary =
      "activation(input @ weight^T + bias) in one op (relu, gelu, gelu_tanh)";
  Add(registry, std::move(schema));
}

}  // namespace graft::core_ops
