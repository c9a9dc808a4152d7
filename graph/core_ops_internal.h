#ifndef GRAFT_GRAPH_CORE_OPS_INTERNAL_H_
#define GRAFT_GRAPH_CORE_OPS_INTERNAL_H_

// Shared by the core_ops_*.cc files, which register one family of the core
// op set each (see docs/ops.md). Not part of graft's API.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/op_registry.h"

namespace graft::core_ops {

// A type rule for an op with one result.
using SingleInferFn = absl::StatusOr<TensorType> (*)(const InferContext&);

// Adapts a one-result rule (a function or a lambda) to the registry's
// InferFn. A template, so the rule is called directly: type inference runs
// for every node a pass creates, and a second std::function costs there.
template <typename Rule>
InferFn One(Rule rule) {
  return [rule = std::move(rule)](const InferContext& ctx)
             -> absl::StatusOr<std::vector<TensorType>> {
    absl::StatusOr<TensorType> type = rule(ctx);
    if (!type.ok()) return type.status();
    return std::vector<TensorType>{*std::move(type)};
  };
}

// Registers `schema` with every core op's defaults (pure) and a guard in
// front of its rule that turns a tuple-valued or untyped tensor argument
// into an error instead of a crash. Aborts on a registration failure: the
// core set is fixed at build time, so that is a programmer error.
void Add(OpRegistry& registry, OpSchema schema);

// Shorthands for schema tables.
ParamSpec Param(std::string name, ParamKind kind);
// Accepts None, which is also the default.
ParamSpec Optional(std::string name, ParamKind kind);
ParamSpec Defaulted(std::string name, ParamKind kind, Argument default_value);

// FLOPs of contractions, from static types (OpTraits::flops): 2 per
// multiply-add, over the input's last dim (matmul, linear and the fused
// linear ops) or the weight's in_channels * kh * kw (conv2d).
std::optional<int64_t> LastDimContractionFlops(const Node& node);
std::optional<int64_t> Conv2dFlops(const Node& node);
std::optional<int64_t> AttentionFlops(const Node& node);  // graft::attention.
std::optional<int64_t> QuantizedConv2dFlops(const Node& node);  // Its weight is argument 3.
// conv2d's result type (of the input's dtype) from its input, weight,
// bias, stride, padding, dilation and groups, the dtypes unchecked: the
// shape rule conv2d and graft::quantized_conv2d share.
absl::StatusOr<TensorType> Conv2dShape(const InferContext& ctx);

// One function per table of docs/ops.md.
void RegisterElementwiseOps(OpRegistry& registry);
void RegisterReductionOps(OpRegistry& registry);
void RegisterNnOps(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);
void RegisterCreationOps(OpRegistry& registry);
void RegisterQuantOps(OpRegistry& registry);
void RegisterStructureOps(OpRegistry& registry);
// graft's own fused ops (graph/fused_ops.h).
void RegisterFusedOps(OpRegistry& registry);
// The collectives of sharded modules (graph/collective_ops.h).
void RegisterCollectiveOps(OpRegistry& registry);

}  // namespace graft::core_ops

#endif  // GRAFT_GRAPH_CORE_OPS_INTERNAL_H_
