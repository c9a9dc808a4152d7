// Elementwise ONNX operators: one core op each, or a short composition
// where graft's core set has no direct op (IsNaN is ne(x, x), integer Div
// divides in f64 and truncates, HardSwish is x * clamp(x/6 + 1/2, 0, 1)).

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"
#include "onnx/onnx_tensor.h"

namespace graft::onnx_import {
namespace {

// The core op for each ONNX operator that maps one to one.
const absl::flat_hash_map<std::string, std::string>& CoreOps() {
  static const auto* ops = new absl::flat_hash_map<std::string, std::string>{
      {"Relu", "relu"},       {"Sigmoid", "sigmoid"},
      {"Tanh", "tanh"},       {"Exp", "exp"},
      {"Log", "log"},         {"Sqrt", "sqrt"},
      {"Erf", "erf"},         {"Neg", "neg"},
      {"Abs", "abs"},         {"Reciprocal", "reciprocal"},
      {"Sin", "sin"},         {"Cos", "cos"},
      {"Tan", "tan"},         {"Asin", "asin"},
      {"Acos", "acos"},       {"Atan", "atan"},
      {"Sinh", "sinh"},       {"Cosh", "cosh"},
      {"Asinh", "asinh"},     {"Acosh", "acosh"},
      {"Atanh", "atanh"},
      {"Not", "logical_not"}, {"Add", "add"},
      {"Sub", "sub"},         {"Mul", "mul"},
      {"Div", "div"},         {"Pow", "pow"},
      {"Max", "maximum"},     {"Min", "minimum"},
      {"Sum", "add"},         {"Equal", "eq"},
      {"Less", "lt"},         {"Greater", "gt"},
      {"LessOrEqual", "le"},  {"GreaterOrEqual", "ge"},
      {"And", "logical_and"}, {"Or", "logical_or"},
      {"Xor", "ne"},          {"Floor", "floor"},
      {"Ceil", "ceil"},       {"Round", "round"},
  };
  return *ops;
}

const std::string& CoreOp(const NodeContext& ctx) {
  return CoreOps().at(ctx.op_type());
}

absl::StatusOr<bool> FoldUnary(NodeContext& ctx) {
  std::optional<std::vector<FoldValue>> in = ctx.FoldedInputs(1);
  if (!in.has_value()) return false;
  ASSIGN_OR_RETURN(FoldValue r, ctx.folder().Unary(ctx.op_type(), (*in)[0]));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(r)));
  return true;
}

absl::Status ConvertUnary(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call(CoreOp(ctx), {x}));
  return ctx.SetOutput(0, y);
}

// Binary and variadic (Max, Min, Sum) operators, folded left to right.
absl::StatusOr<bool> FoldBinary(NodeContext& ctx) {
  std::optional<std::vector<FoldValue>> in = ctx.FoldedInputs(ctx.num_inputs());
  if (!in.has_value() || in->empty()) return false;
  std::string op = ctx.op_type() == "Sum" ? "Add" : ctx.op_type();
  FoldValue acc = (*in)[0];
  for (size_t i = 1; i < in->size(); ++i) {
    ASSIGN_OR_RETURN(acc, ctx.folder().Binary(op, acc, (*in)[i]));
  }
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(acc)));
  return true;
}

// ONNX divides integers with truncation; graft's div is true division. In
// f64 every int32 quotient is exact, and int64 ones up to 2^53.
absl::StatusOr<Node*> IntegerDiv(NodeContext& ctx, const Argument& a,
                                 const Argument& b, DType dtype) {
  std::vector<Argument> args;
  for (const Argument& v : {a, b}) {
    if (v.is_node()) {
      ASSIGN_OR_RETURN(Node * c, ctx.Call("cast", {v, DType::kF64}));
      args.push_back(c);
    } else {
      args.push_back(Argument(v.number()));
    }
  }
  ASSIGN_OR_RETURN(Node * q, ctx.Call("div", std::move(args)));
  return ctx.Call("cast", {q, dtype});
}

