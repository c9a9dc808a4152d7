#ifndef GRAFT_GRAPH_SCALAR_FORMULA_H_
#define GRAFT_GRAPH_SCALAR_FORMULA_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft {

// The scalar formula of a pointwise op (OpTraits::formula), parsed. The
// grammar, C-like, lowest precedence first:
//
//   expr    := or ('?' expr ':' expr)?
//   or      := and ('||' and)*
//   and     := cmp ('&&' cmp)*
//   cmp     := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum)?
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '/') unary)*
//   unary   := ('-' | '!') unary | primary
//   primary := number | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//
// Names are the op's parameters. Functions: exp, log, sqrt, sin, cos, tanh,
// tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erf, abs (one
// argument), pow, max, min (two; max and min return NaN when
// either argument is NaN, as torch.maximum does). Comparisons and logical
// operators give 1 or 0; `!`, `&&`, `||` and `?:` treat non-zero as true.
// A code generator walks the tree; Evaluate computes it in double, the
// reference for testing formulas against the interpreter's kernels.
struct ScalarExpr {
  enum class Kind { kNumber, kName, kUnary, kBinary, kCall, kSelect };
  Kind kind = Kind::kNumber;
  double number = 0;  // kNumber.
  std::string name;   // kName: the parameter; kUnary/kBinary: the operator;
                      // kCall: the function.
  std::vector<std::unique_ptr<ScalarExpr>> operands;  // kSelect: c, a, b.
};

// Errors give the column and what was expected.
absl::StatusOr<std::unique_ptr<ScalarExpr>> ParseScalarFormula(
    absl::string_view text);

// `value_of` gives each name's value.
double EvaluateScalarFormula(
    const ScalarExpr& expr,
    const std::function<double(const std::string&)>& value_of);

// The arithmetic operations and function calls in the formula: its FLOPs
// per element.
int CountScalarOps(const ScalarExpr& expr);

}  // namespace graft

#endif  // GRAFT_GRAPH_SCALAR_FORMULA_H_
