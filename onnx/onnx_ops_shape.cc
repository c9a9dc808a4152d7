// Shape and data movement operators, constants, and the shape arithmetic
// that the importer evaluates (Shape, Size, ConstantOfShape, Range, and
// every operator here when its inputs are known). Operators whose shape
// argument is an input in ONNX (Reshape, Expand, Squeeze, Unsqueeze,
// Slice, Split, Pad) need that input known at import time, since graft's
// ops take sizes as literals.

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/type_rules.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"
#include "onnx/onnx_tensor.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

constexpr int64_t kOpenEnd = std::numeric_limits<int64_t>::max();

// --- Constants --------------------------------------------------------------

absl::Status ConvertConstant(NodeContext& ctx) {
  NodeAttributes& attrs = ctx.attrs();
  int given = 0;
  for (const char* name :
       {"value", "value_float", "value_floats", "value_int", "value_ints",
        "value_string", "value_strings", "sparse_value"}) {
    given += attrs.Has(name) ? 1 : 0;
  }
  if (given != 1) {
    return NodeContext::Invalid(absl::StrCat(
        "needs exactly one value attribute (value, value_float, value_floats, "
        "value_int, value_ints), got ",
        given));
  }
  for (const char* name : {"value_string", "value_strings", "sparse_value"}) {
    if (attrs.Has(name)) {
      attrs.Ignore(name);
      return NodeContext::Unsupported(
          absl::StrCat("attribute '", name, "' is not supported"));
    }
  }
  ASSIGN_OR_RETURN(const onnx::TensorProto* proto, attrs.Tensor("value"));
  if (proto != nullptr) {
    ASSIGN_OR_RETURN(Tensor t,
                     DecodeTensor(*proto, ctx.external(), "attribute 'value'"));
    return ctx.SetOutputConstant(0, std::move(t));
  }
  if (attrs.Has("value_float")) {
    ASSIGN_OR_RETURN(float f, attrs.Float("value_float", 0));
    return ctx.SetOutputConstant(0, Tensor::Scalar(DType::kF32, f));
  }
  if (attrs.Has("value_int")) {
    ASSIGN_OR_RETURN(int64_t i, attrs.Int("value_int", 0));
    return ctx.SetOutputValue(0,
                              FoldValue::Scalar(DType::kI64, FoldElem::Int(i)));
  }
  if (attrs.Has("value_ints")) {
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> v,
                     attrs.Ints("value_ints"));
    return ctx.SetOutputValue(
        0, FoldValue::Ints(v.value_or(std::vector<int64_t>{})));
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<float>> floats,
                   attrs.Floats("value_floats"));
  const std::vector<float> v = floats.value_or(std::vector<float>{});
  Tensor t(DType::kF32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return ctx.SetOutputConstant(0, std::move(t));
}

absl::Status ConvertIdentity(NodeContext& ctx) { return ctx.AliasOutput(0, 0); }

absl::StatusOr<bool> FoldShape(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType t, ctx.InputType(0));
  ASSIGN_OR_RETURN(int64_t start, ctx.attrs().Int("start", 0));
  ASSIGN_OR_RETURN(std::optional<int64_t> end, ctx.attrs().OptionalInt("end"));
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Shape(t.shape, start, end));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

absl::StatusOr<bool> FoldSize(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType t, ctx.InputType(0));
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Size(t.shape));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

// The fill value of ConstantOfShape: one element, float 0 by default.
absl::StatusOr<Tensor> FillValue(NodeContext& ctx) {
  ASSIGN_OR_RETURN(const onnx::TensorProto* proto, ctx.attrs().Tensor("value"));
  if (proto == nullptr) return Tensor::Scalar(DType::kF32, 0);
  ASSIGN_OR_RETURN(Tensor t,
                   DecodeTensor(*proto, ctx.external(), "attribute 'value'"));
  if (t.NumElements() != 1) {
    return NodeContext::Invalid(absl::StrCat(
        "attribute 'value' must have one element, got ", t.TypeString()));
  }
  return t;
}

absl::StatusOr<bool> FoldConstantOfShape(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Tensor fill, FillValue(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                   ctx.ConstantInts(0, "the shape input"));
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().ConstantOfShape(
                                    shape, FoldValue::FromTensor(fill)));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

absl::Status ConvertConstantOfShape(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Tensor fill, FillValue(ctx));
  ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                   ctx.ConstantInts(0, "the shape input"));
  ASSIGN_OR_RETURN(
      Node * y,
      ctx.Call("full", {Argument::IntList(shape), ScalarArgument(fill)},
               {{"dtype", fill.dtype()}}));
  return ctx.SetOutput(0, y);
}

