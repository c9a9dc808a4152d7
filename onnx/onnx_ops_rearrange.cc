// Operators that rearrange or pick elements, imported as reshapes,
// permutes, expands, index_selects and products that every backend runs:
// DepthToSpace, SpaceToDepth, Tile, GatherND, ScatterND, ScatterElements,
// OneHot and Einsum. Each needs
// static shapes (they give the reshapes' sizes).

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"

namespace graft::onnx_import {
namespace {

absl::StatusOr<Node*> Reshape(NodeContext& ctx, Node* x, std::vector<int64_t> dims) {
  return ctx.Call("reshape", {x, Argument::IntList(std::move(dims))});
}

absl::StatusOr<Node*> Permute(NodeContext& ctx, Node* x, std::vector<int64_t> dims) {
  std::vector<int64_t> identity(dims.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (dims == identity) return x;
  return ctx.Call("permute", {x, Argument::IntList(std::move(dims))});
}

absl::StatusOr<int64_t> BlockSize(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::optional<int64_t> b, ctx.attrs().OptionalInt("blocksize"));
  if (!b.has_value() || *b < 1) {
    return NodeContext::Invalid("attribute 'blocksize' must be given and positive");
  }
  return *b;
}

absl::StatusOr<std::vector<int64_t>> ImageDims(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType t, ctx.InputType(0));
  if (t.rank() != 4) {
    return NodeContext::Invalid(absl::StrCat("input ", t.ToString(), " must be 4-D [N, C, H, W]"));
  }
  return StaticDimsOf(t, "the input");
}

// [N, C, H, W] -> [N, C / b^2, H * b, W * b]. DCR takes the channels as
// [b, b, C / b^2], CRD (PixelShuffle) as [C / b^2, b, b].
absl::Status ConvertDepthToSpace(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx));
  ASSIGN_OR_RETURN(std::string mode, ctx.attrs().String("mode", "DCR"));
  ASSIGN_OR_RETURN(std::vector<int64_t> d, ImageDims(ctx));
  ASSIGN_OR_RETURN(const int64_t bb, CheckedMul(b, b, "blocksize^2"));
  ASSIGN_OR_RETURN(const int64_t height, CheckedMul(d[2], b, "the output height"));
  ASSIGN_OR_RETURN(const int64_t width, CheckedMul(d[3], b, "the output width"));
  if (d[1] % bb != 0) {
    return NodeContext::Invalid(absl::StrCat("the ", d[1], " channels are not a multiple of blocksize^2 = ", bb));
  }
  const int64_t c = d[1] / bb;
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  if (mode == "DCR") {
    ASSIGN_OR_RETURN(x, Reshape(ctx, x, {d[0], b, b, c, d[2], d[3]}));
    ASSIGN_OR_RETURN(x, Permute(ctx, x, {0, 3, 4, 1, 5, 2}));
  } else if (mode == "CRD") {
    ASSIGN_OR_RETURN(x, Reshape(ctx, x, {d[0], c, b, b, d[2], d[3]}));
    ASSIGN_OR_RETURN(x, Permute(ctx, x, {0, 1, 4, 2, 5, 3}));
  } else {
    return NodeContext::Invalid(absl::StrCat("mode \"", mode, "\" is not DCR or CRD"));
  }
  ASSIGN_OR_RETURN(x, Reshape(ctx, x, {d[0], c, height, width}));
  return ctx.SetOutput(0, x);
}

// [N, C, H, W] -> [N, C * b^2, H / b, W / b], the channels as [b, b, C].
absl::Status ConvertSpaceToDepth(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> d, ImageDims(ctx));
  if (d[2] % b != 0 || d[3] % b != 0) {
    return NodeContext::Invalid(absl::StrCat("height ", d[2], " and width ", d[3],
                                             " must be multiples of blocksize ", b));
  }
  ASSIGN_OR_RETURN(const int64_t bb, CheckedMul(b, b, "blocksize^2"));
  ASSIGN_OR_RETURN(const int64_t channels, CheckedMul(d[1], bb, "the output channels"));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  ASSIGN_OR_RETURN(x, Reshape(ctx, x, {d[0], d[1], d[2] / b, b, d[3] / b, b}));
  ASSIGN_OR_RETURN(x, Permute(ctx, x, {0, 3, 5, 1, 2, 4}));
  ASSIGN_OR_RETURN(x, Reshape(ctx, x, {d[0], channels, d[2] / b, d[3] / b}));
  return ctx.SetOutput(0, x);
}

