#include "passes/quantize/dynamic.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/quant_ops.h"
#include "passes/node_util.h"
#include "passes/quantize/convert.h"
#include "passes/quantize/quant_config.h"
#include "passes/quantize/weight_only.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::passes::quantize {
namespace {

// linear or matmul (not graft::linear_activation, whose activation the op
// does not take) by a constant weight, on an f32 input.
bool Quantizable(const Module& module, const Node& n) {
  if (!n.is_call("linear") && !n.is_call("matmul")) return false;
  absl::StatusOr<OpCall> call = OpCall::Bind(n);
  if (!call.ok() || ConstantLinearWeight(module, n) == nullptr) return false;
  const Node* input = call->TensorNode("input");
  return input != nullptr && input->type().has_value() && input->type()->dtype == DType::kF32 &&
         input->type()->rank() >= 1;
}

absl::Status ReplaceCall(Module& module, Node* n) {
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(*n));
  Node* w = ConstantLinearWeight(module, *n);
  const QuantizedWeight q = QuantizeWeight(WeightOutIn(*n, *AttrTensor(module, w)), 0);
  Tensor scales(DType::kF32, {static_cast<int64_t>(q.scales.size())});
  for (size_t o = 0; o < q.scales.size(); ++o) {
    scales.data<float>()[o] = static_cast<float>(q.scales[o]);
  }
  const std::string base = w->target();
  const std::string values_name = module.UniqueTensorName(base + "_int8");
  module.SetTensor(values_name, q.values);
  const std::string scales_name = module.UniqueTensorName(base + "_scales");
  module.SetTensor(scales_name, scales);
  Graph& graph = module.graph();
  auto at = graph.InsertingBefore(n);
  std::vector<Argument> args = {Argument(call.TensorNode("input")),
                                Argument(graph.GetAttr(values_name, q.values.type())),
                                Argument(graph.GetAttr(scales_name, scales.type()))};
  Kwargs kwargs;
  if (n->is_call("linear") && !call.IsNone("bias")) kwargs.emplace_back("bias", call.Get("bias"));
  Node* dynamic = graph.CallFunction(kDynamicQuantizedLinearOp, std::move(args), std::move(kwargs));
  InferAndSetType(dynamic);
  n->ReplaceAllUsesWith(dynamic);
  const std::string name = n->name();
  RETURN_IF_ERROR(graph.EraseNode(n));
  RETURN_IF_ERROR(graph.Rename(dynamic, name));
  EraseIfDead(graph, w);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DynamicReport> QuantizeDynamic(Module& module,
                                              const std::vector<std::string>& skip) {
  RETURN_IF_ERROR(PropagateShapes(module).status());
  std::vector<Node*> calls;
  absl::flat_hash_set<std::string> used;
  for (Node* n : module.graph().nodes()) {
    if (!Quantizable(module, *n)) continue;
    bool skipped = false;
    for (const std::string& glob : skip) {
      if (GlobMatches(glob, n->name())) {
        used.insert(glob);
        skipped = true;
      }
    }
    if (!skipped) calls.push_back(n);
  }
  for (const std::string& glob : skip) {
    if (!used.contains(glob)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "skip glob '", glob, "' matches no linear or matmul by a constant weight"));
    }
  }
  DynamicReport report;
  for (Node* n : calls) {
    report.quantized.push_back(n->name());
    RETURN_IF_ERROR(ReplaceCall(module, n));
  }
  module.graph().Cleanup();
  RemoveUnreadTensors(module);  // The float weights nothing reads any more.
  return report;
}

absl::StatusOr<std::unique_ptr<DynamicPass>> DynamicPass::FromOptions(
    const PassOptions& options) {
  const std::string skip = options.GetString("skip", "");
  std::vector<std::string> globs;
  if (!skip.empty()) globs = absl::StrSplit(skip, ';', absl::SkipEmpty());
  return std::make_unique<DynamicPass>(std::move(globs));
}

absl::StatusOr<bool> DynamicPass::Run(Module& module, PassContext&) {
  ASSIGN_OR_RETURN(DynamicReport report, QuantizeDynamic(module, skip_));
  return !report.quantized.empty();
}

}  // namespace graft::passes::quantize
