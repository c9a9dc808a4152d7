// Reductions. Their axes are an attribute before opset 18 and an input
// from 18 on, except ReduceSum's, which became an input in opset 13.
// An empty axes list reduces every dim, or nothing with
// noop_with_empty_axes=1. ONNX keeps the input's dtype where graft's sum
// widens integers to i64 and mean needs floats: casts restore it.

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"

namespace graft::onnx_import {
namespace {

struct ReduceParams {
  std::vector<int64_t> axes;
  bool keep_dims = true;
  bool noop = false;  // Empty axes and noop_with_empty_axes: the identity.
};

absl::StatusOr<ReduceParams> ReadReduce(NodeContext& ctx) {
  ReduceParams p;
  ASSIGN_OR_RETURN(int64_t keep, ctx.attrs().Int("keepdims", 1));
  p.keep_dims = keep != 0;
  const int64_t axes_input_since = ctx.op_type() == "ReduceSum" ? 13 : 18;
  if (ctx.opset() >= axes_input_since) {
    ASSIGN_OR_RETURN(int64_t noop, ctx.attrs().Int("noop_with_empty_axes", 0));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes,
                     ctx.OptionalConstantInts(1, "the axes input"));
    if (axes.has_value()) p.axes = *axes;
    p.noop = noop != 0 && p.axes.empty();
  } else {
    if (ctx.HasInput(1)) {
      return NodeContext::Invalid(absl::StrCat(
          ctx.op_type(), " takes its axes as an attribute before opset ", axes_input_since));
    }
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes,
                     ctx.attrs().Ints("axes"));
    if (axes.has_value()) p.axes = *axes;
  }
  return p;
}