// Tile of a value known at import (shape arithmetic: PyTorch's export of
// torch.tensor_split tiles its piece sizes). Results past the folding
// limit, and repeats ConvertTile refuses, are left to it.
absl::StatusOr<bool> FoldTile(NodeContext& ctx) {
  std::optional<FoldValue> x = ctx.Folded(0);
  std::optional<FoldValue> r = ctx.Folded(1);
  if (!x.has_value() || !r.has_value() || r->HasSymbols()) return false;
  ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ctx.ConstantInts(1, "the repeats input"));
  if (repeats.size() != x->dims.size()) return false;
  FoldValue out;
  out.dtype = x->dtype;
  int64_t total = 1;
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] < 0 || (x->dims[i] > 0 && repeats[i] > ctx.folder().max_elements() / x->dims[i])) return false;
    out.dims.push_back(x->dims[i] * repeats[i]);
    total *= out.dims.back();
    if (total > ctx.folder().max_elements()) return false;
  }
  out.elems.reserve(static_cast<size_t>(total));
  for (int64_t flat = 0; flat < total; ++flat) {
    // The source element: each output index modulo the input's dim.
    int64_t rest = flat, source = 0, stride = 1;
    for (size_t i = out.dims.size(); i-- > 0;) {
      const int64_t index = rest % out.dims[i];
      rest /= out.dims[i];
      source += (index % x->dims[i]) * stride;
      stride *= x->dims[i];
    }
    out.elems.push_back(x->elems[static_cast<size_t>(source)]);
  }
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(out)));
  return true;
}

// Each dim i repeated r[i] times: a new size-r[i] dim in front of it by
// expand, then the two merged.
absl::Status ConvertTile(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType t, ctx.InputType(0));
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, StaticDimsOf(t, "the input"));
  ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ctx.ConstantInts(1, "the repeats input"));
  if (repeats.size() != dims.size()) {
    return NodeContext::Invalid(absl::StrCat("repeats ", IntsToString(repeats), " must have one entry per dim of ",
                                             t.ToString()));
  }
  std::vector<int64_t> spread, expanded, result;
  bool any = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] < 0) return NodeContext::Invalid("repeats must not be negative");
    if (repeats[i] != 1) {
      spread.push_back(1);
      expanded.push_back(repeats[i]);
      any = true;
    }
    spread.push_back(dims[i]);
    expanded.push_back(dims[i]);
    ASSIGN_OR_RETURN(const int64_t repeated, CheckedMul(dims[i], repeats[i], "a tiled dim"));
    result.push_back(repeated);
  }
  if (!any) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  ASSIGN_OR_RETURN(x, Reshape(ctx, x, spread));
  ASSIGN_OR_RETURN(x, ctx.Call("expand", {x, Argument::IntList(expanded)}));
  ASSIGN_OR_RETURN(x, Reshape(ctx, x, result));
  return ctx.SetOutput(0, x);
}

