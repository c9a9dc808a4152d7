#include "passes/quantize/equalize.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "passes/node_util.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::passes::quantize {
namespace {

// A linear call's constant f32 tensor parameter (weight or bias) that only
// this call reads, or null.
const Node* OwnConstant(const Module& module, const OpCall& call, absl::string_view param) {
  const Node* n = call.TensorNode(param);
  const Tensor* t = PrivateConstant(module, n);
  return t != nullptr && t->dtype() == DType::kF32 ? n : nullptr;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> EqualizeLayers(Module& module) {
  RETURN_IF_ERROR(PropagateShapes(module).status());
  std::vector<std::string> pairs;
  for (Node* first : module.graph().nodes()) {
    if (!first->is_call("linear")) continue;
    Node* next = SoleUser(*first);
    if (next != nullptr && next->is_call("relu")) next = SoleUser(*next);
    if (next == nullptr || !next->is_call("linear")) continue;
    ASSIGN_OR_RETURN(OpCall a, OpCall::Bind(*first));
    ASSIGN_OR_RETURN(OpCall b, OpCall::Bind(*next));
    const Node* w1_node = OwnConstant(module, a, "weight");
    const Node* w2_node = OwnConstant(module, b, "weight");
    const Node* b1_node = a.IsNone("bias") ? nullptr : OwnConstant(module, a, "bias");
    if (w1_node == nullptr || w2_node == nullptr || (!a.IsNone("bias") && b1_node == nullptr)) {
      continue;
    }
    Tensor w1 = module.FindTensor(w1_node->target())->Clone();
    Tensor w2 = module.FindTensor(w2_node->target())->Clone();
    if (w1.rank() != 2 || w2.rank() != 2 || w1.dim(0) != w2.dim(1)) continue;
    const int64_t hidden = w1.dim(0), in = w1.dim(1), out = w2.dim(0);
    std::vector<double> scale(hidden, 1.0);
    for (int64_t i = 0; i < hidden; ++i) {
      double r1 = 0, r2 = 0;
      for (int64_t k = 0; k < in; ++k) r1 = std::max(r1, std::fabs(double{w1.data<float>()[i * in + k]}));
      for (int64_t o = 0; o < out; ++o) r2 = std::max(r2, std::fabs(double{w2.data<float>()[o * hidden + i]}));
      if (r1 > 0 && r2 > 0 && std::isfinite(r1) && std::isfinite(r2)) scale[i] = std::sqrt(r1 / r2);
    }
    for (int64_t i = 0; i < hidden; ++i) {
      for (int64_t k = 0; k < in; ++k) w1.data<float>()[i * in + k] /= scale[i];
      for (int64_t o = 0; o < out; ++o) w2.data<float>()[o * hidden + i] *= scale[i];
    }
    module.SetTensor(w1_node->target(), w1);
    module.SetTensor(w2_node->target(), w2);
    if (b1_node != nullptr) {
      Tensor b1 = module.FindTensor(b1_node->target())->Clone();
      for (int64_t i = 0; i < hidden && i < b1.NumElements(); ++i) b1.data<float>()[i] /= scale[i];
      module.SetTensor(b1_node->target(), b1);
    }
    pairs.push_back(absl::StrCat(first->name(), " -> ", next->name()));
  }
  return pairs;
}

absl::StatusOr<bool> EqualizePass::Run(Module& module, PassContext&) {
  ASSIGN_OR_RETURN(std::vector<std::string> pairs, EqualizeLayers(module));
  return !pairs.empty();
}

}  // namespace graft::passes::quantize