absl::StatusOr<Node*> BinaryCall(NodeContext& ctx, const std::string& op, int i,
                                 const Argument& lhs,
                                 const TensorType& lhs_type) {
  ASSIGN_OR_RETURN(Argument rhs, ctx.NodeOrScalar(i, lhs_type.rank()));
  Argument a = lhs;
  if (!a.is_node() && !rhs.is_node()) {
    // Two one-element literals would lose the rank: keep one as a tensor.
    ASSIGN_OR_RETURN(Node * n, ctx.Input(i));
    rhs = n;
  }
  if (op == "div" && !IsFloatingPoint(lhs_type.dtype)) {
    return IntegerDiv(ctx, a, rhs, lhs_type.dtype);
  }
  ASSIGN_OR_RETURN(Node * out, ctx.Call(op, {a, rhs}));
  // graft's pow promotes (f16 ** f32 is f32); ONNX keeps the base's type.
  if (op == "pow") return CastIfNeeded(ctx, out, lhs_type.dtype);
  return out;
}

// ONNX's binary operators take one dtype (Pow's exponent excepted) and
// the logical ones bool; graft would promote silently, so a model that
// mixes them is refused here.
absl::Status CheckInputDTypes(NodeContext& ctx) {
  const bool logical =
      ctx.op_type() == "And" || ctx.op_type() == "Or" || ctx.op_type() == "Xor";
  const int n = ctx.op_type() == "Pow" ? 1 : ctx.num_inputs();
  ASSIGN_OR_RETURN(TensorType first, ctx.InputType(0));
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(TensorType t, ctx.InputType(i));
    if (logical && t.dtype != DType::kBool) {
      return NodeContext::Invalid(
          absl::StrCat("input ", i, " is ", t.ToString(), ", but ",
                       ctx.op_type(), " takes bool tensors"));
    }
    if (t.dtype != first.dtype) {
      return NodeContext::Invalid(absl::StrCat(
          "inputs have different dtypes (", first.ToString(), " and ",
          t.ToString(), "); ", ctx.op_type(), " takes one dtype"));
    }
  }
  return absl::OkStatus();
}

absl::Status ConvertBinary(NodeContext& ctx) {
  const std::string& op = CoreOp(ctx);
  if (ctx.num_inputs() < 1 ||
      (ctx.num_inputs() < 2 && ctx.op_type() != "Max" &&
       ctx.op_type() != "Min" && ctx.op_type() != "Sum")) {
    return NodeContext::Invalid(absl::StrCat(
        ctx.op_type(), " needs two inputs, got ", ctx.num_inputs()));
  }
  ASSIGN_OR_RETURN(TensorType type, ctx.InputType(0));
  RETURN_IF_ERROR(CheckInputDTypes(ctx));
  if (ctx.num_inputs() == 1) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(TensorType other, ctx.InputType(1));
  ASSIGN_OR_RETURN(Argument lhs, ctx.NodeOrScalar(0, other.rank()));
  Node* acc = nullptr;
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(acc, BinaryCall(ctx, op, i, lhs, type));
    lhs = acc;
    ASSIGN_OR_RETURN(type, ctx.TypeOf(acc));
  }
  return ctx.SetOutput(0, acc);
}

absl::StatusOr<bool> FoldWhere(NodeContext& ctx) {
  std::optional<std::vector<FoldValue>> in = ctx.FoldedInputs(3);
  if (!in.has_value()) return false;
  ASSIGN_OR_RETURN(FoldValue r,
                   ctx.folder().Where((*in)[0], (*in)[1], (*in)[2]));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(r)));
  return true;
}

absl::Status ConvertWhere(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * cond, ctx.Input(0, "condition"));
  ASSIGN_OR_RETURN(TensorType tc, ctx.TypeOf(cond));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(1));
  ASSIGN_OR_RETURN(TensorType ty, ctx.InputType(2));
  if (tc.dtype != DType::kBool) {
    return NodeContext::Invalid(absl::StrCat("the condition is ", tc.ToString(),
                                             ", but Where takes a bool one"));
  }
  if (tx.dtype != ty.dtype) {
    return NodeContext::Invalid(absl::StrCat("X is ", tx.ToString(),
                                             " but Y is ", ty.ToString(),
                                             "; Where takes one dtype"));
  }
  // A literal may stand for x or y when the other two fix the result rank.
  ASSIGN_OR_RETURN(Argument x,
                   ctx.NodeOrScalar(1, std::max(tc.rank(), ty.rank())));
  ASSIGN_OR_RETURN(Argument y,
                   ctx.NodeOrScalar(2, std::max(tc.rank(), tx.rank())));
  if (!x.is_node() && !y.is_node()) {
    ASSIGN_OR_RETURN(Node * n, ctx.Input(1));
    x = n;
  }
  ASSIGN_OR_RETURN(Node * out, ctx.Call("where", {cond, x, y}));
  // Two literals' dtype would be graft's default, not ONNX's.
  ASSIGN_OR_RETURN(out, CastIfNeeded(ctx, out, tx.dtype));
  return ctx.SetOutput(0, out);
}