// data[indices[..., :]]: the last dim of indices (m entries) picks into
// the first m dims of data. The m indices become one row number of data
// seen as [d0 * .. * d(m-1), rest...], and index_select takes the rows.
absl::Status ConvertGatherND(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t batch_dims, ctx.attrs().Int("batch_dims", 0));
  if (batch_dims != 0) return NodeContext::Unsupported("batch_dims other than 0 is not supported");
  ASSIGN_OR_RETURN(TensorType td, ctx.InputType(0));
  ASSIGN_OR_RETURN(TensorType ti, ctx.InputType(1));
  if (!IsInteger(ti.dtype) || ti.rank() < 1) {
    return NodeContext::Invalid(absl::StrCat("indices ", ti.ToString(), " must be an integer tensor of rank 1 or more"));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> data_dims, StaticDimsOf(td, "the data"));
  const Dim last = ti.shape.back();
  if (last.is_symbolic() || last.value() < 1 || last.value() > td.rank()) {
    return NodeContext::Invalid(absl::StrCat("the last dim of indices ", ti.ToString(),
                                             " must be static, between 1 and the rank of data ", td.ToString()));
  }
  const int64_t m = last.value();
  std::vector<int64_t> sizes(data_dims.begin(), data_dims.begin() + m);
  std::vector<int64_t> strides(m, 1);
  for (int64_t j = m - 2; j >= 0; --j) {
    ASSIGN_OR_RETURN(strides[j], CheckedMul(strides[j + 1], sizes[j + 1], "a row stride of data"));
  }
  ASSIGN_OR_RETURN(Node * idx, ctx.Input(1, "indices"));
  ASSIGN_OR_RETURN(idx, CastIfNeeded(ctx, idx, DType::kI64));
  // Negative indices count from the end of their own dim.
  ASSIGN_OR_RETURN(Node * size_vec, I64Constant(ctx, {m}, sizes, "sizes"));
  ASSIGN_OR_RETURN(Node * stride_vec, I64Constant(ctx, {m}, strides, "strides"));
  ASSIGN_OR_RETURN(Node * negative, ctx.Call("lt", {idx, int64_t{0}}));
  ASSIGN_OR_RETURN(Node * wrapped, ctx.Call("add", {idx, size_vec}));
  ASSIGN_OR_RETURN(idx, ctx.Call("where", {negative, wrapped, idx}));
  ASSIGN_OR_RETURN(Node * scaled, ctx.Call("mul", {idx, stride_vec}));
  ASSIGN_OR_RETURN(Node * row, ctx.Call("sum", {scaled, Argument::IntList({-1}), false}));
  ASSIGN_OR_RETURN(Node * rows, Reshape(ctx, row, {-1}));
  std::vector<int64_t> table = {std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>())};
  table.insert(table.end(), data_dims.begin() + m, data_dims.end());
  ASSIGN_OR_RETURN(Node * data, ctx.Input(0, "data"));
  ASSIGN_OR_RETURN(data, Reshape(ctx, data, table));
  ASSIGN_OR_RETURN(Node * picked, ctx.Call("index_select", {data, int64_t{0}, rows}));
  Shape target(ti.shape.begin(), ti.shape.end() - 1);
  for (size_t i = m; i < data_dims.size(); ++i) target.push_back(Dim(data_dims[i]));
  ASSIGN_OR_RETURN(picked, ReshapeTo(ctx, picked, target));
  return ctx.SetOutput(0, picked);
}