absl::StatusOr<bool> FoldRange(NodeContext& ctx) {
  std::optional<std::vector<FoldValue>> in = ctx.FoldedInputs(3);
  if (!in.has_value()) return false;
  ASSIGN_OR_RETURN(FoldValue v,
                   ctx.folder().Range((*in)[0], (*in)[1], (*in)[2]));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

// A Range too long to evaluate: graft's arange, with the bounds known.
absl::Status ConvertRange(NodeContext& ctx) {
  std::vector<Argument> args;
  for (int i = 0; i < 3; ++i) {
    std::optional<Argument> v = ctx.ScalarLiteral(i);
    if (!v.has_value()) {
      return NodeContext::Unsupported(
          "start, limit and delta must be known at import time");
    }
    args.push_back(*v);
  }
  ASSIGN_OR_RETURN(TensorType t, ctx.InputType(0));
  ASSIGN_OR_RETURN(Node * y,
                   ctx.Call("arange", {args[0], args[1], args[2], t.dtype}));
  return ctx.SetOutput(0, y);
}

// --- Reshaping --------------------------------------------------------------

absl::StatusOr<bool> FoldReshape(NodeContext& ctx) {
  int64_t allow_zero = 0;
  if (ctx.opset() >= 14) {
    ASSIGN_OR_RETURN(allow_zero, ctx.attrs().Int("allowzero", 0));
  }
  std::optional<FoldValue> data = ctx.Folded(0);
  std::optional<FoldValue> shape = ctx.Folded(1);
  if (!data.has_value() || !shape.has_value() || shape->HasSymbols()) {
    return false;
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                   ctx.ConstantInts(1, "the shape input"));
  ASSIGN_OR_RETURN(FoldValue v,
                   ctx.folder().Reshape(*data, dims, allow_zero != 0));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

// The target shape as dims: 0 copies the input's dim (unless allowzero),
// -1 is inferred, and symbolic entries (from the Shape of a symbolic
// input) stay symbols; graft's reshape then gets -1 for the one symbol.
absl::Status ConvertReshape(NodeContext& ctx) {
  int64_t allow_zero = 0;
  if (ctx.opset() >= 14) {
    ASSIGN_OR_RETURN(allow_zero, ctx.attrs().Int("allowzero", 0));
  }
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  std::optional<FoldValue> shape = ctx.Folded(1);
  if (!shape.has_value() || !shape->HasSymbols()) {
    // Known ints, or the error saying why not.
    ASSIGN_OR_RETURN(std::vector<int64_t> ints,
                     ctx.ConstantInts(1, "the shape input"));
    shape = FoldValue::Ints(ints);
  }
  if (shape->dims.size() > 1 || IsFloatingPoint(shape->dtype)) {
    return NodeContext::Invalid("the shape input must be a 1-D integer tensor");
  }
  Shape target;
  int64_t infer = -1;
  for (size_t i = 0; i < shape->elems.size(); ++i) {
    const FoldElem& e = shape->elems[i];
    if (e.is_sym()) {
      target.push_back(e.sym);
    } else if (e.i == 0 && allow_zero == 0) {
      if (static_cast<int64_t>(i) >= tx.rank()) {
        return NodeContext::Invalid(absl::StrCat(
            "shape entry ", i, " is 0 (copy the input's dim) but input ",
            tx.ToString(), " has only ", tx.rank(), " dims"));
      }
      target.push_back(tx.shape[i]);
    } else if (e.i == -1) {
      if (infer >= 0) {
        return NodeContext::Invalid("the shape has more than one -1");
      }
      infer = static_cast<int64_t>(i);
      target.push_back(Dim(1));
    } else if (e.i < 0) {
      return NodeContext::Invalid(
          absl::StrCat("invalid size ", e.i, " in the shape"));
    } else {
      target.push_back(Dim(e.i));
    }
  }
  if (infer >= 0) {
    std::optional<Dim> known = rules::NumElementsDim(target);
    std::optional<Dim> total = rules::NumElementsDim(tx.shape);
    std::optional<Dim> inferred;
    if (known.has_value() && total.has_value()) {
      inferred = rules::DivDims(*total, *known);
    }
    if (!inferred.has_value()) {
      if (total.has_value() && total->is_constant() && known.has_value() &&
          known->is_constant()) {
        return NodeContext::Invalid(absl::StrCat(
            "cannot reshape ", tx.ToString(), " to ", ShapeToString(target),
            " with a -1 at ", infer, ": the sizes do not divide"));
      }
      // Let graft's reshape infer it; every other entry must be static.
      std::vector<int64_t> sizes;
      for (size_t i = 0; i < target.size(); ++i) {
        if (static_cast<int64_t>(i) == infer) {
          sizes.push_back(-1);
        } else if (target[i].is_symbolic()) {
          return NodeContext::Unsupported(absl::StrCat(
              "the target shape has a -1 and the symbolic dim '",
              target[i].ToString(),
              "', and graft's reshape infers only one size; give the inputs "
              "static shapes (OnnxImportOptions::input_shapes or "
              "dim_values)"));
        } else {
          sizes.push_back(target[i].value());
        }
      }
      ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
      ASSIGN_OR_RETURN(Node * y,
                       ctx.Call("reshape", {x, Argument::IntList(sizes)}));
      return ctx.SetOutput(0, y);
    }
    target[infer] = *inferred;
  }
  if (target == tx.shape) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
  ASSIGN_OR_RETURN(Node * y, ReshapeTo(ctx, x, target));
  return ctx.SetOutput(0, y);
}

absl::StatusOr<bool> FoldFlatten(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 1));
  std::optional<FoldValue> x = ctx.Folded(0);
  if (!x.has_value()) return false;
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Flatten(*x, axis));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

