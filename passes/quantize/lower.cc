#include "passes/quantize/lower.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/op_traits.h"
#include "graph/quant_ops.h"
#include "passes/node_util.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::passes::quantize {
namespace {

// A per-tensor dequantize of a quantized activation: its values node and
// literal scale and zero point.
struct Activation {
  Node* values = nullptr;
  double scale = 0;
  int64_t zero_point = 0;
};

std::optional<Activation> ActivationOf(const Node* dq) {
  if (dq == nullptr || !dq->is_call("dequantize")) return std::nullopt;
  absl::StatusOr<OpCall> call = OpCall::Bind(*dq);
  if (!call.ok() || !call->IsNone("axis") || call->GetDType("dtype") != DType::kF32) {
    return std::nullopt;
  }
  const Argument& scale = call->Get("scale");
  const Argument& zero_point = call->Get("zero_point");
  if (!scale.is_number() || !zero_point.is_int()) return std::nullopt;
  Node* values = call->TensorNode("input");
  if (values == nullptr || !values->type().has_value()) return std::nullopt;
  const DType t = values->type()->dtype;
  if (t != DType::kI8 && t != DType::kU8) return std::nullopt;
  return Activation{values, scale.number(), zero_point.int_value()};
}

// A dequantize of a constant int8 weight with zero points 0 (a tensor of
// zeros or the literal 0): per channel along `axis`, or per tensor (a
// literal scale, which becomes one scale per channel here, as ONNX
// Runtime's per-tensor quantization writes weights).
struct Weight {
  const Tensor* values = nullptr;
  Node* scales = nullptr;
};

bool ZeroPointsAreZero(const Module& module, const OpCall& call) {
  const Argument& z = call.Get("zero_point");
  if (z.is_int()) return z.int_value() == 0;
  const Tensor* zeros = AttrTensor(module, call.TensorNode("zero_point"));
  if (zeros == nullptr) return false;
  for (int64_t i = 0; i < zeros->NumElements(); ++i) {
    if (zeros->GetAsDouble(i) != 0) return false;
  }
  return true;
}

std::optional<Weight> WeightOf(Module& module, Node* dq, int64_t axis) {
  if (dq == nullptr || !dq->is_call("dequantize")) return std::nullopt;
  absl::StatusOr<OpCall> call = OpCall::Bind(*dq);
  if (!call.ok() || call->GetDType("dtype") != DType::kF32) return std::nullopt;
  const Tensor* values = AttrTensor(module, call->TensorNode("input"));
  if (values == nullptr || values->dtype() != DType::kI8 ||
      (values->rank() != 2 && values->rank() != 4) || !ZeroPointsAreZero(module, *call)) {
    return std::nullopt;
  }
  if (call->IsNone("axis")) {
    const Argument& scale = call->Get("scale");
    if (!scale.is_number()) return std::nullopt;
    Tensor scales(DType::kF32, {values->dim(static_cast<int>(axis))});
    for (int64_t i = 0; i < scales.NumElements(); ++i) scales.SetFromDouble(i, scale.number());
    const std::string name = module.UniqueTensorName(
        absl::StrCat(call->TensorNode("input")->target(), "_scales"));
    module.SetTensor(name, scales);
    auto at = module.graph().InsertingBefore(dq);
    return Weight{values, module.graph().GetAttr(name, scales.type())};
  }
  const Tensor* scales = AttrTensor(module, call->TensorNode("scale"));
  if (call->Int("axis") != axis || scales == nullptr || scales->dtype() != DType::kF32) {
    return std::nullopt;
  }
  return Weight{values, call->TensorNode("scale")};
}

Tensor Transposed(const Tensor& t) {
  Tensor out(t.dtype(), {t.dim(1), t.dim(0)});
  const int8_t* src = t.data<int8_t>();
  int8_t* dst = out.data<int8_t>();
  for (int64_t i = 0; i < t.dim(0); ++i) {
    for (int64_t j = 0; j < t.dim(1); ++j) dst[j * t.dim(0) + i] = src[i * t.dim(1) + j];
  }
  return out;
}

class Lowerer {
 public:
  explicit Lowerer(Module& module) : module_(module) {}

  absl::StatusOr<LowerReport> Run() {
    RETURN_IF_ERROR(PropagateShapes(module_).status());
    std::vector<Node*> calls;
    for (Node* n : module_.graph().nodes()) {
      if (n->is_call("linear") || n->is_call("matmul") || n->is_call("conv2d")) {
        calls.push_back(n);
      }
    }
    for (Node* n : calls) Fuse(n);
    module_.graph().Cleanup();
    RETURN_IF_ERROR(PropagateShapes(module_).status());
    Audit();
    return report_;
  }