// The scatters' result: data (input 0) seen as `table` ([rows, rest...]),
// each row r replaced by row source[r] of the updates (input 2, seen as
// `update_table`) where source[r] >= 0; then shaped as `data_dims`.
absl::Status WriteRows(NodeContext& ctx, const std::vector<int64_t>& source,
                       const std::vector<int64_t>& table, const std::vector<int64_t>& update_table,
                       const std::vector<int64_t>& data_dims) {
  const int64_t rows = table[0];
  std::vector<int64_t> pick(rows), mask_dims(table.size(), 1);
  mask_dims[0] = rows;
  Tensor taken(DType::kBool, mask_dims);
  for (int64_t r = 0; r < rows; ++r) {
    pick[r] = std::max<int64_t>(source[r], 0);
    taken.data<bool>()[r] = source[r] >= 0;
  }
  ASSIGN_OR_RETURN(Node * data, ctx.Input(0, "data"));
  ASSIGN_OR_RETURN(Node * updates, ctx.Input(2, "updates"));
  ASSIGN_OR_RETURN(data, Reshape(ctx, data, table));
  ASSIGN_OR_RETURN(updates, Reshape(ctx, updates, update_table));
  ASSIGN_OR_RETURN(Node * pick_node, I64Constant(ctx, {rows}, pick, "rows"));
  ASSIGN_OR_RETURN(Node * picked, ctx.Call("index_select", {updates, int64_t{0}, pick_node}));
  ASSIGN_OR_RETURN(Node * mask, ctx.ConstantNode(std::move(taken), "taken"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("where", {mask, picked, data}));
  ASSIGN_OR_RETURN(y, Reshape(ctx, y, data_dims));
  return ctx.SetOutput(0, y);
}

// A scatter the importer cannot write out at import (indices computed at
// run time, as a graph network's edges, or a reduction: torch.scatter_add,
// index_add, index_put with accumulate): graft's scatter (ScatterElements,
// along `axis`) or scatter_nd, which the interpreter runs.
absl::Status ConvertRunTimeScatter(NodeContext& ctx, const std::string& reduction, std::optional<int64_t> axis) {
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    return NodeContext::Unsupported(absl::StrCat("reduction \"", reduction, "\" is not supported"));
  }
  ASSIGN_OR_RETURN(Node * data, ctx.Input(0, "data"));
  ASSIGN_OR_RETURN(Node * indices, ctx.Input(1, "indices"));
  ASSIGN_OR_RETURN(Node * updates, ctx.Input(2, "updates"));
  Node* y = nullptr;
  if (axis.has_value()) {
    ASSIGN_OR_RETURN(y, ctx.Call("scatter", {data, *axis, indices, updates, reduction}));
  } else {
    ASSIGN_OR_RETURN(y, ctx.Call("scatter_nd", {data, indices, updates, reduction}));
  }
  return ctx.SetOutput(0, y);
}

// data with rows replaced by updates at known indices: each row of data
// (seen as [d0 * .. * d(m-1), rest]) that an index tuple names takes the
// update row of the last tuple that names it, by index_select from the
// updates and where; data and updates may be computed at run time.
absl::Status ConvertScatterND(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::string reduction, ctx.attrs().String("reduction", "none"));
  const Tensor* indices = ctx.Constant(1);
  ASSIGN_OR_RETURN(TensorType td, ctx.InputType(0));
  if (reduction != "none" || indices == nullptr || !IsStatic(td.shape)) {
    return ConvertRunTimeScatter(ctx, reduction, std::nullopt);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> data_dims, StaticDimsOf(td, "the data"));
  const int64_t m = indices->rank() == 0 ? 0 : indices->dims().back();
  if (indices->rank() < 1 || m < 1 || m > td.rank()) {
    return NodeContext::Invalid(absl::StrCat("indices ", indices->TypeString(),
                                             " must end in a dim between 1 and the rank of data ", td.ToString()));
  }
  const int64_t count = indices->NumElements() / m;
  int64_t rows = 1;
  for (int64_t j = 0; j < m; ++j) {
    ASSIGN_OR_RETURN(rows, CheckedMul(rows, data_dims[j], "the rows of data"));
  }
  if (rows > kMaxImportTable) {
    return NodeContext::Unsupported(absl::StrCat("data ", td.ToString(), " has more than ",
                                                 kMaxImportTable, " rows to scatter into"));
  }
  std::vector<int64_t> source(rows, -1);  // The update row each data row takes.
  for (int64_t k = 0; k < count; ++k) {
    int64_t row = 0;
    for (int64_t j = 0; j < m; ++j) {
      int64_t v = static_cast<int64_t>(indices->GetAsDouble(k * m + j));
      if (v < -data_dims[j] || v >= data_dims[j]) {
        return NodeContext::Invalid(absl::StrCat("index ", v, " is out of range for dim ", j, " of ", td.ToString()));
      }
      row = row * data_dims[j] + (v < 0 ? v + data_dims[j] : v);
    }
    source[row] = k;
  }
  if (count == 0) return ctx.AliasOutput(0, 0);
  std::vector<int64_t> rest(data_dims.begin() + m, data_dims.end());
  std::vector<int64_t> table = {rows}, update_table = {count};
  table.insert(table.end(), rest.begin(), rest.end());
  update_table.insert(update_table.end(), rest.begin(), rest.end());
  return WriteRows(ctx, source, table, update_table, data_dims);
}

