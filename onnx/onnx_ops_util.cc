#include "onnx/onnx_ops_util.h"

#include <algorithm>
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

absl::StatusOr<std::vector<int64_t>> IntsAttr(NodeContext& ctx,
                                              absl::string_view name,
                                              size_t size, int64_t fill) {
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> v,
                   ctx.attrs().Ints(name));
  if (!v.has_value()) return std::vector<int64_t>(size, fill);
  if (v->size() != size) {
    return NodeContext::Invalid(absl::StrCat("attribute '", name, "' ",
                                             IntsToString(*v), " must have ",
                                             size, " entries"));
  }
  return *v;
}

// Negative indices count from the end in ONNX; graft's kernels refuse
// them. Known indices are fixed here, others at run time with
// where(idx < 0, idx + n, idx).
absl::StatusOr<Node*> NonNegativeIndices(NodeContext& ctx, Node* idx, Dim n) {
  ASSIGN_OR_RETURN(TensorType ti, ctx.TypeOf(idx));
  if (ti.dtype == DType::kU8) return idx;
  if (n.is_symbolic()) {
    return NodeContext::Unsupported(absl::StrCat(
        "indices computed at run time into the symbolic dim '", n.ToString(),
        "' are not supported (negative ones could not be resolved); give the "
        "inputs static shapes"));
  }
  ASSIGN_OR_RETURN(Node * neg, ctx.Call("lt", {idx, int64_t{0}}));
  ASSIGN_OR_RETURN(Node * wrapped, ctx.Call("add", {idx, n.value()}));
  return ctx.Call("where", {neg, wrapped, idx});
}

absl::StatusOr<Node*> KnownIndices(NodeContext& ctx, const Tensor& indices,
                                   Dim n) {
  Tensor fixed(DType::kI64, indices.dims());
  for (int64_t k = 0; k < indices.NumElements(); ++k) {
    int64_t v = indices.dtype() == DType::kI64
                    ? indices.data<int64_t>()[k]
                    : static_cast<int64_t>(indices.GetAsDouble(k));
    if (n.is_constant()) {
      if (v < -n.value() || v >= n.value()) {
        return NodeContext::Invalid(absl::StrCat(
            "index ", v, " is out of range for a dim of size ", n.value()));
      }
      if (v < 0) v += n.value();
    } else if (v < 0) {
      return NodeContext::Unsupported(absl::StrCat(
          "the negative index ", v, " into the symbolic dim '", n.ToString(),
          "' is not supported; give the inputs static shapes"));
    }
    fixed.data<int64_t>()[k] = v;
  }
  return ctx.ConstantNode(std::move(fixed), "indices");
}

absl::StatusOr<Node*> I64Constant(NodeContext& ctx, std::vector<int64_t> dims,
                                  const std::vector<int64_t>& values,
                                  absl::string_view suffix) {
  Tensor t(DType::kI64, std::move(dims));
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return ctx.ConstantNode(std::move(t), suffix);
}

absl::StatusOr<int64_t> CheckedMul(int64_t a, int64_t b, absl::string_view what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    return NodeContext::Invalid(absl::StrCat(what, ": ", a, " * ", b, " overflows 64 bits"));
  }
  return product;
}

}  // namespace graft::onnx_import
