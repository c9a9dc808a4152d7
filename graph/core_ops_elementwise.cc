// Elementwise ops of docs/ops.md: one input, and two or three inputs with
// NumPy broadcasting.

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/core_ops_internal.h"
#include "graph/float_limits.h"
#include "graph/type_rules.h"

namespace graft::core_ops {
namespace {

using K = ParamKind;

struct NamedOp {
  const char* name;
  const char* summary;
  const char* formula;  // OpTraits::formula.
};

OpTraits Pointwise(std::string formula) {
  return {.kind = OpKind::kPointwise, .formula = Formula(std::move(formula))};
}

absl::StatusOr<TensorType> Same(const InferContext& ctx) {
  return ctx.Type("input");
}

absl::StatusOr<TensorType> FloatUnary(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  t.dtype = rules::FloatResult(t.dtype);
  return t;
}

absl::StatusOr<TensorType> Neg(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  if (t.dtype == DType::kBool) {
    return ctx.Error(absl::StrCat("negating a bool tensor (", t.ToString(),
                                  ") is not supported; use logical_not"));
  }
  return t;
}

absl::StatusOr<TensorType> LogicalNot(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  t.dtype = DType::kBool;
  return t;
}

absl::StatusOr<TensorType> Gelu(const InferContext& ctx) {
  const std::string& approximate = ctx.call().String("approximate");
  if (approximate != "none" && approximate != "tanh") {
    return ctx.Error(
        absl::StrCat("approximate must be \"none\" or \"tanh\", "
                     "got \"",
                     approximate, "\""));
  }
  return FloatUnary(ctx);
}

absl::StatusOr<TensorType> Clamp(const InferContext& ctx) {
  if (ctx.call().IsNone("min") && ctx.call().IsNone("max")) {
    return ctx.Error("at least one of min and max must be given");
  }
  TensorType t = ctx.Type("input");
  t.dtype = rules::ResultType(ctx, {"input", "min", "max"});
  return t;
}

absl::StatusOr<TensorType> Cast(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  t.dtype = ctx.call().GetDType("dtype");
  return t;
}

absl::StatusOr<Shape> Broadcast(const InferContext& ctx,
                                std::initializer_list<const char*> params) {
  static const Shape* const kScalar = new Shape();
  Shape shape;
  for (const char* name : params) {
    // Reads a node's shape in place: this runs for every elementwise node a
    // pass creates. Literals are scalars.
    const Argument& a = ctx.call().Get(name);
    const Shape& operand = a.is_node() ? a.node()->type()->shape : *kScalar;
    absl::StatusOr<Shape> next = rules::BroadcastShapes(shape, operand);
    if (!next.ok()) {
      // Described only on failure: type inference runs for every new node.
      std::string described;
      for (const char* p : params) {
        absl::StrAppend(&described, described.empty() ? "" : ", ", p, " ",
                        ctx.Type(p).ToString());
        if (p == name) break;
      }
      return ctx.Error(absl::StrCat("cannot broadcast ", described, ": ",
                                    next.status().message()));
    }
    shape = *std::move(next);
  }
  return shape;
}

// Arithmetic: broadcast, dtype by PyTorch's promotion.
absl::StatusOr<TensorType> Arithmetic(const InferContext& ctx) {
  absl::StatusOr<Shape> shape = Broadcast(ctx, {"input", "other"});
  if (!shape.ok()) return shape.status();
  return TensorType{rules::ResultType(ctx, {"input", "other"}),
                    *std::move(shape)};
}

absl::StatusOr<TensorType> Sub(const InferContext& ctx) {
  absl::StatusOr<TensorType> t = Arithmetic(ctx);
  if (t.ok() && t->dtype == DType::kBool) {
    return ctx.Error(
        "subtracting bool values is not supported; use logical_not or "
        "logical ops, or cast to an integer type first");
  }
  return t;
}

// True division: integer and bool inputs give f32.
absl::StatusOr<TensorType> Div(const InferContext& ctx) {
  absl::StatusOr<TensorType> t = Arithmetic(ctx);
  if (t.ok()) t->dtype = rules::FloatResult(t->dtype);
  return t;
}

absl::StatusOr<TensorType> Predicate(const InferContext& ctx) {
  absl::StatusOr<Shape> shape = Broadcast(ctx, {"input", "other"});
  if (!shape.ok()) return shape.status();
  return TensorType{DType::kBool, *std::move(shape)};
}

absl::StatusOr<TensorType> Where(const InferContext& ctx) {
  TensorType condition = ctx.Type("condition");
  if (condition.dtype != DType::kBool) {
    return ctx.Error(absl::StrCat("condition must be a bool tensor, got ",
                                  condition.ToString(),
                                  "; compare it (ne 0) or cast it to bool"));
  }
  absl::StatusOr<Shape> shape = Broadcast(ctx, {"condition", "input", "other"});
  if (!shape.ok()) return shape.status();
  return TensorType{rules::ResultType(ctx, {"input", "other"}),
                    *std::move(shape)};
}

// gelu(x) = x * Phi(x), exactly (erf) or with PyTorch's tanh approximation.
std::string GeluFormula(const OpCall& call) {
  if (call.String("approximate") == "tanh") {
    return "0.5 * input * (1 + tanh(0.7978845608028654 * (input + 0.044715 * "
           "input * input * input)))";
  }
  return "0.5 * input * (1 + erf(input * 0.7071067811865476))";
}

// Only the bounds that are given.
std::string ClampFormula(const OpCall& call) {
  std::string f = "input";
  if (!call.IsNone("min")) f = "max(" + f + ", min)";
  if (!call.IsNone("max")) f = "min(" + f + ", max)";
  return f;
}

// A saturating cast from a float type to a narrower one: finite values
// past the result's largest become it, where rounding would make them
// infinite; infinities and NaN pass. Only comparisons and selects, so each
// backend computes it in the input's dtype (PointwiseComputeType).
std::string CastFormula(const OpCall& call) {
  const Node* input = call.TensorNode("input");
  if (!call.Bool("saturate") || input == nullptr || !input->type().has_value()) return "input";
  const double from = LargestFinite(input->type()->dtype);
  const double to = LargestFinite(call.GetDType("dtype"));
  if (!IsFloatingPoint(call.GetDType("dtype")) || to == 0 || from <= to) return "input";
  const std::string limit = absl::StrFormat("%.17g", to);
  const std::string largest = absl::StrFormat("%.17g", from);
  return absl::StrCat("input > ", limit, " ? (input > ", largest, " ? input : ", limit,
                      ") : (input < -", limit, " ? (input < -", largest, " ? input : -", limit,
                      ") : input)");
}

void AddUnary(OpRegistry& r, const NamedOp& op, SingleInferFn fn) {
  Add(r, {.name = op.name,
          .params = {Param("input", K::kTensor)},
          .traits = Pointwise(op.formula),
          .infer = One(fn),
          .summary = op.summary});
}

void AddBinary(OpRegistry& r, const NamedOp& op, SingleInferFn fn) {
  Add(r, {.name = op.name,
          .params = {Param("input", K::kTensorOrScalar),
                     Param("other", K::kTensorOrScalar)},
          .traits = Pointwise(op.formula),
          .infer = One(fn),
          .summary = op.summary});
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& r) {
  AddUnary(r, {"neg", "elementwise negation, -x", "-input"}, Neg);
  AddUnary(r, {"abs", "elementwise absolute value", "abs(input)"}, Same);
  AddUnary(r, {"relu", "elementwise max(x, 0)", "max(input, 0)"}, Same);
  AddUnary(r, {"floor", "elementwise round down", "floor(input)"}, Same);
  AddUnary(r, {"ceil", "elementwise round up", "ceil(input)"}, Same);
  AddUnary(r, {"round", "elementwise round to nearest, halves to even",
               "round(input)"}, Same);
  for (NamedOp op : {
           NamedOp{"exp", "elementwise e^x", "exp(input)"},
           NamedOp{"log", "elementwise natural logarithm", "log(input)"},
           NamedOp{"sqrt", "elementwise square root", "sqrt(input)"},
           NamedOp{"rsqrt", "elementwise 1 / sqrt(x)", "1 / sqrt(input)"},
           NamedOp{"sin", "elementwise sine", "sin(input)"},
           NamedOp{"cos", "elementwise cosine", "cos(input)"},
           NamedOp{"tan", "elementwise tangent", "tan(input)"},
           NamedOp{"asin", "elementwise inverse sine", "asin(input)"},
           NamedOp{"acos", "elementwise inverse cosine", "acos(input)"},
           NamedOp{"atan", "elementwise inverse tangent", "atan(input)"},
           NamedOp{"sinh", "elementwise hyperbolic sine", "sinh(input)"},
           NamedOp{"cosh", "elementwise hyperbolic cosine", "cosh(input)"},
           NamedOp{"tanh", "elementwise hyperbolic tangent", "tanh(input)"},
           NamedOp{"asinh", "elementwise inverse hyperbolic sine", "asinh(input)"},
           NamedOp{"acosh", "elementwise inverse hyperbolic cosine", "acosh(input)"},
           NamedOp{"atanh", "elementwise inverse hyperbolic tangent", "atanh(input)"},
           NamedOp{"sigmoid", "elementwise 1 / (1 + e^-x)",
                   "1 / (1 + exp(-input))"},
           NamedOp{"silu", "elementwise x * sigmoid(x)",
                   "input / (1 + exp(-input))"},
           NamedOp{"erf", "elementwise error function", "erf(input)"},
           NamedOp{"reciprocal", "elementwise 1 / x", "1 / input"},
       }) {
    AddUnary(r, op, FloatUnary);
  }
  AddUnary(r, {"logical_not", "elementwise not; result bool", "!input"}, LogicalNot);
  Add(r, {.name = "gelu",
          .params = {Param("input", K::kTensor),
                     Defaulted("approximate", K::kString, "none")},
          .traits = {.kind = OpKind::kPointwise, .formula = GeluFormula},
          .infer = One(Gelu),
          .summary = "elementwise GELU, exact (erf) or tanh approximation"});
  Add(r, {.name = "leaky_relu",
          .params = {Param("input", K::kTensor),
                     Defaulted("negative_slope", K::kFloat, 0.01)},
          .traits = Pointwise("input >= 0 ? input : negative_slope * input"),
          .infer = One(FloatUnary),
          .summary = "elementwise x if x > 0 else negative_slope * x"});
  Add(r, {.name = "clamp",
          .params = {Param("input", K::kTensor), Optional("min", K::kScalar),
                     Optional("max", K::kScalar)},
          .traits = {.kind = OpKind::kPointwise, .formula = ClampFormula},
          .infer = One(Clamp),
          .summary = "elementwise clamp to [min, max]"});
  Add(r, {.name = "cast",
          .params = {Param("input", K::kTensor), Param("dtype", K::kDType),
                     Defaulted("saturate", K::kBool, false)},
          // The conversion to the result dtype (truncating, saturating) is
          // the code generator's, as for every formula's result.
          .traits = {.kind = OpKind::kPointwise, .formula = CastFormula},
          .infer = One(Cast),
          .summary = "convert to another dtype (float to int truncates; with saturate, a finite "
                     "float past a narrower float's range becomes its largest)"});

  AddBinary(r, {"add", "elementwise input + other, broadcasting",
                "input + other"}, Arithmetic);
  AddBinary(r, {"sub", "elementwise input - other, broadcasting",
                "input - other"}, Sub);
  AddBinary(r, {"mul", "elementwise input * other, broadcasting",
                "input * other"}, Arithmetic);
  AddBinary(r, {"div", "elementwise true division, broadcasting",
                "input / other"}, Div);
  AddBinary(r, {"pow", "elementwise input ** other, broadcasting",
                "pow(input, other)"}, Arithmetic);
  AddBinary(r, {"maximum", "elementwise max, broadcasting",
                "max(input, other)"}, Arithmetic);
  AddBinary(r, {"minimum", "elementwise min, broadcasting",
                "min(input, other)"}, Arithmetic);
  for (NamedOp op : {
           NamedOp{"eq", "elementwise input == other; result bool",
                   "input == other"},
           NamedOp{"ne", "elementwise input != other; result bool",
                   "input != other"},
           NamedOp{"lt", "elementwise input < other; result bool",
                   "input < other"},
           NamedOp{"le", "elementwise input <= other; result bool",
                   "input <= other"},
           NamedOp{"gt", "elementwise input > other; result bool",
                   "input > other"},
           NamedOp{"ge", "elementwise input >= other; result bool",
                   "input >= other"},
           NamedOp{"logical_and", "elementwise and; result bool",
                   "input && other"},
           NamedOp{"logical_or", "elementwise or; result bool",
                   "input || other"},
       }) {
    AddBinary(r, op, Predicate);
  }
  Add(r, {.name = "where",
          .params = {Param("condition", K::kTensor),
                     Param("input", K::kTensorOrScalar),
                     Param("other", K::kTensorOrScalar)},
          .traits = Pointwise("condition ? input : other"),
          .infer = One(Where),
          .summary = "elementwise condition ? input : other, broadcasting"});
}

}  // namespace graft::core_ops
