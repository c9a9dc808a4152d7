#include <limits>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/core_ops_internal.h"
#include "graph/fused_ops.h"
#include "graph/op_registry.h"
#include "graph/type_rules.h"
#include "support/status_macros.h"

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

absl::StatusOr<std::vector<TensorType>> InferAttention(const InferContext& ctx) {
  ASSIGN_OR_RETURN(TensorType q, TypeOf(ctx, "query"));
  ASSIGN_OR_RETURN(TensorType k, TypeOf(ctx, "key"));
  ASSIGN_OR_RETURN(TensorType v, TypeOf(ctx, "value"));
  if (!IsFloatingPoint(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) {
    return ctx.Error(absl::StrCat("query, key and value must share a floating-point dtype, got ",
                                  q.ToString(), ", ", k.ToString(), " and ", v.ToString()));
  }
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank()) {
    return ctx.Error(absl::StrCat("query, key and value need the same rank, at least 2, got ",
                                  q.ToString(), ", ", k.ToString(), " and ", v.ToString()));
  }
  const size_t r = q.rank();
  for (size_t i = 0; i + 2 < r; ++i) {
    if (rules::DimsConflict(q.shape[i], k.shape[i]) ||
        rules::DimsConflict(q.shape[i], v.shape[i])) {
      return ctx.Error(absl::StrCat("query, key and value must have the same leading dims, got ",
                                    q.ToString(), ", ", k.ToString(), " and ", v.ToString()));
    }
  }
  if (rules::DimsConflict(q.shape[r - 1], k.shape[r - 1]) ||
      rules::DimsConflict(k.shape[r - 2], v.shape[r - 2])) {
    return ctx.Error(absl::StrCat("query [..., T, D], key [..., S, D] and value [..., S, Dv] "
                                  "do not fit: ", q.ToString(), ", ", k.ToString(), " and ",
                                  v.ToString()));
  }
  if (ctx.call().TensorNode("mask") != nullptr) {
    ASSIGN_OR_RETURN(TensorType m, TypeOf(ctx, "mask"));
    Shape scores(q.shape.begin(), q.shape.end() - 1);
    scores.push_back(k.shape[r - 2]);
    if (m.dtype != DType::kBool || m.rank() > r) {
      return ctx.Error(absl::StrCat("mask must be bool and broadcast to the scores, got ",
                                    m.ToString()));
    }
    for (size_t i = 0; i < m.rank(); ++i) {
      const Dim d = m.shape[m.rank() - 1 - i], s = scores[r - 1 - i];
      if (!(d.is_constant() && d.value() == 1) && rules::DimsConflict(d, s)) {
        return ctx.Error(absl::StrCat("mask ", m.ToString(), " does not broadcast to the scores' ",
                                      TensorType{DType::kBool, scores}.ToString()));
      }
    }
  }
  Shape shape(q.shape.begin(), q.shape.end() - 1);
  shape.push_back(v.shape[r - 1]);
  return std::vector<TensorType>{TensorType{q.dtype, std::move(shape)}};
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

  OpSchema attention;
  attention.name = std::string(kAttentionOp);
  attention.params = {
      {"query", ParamKind::kTensor},
      {"key", ParamKind::kTensor},
      {"value", ParamKind::kTensor},
      {"mask", ParamKind::kTensor, /*optional=*/true, Argument()},
      {"scale", ParamKind::kFloat, false, Argument(1.0)},
      {"masked_value", ParamKind::kFloat, false,
       Argument(-std::numeric_limits<double>::infinity())},
      {"causal", ParamKind::kBool, false, Argument(false)},
  };
  attention.traits = {.kind = OpKind::kContraction, .flops = AttentionFlops};
  attention.infer = InferAttention;
  attention.summary =
      "softmax(where(mask, masked_value, query @ key^T * scale), -1) @ value in one op";
  Add(registry, std::move(attention));
}

}  // namespace graft::core_ops
