#include "graph/scalar_formula.h"

#include <cmath>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::testing::HasSubstr;

double Eval(absl::string_view text, std::map<std::string, double> vars = {}) {
  absl::StatusOr<std::unique_ptr<ScalarExpr>> e = ParseScalarFormula(text);
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok()) return std::nan("");
  return EvaluateScalarFormula(**e,
                               [&](const std::string& n) { return vars[n]; });
}

TEST(ScalarFormula, PrecedenceAndAssociativity) {
  EXPECT_EQ(Eval("1 + 2 * 3"), 7);
  EXPECT_EQ(Eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(Eval("8 - 2 - 1"), 5);
  EXPECT_EQ(Eval("8 / 2 / 2"), 2);
  EXPECT_EQ(Eval("-2 * -3"), 6);
  EXPECT_EQ(Eval("1 + 2 <= 3"), 1);
  EXPECT_EQ(Eval("1 < 2 && 3 < 2 || 1"), 1);
  EXPECT_EQ(Eval("!0 && !(2 > 1)"), 0);
  EXPECT_EQ(Eval("x > 0 ? x : 0.5 * x", {{"x", -4}}), -2);
  EXPECT_EQ(Eval("c ? a : b ? 1 : 2", {{"c", 0}, {"a", 5}, {"b", 0}}), 2);
}

TEST(ScalarFormula, Functions) {
  EXPECT_DOUBLE_EQ(Eval("exp(log(x))", {{"x", 3}}), 3);
  EXPECT_DOUBLE_EQ(Eval("pow(2, 10)"), 1024);
  EXPECT_DOUBLE_EQ(Eval("sqrt(abs(x))", {{"x", -16}}), 4);
  EXPECT_DOUBLE_EQ(Eval("erf(0) + tanh(0) + sin(0) + cos(0)"), 1);
  EXPECT_EQ(Eval("max(1, 2) + min(1, 2)"), 3);
  EXPECT_TRUE(std::isnan(Eval("max(x, 0)", {{"x", std::nan("")}})));
  EXPECT_TRUE(std::isnan(Eval("min(0, x)", {{"x", std::nan("")}})));
}

TEST(ScalarFormula, ErrorsNameTheColumn) {
  for (const auto& [text, what] :
       std::vector<std::pair<const char*, const char*>>{
           {"1 +", "column 4: expected a number, a name or '('"},
           {"(1 + 2", "column 7: expected ')'"},
           {"foo(1)", "expected a known function"},
           {"max(1)", "2 argument(s) for max"},
           {"1 2", "column 3: expected the end of the formula"},
           {"a ? b", "expected ':'"}}) {
    absl::StatusOr<std::unique_ptr<ScalarExpr>> e = ParseScalarFormula(text);
    ASSERT_FALSE(e.ok()) << text;
    EXPECT_THAT(e.status().message(), HasSubstr(what)) << text;
  }
}

TEST(ScalarFormula, CountsOperations) {
  auto count = [](absl::string_view text) {
    return CountScalarOps(**ParseScalarFormula(text));
  };
  EXPECT_EQ(count("input"), 0);
  EXPECT_EQ(count("input + other"), 1);
  EXPECT_EQ(count("1 / (1 + exp(-input))"), 4);
}

}  // namespace
}  // namespace graft