// Always 2-D: [product of dims before axis, product of the rest].
absl::Status ConvertFlatten(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 1));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  const int64_t r = tx.rank();
  if (axis < -r || axis > r) {
    return NodeContext::Invalid(absl::StrCat(
        "axis ", axis, " is out of range for input ", tx.ToString()));
  }
  if (axis < 0) axis += r;
  ASSIGN_OR_RETURN(Node * y, ctx.Input(0, "input"));
  if (r == 0) {
    ASSIGN_OR_RETURN(y, ctx.Call("reshape", {y, Argument::IntList({1, 1})}));
  } else if (axis == 0 || axis == r) {
    if (r > 1) {
      ASSIGN_OR_RETURN(y, ctx.Call("flatten", {y}));
    }
    ASSIGN_OR_RETURN(
        y, ctx.Call("unsqueeze", {y, axis == 0 ? int64_t{0} : int64_t{1}}));
  } else {
    if (axis > 1) {
      ASSIGN_OR_RETURN(y, ctx.Call("flatten", {y, int64_t{0}, axis - 1}));
    }
    if (axis < r - 1) {
      ASSIGN_OR_RETURN(y, ctx.Call("flatten", {y, int64_t{1}, int64_t{-1}}));
    }
    if (axis == 1 && r == 2) return ctx.AliasOutput(0, 0);
  }
  return ctx.SetOutput(0, y);
}

absl::StatusOr<std::vector<int64_t>> Perm(NodeContext& ctx, int64_t rank) {
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> perm,
                   ctx.attrs().Ints("perm"));
  if (perm.has_value()) return *perm;
  std::vector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i) reversed.push_back(i);
  return reversed;
}

absl::StatusOr<bool> FoldTranspose(NodeContext& ctx) {
  std::optional<FoldValue> x = ctx.Folded(0);
  ASSIGN_OR_RETURN(
      std::vector<int64_t> perm,
      Perm(ctx, x.has_value() ? static_cast<int64_t>(x->dims.size()) : 0));
  if (!x.has_value()) return false;
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Transpose(*x, perm));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

absl::Status ConvertTranspose(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, Perm(ctx, tx.rank()));
  bool identity = static_cast<int64_t>(perm.size()) == tx.rank();
  for (size_t i = 0; identity && i < perm.size(); ++i) {
    identity = perm[i] == static_cast<int64_t>(i);
  }
  if (identity) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("permute", {x, Argument::IntList(perm)}));
  return ctx.SetOutput(0, y);
}

// Squeeze's and Unsqueeze's axes: an attribute before opset 13, input 1
// from 13 on. Empty when absent (Squeeze: every dim of size 1).
absl::StatusOr<std::vector<int64_t>> Axes(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes,
                   ctx.OptionalIntsOperand(1, "axes", 13));
  return axes.value_or(std::vector<int64_t>{});
}

absl::StatusOr<std::vector<int64_t>> UnsqueezeAxes(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes,
                   ctx.OptionalIntsOperand(1, "axes", 13));
  if (!axes.has_value()) return NodeContext::Invalid("Unsqueeze needs axes");
  return *std::move(axes);
}

absl::StatusOr<bool> FoldSqueeze(NodeContext& ctx) {
  std::optional<FoldValue> x = ctx.Folded(0);
  if (!x.has_value()) return false;
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(ctx));
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Squeeze(*x, axes));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

absl::Status ConvertSqueeze(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, Axes(ctx));
  std::vector<int64_t> dims;
  if (axes.empty()) {
    for (int64_t i = 0; i < tx.rank(); ++i) {
      if (tx.shape[i] == Dim(1)) dims.push_back(i);
    }
  } else {
    for (int64_t a : axes) {
      ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, tx.rank()));
      if (tx.shape[n].is_symbolic()) {
        return NodeContext::Unsupported(absl::StrCat(
            "cannot squeeze axis ", a, " of ", tx.ToString(),
            ": its size is the symbolic dim '", tx.shape[n].ToString(),
            "' (give the inputs static shapes)"));
      }
      if (tx.shape[n] != Dim(1)) {
        return NodeContext::Invalid(absl::StrCat("cannot squeeze axis ", a,
                                                 " of ", tx.ToString(),
                                                 ": its size is not 1"));
      }
      dims.push_back(n);
    }
  }
  if (dims.empty()) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("squeeze", {x, Argument::IntList(dims)}));
  return ctx.SetOutput(0, y);
}

absl::StatusOr<bool> FoldUnsqueeze(NodeContext& ctx) {
  std::optional<FoldValue> x = ctx.Folded(0);
  if (!x.has_value()) return false;
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, UnsqueezeAxes(ctx));
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Unsqueeze(*x, axes));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

// Axes count in the output's rank; inserting them in increasing order
// puts each where it belongs.
absl::Status ConvertUnsqueeze(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, UnsqueezeAxes(ctx));
  const int64_t out_rank = tx.rank() + static_cast<int64_t>(axes.size());
  for (int64_t& a : axes) {
    ASSIGN_OR_RETURN(a, NormalizeAxis(a, out_rank));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    return NodeContext::Invalid("the axes input repeats an axis");
  }
  ASSIGN_OR_RETURN(Node * y, ctx.Input(0, "data"));
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(y, ctx.Call("unsqueeze", {y, a}));
  }
  if (axes.empty()) return ctx.AliasOutput(0, 0);
  return ctx.SetOutput(0, y);
}

