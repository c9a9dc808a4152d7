#include "backends/strided_view.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/float_limits.h"
#include "support/status_macros.h"

namespace graft {

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    strides[k] = s;
    s *= dims[k];
  }
  return strides;
}

std::vector<int64_t> LayoutStrides(const std::vector<int64_t>& dims,
                                   bool channels_last) {
  if (!channels_last || dims.size() != 4) return ContiguousStrides(dims);
  const int64_t c = dims[1], h = dims[2], w = dims[3];
  return {h * w * c, 1, w * c, c};
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> own = ContiguousStrides(dims);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t shift = out.size() - dims.size();
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] != 1) strides[shift + k] = own[k];
  }
  return strides;
}

std::vector<int64_t> LayoutBroadcastStrides(const std::vector<int64_t>& dims,
                                            const std::vector<int64_t>& out, bool channels_last) {
  std::vector<int64_t> strides = BroadcastStrides(dims, out);
  if (!channels_last || dims.size() != 4 || out.size() < 4) return strides;
  const std::vector<int64_t> own = LayoutStrides(dims, true);
  const size_t shift = out.size() - 4;
  for (size_t k = 0; k < 4; ++k) strides[shift + k] = dims[k] == 1 ? 0 : own[k];
  return strides;
}

std::vector<int64_t> DimsOf(const Node& node) {
  std::vector<int64_t> dims;
  for (Dim d : node.type()->shape) dims.push_back(d.value());
  return dims;
}

int64_t NormalizeDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + rank : dim;
}

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to; ++k) n *= dims[k];
  return n;
}

absl::StatusOr<StridedSource> ViewSource(const Node& node) {
  const Node* input = node.is_call("getitem") ? node.arg(0).node()->inputs()[0]
                                              : node.inputs()[0];
  return ViewSourceOver(node, StridedSource{0, ContiguousStrides(DimsOf(*input))});
}

absl::StatusOr<StridedSource> ViewSourceOver(const Node& node, const StridedSource& input) {
  // getitem reads the input of the split it takes a piece of.
  const Node* in_node = node.is_call("getitem") ? node.arg(0).node()->inputs()[0]
                                                : node.inputs()[0];
  const std::vector<int64_t> in_dims = DimsOf(*in_node);
  const std::vector<int64_t>& in_strides = input.strides;
  const std::vector<int64_t> dims = DimsOf(node);
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  if (in_strides.size() != in_dims.size()) {
    return absl::InternalError(absl::StrCat("%", node.name(), ": input strides of rank ",
                                            in_strides.size(), " for rank ", rank));
  }
  StridedSource in{input.offset, in_strides};
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  if (node.is_call("permute")) {
    std::vector<int64_t> perm = call.Ints("dims");
    for (size_t i = 0; i < perm.size(); ++i) {
      in.strides[i] = in_strides[NormalizeDim(perm[i], rank)];
    }
  } else if (node.is_call("transpose")) {
    std::swap(in.strides[NormalizeDim(call.Int("dim0"), rank)],
              in.strides[NormalizeDim(call.Int("dim1"), rank)]);
  } else if (node.is_call("expand")) {
    // Dims aligned from the right; new leading dims and size-1 dims
    // stretched read the same element.
    in.strides.assign(dims.size(), 0);
    const size_t lead = dims.size() - in_dims.size();
    for (size_t j = 0; j < in_dims.size(); ++j) {
      in.strides[lead + j] = in_dims[j] == 1 && dims[lead + j] != 1 ? 0 : in_strides[j];
    }
  } else if (node.is_call("slice")) {
    const int64_t dim = NormalizeDim(call.Int("dim"), rank);
    int64_t start = call.IsNone("start") ? 0 : call.Int("start");
    if (start < 0) start += in_dims[dim];
    start = std::clamp<int64_t>(start, 0, in_dims[dim]);
    in.offset += start * in_strides[dim];
    in.strides[dim] *= call.Int("step");
  } else if (node.is_call("getitem")) {
    const Node& split = *node.arg(0).node();
    ASSIGN_OR_RETURN(OpCall split_call, OpCall::Bind(split));
    const int64_t dim = NormalizeDim(split_call.Int("dim"), rank);
    const std::vector<int64_t> sizes = split_call.Ints("split_size_or_sections");
    // One size: chunks of it (the last may be shorter); else sections.
    const int64_t n = in_dims[dim];
    const int64_t pieces =
        sizes.size() != 1 ? static_cast<int64_t>(sizes.size())
                          : (n == 0 || sizes[0] == 0 ? 1 : (n + sizes[0] - 1) / sizes[0]);
    int64_t index = call.Int("index");
    if (index < 0) index += pieces;  // Python's tuple[-1].
    int64_t start = 0;
    if (sizes.size() == 1) {
      start = index * sizes[0];
    } else {
      for (int64_t i = 0; i < index; ++i) start += sizes[i];
    }
    in.offset += start * in_strides[dim];
  } else {
    return absl::InternalError(
        absl::StrCat("%", node.name(), " (", node.target(), ") is not a view"));
  }
  return in;
}

