#include "graph/scalar_formula.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace graft {
namespace {

using Expr = std::unique_ptr<ScalarExpr>;

// The one-argument functions beyond exp, log, sqrt, sin, cos, tanh and erf
// that libm and CUDA's math library both provide.
bool IsTrigonometric(absl::string_view name) {
  return name == "tan" || name == "asin" || name == "acos" || name == "atan" ||
         name == "sinh" || name == "cosh" || name == "asinh" || name == "acosh" ||
         name == "atanh";
}

// Recursive descent over a formula; formulas are a line long, so the depth
// is bounded by their text.
class FormulaParser {
 public:
  explicit FormulaParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Expr> ParseAll() {
    absl::StatusOr<Expr> e = ParseExpr();
    if (!e.ok()) return e;
    SkipSpace();
    if (pos_ != text_.size()) return Error("the end of the formula");
    return e;
  }

 private:
  absl::Status Error(absl::string_view expected) const {
    return absl::InvalidArgumentError(
        absl::StrCat("formula '", text_, "', column ", pos_ + 1, ": expected ",
                     expected));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(text_[pos_])) ++pos_;
  }
  bool Eat(absl::string_view token) {
    SkipSpace();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  static Expr Node(ScalarExpr::Kind kind, std::string name,
                   std::vector<Expr> operands) {
    auto e = std::make_unique<ScalarExpr>();
    e->kind = kind;
    e->name = std::move(name);
    e->operands = std::move(operands);
    return e;
  }
  static Expr Binary(std::string op, Expr a, Expr b) {
    std::vector<Expr> operands;
    operands.push_back(std::move(a));
    operands.push_back(std::move(b));
    return Node(ScalarExpr::Kind::kBinary, std::move(op), std::move(operands));
  }

  absl::StatusOr<Expr> ParseExpr() {
    absl::StatusOr<Expr> c = ParseLeft(0);
    if (!c.ok() || !Eat("?")) return c;
    absl::StatusOr<Expr> a = ParseExpr();
    if (!a.ok()) return a;
    if (!Eat(":")) return Error("':'");
    absl::StatusOr<Expr> b = ParseExpr();
    if (!b.ok()) return b;
    std::vector<Expr> operands;
    operands.push_back(*std::move(c));
    operands.push_back(*std::move(a));
    operands.push_back(*std::move(b));
    return Node(ScalarExpr::Kind::kSelect, "?", std::move(operands));
  }

  // Binary levels from loosest to tightest; comparisons do not chain.
  absl::StatusOr<Expr> ParseLeft(int level) {
    static const std::vector<std::vector<absl::string_view>> kLevels = {
        {"||"}, {"&&"}, {"==", "!=", "<=", ">=", "<", ">"}, {"+", "-"},
        {"*", "/"}};
    if (level == static_cast<int>(kLevels.size())) return ParseUnary();
    absl::StatusOr<Expr> left = ParseLeft(level + 1);
    if (!left.ok()) return left;
    for (;;) {
      absl::string_view op;
      for (absl::string_view candidate : kLevels[level]) {
        // "<" must not take the first half of "<=".
        if (Eat(candidate)) {
          op = candidate;
          break;
        }
      }
      if (op.empty()) return left;
      absl::StatusOr<Expr> right = ParseLeft(level + 1);
      if (!right.ok()) return right;
      left = Binary(std::string(op), *std::move(left), *std::move(right));
      if (level == 2) return left;
    }
  }

  absl::StatusOr<Expr> ParseUnary() {
    for (absl::string_view op : {"-", "!"}) {
      if (Eat(op)) {
        absl::StatusOr<Expr> operand = ParseUnary();
        if (!operand.ok()) return operand;
        std::vector<Expr> operands;
        operands.push_back(*std::move(operand));
        return Node(ScalarExpr::Kind::kUnary, std::string(op),
                    std::move(operands));
      }
    }
    return ParsePrimary();
  }

  absl::StatusOr<Expr> ParsePrimary() {
    SkipSpace();
    if (Eat("(")) {
      absl::StatusOr<Expr> e = ParseExpr();
      if (!e.ok()) return e;
      if (!Eat(")")) return Error("')'");
      return e;
    }
    if (pos_ < text_.size() &&
        (std::isdigit(text_[pos_]) || text_[pos_] == '.')) {
      const std::string rest(text_.substr(pos_));
      char* end = nullptr;
      const double value = std::strtod(rest.c_str(), &end);
      pos_ += end - rest.c_str();
      auto e = std::make_unique<ScalarExpr>();
      e->number = value;
      return e;
    }
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(text_[pos_]) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (pos_ == start) return Error("a number, a name or '('");
    std::string name(text_.substr(start, pos_ - start));
    if (!Eat("(")) return Node(ScalarExpr::Kind::kName, std::move(name), {});
    std::vector<Expr> args;
    do {
      absl::StatusOr<Expr> a = ParseExpr();
      if (!a.ok()) return a;
      args.push_back(*std::move(a));
    } while (Eat(","));
    if (!Eat(")")) return Error("',' or ')'");
    const bool unary = name == "exp" || name == "log" || name == "sqrt" ||
                       name == "sin" || name == "cos" || name == "tanh" ||
                       IsTrigonometric(name) ||
                       name == "erf" || name == "abs" || name == "floor" ||
                       name == "ceil" || name == "round";
    const bool binary = name == "pow" || name == "max" || name == "min";
    if (!unary && !binary) return Error("a known function");
    if (args.size() != (unary ? 1u : 2u)) {
      return Error(absl::StrCat(unary ? 1 : 2, " argument(s) for ", name));
    }
    return Node(ScalarExpr::Kind::kCall, std::move(name), std::move(args));
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

double NanPropagating(double a, double b, bool max) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return max ? std::max(a, b) : std::min(a, b);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ScalarExpr>> ParseScalarFormula(
    absl::string_view text) {
  return FormulaParser(text).ParseAll();
}

double EvaluateScalarFormula(
    const ScalarExpr& e,
    const std::function<double(const std::string&)>& value_of) {
  auto arg = [&](size_t i) {
    return EvaluateScalarFormula(*e.operands[i], value_of);
  };
  switch (e.kind) {
    case ScalarExpr::Kind::kNumber:
      return e.number;
    case ScalarExpr::Kind::kName:
      return value_of(e.name);
    case ScalarExpr::Kind::kUnary:
      return e.name == "-" ? -arg(0) : (arg(0) == 0 ? 1 : 0);
    case ScalarExpr::Kind::kSelect:
      return arg(0) != 0 ? arg(1) : arg(2);
    case ScalarExpr::Kind::kBinary: {
      const double a = arg(0), b = arg(1);
      const std::string& op = e.name;
      if (op == "+") return a + b;
      if (op == "-") return a - b;
      if (op == "*") return a * b;
      if (op == "/") return a / b;
      if (op == "==") return a == b;
      if (op == "!=") return a != b;
      if (op == "<") return a < b;
      if (op == "<=") return a <= b;
      if (op == ">") return a > b;
      if (op == ">=") return a >= b;
      if (op == "&&") return a != 0 && b != 0;
      if (op == "||") return a != 0 || b != 0;
      return std::numeric_limits<double>::quiet_NaN();
    }
    case ScalarExpr::Kind::kCall: {
      const std::string& f = e.name;
      if (f == "pow") return std::pow(arg(0), arg(1));
      if (f == "max") return NanPropagating(arg(0), arg(1), true);
      if (f == "min") return NanPropagating(arg(0), arg(1), false);
      const double x = arg(0);
      if (f == "exp") return std::exp(x);
      if (f == "log") return std::log(x);
      if (f == "sqrt") return std::sqrt(x);
      if (f == "sin") return std::sin(x);
      if (f == "cos") return std::cos(x);
      if (f == "tanh") return std::tanh(x);
      if (f == "tan") return std::tan(x);
      if (f == "asin") return std::asin(x);
      if (f == "acos") return std::acos(x);
      if (f == "atan") return std::atan(x);
      if (f == "sinh") return std::sinh(x);
      if (f == "cosh") return std::cosh(x);
      if (f == "asinh") return std::asinh(x);
      if (f == "acosh") return std::acosh(x);
      if (f == "atanh") return std::atanh(x);
      if (f == "erf") return std::erf(x);
      if (f == "abs") return std::fabs(x);
      if (f == "floor") return std::floor(x);
      if (f == "ceil") return std::ceil(x);
      // Halves to even, as torch.round and ONNX Round.
      if (f == "round") return std::nearbyint(x);
      return std::numeric_limits<double>::quiet_NaN();
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

int CountScalarOps(const ScalarExpr& e) {
  int n = e.kind == ScalarExpr::Kind::kNumber ||
                  e.kind == ScalarExpr::Kind::kName
              ? 0
              : 1;
  for (const auto& operand : e.operands) n += CountScalarOps(*operand);
  return n;
}

}  // namespace graft