absl::StatusOr<bool> FoldExpand(NodeContext& ctx) {
  std::optional<FoldValue> x = ctx.Folded(0);
  std::optional<FoldValue> shape = ctx.Folded(1);
  if (!x.has_value() || !shape.has_value() || shape->HasSymbols()) return false;
  ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                   ctx.ConstantInts(1, "the shape input"));
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Expand(*x, dims));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

// ONNX broadcasts both ways (a 1 in the shape keeps the input's dim);
// graft's expand only grows size-1 dims, with -1 for "keep".
absl::Status ConvertExpand(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  std::optional<FoldValue> shape = ctx.Folded(1);
  if (!shape.has_value() || !shape->HasSymbols()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> ints,
                     ctx.ConstantInts(1, "the shape input"));
    shape = FoldValue::Ints(ints);
  }
  const int64_t r = tx.rank();
  const int64_t s = shape->NumElements();
  const int64_t n = std::max(r, s);
  std::vector<int64_t> sizes;
  Shape out;
  for (int64_t i = 0; i < n; ++i) {
    const Dim in = i < n - r ? Dim(1) : tx.shape[i - (n - r)];
    Dim want = Dim(1);
    if (i >= n - s) {
      const FoldElem& e = shape->elems[i - (n - s)];
      if (!e.is_sym() && e.i < 0) {
        return NodeContext::Invalid(
            absl::StrCat("invalid size ", e.i, " in the shape input"));
      }
      want = e.is_sym() ? e.sym : Dim(e.i);
    }
    Dim result;
    if (want == Dim(1) || want == in) {
      result = in;
    } else if (in == Dim(1) || in.is_symbolic()) {
      result = want;  // A symbolic input dim must be `want` or 1.
    } else if (want.is_symbolic()) {
      result = in;  // The symbol must be 1 or the input's size.
    } else {
      return NodeContext::Invalid(absl::StrCat(
          "cannot expand ", tx.ToString(), ": dim ", i, " of the result is ",
          in.ToString(), " in the input but ", want.ToString(),
          " in the shape input (only size-1 dims broadcast)"));
    }
    out.push_back(result);
    if (i >= n - r && result == in) {
      sizes.push_back(-1);
    } else if (result.is_symbolic()) {
      return NodeContext::Unsupported(absl::StrCat(
          "dim ", i, " of the expanded result is the symbolic dim '",
          result.ToString(),
          "' where the input has none; give the inputs static shapes"));
    } else {
      sizes.push_back(result.value());
    }
  }
  if (out == tx.shape) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("expand", {x, Argument::IntList(sizes)}));
  return ctx.SetOutput(0, y);
}

// --- Joining and cutting ----------------------------------------------------

absl::StatusOr<bool> FoldConcat(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  if (!ctx.attrs().Has("axis")) {
    return NodeContext::Invalid("attribute 'axis' is missing");
  }
  std::vector<FoldValue> values;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.HasInput(i)) continue;
    std::optional<FoldValue> v = ctx.Folded(i);
    if (!v.has_value()) return false;
    values.push_back(*std::move(v));
  }
  std::vector<const FoldValue*> ptrs;
  for (const FoldValue& v : values) ptrs.push_back(&v);
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Concat(ptrs, axis));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

absl::Status ConvertConcat(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  if (!ctx.attrs().Has("axis")) {
    return NodeContext::Invalid("attribute 'axis' is missing");
  }
  ArgumentList tensors;
  std::optional<TensorType> first;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.HasInput(i)) continue;
    ASSIGN_OR_RETURN(TensorType t, ctx.InputType(i));
    if (!first.has_value()) first = t;
    if (t.dtype != first->dtype) {
      return NodeContext::Invalid(
          absl::StrCat("inputs have different dtypes (", first->ToString(),
                       " and ", t.ToString(), "); Concat takes one dtype"));
    }
    ASSIGN_OR_RETURN(Node * n, ctx.Input(i));
    tensors.push_back(n);
  }
  if (tensors.empty()) return NodeContext::Invalid("needs at least one input");
  if (tensors.size() == 1) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(Node * y, ctx.Call("concat", {tensors, axis}));
  return ctx.SetOutput(0, y);
}

