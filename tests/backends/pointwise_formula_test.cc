// Each pointwise op's scalar formula (OpTraits::formula), evaluated in
// double, against the interpreter's kernel on the same elements: the
// formulas that code generators compile are the ops' true meaning.

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/interp/interp_backend.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/scalar_formula.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace graft {
namespace {

constexpr int64_t kElements = 64;

// Values where comparisons meet equality and functions meet their edges
// (0, negatives for log and sqrt, NaN and infinities).
Tensor SampleTensor(DType dtype, std::mt19937_64& rng) {
  static const double kValues[] = {-2, -1, -0.5, 0,        0.5,      1,
                                   2,  3,  NAN,  INFINITY, -INFINITY};
  constexpr size_t kCount = sizeof(kValues) / sizeof(kValues[0]);
  Tensor t(dtype, {kElements});
  for (int64_t i = 0; i < kElements; ++i) {
    double v = kValues[rng() % kCount];
    if (dtype == DType::kBool) v = v > 0;
    t.SetFromDouble(i, v);
  }
  return t;
}

void ExpectFormulaMatchesKernel(const std::string& op, Kwargs kwargs,
                                uint64_t seed) {
  SCOPED_TRACE(op);
  const OpSchema* schema = OpRegistry::Global().Find(op);
  ASSERT_NE(schema, nullptr);
  std::mt19937_64 rng(seed);
  Module m;
  Graph& g = m.graph();
  std::vector<Argument> args;
  std::vector<Tensor> inputs;
  for (const ParamSpec& p : schema->params) {
    if (p.kind != ParamKind::kTensor && p.kind != ParamKind::kTensorOrScalar) {
      break;
    }
    const DType dtype = p.name == "condition" ? DType::kBool : DType::kF32;
    inputs.push_back(SampleTensor(dtype, rng));
    args.push_back(g.Placeholder(p.name, inputs.back().type()));
  }
  Node* node = g.CallFunction(op, args, kwargs);
  g.Output(node);
  std::optional<std::string> formula = PointwiseFormulaOf(*node);
  ASSERT_TRUE(formula.has_value());
  SCOPED_TRACE(*formula);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ScalarExpr> expr,
                       ParseScalarFormula(*formula));
  ASSERT_OK_AND_ASSIGN(OpCall call, OpCall::Bind(*node));
  interp::InterpBackend backend;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, backend.Compile(m, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, e->Run(inputs));
  const Tensor& got = out[0];
  for (int64_t i = 0; i < kElements; ++i) {
    double want = EvaluateScalarFormula(*expr, [&](const std::string& name) {
      for (size_t p = 0; p < inputs.size(); ++p) {
        if (schema->params[p].name == name) return inputs[p].GetAsDouble(i);
      }
      return call.Float(name);
    });
    // The formula's value in the result dtype.
    Tensor typed(got.dtype(), {});
    typed.SetFromDouble(0, want);
    want = typed.GetAsDouble(0);
    const double have = got.GetAsDouble(i);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(have)) << "element " << i << ": " << have;
    } else if (std::isinf(want)) {
      EXPECT_EQ(have, want) << "element " << i;
    } else {
      EXPECT_NEAR(have, want, 2e-6 * std::max(1.0, std::fabs(want)))
          << "element " << i << " of " << got.TypeString();
    }
  }
}

TEST(PointwiseFormula, EveryFormulaMatchesTheInterpreter) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  int checked = 0;
  for (const OpSchema* schema : OpRegistry::Global().All()) {
    if (schema->traits.kind != OpKind::kPointwise) continue;
    Kwargs kwargs;
    if (schema->name == "cast") kwargs = {{"dtype", Argument(DType::kF64)}};
    if (schema->name == "clamp") kwargs = {{"min", -0.5}};  // Needs a bound.
    ExpectFormulaMatchesKernel(schema->name, kwargs, seed + checked);
    ++checked;
  }
  EXPECT_GE(checked, 36);
  // Attributes that change the formula.
  ExpectFormulaMatchesKernel("gelu", {{"approximate", "tanh"}}, seed);
  ExpectFormulaMatchesKernel("clamp", {{"min", -0.5}, {"max", 1.0}}, seed);
  ExpectFormulaMatchesKernel("clamp", {{"max", 0.5}}, seed);
  ExpectFormulaMatchesKernel("leaky_relu", {{"negative_slope", 0.2}}, seed);
}

}  // namespace
}  // namespace graft