std::optional<std::vector<int64_t>> ReshapeStrides(const std::vector<int64_t>& old_dims,
                                                   const std::vector<int64_t>& old_strides,
                                                   const std::vector<int64_t>& new_dims) {
  const int64_t numel = Product(old_dims, 0, old_dims.size());
  if (numel != Product(new_dims, 0, new_dims.size())) return std::nullopt;
  if (numel == 0 || old_dims.empty()) return ContiguousStrides(new_dims);
  // PyTorch's view rule: each run of old dims that is contiguous within
  // itself ("chunk") must be split or merged into whole new dims.
  std::vector<int64_t> strides(new_dims.size(), 0);
  int64_t view_d = static_cast<int64_t>(new_dims.size()) - 1;
  int64_t chunk_base = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_dims.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_dims[d];
    if (d == 0 ||
        (old_dims[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_dims[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base;
        view_numel *= new_dims[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

ReductionSplit SplitReduction(const OpCall& call, const std::vector<int64_t>& in_dims) {
  const std::vector<int64_t> in_strides = ContiguousStrides(in_dims);
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  const std::vector<int64_t> dim_list =
      call.IsNone("dim") ? std::vector<int64_t>{} : call.Ints("dim");
  std::vector<bool> reduced(in_dims.size(), dim_list.empty());
  if (rank > 0) {
    for (int64_t d : dim_list) reduced[NormalizeDim(d, rank)] = true;
  }
  ReductionSplit split;
  for (size_t k = 0; k < in_dims.size(); ++k) {
    (reduced[k] ? split.reduced_dims : split.kept_dims).push_back(in_dims[k]);
    (reduced[k] ? split.reduced_strides : split.kept_strides).push_back(in_strides[k]);
  }
  return split;
}

DType PointwiseComputeType(const Node& node, const OpCall& call) {
  const DType out = node.type()->dtype;
  if (node.is_call("cast") && call.Bool("saturate")) {
    // Its comparisons must see the value before rounding (CastFormula).
    const Node* input = call.TensorNode("input");
    if (input != nullptr && IsFloatingPoint(input->type()->dtype) && IsFloatingPoint(out) &&
        LargestFinite(input->type()->dtype) > LargestFinite(out)) {
      return input->type()->dtype;
    }
  }
  if (out != DType::kBool) return out;
  bool any_float = false, any_f64 = false, fractional = false;
  for (size_t i = 0; i < call.schema().params.size(); ++i) {
    const Argument& a = call.GetAt(i);
    if (a.is_node()) {
      const DType d = a.node()->type()->dtype;
      any_float |= IsFloatingPoint(d);
      any_f64 |= d == DType::kF64;
    } else if (a.is_double()) {
      fractional = true;
    }
  }
  if (any_f64) return DType::kF64;
  if (any_float || fractional) return DType::kF32;
  return DType::kI64;
}

}  // namespace graft
