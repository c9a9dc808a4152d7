#include "backends/unpack_int4_constants.h"

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/int4_ops.h"
#include "graph/node.h"

namespace graft {

absl::StatusOr<bool> UnpackInt4Constants(Module& module) {
  Graph& graph = module.graph();
  std::vector<Node*> unpacks;
  for (Node* node : graph.nodes()) {
    if (IsInt4ConstantUnpack(*node)) unpacks.push_back(node);
  }
  bool changed = false;
  for (Node* unpack : unpacks) {
    Node* source = unpack->arg(0).node();
    const Tensor* packed = module.FindTensor(source->target());
    if (packed == nullptr || packed->dtype() != DType::kU8 || packed->rank() < 1 ||
        !packed->on_host()) {
      continue;  // Left to the backend, which says what is wrong.
    }
    std::vector<int64_t> dims = packed->dims();
    dims.back() *= 2;
    Tensor values(DType::kI8, dims);
    UnpackInt4Bytes(packed->data<uint8_t>(), packed->NumElements(), values.data<int8_t>());
    const std::string name = module.UniqueTensorName(source->target() + "_unpacked");
    const TensorType type = values.type();
    module.SetTensor(name, std::move(values));
    Node* replacement;
    {
      auto at = graph.InsertingBefore(unpack);
      replacement = graph.GetAttr(name, type);
    }
    unpack->ReplaceAllUsesWith(replacement);
    if (!graph.EraseNode(unpack).ok()) {
      return absl::InternalError("unpacking an int4 constant left users behind");
    }
    if (source->num_uses() == 0) (void)graph.EraseNode(source);
    changed = true;
  }
  return changed;
}

}  // namespace graft