// ScatterElements of values all known at import (shape arithmetic:
// PyTorch's export of index_fill scatters into a Shape). Reductions,
// symbols and bad indices are left to ConvertScatterElements.
absl::StatusOr<bool> FoldScatterElements(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::string reduction, ctx.attrs().String("reduction", "none"));
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  std::optional<std::vector<FoldValue>> in = ctx.FoldedInputs(3);
  if (reduction != "none" || !in.has_value()) return false;
  const FoldValue& data = (*in)[0];
  const FoldValue& indices = (*in)[1];
  const FoldValue& updates = (*in)[2];
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (indices.HasSymbols() || (indices.dtype != DType::kI64 && indices.dtype != DType::kI32) ||
      indices.dims != updates.dims || static_cast<int64_t>(indices.dims.size()) != rank ||
      data.dtype != updates.dtype || axis < -rank || axis >= rank) {
    return false;
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  FoldValue out = data;
  std::vector<int64_t> position(static_cast<size_t>(rank), 0);
  for (int64_t k = 0; k < indices.NumElements(); ++k) {
    int64_t v = indices.elems[static_cast<size_t>(k)].i;
    if (v < -data.dims[a] || v >= data.dims[a]) return false;
    if (v < 0) v += data.dims[a];
    int64_t target = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t at = d == a ? v : position[d];
      if (at >= data.dims[d]) return false;
      target = target * data.dims[d] + at;
    }
    out.elems[static_cast<size_t>(target)] = updates.elems[static_cast<size_t>(k)];
    for (int64_t d = rank - 1; d >= 0; --d) {  // The next position.
      if (++position[d] < indices.dims[d]) break;
      position[d] = 0;
    }
  }
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(out)));
  return true;
}

// updates written into data at known indices along `axis`
// (torch.scatter, select_scatter): each element of data that an index
// names takes the update of the last one that names it; data and updates
// may be computed at run time, as for ScatterND.
absl::Status ConvertScatterElements(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::string reduction, ctx.attrs().String("reduction", "none"));
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  ASSIGN_OR_RETURN(TensorType td, ctx.InputType(0));
  const Tensor* indices = ctx.Constant(1);
  if (reduction != "none" || indices == nullptr || !IsStatic(td.shape)) {
    return ConvertRunTimeScatter(ctx, reduction, axis);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> data_dims, StaticDimsOf(td, "the data"));
  if (indices->rank() != td.rank()) {
    return NodeContext::Invalid(absl::StrCat("indices ", indices->TypeString(), " must have the rank of data ",
                                             td.ToString()));
  }
  ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, td.rank()));
  const int64_t count = indices->NumElements();
  if (count == 0) return ctx.AliasOutput(0, 0);
  int64_t total = 1;
  for (int64_t d : data_dims) {
    ASSIGN_OR_RETURN(total, CheckedMul(total, d, "the elements of data"));
  }
  if (total > kMaxImportTable) {
    return NodeContext::Unsupported(absl::StrCat("data ", td.ToString(), " has more than ",
                                                 kMaxImportTable, " elements to scatter into"));
  }
  std::vector<int64_t> source(total, -1);  // The update each data element takes.
  std::vector<int64_t> position(indices->rank(), 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t v = static_cast<int64_t>(indices->GetAsDouble(k));
    if (v < -data_dims[a] || v >= data_dims[a]) {
      return NodeContext::Invalid(absl::StrCat("index ", v, " is out of range for axis ", a, " of ", td.ToString()));
    }
    if (v < 0) v += data_dims[a];
    int64_t target = 0;
    for (int64_t d = 0; d < indices->rank(); ++d) {
      const int64_t at = d == a ? v : position[d];
      if (at >= data_dims[d]) {
        return NodeContext::Invalid(absl::StrCat("indices ", indices->TypeString(), " reach beyond data ",
                                                 td.ToString()));
      }
      target = target * data_dims[d] + at;
    }
    source[target] = k;
    for (int64_t d = indices->rank() - 1; d >= 0; --d) {  // The next position.
      if (++position[d] < indices->dim(static_cast<int>(d))) break;
      position[d] = 0;
    }
  }
  return WriteRows(ctx, source, {total}, {count}, data_dims);
}

