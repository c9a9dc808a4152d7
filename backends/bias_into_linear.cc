#include "backends/bias_into_linear.h"

#include <vector>

#include "graph/graph.h"
#include "graph/node.h"
#include "graph/op_registry.h"

namespace graft {
namespace {

// The module tensor a get_attr node reads, if it is f32 of `rank` dims.
const Tensor* F32Constant(const Module& module, const Node* node, int64_t rank) {
  if (node->op() != OpCode::kGetAttr) return nullptr;
  const Tensor* t = module.FindTensor(node->target());
  return t != nullptr && t->dtype() == DType::kF32 && t->rank() == rank ? t : nullptr;
}

// The [N, K] transpose of a [K, N] tensor.
Tensor Transposed(const Tensor& w) {
  const int64_t k = w.dim(0), n = w.dim(1);
  Tensor t(DType::kF32, {n, k});
  const float* from = w.data<float>();
  float* to = t.data<float>();
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) to[j * k + i] = from[i * n + j];
  }
  return t;
}

}  // namespace

absl::StatusOr<bool> FoldBiasIntoLinear(Module& module) {
  Graph& graph = module.graph();
  std::vector<Node*> adds;
  for (Node* node : graph.nodes()) {
    if (node->is_call("add") && node->num_args() == 2 && node->kwargs().empty() &&
        node->arg(0).is_node() && node->arg(1).is_node() && node->type().has_value()) {
      adds.push_back(node);
    }
  }
  bool changed = false;
  for (Node* add : adds) {
    for (int side = 0; side < 2; ++side) {
      Node* product = add->arg(side).node();
      Node* bias = add->arg(1 - side).node();
      if (!product->is_call("matmul") || product->num_uses() != 1 ||
          product->type() != add->type() || product->num_args() != 2 ||
          !product->kwargs().empty() || !product->arg(0).is_node() ||
          !product->arg(1).is_node()) {
        continue;
      }
      Node* x = product->arg(0).node();
      const Tensor* w = F32Constant(module, product->arg(1).node(), 2);
      const Tensor* b = F32Constant(module, bias, 1);
      if (w == nullptr || b == nullptr || !x->type().has_value() ||
          x->type()->rank() < 2 || b->dim(0) != w->dim(1)) {
        continue;
      }
      const std::string name =
          module.UniqueTensorName(product->arg(1).node()->target() + "_transposed");
      Tensor wt = Transposed(*w);
      module.SetTensor(name, wt);
      auto guard = graph.InsertingBefore(add);
      Node* wt_node = graph.GetAttr(name, wt.type());
      Node* linear = graph.CallFunction("linear", {x, wt_node, bias});
      linear->set_type(*add->type());
      add->ReplaceAllUsesWith(linear);
      if (!graph.EraseNode(add).ok() || !graph.EraseNode(product).ok()) {
        return absl::InternalError("folding a bias into linear left users behind");
      }
      changed = true;
      break;
    }
  }
  return changed;
}

}  // namespace graft