// The sizes of Split's pieces along `axis` of a dim of size `n` (nullopt:
// symbolic): the split input, else num_outputs (opset 18: ceil-sized
// pieces, the last smaller), else equal pieces, one per output.
absl::StatusOr<std::vector<int64_t>> SplitSizes(NodeContext& ctx, Dim n) {
  // An attribute before opset 13.
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> split,
                   ctx.OptionalIntsOperand(1, "split", 13));
  std::optional<int64_t> num_outputs;
  if (ctx.opset() >= 18) {
    ASSIGN_OR_RETURN(num_outputs, ctx.attrs().OptionalInt("num_outputs"));
  }
  if (split.has_value()) {
    if (num_outputs.has_value()) {
      return NodeContext::Invalid(
          "give either the split input or num_outputs, not both");
    }
    if (static_cast<int>(split->size()) != ctx.num_outputs()) {
      return NodeContext::Invalid(absl::StrCat("split has ",
                                               split->size(), " sizes for ",
                                               ctx.num_outputs(), " outputs"));
    }
    return *split;
  }
  const int64_t k = num_outputs.value_or(ctx.num_outputs());
  if (k < 1 || k != ctx.num_outputs()) {
    return NodeContext::Invalid(absl::StrCat(
        "splits into ", k, " pieces but has ", ctx.num_outputs(), " outputs"));
  }
  if (n.is_symbolic()) {
    return NodeContext::Unsupported(
        absl::StrCat("cannot split the symbolic dim '", n.ToString(), "' into ",
                     k, " pieces; give the inputs static shapes"));
  }
  const int64_t size = n.value();
  if (!num_outputs.has_value()) {
    if (size % k != 0) {
      return NodeContext::Invalid(absl::StrCat(
          "cannot split a dim of size ", size, " into ", k, " equal pieces"));
    }
    return std::vector<int64_t>(k, size / k);
  }
  const int64_t chunk = (size + k - 1) / k;
  std::vector<int64_t> sizes(k - 1, chunk);
  const int64_t last = size - chunk * (k - 1);
  if (last <= 0) {
    return NodeContext::Invalid(absl::StrCat("cannot split a dim of size ",
                                             size, " into ", k, " pieces"));
  }
  sizes.push_back(last);
  return sizes;
}

absl::StatusOr<bool> FoldSplit(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  std::optional<FoldValue> x = ctx.Folded(0);
  if (!x.has_value()) return false;
  const int64_t rank = static_cast<int64_t>(x->dims.size());
  ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, rank));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                   SplitSizes(ctx, Dim(x->dims[a])));
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSIGN_OR_RETURN(
        FoldValue piece,
        ctx.folder().Slice(*x, {start}, {start + sizes[i]}, {a}, {1}));
    start += sizes[i];
    RETURN_IF_ERROR(ctx.SetOutputValue(static_cast<int>(i), piece));
  }
  if (start != x->dims[a]) {
    return NodeContext::Invalid(absl::StrCat("the split sizes add up to ",
                                             start, " but the dim has size ",
                                             x->dims[a]));
  }
  return true;
}

absl::Status ConvertSplit(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, tx.rank()));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, SplitSizes(ctx, tx.shape[a]));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  ASSIGN_OR_RETURN(Node * parts,
                   ctx.Call("split", {x, Argument::IntList(sizes), a}));
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (ctx.node().output(i).empty()) continue;
    ASSIGN_OR_RETURN(Node * piece,
                     ctx.Call("getitem", {parts, static_cast<int64_t>(i)}));
    RETURN_IF_ERROR(ctx.SetOutput(i, piece));
  }
  return absl::OkStatus();
}

struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Inputs from opset 10; before, starts, ends and axes are attributes and
// every step is 1.
absl::StatusOr<SliceParams> ReadSlice(NodeContext& ctx) {
  SliceParams p;
  if (ctx.opset() < 10) {
    std::optional<std::vector<int64_t>> list[3];
    const char* names[] = {"starts", "ends", "axes"};
    for (int i = 0; i < 3; ++i) {
      ASSIGN_OR_RETURN(list[i], ctx.OptionalIntsOperand(i + 1, names[i], 10));
    }
    if (!list[0].has_value() || !list[1].has_value()) {
      return NodeContext::Invalid("Slice needs the starts and ends attributes before opset 10");
    }
    p.starts = *list[0];
    p.ends = *list[1];
    if (list[2].has_value()) p.axes = *list[2];
    return p;
  }
  ASSIGN_OR_RETURN(p.starts, ctx.ConstantInts(1, "the starts input"));
  ASSIGN_OR_RETURN(p.ends, ctx.ConstantInts(2, "the ends input"));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes,
                   ctx.OptionalConstantInts(3, "the axes input"));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> steps,
                   ctx.OptionalConstantInts(4, "the steps input"));
  if (axes.has_value()) p.axes = *axes;
  if (steps.has_value()) p.steps = *steps;
  return p;
}