// where(indices == arange(depth), on, off), with depth along `axis`.
absl::Status ConvertOneHot(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", -1));
  ASSIGN_OR_RETURN(TensorType ti, ctx.InputType(0));
  // depth may have any numeric dtype.
  const Tensor* known_depth = ctx.Constant(1);
  if (known_depth == nullptr) return NodeContext::Unsupported("depth must be known at import time");
  if (known_depth->NumElements() != 1 || !(known_depth->GetAsDouble(0) >= 1)) {
    return NodeContext::Invalid("depth must be one positive number");
  }
  if (known_depth->GetAsDouble(0) > static_cast<double>(kMaxImportTable)) {
    return NodeContext::Unsupported(absl::StrCat("depth ", known_depth->GetAsDouble(0),
                                                 " is more than ", kMaxImportTable, " classes"));
  }
  const int64_t depth = static_cast<int64_t>(known_depth->GetAsDouble(0));
  ASSIGN_OR_RETURN(TensorType tv, ctx.InputType(2));
  if (tv.rank() != 1 || tv.shape[0] != Dim(2)) {
    return NodeContext::Invalid(absl::StrCat("values ", tv.ToString(), " must be [off, on]"));
  }
  ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, ti.rank() + 1));
  ASSIGN_OR_RETURN(Node * idx, ctx.Input(0, "indices"));
  if (IsFloatingPoint(ti.dtype)) {
    ASSIGN_OR_RETURN(idx, ctx.Call("cast", {idx, DType::kI64}));
  }
  ASSIGN_OR_RETURN(idx, NonNegativeIndices(ctx, idx, Dim(depth)));
  ASSIGN_OR_RETURN(idx, ctx.Call("unsqueeze", {idx, a}));
  std::vector<int64_t> range(depth);
  std::iota(range.begin(), range.end(), 0);
  std::vector<int64_t> range_dims(ti.rank() + 1 - a, 1);
  range_dims[0] = depth;
  ASSIGN_OR_RETURN(Node * classes, I64Constant(ctx, range_dims, range, "classes"));
  ASSIGN_OR_RETURN(Node * hit, ctx.Call("eq", {idx, classes}));
  ASSIGN_OR_RETURN(Node * values, ctx.Input(2, "values"));
  ASSIGN_OR_RETURN(Node * off, ctx.Call("slice", {values, int64_t{0}, int64_t{0}, int64_t{1}}));
  ASSIGN_OR_RETURN(Node * on, ctx.Call("slice", {values, int64_t{0}, int64_t{1}, int64_t{2}}));
  ASSIGN_OR_RETURN(off, Reshape(ctx, off, {}));
  ASSIGN_OR_RETURN(on, Reshape(ctx, on, {}));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("where", {hit, on, off}));
  return ctx.SetOutput(0, y);
}

// --- Einsum ------------------------------------------------------------------

// One operand: its node, a label per dim, and the dims' sizes.
struct Labeled {
  Node* node;
  std::string labels;
  std::vector<int64_t> dims;
};

// The ellipsis becomes labels '0', '1', ... (right-aligned across
// operands, as broadcasting aligns dims).
absl::StatusOr<std::string> ExpandEllipsis(const std::string& term, int64_t rank, int64_t& ellipsis_dims) {
  const size_t at = term.find("...");
  if (at == std::string::npos) {
    if (static_cast<int64_t>(term.size()) != rank) {
      return NodeContext::Invalid(absl::StrCat("term '", term, "' has ", term.size(), " labels for an input of rank ", rank));
    }
    return term;
  }
  const int64_t n = rank - static_cast<int64_t>(term.size() - 3);
  if (n < 0) return NodeContext::Invalid(absl::StrCat("term '", term, "' has more labels than the input's ", rank, " dims"));
  ellipsis_dims = std::max(ellipsis_dims, n);
  std::string labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(static_cast<char>('0' + (9 - (n - 1 - i))));
  return term.substr(0, at) + labels + term.substr(at + 3);
}