// Clip's min and max are optional inputs: literals when known, else
// maximum/minimum with the tensors. Before opset 11 they are optional
// float attributes.
absl::Status ConvertClip(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  Argument lo, hi;
  Node* out = x;
  if (ctx.opset() < 11) {
    if (ctx.num_inputs() > 1) {
      return NodeContext::Invalid("min and max are attributes before opset 11, not inputs");
    }
    ASSIGN_OR_RETURN(std::optional<float> min, ctx.attrs().OptionalFloat("min"));
    ASSIGN_OR_RETURN(std::optional<float> max, ctx.attrs().OptionalFloat("max"));
    if (min.has_value()) lo = Argument(static_cast<double>(*min));
    if (max.has_value()) hi = Argument(static_cast<double>(*max));
  }
  for (int i : {1, 2}) {
    if (!ctx.HasInput(i)) continue;
    std::optional<Argument> literal = ctx.ScalarLiteral(i);
    if (literal.has_value()) {
      (i == 1 ? lo : hi) = *literal;
      continue;
    }
    ASSIGN_OR_RETURN(Node * bound, ctx.Input(i));
    ASSIGN_OR_RETURN(out,
                     ctx.Call(i == 1 ? "maximum" : "minimum", {out, bound}));
  }
  if (!lo.is_none() || !hi.is_none()) {
    ASSIGN_OR_RETURN(out, ctx.Call("clamp", {out, lo, hi}));
  }
  if (out == x) return ctx.AliasOutput(0, 0);
  return ctx.SetOutput(0, out);
}

absl::StatusOr<DType> CastTarget(NodeContext& ctx) {
  if (ctx.op_type() == "CastLike") {
    ASSIGN_OR_RETURN(TensorType t, ctx.InputType(1));
    return t.dtype;
  }
  const onnx::AttributeProto* to = ctx.attrs().Find("to");
  if (to == nullptr) return NodeContext::Invalid("attribute 'to' is missing");
  ASSIGN_OR_RETURN(int64_t code, ctx.attrs().Int("to", 0));
  if (code < 0 || code > std::numeric_limits<int32_t>::max()) {
    return NodeContext::Invalid(absl::StrCat("attribute 'to' (", code,
                                             ") is not an ONNX element type"));
  }
  return DTypeFromOnnx(static_cast<int32_t>(code));
}

absl::StatusOr<bool> FoldCast(NodeContext& ctx) {
  ASSIGN_OR_RETURN(DType to, CastTarget(ctx));
  std::optional<FoldValue> x = ctx.Folded(0);
  if (!x.has_value()) return false;
  ASSIGN_OR_RETURN(FoldValue r, ctx.folder().Cast(*x, to));
  RETURN_IF_ERROR(ctx.SetOutputValue(0, std::move(r)));
  return true;
}

absl::Status ConvertCast(NodeContext& ctx) {
  ASSIGN_OR_RETURN(DType to, CastTarget(ctx));
  ASSIGN_OR_RETURN(TensorType t, ctx.InputType(0));
  if (t.dtype == to) return ctx.AliasOutput(0, 0);
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("cast", {x, to}));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertLeakyRelu(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.attrs().Float("alpha", 0.01f));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * y,
                   ctx.Call("leaky_relu", {x, static_cast<double>(alpha)}));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertGelu(NodeContext& ctx) {
  absl::StatusOr<std::string> approximate =
      ctx.attrs().String("approximate", "none");
  if (!approximate.ok()) return approximate.status();
  if (*approximate != "none" && *approximate != "tanh") {
    return NodeContext::Unsupported(
        absl::StrCat("approximate=\"", *approximate,
                     "\" is not supported (\"none\" or "
                     "\"tanh\")"));
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("gelu", {x, Argument(*approximate)}));
  return ctx.SetOutput(0, y);
}