absl::StatusOr<bool> FoldSlice(NodeContext& ctx) {
  std::optional<FoldValue> x = ctx.Folded(0);
  if (!x.has_value()) return false;
  ASSIGN_OR_RETURN(SliceParams p, ReadSlice(ctx));
  ASSIGN_OR_RETURN(FoldValue v,
                   ctx.folder().Slice(*x, p.starts, p.ends, p.axes, p.steps));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

// One graft slice per sliced axis; ONNX's clamping of starts and ends is
// Python's for positive steps, which is what graft's slice does.
absl::Status ConvertSlice(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(SliceParams p, ReadSlice(ctx));
  const size_t k = p.starts.size();
  if (p.axes.empty()) {
    for (size_t i = 0; i < k; ++i) p.axes.push_back(static_cast<int64_t>(i));
  }
  if (p.steps.empty()) p.steps.assign(k, 1);
  if (p.ends.size() != k || p.axes.size() != k || p.steps.size() != k) {
    return NodeContext::Invalid(
        "starts, ends, axes and steps must have the same length");
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
  Node* y = x;
  std::vector<bool> seen(tx.rank(), false);
  for (size_t i = 0; i < k; ++i) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(p.axes[i], tx.rank()));
    if (seen[a]) return NodeContext::Invalid("the axes input repeats an axis");
    seen[a] = true;
    const Dim n = tx.shape[a];
    if (p.steps[i] == 0) return NodeContext::Invalid("a step of 0");
    if (p.steps[i] < 0) {
      // Backwards (torch.flip): the indices, known here, picked by
      // index_select. ONNX clamps start to [0, n - 1] and end to [-1, n - 1].
      if (n.is_symbolic()) {
        return NodeContext::Unsupported(absl::StrCat(
            "a negative step along the symbolic dim '", n.ToString(), "' is not supported"));
      }
      if (n.value() == 0) {  // Nothing to pick (and no index to clamp to).
        ASSIGN_OR_RETURN(Node * none, I64Constant(ctx, {0}, {}, "reversed"));
        ASSIGN_OR_RETURN(y, ctx.Call("index_select", {y, a, none}));
        continue;
      }
      int64_t start = p.starts[i], end = p.ends[i];
      if (start < 0) start += n.value();
      if (end < 0) end += n.value();  // INT64_MIN (torch.flip) stays far below -1.
      start = std::clamp<int64_t>(start, 0, n.value() - 1);
      end = std::clamp<int64_t>(end, -1, n.value() - 1);
      // The picks are a table made here: counted before it is.
      const uint64_t stride = static_cast<uint64_t>(-(p.steps[i] + 1)) + 1;  // -step, INT64_MIN too.
      const uint64_t count = start > end ? (static_cast<uint64_t>(start - end) - 1) / stride + 1 : 0;
      if (count > static_cast<uint64_t>(kMaxImportTable / 4)) {
        return NodeContext::Unsupported(absl::StrCat("a negative step picking ", count,
                                                     " elements is not supported (at most ",
                                                     kMaxImportTable / 4, ")"));
      }
      std::vector<int64_t> picked;
      picked.reserve(count);
      for (int64_t v = start; v > end && n.value() > 0; v += p.steps[i]) picked.push_back(v);
      ASSIGN_OR_RETURN(Node * index, I64Constant(ctx, {static_cast<int64_t>(picked.size())}, picked, "reversed"));
      ASSIGN_OR_RETURN(y, ctx.Call("index_select", {y, a, index}));
      continue;
    }
    int64_t start = p.starts[i];
    int64_t end = p.ends[i];
    if (n.is_constant()) {
      // Clamped here so that a no-op slice can be left out.
      if (start < 0) start = std::max<int64_t>(start + n.value(), 0);
      start = std::min(start, n.value());
      if (end < 0) end = std::max<int64_t>(end + n.value(), 0);
      end = std::min(end, n.value());
      if (start == 0 && end == n.value() && p.steps[i] == 1) continue;
    } else if (start == 0 && end == kOpenEnd && p.steps[i] == 1) {
      continue;
    }
    ASSIGN_OR_RETURN(y, ctx.Call("slice", {y, a, start, end, p.steps[i]}));
  }
  if (y == x) return ctx.AliasOutput(0, 0);
  return ctx.SetOutput(0, y);
}

// --- Indexing ---------------------------------------------------------------

absl::StatusOr<bool> FoldGather(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  std::optional<std::vector<FoldValue>> in = ctx.FoldedInputs(2);
  if (!in.has_value()) return false;
  ASSIGN_OR_RETURN(FoldValue v, ctx.folder().Gather((*in)[0], (*in)[1], axis));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(v)));
  return true;
}

absl::Status ConvertGather(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  ASSIGN_OR_RETURN(TensorType td, ctx.InputType(0));
  ASSIGN_OR_RETURN(TensorType ti, ctx.InputType(1));
  if (!IsInteger(ti.dtype)) {
    return NodeContext::Invalid(
        absl::StrCat("indices ", ti.ToString(), " must be an integer tensor"));
  }
  ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, td.rank()));
  const Dim n = td.shape[a];
  ASSIGN_OR_RETURN(Node * data, ctx.Input(0, "data"));
  const Tensor* known = ctx.Constant(1);
  Node* y;
  if (known != nullptr && known->rank() == 0 && n.is_constant()) {
    // One known index: a slice, then drop the dim.
    int64_t v = known->dtype() == DType::kI64
                    ? known->data<int64_t>()[0]
                    : static_cast<int64_t>(known->GetAsDouble(0));
    if (v < -n.value() || v >= n.value()) {
      return NodeContext::Invalid(absl::StrCat(
          "index ", v, " is out of range for axis ", a, " of ", td.ToString()));
    }
    if (v < 0) v += n.value();
    ASSIGN_OR_RETURN(Node * s, ctx.Call("slice", {data, a, v, v + 1}));
    ASSIGN_OR_RETURN(y, ctx.Call("squeeze", {s, Argument::IntList({a})}));
    return ctx.SetOutput(0, y);
  }
  Node* idx;
  if (known != nullptr) {
    ASSIGN_OR_RETURN(idx, KnownIndices(ctx, *known, n));
  } else {
    ASSIGN_OR_RETURN(Node * raw, ctx.Input(1, "indices"));
    ASSIGN_OR_RETURN(idx, NonNegativeIndices(ctx, raw, n));
  }
  if (td.rank() == 2 && a == 0 && known == nullptr) {
    // A table lookup: what nn.Embedding exports.
    ASSIGN_OR_RETURN(y, ctx.Call("embedding", {idx, data}));
    return ctx.SetOutput(0, y);
  }
  if (ti.rank() == 1) {
    ASSIGN_OR_RETURN(y, ctx.Call("index_select", {data, a, idx}));
    return ctx.SetOutput(0, y);
  }
  // Other ranks: select with the flattened indices, then give the result
  // the indices' dims in place of the gathered one.
  ASSIGN_OR_RETURN(Node * flat,
                   ctx.Call("reshape", {idx, Argument::IntList({-1})}));
  ASSIGN_OR_RETURN(Node * picked, ctx.Call("index_select", {data, a, flat}));
  Shape target(td.shape.begin(), td.shape.begin() + a);
  target.insert(target.end(), ti.shape.begin(), ti.shape.end());
  target.insert(target.end(), td.shape.begin() + a + 1, td.shape.end());
  ASSIGN_OR_RETURN(y, ReshapeTo(ctx, picked, target));
  return ctx.SetOutput(0, y);
}