 private:
  void Fuse(Node* n) {
    absl::StatusOr<OpCall> call = OpCall::Bind(*n);
    if (!call.ok()) return;
    const bool matmul = n->is_call("matmul"), conv = n->is_call("conv2d");
    Node* input_dq = call->TensorNode("input");
    Node* weight_dq = call->TensorNode(matmul ? "other" : "weight");
    std::optional<Activation> a = ActivationOf(input_dq);
    std::optional<Weight> w = WeightOf(module_, weight_dq, matmul ? 1 : 0);
    if (!a.has_value() || !w.has_value() || (w->values->rank() == 4) != conv) return;
    Graph& graph = module_.graph();
    auto at = graph.InsertingBefore(n);
    Node* weight;
    if (matmul) {
      const Tensor t = Transposed(*w->values);
      const std::string name = module_.UniqueTensorName(
          absl::StrCat(OpCall::Bind(*weight_dq)->TensorNode("input")->target(), "_out_in"));
      module_.SetTensor(name, t);
      weight = graph.GetAttr(name, t.type());
    } else {
      weight = OpCall::Bind(*weight_dq)->TensorNode("input");
    }
    std::vector<Argument> args = {Argument(a->values), Argument(a->scale),
                                  Argument(a->zero_point), Argument(weight),
                                  Argument(w->scales)};
    Kwargs kwargs;
    if (!matmul && call->TensorNode("bias") != nullptr) {
      kwargs.emplace_back("bias", Argument(call->TensorNode("bias")));
    }
    if (conv) {
      for (const char* param : {"stride", "padding", "dilation", "groups"}) {
        kwargs.emplace_back(param, call->Get(param));
      }
    }
    Node* q = graph.CallFunction(conv ? kQuantizedConv2dOp : kQuantizedLinearOp, std::move(args),
                                 std::move(kwargs));
    InferAndSetType(q);
    if (!q->type().has_value() || q->type() != n->type()) {
      (void)graph.EraseNode(q);
      return;
    }
    n->ReplaceAllUsesWith(q);
    const std::string name = n->name();
    (void)graph.EraseNode(n);
    (void)graph.Rename(q, name);
    EraseIfDead(graph, input_dq);
    EraseIfDead(graph, weight_dq);
    FuseOutput(q);
    report_.lowered.push_back(name);
  }

  // The only reader of a lowered call's result: (relu ->) quantize. The
  // call then writes the quantized values itself (int8 in, int8 out), and
  // the next lowered call reads them as they are.
  void FuseOutput(Node* call) {
    Node* next = SoleUser(*call);
    Node* relu = nullptr;
    if (next != nullptr && next->is_call("relu")) {
      relu = next;
      next = SoleUser(*relu);
    }
    if (next == nullptr || !next->is_call("quantize_per_tensor")) return;
    absl::StatusOr<OpCall> q = OpCall::Bind(*next);
    if (!q.ok() || !q->Get("scale").is_number() || !q->Get("zero_point").is_int()) return;
    // An int8 product writes i8 or u8 only (f8e4m3 stays a quantize step).
    const DType out = q->GetDType("dtype");
    if (out != DType::kI8 && out != DType::kU8) return;
    call->SetKwarg("activation", Argument(relu != nullptr ? "relu" : "none"));
    call->SetKwarg("output_scale", Argument(q->Float("scale")));
    call->SetKwarg("output_zero_point", Argument(q->Int("zero_point")));
    call->SetKwarg("output_dtype", Argument(q->GetDType("dtype")));
    InferAndSetType(call);
    next->ReplaceAllUsesWith(call);
    Graph& graph = module_.graph();
    (void)graph.EraseNode(next);
    if (relu != nullptr) (void)graph.EraseNode(relu);
  }

  void Audit() {
    for (const Node* n : module_.graph().nodes()) {
      if (KindOf(*n) == OpKind::kContraction) {
        std::optional<OpCost> cost = CostOf(*n);
        const int64_t macs = cost.has_value() ? cost->flops / 2 : 0;
        report_.total_macs += macs;
        if (n->target() == kQuantizedLinearOp || n->target() == kQuantizedConv2dOp) {
          report_.int8_macs += macs;
        }
      }
      if (!n->is_call("dequantize")) continue;
      for (const Node* user : n->users()) {
        std::string why = "no int8 kernel for this op yet";
        if (user->is_call("matmul")) {
          // Its quantize and dequantize then only cost passes over the
          // activations (attention's scores, at long sequences).
          why = absl::StrCat(
              "a product of two activations has no int8 kernel yet (quantizing with --skip ",
              user->name(), " keeps it float, without the quantize and dequantize around it)");
        }
        if (user->is_call("linear")) why = "its other operand is not an int8 per-channel weight";
        report_.unfused.push_back(
            absl::StrCat(n->Ref(), " -> ", user->Ref(), " (", user->target(), "): ", why));
      }
    }
  }

  Module& module_;
  LowerReport report_;
};

}  // namespace

std::string LowerReport::ToString() const {
  std::string text = absl::StrCat("lowered to int8: ", lowered.size(), " calls\n");
  for (const std::string& u : unfused) absl::StrAppend(&text, "  not fused: ", u, "\n");
  const double share = total_macs == 0 ? 0 : 100.0 * int8_macs / total_macs;
  absl::StrAppend(&text, absl::StrFormat("multiply-accumulates in int8: %.1f%% (%d of %d)\n",
                                         share, int8_macs, total_macs));
  return text;
}

absl::StatusOr<LowerReport> Lower(Module& module) { return Lowerer(module).Run(); }

absl::StatusOr<bool> LowerPass::Run(Module& module, PassContext&) {
  ASSIGN_OR_RETURN(LowerReport report, Lower(module));
  return !report.lowered.empty();
}

}  // namespace graft::passes::quantize