// clamp(alpha * x + beta, 0, 1); HardSwish is x times that with alpha 1/6
// and beta 1/2.
absl::StatusOr<Node*> HardSigmoid(NodeContext& ctx, Node* x, double alpha,
                                  double beta) {
  ASSIGN_OR_RETURN(Node * scaled, ctx.Call("mul", {x, alpha}));
  ASSIGN_OR_RETURN(Node * shifted, ctx.Call("add", {scaled, beta}));
  return ctx.Call("clamp", {shifted, 0.0, 1.0});
}

absl::Status ConvertHardSigmoid(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.attrs().Float("alpha", 0.2f));
  ASSIGN_OR_RETURN(float beta, ctx.attrs().Float("beta", 0.5f));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * y, HardSigmoid(ctx, x, alpha, beta));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertHardSwish(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * gate, HardSigmoid(ctx, x, 1.0 / 6.0, 0.5));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("mul", {x, gate}));
  return ctx.SetOutput(0, y);
}

// slope * x where x < 0, else x; the slope broadcasts to x.
absl::Status ConvertPRelu(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Argument slope, ctx.NodeOrScalar(1, tx.rank()));
  ASSIGN_OR_RETURN(Node * negative, ctx.Call("lt", {x, 0.0}));
  ASSIGN_OR_RETURN(Node * scaled, ctx.Call("mul", {x, slope}));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("where", {negative, scaled, x}));
  return ctx.SetOutput(0, y);
}

// alpha * (exp(x) - 1) where x <= 0, else x: Elu; Selu scales it by
// gamma.
absl::StatusOr<Node*> Elu(NodeContext& ctx, Node* x, double alpha) {
  ASSIGN_OR_RETURN(Node * positive, ctx.Call("gt", {x, 0.0}));
  ASSIGN_OR_RETURN(Node * e, ctx.Call("exp", {x}));
  ASSIGN_OR_RETURN(Node * em1, ctx.Call("sub", {e, 1.0}));
  ASSIGN_OR_RETURN(Node * scaled, ctx.Call("mul", {em1, alpha}));
  return ctx.Call("where", {positive, x, scaled});
}

absl::Status ConvertElu(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.attrs().Float("alpha", 1.0f));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * y, Elu(ctx, x, alpha));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertSelu(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.attrs().Float("alpha", 1.67326319217681884765625f));
  ASSIGN_OR_RETURN(float gamma, ctx.attrs().Float("gamma", 1.05070102214813232421875f));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * elu, Elu(ctx, x, alpha));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("mul", {elu, static_cast<double>(gamma)}));
  return ctx.SetOutput(0, y);
}

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
absl::Status ConvertCelu(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.attrs().Float("alpha", 1.0f));
  if (alpha == 0) return NodeContext::Invalid("alpha must not be 0");
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * over, ctx.Call("div", {x, static_cast<double>(alpha)}));
  ASSIGN_OR_RETURN(Node * e, ctx.Call("exp", {over}));
  ASSIGN_OR_RETURN(Node * em1, ctx.Call("sub", {e, 1.0}));
  ASSIGN_OR_RETURN(Node * scaled, ctx.Call("mul", {em1, static_cast<double>(alpha)}));
  ASSIGN_OR_RETURN(Node * negative, ctx.Call("clamp", {scaled, Argument(), 0.0}));
  ASSIGN_OR_RETURN(Node * positive, ctx.Call("relu", {x}));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("add", {positive, negative}));
  return ctx.SetOutput(0, y);
}