absl::StatusOr<bool> FoldReduce(NodeContext& ctx) {
  ASSIGN_OR_RETURN(ReduceParams p, ReadReduce(ctx));
  std::optional<FoldValue> x = ctx.Folded(0);
  if (!x.has_value() || ctx.op_type() == "ReduceMean") return false;
  if (p.noop) {
    RETURN_IF_ERROR(ctx.SetOutputValue(0, *std::move(x)));
    return true;
  }
  ASSIGN_OR_RETURN(FoldValue v,
                   ctx.folder().Reduce(ctx.op_type(), *x, p.axes, p.keep_dims));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

absl::Status ConvertReduce(NodeContext& ctx) {
  ASSIGN_OR_RETURN(ReduceParams p, ReadReduce(ctx));
  if (p.noop) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  const std::string& op_type = ctx.op_type();
  const char* op = op_type == "ReduceSum"    ? "sum"
                   : op_type == "ReduceMean" ? "mean"
                   : op_type == "ReduceMax"  ? "amax"
                                             : "amin";
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
  const bool int_mean = op_type == "ReduceMean" && !IsFloatingPoint(tx.dtype);
  if (int_mean) {
    ASSIGN_OR_RETURN(x, ctx.Call("cast", {x, DType::kF64}));
  }
  Argument dims = p.axes.empty() ? Argument() : Argument::IntList(p.axes);
  ASSIGN_OR_RETURN(Node * y, ctx.Call(op, {x, dims, p.keep_dims}));
  ASSIGN_OR_RETURN(y, CastIfNeeded(ctx, y, tx.dtype));
  return ctx.SetOutput(0, y);
}

// ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp as
// sums of pointwise functions. LogSumExp subtracts the largest element
// first (where it is finite), as ONNX Runtime does, so that large inputs
// do not overflow.
absl::Status ConvertComposedReduce(NodeContext& ctx) {
  ASSIGN_OR_RETURN(ReduceParams p, ReadReduce(ctx));
  if (p.noop) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  const std::string& op = ctx.op_type();
  if (!IsFloatingPoint(tx.dtype) && (op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp")) {
    return NodeContext::Unsupported(absl::StrCat(op, " of ", DTypeName(tx.dtype), " values is not supported"));
  }
  Argument dims = p.axes.empty() ? Argument() : Argument::IntList(p.axes);
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
  Node* shift = nullptr;
  if (op == "ReduceL1") {
    ASSIGN_OR_RETURN(x, ctx.Call("abs", {x}));
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    ASSIGN_OR_RETURN(x, ctx.Call("mul", {x, x}));
  } else if (op == "ReduceLogSumExp") {
    ASSIGN_OR_RETURN(Node * top, ctx.Call("amax", {x, dims, true}));
    ASSIGN_OR_RETURN(Node * magnitude, ctx.Call("abs", {top}));
    ASSIGN_OR_RETURN(Node * finite, ctx.Call("lt", {magnitude, std::numeric_limits<double>::infinity()}));
    ASSIGN_OR_RETURN(shift, ctx.Call("where", {finite, top, 0.0}));
    ASSIGN_OR_RETURN(x, ctx.Call("sub", {x, shift}));
    ASSIGN_OR_RETURN(x, ctx.Call("exp", {x}));
  }
  ASSIGN_OR_RETURN(Node * y, ctx.Call("sum", {x, dims, p.keep_dims}));
  if (op == "ReduceL2") {
    ASSIGN_OR_RETURN(y, ctx.Call("sqrt", {y}));
  } else if (op == "ReduceLogSum" || op == "ReduceLogSumExp") {
    ASSIGN_OR_RETURN(y, ctx.Call("log", {y}));
  }
  if (shift != nullptr) {
    if (!p.keep_dims) {
      ASSIGN_OR_RETURN(shift, ctx.Call("sum", {shift, dims, false}));  // Drops the size-1 dims.
    }
    ASSIGN_OR_RETURN(y, ctx.Call("add", {y, shift}));
  }
  ASSIGN_OR_RETURN(y, CastIfNeeded(ctx, y, tx.dtype));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertArgMax(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  ASSIGN_OR_RETURN(int64_t keep, ctx.attrs().Int("keepdims", 1));
  ASSIGN_OR_RETURN(int64_t last, ctx.attrs().Int("select_last_index", 0));
  if (last != 0) {
    return NodeContext::Unsupported("select_last_index=1 is not supported");
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
  if (ctx.op_type() == "ArgMin") {
    // The first smallest is the first largest of the negation (NaN stays
    // NaN, which both take as the extreme); integers negate in f64, exact
    // up to 2^53.
    ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
    if (!IsFloatingPoint(tx.dtype)) {
      ASSIGN_OR_RETURN(x, ctx.Call("cast", {x, DType::kF64}));
    }
    ASSIGN_OR_RETURN(x, ctx.Call("neg", {x}));
  }
  ASSIGN_OR_RETURN(Node * y, ctx.Call("argmax", {x, axis, keep != 0}));
  return ctx.SetOutput(0, y);
}

// TopK as K rounds of argmax: each round takes the first largest of what
// is left and masks it with -inf (real infinities are first made the
// most negative finite value, so a masked entry never wins a tie). The
// values are gathered from the input; ties go to the lower index, as
// ONNX sorts them. The smallest K are the largest of the negation
// (integers negate in f64, exact up to 2^53).
constexpr int64_t kMaxTopK = 256;

absl::Status ConvertTopK(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", -1));
  ASSIGN_OR_RETURN(int64_t largest, ctx.attrs().Int("largest", 1));
  ASSIGN_OR_RETURN(int64_t sorted, ctx.attrs().Int("sorted", 1));
  (void)sorted;  // Always sorted, which unsorted allows.
  std::vector<int64_t> ks;
  if (ctx.opset() < 10) {  // K is the attribute k before opset 10.
    ASSIGN_OR_RETURN(std::optional<int64_t> k, ctx.attrs().OptionalInt("k"));
    if (!k.has_value() || ctx.HasInput(1)) {
      return NodeContext::Invalid("K is the attribute k before opset 10");
    }
    ks.push_back(*k);
  } else {
    ASSIGN_OR_RETURN(ks, ctx.ConstantInts(1, "K"));
  }
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, tx.rank()));
  const Dim n = tx.shape[a];
  if (ks.size() != 1 || ks[0] < 0 || (n.is_constant() && ks[0] > n.value())) {
    return NodeContext::Invalid(absl::StrCat("K ", IntsToString(ks), " must be one number between 0 and the ",
                                             n.ToString(), " elements of axis ", a));
  }
  const int64_t k = ks[0];
  if (n.is_symbolic()) return NodeContext::Unsupported("TopK along a symbolic dim is not supported");
  if (k == 0 || k > kMaxTopK) {
    return NodeContext::Unsupported(absl::StrCat("K = ", k, " is not supported (1 to ", kMaxTopK, ")"));
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  Node* work = x;
  if (!IsFloatingPoint(tx.dtype)) {
    ASSIGN_OR_RETURN(work, ctx.Call("cast", {work, DType::kF64}));
  }
  if (largest == 0) {
    ASSIGN_OR_RETURN(work, ctx.Call("neg", {work}));
  }
  const double inf = std::numeric_limits<double>::infinity();
  if (IsFloatingPoint(tx.dtype)) {
    const double lowest = tx.dtype == DType::kF64 ? std::numeric_limits<double>::lowest()
                                                  : std::numeric_limits<float>::lowest();
    ASSIGN_OR_RETURN(Node * minus_inf, ctx.Call("eq", {work, -inf}));
    ASSIGN_OR_RETURN(work, ctx.Call("where", {minus_inf, lowest, work}));
  }
  std::vector<int64_t> range(n.value());
  for (int64_t i = 0; i < n.value(); ++i) range[i] = i;
  std::vector<int64_t> range_dims(tx.rank() - a, 1);
  range_dims[0] = n.value();
  ASSIGN_OR_RETURN(Node * positions, I64Constant(ctx, range_dims, range, "positions"));
  std::vector<Argument> values, indices;
  for (int64_t j = 0; j < k; ++j) {
    ASSIGN_OR_RETURN(Node * idx, ctx.Call("argmax", {work, a, true}));
    ASSIGN_OR_RETURN(Node * v, ctx.Call("gather", {x, a, idx}));
    values.push_back(v);
    indices.push_back(idx);
    if (j + 1 == k) break;
    ASSIGN_OR_RETURN(Node * taken, ctx.Call("eq", {positions, idx}));
    ASSIGN_OR_RETURN(work, ctx.Call("where", {taken, -inf, work}));
  }
  auto join = [&](std::vector<Argument> parts) -> absl::StatusOr<Node*> {
    if (parts.size() == 1) return parts[0].node();
    return ctx.Call("concat", {Argument(std::move(parts)), a});
  };
  ASSIGN_OR_RETURN(Node * y, join(std::move(values)));
  ASSIGN_OR_RETURN(Node * i, join(std::move(indices)));
  RETURN_IF_ERROR(ctx.SetOutput(0, y));
  return ctx.SetOutput(1, i);
}

// cumsum along the known axis; an integer sum (i64 in graft) is cast back
// to the input's dtype, as ONNX keeps it.
absl::Status ConvertCumSum(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t exclusive, ctx.attrs().Int("exclusive", 0));
  ASSIGN_OR_RETURN(int64_t reverse, ctx.attrs().Int("reverse", 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> axis, ctx.ConstantInts(1, "the axis input"));
  if (axis.size() != 1) {
    return NodeContext::Invalid(
        absl::StrCat("the axis input has ", axis.size(), " values; expected one"));
  }
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "x"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("cumsum", {x, axis[0], exclusive != 0, reverse != 0}));
  ASSIGN_OR_RETURN(y, CastIfNeeded(ctx, y, tx.dtype));
  return ctx.SetOutput(0, y);
}

}  // namespace

void AddReduceConverters(std::vector<OpConverter>& table) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    table.push_back(
        {.op_type = op, .fold = FoldReduce, .convert = ConvertReduce});
  }
  // No product op in graft: only on values known at import time.
  table.push_back({.op_type = "ReduceProd", .fold = FoldReduce});
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    table.push_back({.op_type = op, .convert = ConvertComposedReduce});
  }
  table.push_back({.op_type = "ArgMax", .convert = ConvertArgMax});
  table.push_back({.op_type = "ArgMin", .convert = ConvertArgMax});
  table.push_back({.op_type = "CumSum", .convert = ConvertCumSum});
  table.push_back({.op_type = "TopK", .convert = ConvertTopK});
}

}  // namespace graft::onnx_import