// Sums `op` over the labels not in `keep`.
absl::Status SumOut(NodeContext& ctx, Labeled& op, const std::string& keep) {
  std::vector<int64_t> dims;
  std::string labels;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (keep.find(op.labels[i]) == std::string::npos) {
      dims.push_back(static_cast<int64_t>(i));
    } else {
      labels.push_back(op.labels[i]);
      sizes.push_back(op.dims[i]);
    }
  }
  if (dims.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(op.node, ctx.Call("sum", {op.node, Argument::IntList(dims), false}));
  op.labels = labels;
  op.dims = sizes;
  return absl::OkStatus();
}

// `op` permuted to the order of `labels` (a permutation of its own).
absl::Status Arrange(NodeContext& ctx, Labeled& op, const std::string& labels) {
  std::vector<int64_t> perm;
  std::vector<int64_t> sizes;
  for (char c : labels) {
    const size_t i = op.labels.find(c);
    perm.push_back(static_cast<int64_t>(i));
    sizes.push_back(op.dims[i]);
  }
  ASSIGN_OR_RETURN(op.node, Permute(ctx, op.node, perm));
  op.labels = labels;
  op.dims = sizes;
  return absl::OkStatus();
}

int64_t SizeOf(const Labeled& op, const std::string& labels) {
  int64_t n = 1;
  for (char c : labels) n *= op.dims[op.labels.find(c)];
  return n;
}

// a and b contracted into one operand with the labels in `keep`: the
// shared kept labels are a batch, the shared others are summed by a
// matrix product.
absl::StatusOr<Labeled> Contract(NodeContext& ctx, Labeled a, Labeled b, const std::string& keep) {
  auto in = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
  // A label in one operand only and not kept is summed first.
  RETURN_IF_ERROR(SumOut(ctx, a, keep + b.labels));
  RETURN_IF_ERROR(SumOut(ctx, b, keep + a.labels));
  std::string batch, left, right, inner;
  for (char c : a.labels) {
    if (in(b.labels, c)) {
      (in(keep, c) ? batch : inner).push_back(c);
    } else {
      left.push_back(c);
    }
  }
  for (char c : b.labels) {
    if (!in(a.labels, c)) right.push_back(c);
  }
  RETURN_IF_ERROR(Arrange(ctx, a, batch + left + inner));
  RETURN_IF_ERROR(Arrange(ctx, b, batch + inner + right));
  const int64_t nb = SizeOf(a, batch), nl = SizeOf(a, left), nk = SizeOf(a, inner), nr = SizeOf(b, right);
  ASSIGN_OR_RETURN(Node * am, Reshape(ctx, a.node, {nb, nl, nk}));
  ASSIGN_OR_RETURN(Node * bm, Reshape(ctx, b.node, {nb, nk, nr}));
  ASSIGN_OR_RETURN(Node * product, ctx.Call("matmul", {am, bm}));
  Labeled out{.labels = batch + left + right};
  for (const std::string* part : {&batch, &left}) {
    for (char c : *part) out.dims.push_back(a.dims[a.labels.find(c)]);
  }
  for (char c : right) out.dims.push_back(b.dims[b.labels.find(c)]);
  ASSIGN_OR_RETURN(out.node, Reshape(ctx, product, out.dims));
  return out;
}