// log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)), which does not
// overflow for large x (below about -17 the result rounds to 0 in f32,
// where log1p would keep values near e^x).
absl::StatusOr<Node*> Softplus(NodeContext& ctx, Node* x) {
  ASSIGN_OR_RETURN(Node * a, ctx.Call("abs", {x}));
  ASSIGN_OR_RETURN(Node * na, ctx.Call("neg", {a}));
  ASSIGN_OR_RETURN(Node * e, ctx.Call("exp", {na}));
  ASSIGN_OR_RETURN(Node * one_plus, ctx.Call("add", {e, 1.0}));
  ASSIGN_OR_RETURN(Node * l, ctx.Call("log", {one_plus}));
  ASSIGN_OR_RETURN(Node * r, ctx.Call("relu", {x}));
  return ctx.Call("add", {r, l});
}

absl::Status ConvertSoftplus(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * y, Softplus(ctx, x));
  return ctx.SetOutput(0, y);
}

// x * tanh(softplus(x)) (opset 18).
absl::Status ConvertMish(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * sp, Softplus(ctx, x));
  ASSIGN_OR_RETURN(Node * t, ctx.Call("tanh", {sp}));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("mul", {x, t}));
  return ctx.SetOutput(0, y);
}

// x / (1 + |x|).
absl::Status ConvertSoftsign(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  ASSIGN_OR_RETURN(Node * a, ctx.Call("abs", {x}));
  ASSIGN_OR_RETURN(Node * d, ctx.Call("add", {a, 1.0}));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("div", {x, d}));
  return ctx.SetOutput(0, y);
}

// 1 where x > 0, -1 where x < 0, else x itself (0, or NaN).
absl::Status ConvertSign(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType t, ctx.InputType(0));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  const bool is_float = IsFloatingPoint(t.dtype);
  const Argument one = is_float ? Argument(1.0) : Argument(int64_t{1});
  const Argument minus_one = is_float ? Argument(-1.0) : Argument(int64_t{-1});
  const Argument zero = is_float ? Argument(0.0) : Argument(int64_t{0});
  ASSIGN_OR_RETURN(Node * negative, ctx.Call("lt", {x, zero}));
  ASSIGN_OR_RETURN(Node * low, ctx.Call("where", {negative, minus_one, x}));
  ASSIGN_OR_RETURN(Node * positive, ctx.Call("gt", {x, zero}));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("where", {positive, one, low}));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertIsNaN(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("ne", {x, x}));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertIsInf(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t neg, ctx.attrs().Int("detect_negative", 1));
  ASSIGN_OR_RETURN(int64_t pos, ctx.attrs().Int("detect_positive", 1));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  const double inf = std::numeric_limits<double>::infinity();
  Node* y;
  if (neg != 0 && pos != 0) {
    ASSIGN_OR_RETURN(Node * a, ctx.Call("abs", {x}));
    ASSIGN_OR_RETURN(y, ctx.Call("eq", {a, inf}));
  } else if (neg != 0 || pos != 0) {
    ASSIGN_OR_RETURN(y, ctx.Call("eq", {x, pos != 0 ? inf : -inf}));
  } else {
    return NodeContext::Unsupported(
        "detect_negative=0 with detect_positive=0 is not supported");
  }
  return ctx.SetOutput(0, y);
}

// Mod on known values folds (shape arithmetic, fmod=0 only); on run-time
// values it is a - q * b, with q the quotient a / b taken in f64 and
// rounded down (fmod=0: the result takes b's sign, as Python's %) or
// toward zero (fmod=1: a's sign, as C's fmod), then the remainder in f64
// for floats and in the inputs' own type for integers. Exact while the
// quotient's magnitude is below 2^53 (integers) or 2^24 (f32).
absl::StatusOr<bool> FoldMod(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t fmod, ctx.attrs().Int("fmod", 0));
  if (fmod != 0) return false;
  return FoldBinary(ctx);
}

