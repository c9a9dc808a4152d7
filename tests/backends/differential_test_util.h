#ifndef GRAFT_TESTS_BACKENDS_DIFFERENTIAL_TEST_UTIL_H_
#define GRAFT_TESTS_BACKENDS_DIFFERENTIAL_TEST_UTIL_H_

// Differential testing of a compiled backend against the interpreter: random
// data, a small module builder, and a comparison with DESIGN's tolerances
// (section 5: f32 1e-5 relative for pointwise ops, 1e-4 for reductions and
// GEMMs; exact for integer, bool and data-movement results).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/backend.h"
#include "graph/dtype.h"
#include "graph/graph.h"
#include "graph/module.h"
#include "graph/printer.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "passes/shape_prop.h"
#include "support/status_matchers.h"

namespace graft::differential {

// Tolerances of DESIGN.md section 5, relative to the largest magnitude of
// the reference result.
inline constexpr double kPointwiseTol = 1e-5;
inline constexpr double kReduceTol = 1e-4;
inline constexpr double kExact = 0;

inline Backend& Interp() {
  static Backend* const backend = [] {
    absl::StatusOr<std::unique_ptr<Backend>> b = CreateBackend("interp");
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? b->release() : nullptr;
  }();
  return *backend;
}

// Random elements: uniform reals in [lo, hi) for floating point, uniform
// integers in [lo, hi) for integer dtypes (clamped to the dtype), fair coins
// for bool.
inline Tensor RandomData(DType dtype, const std::vector<int64_t>& dims,
                         std::mt19937_64& rng, double lo = -2, double hi = 2) {
  Tensor t(dtype, dims);
  if (dtype == DType::kBool) {
    std::bernoulli_distribution coin(0.5);
    for (int64_t i = 0; i < t.NumElements(); ++i) t.SetFromDouble(i, coin(rng));
  } else if (IsFloatingPoint(dtype)) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < t.NumElements(); ++i) t.SetFromDouble(i, dist(rng));
  } else {
    if (dtype == DType::kU8) lo = std::max(lo, 0.0);
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo),
                                                static_cast<int64_t>(hi) - 1);
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      t.SetFromDouble(i, static_cast<double>(dist(rng)));
    }
  }
  return t;
}

inline std::string DimsText(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// Expects `got` to equal `want` (the interpreter's): same dtype and shape;
// for floating point within `tol` times the largest finite magnitude of
// `want` (at least 0.1), NaN where `want` has NaN, equal infinities; other
// dtypes exactly.
inline void ExpectClose(const Tensor& got, const Tensor& want, double tol,
                        const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(DTypeName(got.dtype()), DTypeName(want.dtype()))
      << "compiled " << got.TypeString() << " vs interp " << want.TypeString();
  ASSERT_EQ(got.dims(), want.dims())
      << "compiled " << got.TypeString() << " vs interp " << want.TypeString();
  if (!IsFloatingPoint(want.dtype())) {
    if (got.BitwiseEqual(want)) return;
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < want.NumElements(); ++i) {
      if (got.GetAsDouble(i) != want.GetAsDouble(i)) {
        if (first < 0) first = i;
        ++wrong;
      }
    }
    ADD_FAILURE() << wrong << " of " << want.NumElements() << " elements of "
                  << want.TypeString() << " differ; first at flat index "
                  << first << ": compiled " << got.GetAsDouble(first)
                  << " vs interp " << want.GetAsDouble(first);
    return;
  }
  double scale = 0;
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    const double w = want.GetAsDouble(i);
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  }
  // Floored at 0.1: a result whose elements are all small (a rank-0 value,
  // gelu far left of 0) comes out of O(1) intermediates, whose rounding
  // errors are absolute, not relative to the small result.
  const double bound = tol * std::max(scale, 0.1);
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    const double w = want.GetAsDouble(i), g = got.GetAsDouble(i);
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else {
      ok = std::fabs(g - w) <= bound;
    }
    if (!ok) {
      if (first < 0) first = i;
      ++wrong;
    }
  }
  if (wrong > 0) {
    ADD_FAILURE() << wrong << " of " << want.NumElements() << " elements of "
                  << want.TypeString() << " differ beyond " << tol
                  << " x max|interp| (" << scale << "); first at flat index "
                  << first << ": compiled " << got.GetAsDouble(first)
                  << " vs interp " << want.GetAsDouble(first);
  }
}