// torch.gather's semantics exactly.
absl::Status ConvertGatherElements(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 0));
  ASSIGN_OR_RETURN(TensorType td, ctx.InputType(0));
  ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, td.rank()));
  ASSIGN_OR_RETURN(Node * data, ctx.Input(0, "data"));
  Node* idx;
  if (const Tensor* known = ctx.Constant(1); known != nullptr) {
    ASSIGN_OR_RETURN(idx, KnownIndices(ctx, *known, td.shape[a]));
  } else {
    ASSIGN_OR_RETURN(Node * raw, ctx.Input(1, "indices"));
    ASSIGN_OR_RETURN(idx, NonNegativeIndices(ctx, raw, td.shape[a]));
  }
  ASSIGN_OR_RETURN(Node * y, ctx.Call("gather", {data, a, idx}));
  return ctx.SetOutput(0, y);
}

// --- Triangles --------------------------------------------------------------

// Trilu keeps the elements of the last two dims with j - i >= k (upper)
// or j - i <= k (lower). Known inputs are evaluated; otherwise the mask,
// static for static sizes, is a constant read by a where.
struct TriluParams {
  bool upper = true;
  int64_t k = 0;
  bool Keep(int64_t i, int64_t j) const {
    return upper ? j - i >= k : j - i <= k;
  }
};

absl::StatusOr<TriluParams> ReadTrilu(NodeContext& ctx) {
  TriluParams p;
  ASSIGN_OR_RETURN(int64_t upper, ctx.attrs().Int("upper", 1));
  p.upper = upper != 0;
  if (ctx.HasInput(1)) {
    ASSIGN_OR_RETURN(std::vector<int64_t> k,
                     ctx.ConstantInts(1, "the k input"));
    if (k.size() != 1) {
      return NodeContext::Invalid("the k input must hold one integer");
    }
    p.k = k[0];
  }
  return p;
}

absl::StatusOr<bool> FoldTrilu(NodeContext& ctx) {
  std::optional<FoldValue> x = ctx.Folded(0);
  if (!x.has_value()) return false;
  ASSIGN_OR_RETURN(TriluParams p, ReadTrilu(ctx));
  const size_t r = x->dims.size();
  if (r < 2) return NodeContext::Invalid("the input needs at least 2 dims");
  const int64_t n = x->dims[r - 2], m = x->dims[r - 1];
  for (int64_t e = 0; e < x->NumElements(); ++e) {
    const int64_t i = (e / m) % n, j = e % m;
    if (!p.Keep(i, j)) x->elems[e] = FoldElem{};
  }
  RETURN_IF_ERROR(ctx.SetOutputValue(0, *std::move(x)));
  return true;
}

absl::Status ConvertTrilu(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TriluParams p, ReadTrilu(ctx));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  if (tx.rank() < 2)
    return NodeContext::Invalid("the input needs at least 2 dims");
  TensorType last{tx.dtype, Shape(tx.shape.end() - 2, tx.shape.end())};
  ASSIGN_OR_RETURN(std::vector<int64_t> nm,
                   StaticDimsOf(last, "Trilu's last two dims"));
  // The mask is a module tensor: keep it to a sane size.
  constexpr int64_t kMaxMask = int64_t{1} << 26;
  if (nm[0] > kMaxMask || nm[1] > kMaxMask || nm[0] * nm[1] > kMaxMask) {
    return NodeContext::Unsupported(
        absl::StrCat("a ", nm[0], "x", nm[1], " triangle mask is too large"));
  }
  Tensor mask(DType::kBool, nm);
  for (int64_t i = 0; i < nm[0]; ++i) {
    for (int64_t j = 0; j < nm[1]; ++j) {
      mask.data<uint8_t>()[i * nm[1] + j] = p.Keep(i, j) ? 1 : 0;
    }
  }
  ASSIGN_OR_RETURN(Node * keep, ctx.ConstantNode(std::move(mask), "mask"));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  ASSIGN_OR_RETURN(
      Node * y,
      ctx.Call("where", {keep, x, ScalarArgument(Tensor(tx.dtype, {}))}));
  return ctx.SetOutput(0, y);
}