absl::Status ConvertMod(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t fmod, ctx.attrs().Int("fmod", 0));
  ASSIGN_OR_RETURN(Node * a, ctx.Input(0, "A"));
  ASSIGN_OR_RETURN(Node * b, ctx.Input(1, "B"));
  ASSIGN_OR_RETURN(TensorType ta, ctx.TypeOf(a));
  ASSIGN_OR_RETURN(TensorType tb, ctx.TypeOf(b));
  if (ta.dtype != tb.dtype || !(IsFloatingPoint(ta.dtype) || IsInteger(ta.dtype))) {
    return NodeContext::Invalid(absl::StrCat("needs two inputs of one numeric dtype, got ",
                                             DTypeName(ta.dtype), " and ", DTypeName(tb.dtype)));
  }
  ASSIGN_OR_RETURN(Node * a64, ctx.Call("cast", {a, DType::kF64}));
  ASSIGN_OR_RETURN(Node * b64, ctx.Call("cast", {b, DType::kF64}));
  ASSIGN_OR_RETURN(Node * q, ctx.Call("div", {a64, b64}));
  if (fmod == 0) {
    ASSIGN_OR_RETURN(q, ctx.Call("floor", {q}));
  } else {  // Toward zero.
    ASSIGN_OR_RETURN(Node * negative, ctx.Call("lt", {q, 0.0}));
    ASSIGN_OR_RETURN(Node * up, ctx.Call("ceil", {q}));
    ASSIGN_OR_RETURN(Node * down, ctx.Call("floor", {q}));
    ASSIGN_OR_RETURN(q, ctx.Call("where", {negative, up, down}));
  }
  Node* r;
  if (IsInteger(ta.dtype)) {
    ASSIGN_OR_RETURN(q, ctx.Call("cast", {q, ta.dtype}));
    ASSIGN_OR_RETURN(Node * qb, ctx.Call("mul", {q, b}));
    ASSIGN_OR_RETURN(r, ctx.Call("sub", {a, qb}));
  } else {
    ASSIGN_OR_RETURN(Node * qb, ctx.Call("mul", {q, b64}));
    ASSIGN_OR_RETURN(r, ctx.Call("sub", {a64, qb}));
    ASSIGN_OR_RETURN(r, ctx.Call("cast", {r, ta.dtype}));
  }
  return ctx.SetOutput(0, r);
}

}  // namespace

void AddElementwiseConverters(std::vector<OpConverter>& table) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf",
                         "Neg", "Abs", "Reciprocal", "Sin", "Cos", "Tan", "Asin", "Acos",
                         "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Not",
                         "Floor", "Ceil", "Round"}) {
    table.push_back(
        {.op_type = op, .fold = FoldUnary, .convert = ConvertUnary});
  }
  for (const char* op :
       {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Equal", "Less",
        "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}) {
    table.push_back(
        {.op_type = op, .fold = FoldBinary, .convert = ConvertBinary});
  }
  table.push_back(
      {.op_type = "Where", .fold = FoldWhere, .convert = ConvertWhere});
  table.push_back({.op_type = "Clip", .convert = ConvertClip});
  // `round_mode` (opset 24) rounds to float8e8m0 only, which graft does
  // not cast to.
  table.push_back({.op_type = "Cast",
                   .fold = FoldCast,
                   .convert = ConvertCast,
                   .ignored_attributes = {"saturate", "round_mode"}});
  table.push_back({.op_type = "CastLike",
                   .fold = FoldCast,
                   .convert = ConvertCast,
                   .ignored_attributes = {"saturate", "round_mode"}});
  table.push_back({.op_type = "LeakyRelu", .convert = ConvertLeakyRelu});
  table.push_back(
      {.op_type = "Gelu", .convert = ConvertGelu});
  table.push_back({.op_type = "HardSigmoid", .convert = ConvertHardSigmoid});
  table.push_back({.op_type = "HardSwish", .convert = ConvertHardSwish});
  table.push_back({.op_type = "PRelu", .convert = ConvertPRelu});
  table.push_back({.op_type = "Elu", .convert = ConvertElu});
  table.push_back({.op_type = "Selu", .convert = ConvertSelu});
  table.push_back({.op_type = "Celu", .convert = ConvertCelu});
  table.push_back({.op_type = "Softplus", .convert = ConvertSoftplus});
  table.push_back({.op_type = "Softsign", .convert = ConvertSoftsign});
  table.push_back({.op_type = "Mish", .convert = ConvertMish});
  table.push_back({.op_type = "Sign", .convert = ConvertSign});
  table.push_back({.op_type = "IsNaN", .convert = ConvertIsNaN});
  table.push_back({.op_type = "IsInf", .convert = ConvertIsInf});
  table.push_back({.op_type = "Mod", .fold = FoldMod, .convert = ConvertMod});
}

}  // namespace graft::onnx_import