absl::Status ConvertEinsum(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::string equation, ctx.attrs().String("equation", ""));
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms = absl::StrSplit(lhs, ',');
  if (static_cast<int>(terms.size()) != ctx.num_inputs()) {
    return NodeContext::Invalid(absl::StrCat("equation '", equation, "' has ", terms.size(), " terms for ",
                                             ctx.num_inputs(), " inputs"));
  }
  std::vector<Labeled> ops;
  std::map<char, int64_t> size_of;
  int64_t ellipsis_dims = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(TensorType t, ctx.InputType(i));
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, StaticDimsOf(t, "each input"));
    ASSIGN_OR_RETURN(std::string labels, ExpandEllipsis(terms[i], t.rank(), ellipsis_dims));
    for (size_t k = 0; k < labels.size(); ++k) {
      const char c = labels[k];
      if (!std::isalpha(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c))) {
        return NodeContext::Invalid(absl::StrCat("equation '", equation, "' has the label '", std::string(1, c), "'"));
      }
      if (labels.find(c) != k) {
        return NodeContext::Unsupported(absl::StrCat("a label repeated within one term ('", terms[i],
                                                     "': a diagonal) is not supported"));
      }
      auto [it, added] = size_of.emplace(c, dims[k]);
      if (!added && it->second != dims[k]) {
        return NodeContext::Unsupported(absl::StrCat("label '", std::string(1, c), "' has sizes ", it->second, " and ",
                                                     dims[k], " (broadcasting in einsum is not supported)"));
      }
    }
    ASSIGN_OR_RETURN(Node * node, ctx.Input(i));
    ops.push_back(Labeled{node, labels, dims});
  }
  std::string output;
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis, then the labels used once, sorted.
    for (int64_t i = 0; i < ellipsis_dims; ++i) output.push_back(static_cast<char>('0' + (9 - (ellipsis_dims - 1 - i))));
    std::string once;
    for (const auto& [c, size] : size_of) {
      if (std::isdigit(static_cast<unsigned char>(c))) continue;
      int uses = 0;
      for (const Labeled& op : ops) uses += op.labels.find(c) != std::string::npos;
      if (uses == 1) once.push_back(c);
    }
    output += once;
  } else {
    const std::string rhs = equation.substr(arrow + 2);
    const bool has_ellipsis = rhs.find("...") != std::string::npos;
    const int64_t rank = static_cast<int64_t>(rhs.size()) - (has_ellipsis ? 3 - ellipsis_dims : 0);
    int64_t unused = 0;
    ASSIGN_OR_RETURN(output, ExpandEllipsis(rhs, rank, unused));
    for (size_t k = 0; k < output.size(); ++k) {
      const char c = output[k];
      if (output.find(c) != k) {
        return NodeContext::Invalid(absl::StrCat("output label '", std::string(1, c), "' appears twice"));
      }
      if (!size_of.contains(c)) {
        return NodeContext::Invalid(absl::StrCat("output label '", std::string(1, c), "' is in no input"));
      }
    }
  }
  // Left to right, keeping what later terms or the output need.
  Labeled acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::string keep = output;
    for (size_t j = i + 1; j < ops.size(); ++j) keep += ops[j].labels;
    ASSIGN_OR_RETURN(acc, Contract(ctx, acc, ops[i], keep));
  }
  RETURN_IF_ERROR(SumOut(ctx, acc, output));
  RETURN_IF_ERROR(Arrange(ctx, acc, output));
  return ctx.SetOutput(0, acc.node);
}

}  // namespace

void AddRearrangeConverters(std::vector<OpConverter>& table) {
  table.push_back({.op_type = "DepthToSpace", .convert = ConvertDepthToSpace});
  table.push_back({.op_type = "SpaceToDepth", .convert = ConvertSpaceToDepth});
  table.push_back({.op_type = "Tile", .fold = FoldTile, .convert = ConvertTile});
  table.push_back({.op_type = "GatherND", .convert = ConvertGatherND});
  table.push_back({.op_type = "OneHot", .convert = ConvertOneHot});
  table.push_back({.op_type = "ScatterND", .convert = ConvertScatterND});
  table.push_back({.op_type = "ScatterElements", .fold = FoldScatterElements, .convert = ConvertScatterElements});
  // ScatterElements' name in opsets 9 and 10 (deprecated from 11).
  table.push_back({.op_type = "Scatter", .convert = ConvertScatterElements});
  table.push_back({.op_type = "Einsum", .convert = ConvertEinsum});
}

}  // namespace graft::onnx_import
