#ifndef GRAFT_TESTS_BACKENDS_INTERP_TEST_UTIL_H_
#define GRAFT_TESTS_BACKENDS_INTERP_TEST_UTIL_H_

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backends/interp/interpreter.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "graph/module.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"

namespace graft::interp_test {

// A tensor from values (converted through double).
inline Tensor T(DType dtype, std::vector<int64_t> dims,
                const std::vector<double>& values) {
  Tensor t(dtype, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.NumElements()), values.size())
      << "test tensor " << t.TypeString() << " given " << values.size()
      << " values";
  for (size_t i = 0;
       i < values.size() && i < static_cast<size_t>(t.NumElements()); ++i) {
    t.SetFromDouble(static_cast<int64_t>(i), values[i]);
  }
  return t;
}
inline Tensor F32(std::vector<int64_t> dims, const std::vector<double>& v) {
  return T(DType::kF32, std::move(dims), v);
}
inline Tensor I64(std::vector<int64_t> dims, const std::vector<double>& v) {
  return T(DType::kI64, std::move(dims), v);
}

// A seed that differs from run to run; tests print it with SCOPED_TRACE so
// a failure can be replayed.
inline uint32_t FreshSeed() { return std::random_device{}(); }

// Uniform values in [lo, hi).
inline Tensor Random(DType dtype, std::vector<int64_t> dims, uint32_t seed,
                     double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dtype, std::move(dims));
  for (int64_t i = 0; i < t.NumElements(); ++i) t.SetFromDouble(i, dist(rng));
  return t;
}

// `t` converted to `dtype` element by element (no graft kernel involved).
inline Tensor CastForTest(const Tensor& t, DType dtype) {
  Tensor out(dtype, t.dims());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    out.SetFromDouble(i, t.GetAsDouble(i));
  }
  return out;
}

inline Argument Ints(std::vector<int64_t> values) {
  return Argument::IntList(values);
}

// Expects `t` to have `dtype`, `dims` and (within `tol`, NaN matching NaN)
// `values`.
inline void ExpectTensor(const Tensor& t, DType dtype,
                         const std::vector<int64_t>& dims,
                         const std::vector<double>& values, double tol = 1e-6) {
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(DTypeName(t.dtype()), DTypeName(dtype));
  ASSERT_EQ(t.dims(), dims) << t.TypeString();
  ASSERT_EQ(static_cast<size_t>(t.NumElements()), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double got = t.GetAsDouble(static_cast<int64_t>(i));
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << " is " << got;
    } else if (std::isinf(values[i])) {
      EXPECT_EQ(got, values[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got, values[i], tol * std::max(1.0, std::fabs(values[i])))
          << "element " << i;
    }
  }
}

// Builds a one-op graph: each tensor given to In() becomes a typed
// placeholder fed with it; Run adds the call and the output and runs the
// interpreter.
class OpRunner {
 public:
  Node* In(const Tensor& t) {
    Node* n = module_.graph().Placeholder(absl::StrCat("in", inputs_.size()),
                                          t.type());
    inputs_.push_back(t);
    return n;
  }

  absl::StatusOr<std::vector<Tensor>> RunAll(absl::string_view op,
                                             std::vector<Argument> args,
                                             Kwargs kwargs = {}) {
    Node* call =
        module_.graph().CallFunction(op, std::move(args), std::move(kwargs));
    module_.graph().Output(call);
    interp::Interpreter interpreter(module_);
    return interpreter.Run(inputs_);
  }

  absl::StatusOr<Tensor> Run(absl::string_view op, std::vector<Argument> args,
                             Kwargs kwargs = {}) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunAll(op, std::move(args), std::move(kwargs));
    if (!out.ok()) return out.status();
    if (out->size() != 1) {
      return absl::InternalError(
          absl::StrCat("expected one output, got ", out->size()));
    }
    return (*out)[0];
  }

  Module& module() { return module_; }

 private:
  Module module_;
  std::vector<Tensor> inputs_;
};

// Runs `op` on one tensor input (the first argument) plus literal args.
inline absl::StatusOr<Tensor> RunUnary(absl::string_view op, const Tensor& x,
                                       std::vector<Argument> more = {},
                                       Kwargs kwargs = {}) {
  OpRunner r;
  std::vector<Argument> args = {r.In(x)};
  for (Argument& a : more) args.push_back(std::move(a));
  return r.Run(op, std::move(args), std::move(kwargs));
}

inline absl::StatusOr<Tensor> RunBinary(absl::string_view op, const Tensor& a,
                                        const Tensor& b) {
  OpRunner r;
  return r.Run(op, {r.In(a), r.In(b)});
}

}  // namespace graft::interp_test

// Unwraps a StatusOr in a test, failing with its message.
#define GRAFT_ASSERT_OK_AND_ASSIGN(lhs, expr)                 \
  auto lhs##_or = (expr);                                     \
  ASSERT_TRUE(lhs##_or.ok()) << lhs##_or.status().ToString(); \
  auto lhs = *std::move(lhs##_or)

#endif  // GRAFT_TESTS_BACKENDS_INTERP_TEST_UTIL_H_
