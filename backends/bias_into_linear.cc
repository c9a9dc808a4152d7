#include "backends/bias_into_linear.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/node.h"
#include "graph/op_registry.h"
#include "support/parallel_for.h"

namespace graft {
namespace {

// The module tensor a get_attr node reads, if it is a float tensor of
// `rank` dims on the host.
const Tensor* FloatConstant(const Module& module, const Node* node, int64_t rank) {
  if (node->op() != OpCode::kGetAttr) return nullptr;
  const Tensor* t = module.FindTensor(node->target());
  return t != nullptr && IsFloatingPoint(t->dtype()) && t->on_host() && t->rank() == rank
             ? t
             : nullptr;
}

// `to` = the [N, K] transpose of `from` ([K, N]), in 32 x 32 tiles so that
// both sides stay in cache (a GPT-2 block's weights are 28 MB).
template <class E>
void TransposeAs(const void* from_bytes, void* to_bytes, int64_t k, int64_t n) {
  constexpr int64_t kTile = 32;
  const E* from = static_cast<const E*>(from_bytes);
  E* to = static_cast<E*>(to_bytes);
  const int64_t row_tiles = (k + kTile - 1) / kTile;
  ParallelFor(row_tiles, std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(n * kTile, 1)),
              [&](int64_t tile_begin, int64_t tile_end) {
    for (int64_t i0 = tile_begin * kTile; i0 < std::min(k, tile_end * kTile); i0 += kTile) {
      for (int64_t j0 = 0; j0 < n; j0 += kTile) {
        const int64_t i1 = std::min(k, i0 + kTile), j1 = std::min(n, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          for (int64_t j = j0; j < j1; ++j) to[j * k + i] = from[i * n + j];
        }
      }
    }
  });
}

// The [N, K] transpose of a [K, N] float tensor, element bits moved as
// they are.
Tensor Transposed(const Tensor& w) {
  const int64_t k = w.dim(0), n = w.dim(1);
  Tensor t(w.dtype(), {n, k});
  switch (DTypeSize(w.dtype())) {
    case 1: TransposeAs<uint8_t>(w.raw_data(), t.raw_data(), k, n); break;
    case 2: TransposeAs<uint16_t>(w.raw_data(), t.raw_data(), k, n); break;
    case 4: TransposeAs<uint32_t>(w.raw_data(), t.raw_data(), k, n); break;
    default: TransposeAs<uint64_t>(w.raw_data(), t.raw_data(), k, n); break;
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
      const Tensor* w = FloatConstant(module, product->arg(1).node(), 2);
      const Tensor* b = FloatConstant(module, bias, 1);
      if (w == nullptr || b == nullptr || !x->type().has_value() ||
          x->type()->rank() < 2 || b->dim(0) != w->dim(1) || w->dtype() != b->dtype() ||
          x->type()->dtype != w->dtype()) {
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