inline void ExpectAllClose(const std::vector<Tensor>& got,
                           const std::vector<Tensor>& want, double tol,
                           const std::vector<ValueSignature>& names = {}) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ExpectClose(got[i], want[i], tol,
                absl::StrCat("output ", i,
                             i < names.size() ? " " + names[i].name : ""));
  }
}

// Builds a module node by node; each input gets random data from `rng`.
class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::mt19937_64& rng) : rng_(rng) {}

  Node* In(DType dtype, std::vector<int64_t> dims, double lo = -2,
           double hi = 2) {
    return In(RandomData(dtype, dims, rng_, lo, hi));
  }
  Node* In(const Tensor& data) {
    Node* n = graph().Placeholder(absl::StrCat("in", inputs_.size()),
                                  data.type());
    inputs_.push_back(data);
    return n;
  }
  // A module tensor read by get_attr (so library calls can prepack it).
  Node* Const(DType dtype, std::vector<int64_t> dims, double lo = -2,
              double hi = 2) {
    const std::string name = absl::StrCat("c", constants_++);
    Tensor t = RandomData(dtype, dims, rng_, lo, hi);
    module_.SetTensor(name, t);
    return graph().GetAttr(name, t.type());
  }
  Node* Const(const Tensor& t) {
    const std::string name = absl::StrCat("c", constants_++);
    module_.SetTensor(name, t);
    return graph().GetAttr(name, t.type());
  }
  Node* Call(absl::string_view op, std::vector<Argument> args,
             Kwargs kwargs = {}) {
    return graph().CallFunction(op, std::move(args), std::move(kwargs));
  }
  // Adds the output node and types every node.
  void Out(const std::vector<Node*>& outputs) {
    if (outputs.size() == 1) {
      graph().Output(outputs[0]);
    } else {
      ArgumentList list;
      for (Node* n : outputs) list.push_back(n);
      graph().Output(Argument(std::move(list)));
    }
    absl::StatusOr<bool> typed = passes::PropagateShapes(module_);
    EXPECT_TRUE(typed.ok()) << typed.status() << "\n" << PrintModule(module_);
  }

  Graph& graph() { return module_.graph(); }
  const Module& module() const { return module_; }
  const std::vector<Tensor>& inputs() const { return inputs_; }

 private:
  std::mt19937_64& rng_;
  Module module_;
  std::vector<Tensor> inputs_;
  int constants_ = 0;
};

// Compiles `module` on `backend` with `options` (the whole module: every
// node must be one the backend claims) and on the interpreter, runs both on
// `inputs` and compares.
inline void ExpectMatchesInterp(Backend& backend, const Module& module,
                                const std::vector<Tensor>& inputs, double tol,
                                const CompileOptions& options = {}) {
  // The module is printed once, when something about it failed.
  struct PrintOnFailure {
    static int Failures() {
      const ::testing::TestResult* r =
          ::testing::UnitTest::GetInstance()->current_test_info()->result();
      int n = 0;
      for (int i = 0; i < r->total_part_count(); ++i) {
        n += r->GetTestPartResult(i).failed() ? 1 : 0;
      }
      return n;
    }
    const Module& module;
    const int failures_before = Failures();
    ~PrintOnFailure() {
      if (Failures() > failures_before) {
        std::printf("the module that failed:\n%s", PrintModule(module).c_str());
      }
    }
  } print_on_failure{module};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                       Interp().Compile(module, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(inputs));
  for (const Node* n : module.graph().nodes()) {
    EXPECT_OK(backend.CanRun(*n, options)) << "%" << n->name();
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> compiled,
                       backend.Compile(module, options));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, compiled->Run(inputs));
  ExpectAllClose(got, want, tol, compiled->output_signature());
}

