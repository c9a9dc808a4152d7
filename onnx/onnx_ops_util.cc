#include "onnx/onnx_ops_util.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graft::onnx_import {

std::string IntsToString(const std::vector<int64_t>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}

absl::StatusOr<Node*> CastIfNeeded(NodeContext& ctx, Node* node, DType dtype) {
  if (node->type().has_value() && node->type()->dtype == dtype) return node;
  return ctx.Call("cast", {node, dtype});
}

absl::StatusOr<Node*> ReshapeTo(NodeContext& ctx, Node* node,
                                const Shape& target) {
  ASSIGN_OR_RETURN(TensorType type, ctx.TypeOf(node));
  if (type.shape == target) return node;
  std::vector<int64_t> sizes;
  std::vector<std::string> symbols;
  for (Dim d : target) {
    if (d.is_constant()) {
      sizes.push_back(d.value());
    } else {
      sizes.push_back(-1);
      symbols.push_back(absl::StrCat("'", d.ToString(), "'"));
    }
  }
  if (symbols.size() > 1) {
    return NodeContext::Unsupported(absl::StrCat(
        "the result shape ", ShapeToString(target), " has ", symbols.size(),
        " symbolic dims (", absl::StrJoin(symbols, ", "),
        ") and graft's reshape infers only one; give the inputs static "
        "shapes (OnnxImportOptions::input_shapes or dim_values)"));
  }
  return ctx.Call("reshape", {node, Argument::IntList(sizes)});
}

absl::StatusOr<std::vector<int64_t>> StaticDimsOf(const TensorType& type,
                                                  absl::string_view what) {
  std::vector<int64_t> out;
  for (Dim d : type.shape) {
    if (d.is_symbolic()) {
      return NodeContext::Unsupported(absl::StrCat(
          what, " needs a static shape, but ", type.ToString(),
          " has the symbolic dim '", d.ToString(),
          "'; give the inputs static shapes (OnnxImportOptions::input_shapes "
          "or dim_values)"));
    }
    out.push_back(d.value());
  }
  return out;
}

}  // namespace graft::onnx_import