// --- Padding ----------------------------------------------------------------

absl::Status ConvertPad(NodeContext& ctx) {
  ASSIGN_OR_RETURN(std::string mode, ctx.attrs().String("mode", "constant"));
  std::string graft_mode;
  if (mode == "constant" || mode == "reflect") {
    graft_mode = mode;
  } else if (mode == "edge") {
    graft_mode = "replicate";
  } else {
    return NodeContext::Unsupported(absl::StrCat(
        "mode \"", mode, "\" is not supported (constant, reflect, edge)"));
  }
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  const int64_t r = tx.rank();
  // pads and the constant are attributes before opset 11.
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given,
                   ctx.OptionalIntsOperand(1, "pads", 11));
  if (!given.has_value()) return NodeContext::Invalid("Pad needs pads");
  const std::vector<int64_t> pads = *std::move(given);
  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.HasInput(3)) {
    ASSIGN_OR_RETURN(axes, ctx.ConstantInts(3, "the axes input"));
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size()) {
    return NodeContext::Invalid(absl::StrCat(
        "pads ", IntsToString(pads), " must have 2 entries per padded axis (",
        axes.size(), " axes)"));
  }
  for (int64_t p : pads) {
    if (p > (int64_t{1} << 40) || p < -(int64_t{1} << 40)) {
      return NodeContext::Invalid(
          absl::StrCat("pads ", IntsToString(pads), " are too large"));
    }
  }
  std::vector<int64_t> begin(r, 0), end(r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axes[i], r));
    begin[a] = pads[i];
    end[a] = pads[axes.size() + i];
  }
  double value = 0;
  if (ctx.opset() < 11) {
    if (ctx.HasInput(2)) {
      return NodeContext::Invalid("the constant is the attribute value before opset 11, not input 2");
    }
    ASSIGN_OR_RETURN(float v, ctx.attrs().Float("value", 0.0f));
    value = v;
  } else if (ctx.HasInput(2)) {
    std::optional<Argument> v = ctx.ScalarLiteral(2);
    if (!v.has_value()) {
      return NodeContext::Unsupported(
          "constant_value must be known at import time");
    }
    value = v->is_bool() ? (v->bool_value() ? 1.0 : 0.0) : v->number();
  }
  // Pairs from the last dim back to the first padded one.
  int64_t first = r;
  for (int64_t i = 0; i < r; ++i) {
    if (begin[i] != 0 || end[i] != 0) {
      first = i;
      break;
    }
  }
  if (first == r) return ctx.AliasOutput(0, 0);
  std::vector<int64_t> list;
  for (int64_t i = r - 1; i >= first; --i) {
    list.push_back(begin[i]);
    list.push_back(end[i]);
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "data"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("pad", {x, Argument::IntList(list),
                                              graft_mode, value}));
  return ctx.SetOutput(0, y);
}

}  // namespace

void AddShapeConverters(std::vector<OpConverter>& table) {
  table.push_back({.op_type = "Constant", .convert = ConvertConstant});
  table.push_back({.op_type = "Identity", .convert = ConvertIdentity});
  table.push_back({.op_type = "Shape", .fold = FoldShape});
  table.push_back({.op_type = "Size", .fold = FoldSize});
  table.push_back({.op_type = "ConstantOfShape",
                   .fold = FoldConstantOfShape,
                   .convert = ConvertConstantOfShape});
  table.push_back(
      {.op_type = "Range", .fold = FoldRange, .convert = ConvertRange});
  table.push_back(
      {.op_type = "Reshape", .fold = FoldReshape, .convert = ConvertReshape});
  table.push_back(
      {.op_type = "Flatten", .fold = FoldFlatten, .convert = ConvertFlatten});
  table.push_back({.op_type = "Transpose",
                   .fold = FoldTranspose,
                   .convert = ConvertTranspose});
  table.push_back(
      {.op_type = "Squeeze", .fold = FoldSqueeze, .convert = ConvertSqueeze});
  table.push_back({.op_type = "Unsqueeze",
                   .fold = FoldUnsqueeze,
                   .convert = ConvertUnsqueeze});
  table.push_back(
      {.op_type = "Expand", .fold = FoldExpand, .convert = ConvertExpand});
  table.push_back(
      {.op_type = "Concat", .fold = FoldConcat, .convert = ConvertConcat});
  table.push_back(
      {.op_type = "Split", .fold = FoldSplit, .convert = ConvertSplit});
  table.push_back(
      {.op_type = "Slice", .fold = FoldSlice, .convert = ConvertSlice});
  table.push_back(
      {.op_type = "Gather", .fold = FoldGather, .convert = ConvertGather});
  table.push_back(
      {.op_type = "GatherElements", .convert = ConvertGatherElements});
  table.push_back({.op_type = "Pad", .convert = ConvertPad});
  table.push_back({.op_type = "Trilu",
                   .fold = FoldTrilu,
                   .convert = ConvertTrilu});
}

}  // namespace graft::onnx_import