// Views of views, which the step program composes into one strided copy
// where it can (tests/backends/view_composition_test.cc): attention's
// split, reshape into heads, permute and transpose; slices (a negative
// start) of such views; a split of a permute; an expand adding dims to a
// slice of a permute; squeeze/unsqueeze between views; a reshape that
// cannot stay strided (the permute before it is materialized); a piece
// also read by a pointwise op and one that is an output through a reshape;
// and a view of an intermediate that must stay alive until the last view
// that reads through to it, while other values take arena space.
inline ModuleBuilder ViewsOfViews(std::mt19937_64& rng, DType dtype) {
  ModuleBuilder b(rng);
  Node* x = b.In(dtype, {2, 4, 12}, -50, 50);
  Node* split = b.Call("split", {x, int64_t{4}}, {{"dim", int64_t{-1}}});
  std::vector<Node*> out;
  for (int64_t i = 0; i < 3; ++i) {
    Node* piece = b.Call("getitem", {split, i});
    Node* heads = b.Call("reshape", {piece, Argument::IntList({2, 4, 2, 2})});
    Node* perm = b.Call("permute", {heads, Argument::IntList({0, 2, 1, 3})});
    if (i == 1) perm = b.Call("transpose", {perm, int64_t{-2}, int64_t{-1}});
    out.push_back(perm);
    if (i == 0) {
      out.push_back(b.Call("slice", {heads, int64_t{3}, int64_t{-1}}));
      out.push_back(b.Call("reshape", {piece, Argument::IntList({8, 4})}));
    }
    if (i == 1) out.push_back(b.Call("slice", {perm, int64_t{2}, int64_t{1}, int64_t{2}}));
    if (i == 2) {
      out.push_back(b.Call("abs", {piece}));
      out.push_back(b.Call("permute", {b.Call("unsqueeze", {piece, int64_t{0}}),
                                       Argument::IntList({1, 0, 3, 2})}));
    }
  }
  Node* xt = b.Call("permute", {x, Argument::IntList({0, 2, 1})});
  out.push_back(b.Call("slice", {xt, int64_t{1}, int64_t{1}, int64_t{11}, int64_t{3}}));
  out.push_back(b.Call("permute", {b.Call("reshape", {xt, Argument::IntList({2, 48})}),
                                   Argument::IntList({1, 0})}));
  Node* halves = b.Call("split", {xt, int64_t{6}}, {{"dim", int64_t{1}}});
  out.push_back(b.Call("transpose", {b.Call("getitem", {halves, int64_t{1}}), int64_t{0},
                                     int64_t{2}}));
  Node* column = b.Call("slice", {xt, int64_t{2}, int64_t{1}, int64_t{2}});
  out.push_back(b.Call("expand", {column, Argument::IntList({3, 2, 12, 4})}));
  Node* row = b.Call("slice", {x, int64_t{1}, int64_t{0}, int64_t{1}});
  out.push_back(b.Call("expand", {row, Argument::IntList({2, 4, 12})}));
  // y is read only through p's views: its bytes must outlive z's.
  Node* y = b.Call("neg", {x});
  Node* p = b.Call("permute", {y, Argument::IntList({0, 2, 1})});
  Node* z = b.Call("mul", {b.Call("amax", {x}, {{"dim", Argument::IntList({2})},
                                               {"keepdim", true}}),
                           b.Call("abs", {x})});
  out.push_back(z);
  out.push_back(b.Call("permute", {b.Call("reshape", {p, Argument::IntList({2, 12, 2, 2})}),
                                   Argument::IntList({0, 2, 1, 3})}));
  b.Out(out);
  return b;
}

}  // namespace graft::differential

#endif  // GRAFT_TESTS_BACKENDS_DIFFERENTIAL_TEST_UTIL_H_
