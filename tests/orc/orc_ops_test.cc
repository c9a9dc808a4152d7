// The orc backend against the interpreter, op by op: every op orc claims,
// on fresh random data, over broadcasting, odd sizes that cross vector
// widths, size-1 dims, rank 0 and empty tensors, in every dtype the op
// takes. Many ops share one module (one LLVM compile) where they can.

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/fallback_executable.h"
#include "backends/interp/kernel.h"
#include "gmock/gmock.h"
#include "graph/op_registry.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tests/backends/interp_test_util.h"
#include "tests/backends/test_backends.h"
#include "tests/orc/orc_test_util.h"

namespace graft::orc_test {
namespace {

using ::graft::interp_test::FreshSeed;
using ::graft::testing::StatusIs;
using ::testing::HasSubstr;

using Dims = std::vector<int64_t>;

// A fresh seed per test, printed with every failure of the test.
#define ORC_TEST_SEED(rng)                        \
  const uint32_t seed_##rng = FreshSeed();        \
  SCOPED_TRACE(absl::StrCat("seed ", seed_##rng)); \
  std::mt19937_64 rng(seed_##rng)

Argument Ints(std::vector<int64_t> v) { return Argument::IntList(v); }

// Small integers stored in a float dtype, so comparisons meet equality.
Tensor Grid(DType dtype, const Dims& dims, std::mt19937_64& rng) {
  return interp_test::CastForTest(RandomData(DType::kI64, dims, rng, -2, 3),
                                  dtype);
}

// Shapes every pointwise op is run on: rank 0, odd sizes on both sides of
// the vector widths, an empty tensor, size-1 dims.
const std::vector<Dims>& UnaryShapes() {
  static const auto* shapes = new std::vector<Dims>{
      {}, {7}, {13}, {33}, {1003}, {2, 0, 3}, {1, 1, 1}, {3, 1, 5}, {4, 257}};
  return *shapes;
}

// Pairs of operand shapes for binary ops, broadcasting included.
const std::vector<std::pair<Dims, Dims>>& BinaryShapes() {
  static const auto* shapes = new std::vector<std::pair<Dims, Dims>>{
      {{7}, {7}},       {{3, 1, 5}, {4, 1}}, {{}, {13}},     {{33}, {}},
      {{1003}, {1003}}, {{2, 0, 3}, {3}},    {{1, 1}, {1}},  {{4, 1}, {1, 6}},
      {{}, {}},         {{5, 1, 1}, {1, 7, 9}}};
  return *shapes;
}

// ---------------------------------------------------------------------------
// Pointwise ops.

void AddFloatUnaryOps(ModuleBuilder& b, Node* x, Node* p,
                      std::vector<Node*>& out) {
  // asin, acos, atanh and acosh: a third of x in their domain, NaN
  // elsewhere (which must match too).
  for (const char* op : {"neg", "abs", "relu", "exp", "sin", "cos", "tanh",
                         "sigmoid", "silu", "erf", "gelu", "logical_not",
                         "floor", "ceil", "round", "tan", "asin", "acos",
                         "atan", "sinh", "cosh", "asinh", "acosh", "atanh"}) {
    out.push_back(b.Call(op, {x}));
  }
  // Positive inputs where the function needs them; the same on x gives NaN
  // for negative elements, which must match too.
  for (const char* op : {"log", "sqrt", "rsqrt", "reciprocal"}) {
    out.push_back(b.Call(op, {p}));
    out.push_back(b.Call(op, {x}));
  }
  out.push_back(b.Call("gelu", {x}, {{"approximate", "tanh"}}));
  out.push_back(b.Call("leaky_relu", {x}));
  out.push_back(b.Call("leaky_relu", {x}, {{"negative_slope", 0.2}}));
  out.push_back(b.Call("clamp", {x}, {{"min", -0.5}}));
  out.push_back(b.Call("clamp", {x}, {{"max", 0.5}}));
  out.push_back(b.Call("clamp", {x}, {{"min", -1.0}, {"max", 0.75}}));
  out.push_back(b.Call("clamp", {x}, {{"min", int64_t{-1}}, {"max", int64_t{1}}}));
}

TEST(OrcPointwise, UnaryFloatOpsOnEveryShape) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (const Dims& dims : UnaryShapes()) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), DimsText(dims)));
      ModuleBuilder b(rng);
      Node* x = b.In(dtype, dims, -3, 3);
      Node* p = b.In(dtype, dims, 0.05, 3);
      std::vector<Node*> out;
      AddFloatUnaryOps(b, x, p, out);
      b.Out(out);
      ExpectOrcMatchesInterp(b, kPointwiseTol);
    }
  }
}

// Infinities, NaN, signed zeros and values where exp overflows f32.
TEST(OrcPointwise, UnaryFloatOpsOnSpecialValues) {
  static const double kValues[] = {-INFINITY, -100, -88, -3, -1, -0.5, -0.0,
                                   0.0,       1e-30, 0.5, 1,  3,  88,   100,
                                   INFINITY,  NAN};
  constexpr int64_t kCount = sizeof(kValues) / sizeof(kValues[0]);
  std::vector<double> values;
  for (int64_t i = 0; i < 37; ++i) values.push_back(kValues[i % kCount]);
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b(rng);
    Node* x = b.In(interp_test::T(dtype, {37}, values));
    std::vector<Node*> out;
    AddFloatUnaryOps(b, x, x, out);
    b.Out(out);
    // Values up to e^88 in one tensor: the tolerance is for the NaN and
    // infinity pattern and the large values, not for tiny ones.
    ExpectOrcMatchesInterp(b, kPointwiseTol);
  }
}

TEST(OrcPointwise, BinaryFloatOpsBroadcast) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (const auto& [sa, sb] : BinaryShapes()) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), DimsText(sa), " with ",
                                DimsText(sb)));
      ModuleBuilder b(rng);
      Node* a = b.In(dtype, sa, -3, 3);
      Node* c = b.In(dtype, sb, -3, 3);
      Node* pa = b.In(dtype, sa, 0.1, 3);
      Node* ga = b.In(Grid(dtype, sa, rng));
      Node* gb = b.In(Grid(dtype, sb, rng));
      Node* cond = b.In(DType::kBool, sa);
      std::vector<Node*> out;
      for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum"}) {
        out.push_back(b.Call(op, {a, c}));
      }
      out.push_back(b.Call("pow", {pa, c}));
      out.push_back(b.Call("pow", {a, gb}));  // Negative bases, whole powers.
      for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                             "logical_or", "maximum", "minimum"}) {
        out.push_back(b.Call(op, {ga, gb}));
      }
      out.push_back(b.Call("where", {cond, a, c}));
      // Literal operands on either side.
      out.push_back(b.Call("add", {a, 2.5}));
      out.push_back(b.Call("sub", {1.5, c}));
      out.push_back(b.Call("mul", {a, int64_t{3}}));
      out.push_back(b.Call("div", {0.5, pa}));
      out.push_back(b.Call("pow", {pa, int64_t{2}}));
      out.push_back(b.Call("pow", {2.0, a}));
      out.push_back(b.Call("maximum", {a, 0.25}));
      out.push_back(b.Call("lt", {a, int64_t{0}}));
      out.push_back(b.Call("eq", {ga, 1.0}));
      out.push_back(b.Call("where", {cond, a, 0.0}));
      out.push_back(b.Call("where", {cond, -1.5, c}));
      b.Out(out);
      ExpectOrcMatchesInterp(b, kPointwiseTol);
    }
  }
}

TEST(OrcPointwise, IntegerOps) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kI64, DType::kI32}) {
    for (const auto& [sa, sb] : BinaryShapes()) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), DimsText(sa), " with ",
                                DimsText(sb)));
      ModuleBuilder b(rng);
      Node* a = b.In(dtype, sa, -50, 50);
      Node* c = b.In(dtype, sb, -50, 50);
      Node* e = b.In(dtype, sb, 0, 5);  // Exponents.
      Node* small = b.In(dtype, sa, -8, 8);
      Node* other_int = b.In(dtype == DType::kI64 ? DType::kI32 : DType::kI64,
                             sb, -50, 50);
      Node* f = b.In(DType::kF32, sb, -3, 3);
      std::vector<Node*> out;
      for (const char* op :
           {"add", "sub", "mul", "maximum", "minimum", "div", "eq", "ne", "lt",
            "le", "gt", "ge", "logical_and", "logical_or"}) {
        out.push_back(b.Call(op, {a, c}));
      }
      out.push_back(b.Call("pow", {small, e}));
      for (const char* op : {"abs", "neg", "relu", "logical_not", "floor", "ceil", "round"}) {
        out.push_back(b.Call(op, {a}));
      }
      // Float results of integer inputs.
      for (const char* op : {"exp", "sigmoid", "sqrt", "leaky_relu"}) {
        out.push_back(b.Call(op, {small}));
      }
      out.push_back(b.Call("clamp", {a}, {{"min", int64_t{-10}}, {"max", int64_t{10}}}));
      out.push_back(b.Call("clamp", {a}, {{"min", -2.5}}));
      out.push_back(b.Call("add", {a, int64_t{3}}));
      out.push_back(b.Call("mul", {a, 2.5}));
      out.push_back(b.Call("lt", {a, 0.5}));
      out.push_back(b.Call("add", {a, other_int}));  // i32 + i64 -> i64.
      out.push_back(b.Call("ge", {a, other_int}));
      out.push_back(b.Call("add", {a, f}));  // int + f32 -> f32.
      out.push_back(b.Call("minimum", {a, f}));
      b.Out(out);
      ExpectOrcMatchesInterp(b, kPointwiseTol);
    }
  }
}

// floor, ceil and round where they differ: halves (round goes to even),
// negative zero, values past 2^23 (already whole) and non-finite ones.
TEST(OrcPointwise, RoundingAtHalvesAndEdges) {
  ORC_TEST_SEED(rng);
  std::vector<float> v;
  for (int k = -9; k <= 9; ++k) v.push_back(k / 2.0f);
  for (float x : {-0.0f, 0.49999997f, -0.49999997f, 8388609.0f, -12582913.5f,
                  INFINITY, -INFINITY, NAN}) {
    v.push_back(x);
  }
  ModuleBuilder b(rng);
  Node* x = b.In(Tensor::FromVector<float>(DType::kF32, {static_cast<int64_t>(v.size())}, v));
  b.Out({b.Call("floor", {x}), b.Call("ceil", {x}), b.Call("round", {x})});
  ExpectOrcMatchesInterp(b, kExact);
}

// Results that overflow their dtype wrap around, as in the interpreter.
TEST(OrcPointwise, IntegerOverflowWraps) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* a32 = b.In(DType::kI32, {33}, -100000, 100000);
  Node* c32 = b.In(DType::kI32, {33}, -100000, 100000);
  Node* a64 = b.In(DType::kI64, {33}, 1e18, 9e18);
  Node* c64 = b.In(DType::kI64, {33}, 1e18, 9e18);
  Node* i8 = b.In(DType::kI8, {33}, -128, 128);
  b.Out({b.Call("mul", {a32, c32}), b.Call("add", {a64, c64}),
         b.Call("sub", {b.Call("neg", {a64}), c64}), b.Call("neg", {i8}),
         b.Call("abs", {i8}), b.Call("add", {i8, i8})});
  ExpectOrcMatchesInterp(b, kExact);
}

// Integer powers multiply in the integer type: results past 2^53 are
// exact, and results past the dtype wrap around as the interpreter's do.
TEST(OrcPointwise, IntegerPowIsExactAndWraps) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kI64, DType::kI32}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b(rng);
    Node* base = b.In(dtype, {33}, -9, 10);
    Node* e = b.In(dtype, {33}, 0, 40);
    b.Out({b.Call("pow", {base, e}), b.Call("pow", {base, int64_t{21}}),
           b.Call("pow", {int64_t{3}, e})});
    ExpectOrcMatchesInterp(b, kExact);
  }
}

// u8 and i8 hold values past 127 / below 0: comparisons, max and min must
// treat them with the dtype's signedness.
TEST(OrcPointwise, SmallIntegerDtypes) {
  ORC_TEST_SEED(rng);
  for (const Dims& dims : {Dims{7}, Dims{1003}, Dims{3, 1, 5}}) {
    SCOPED_TRACE(DimsText(dims));
    ModuleBuilder b(rng);
    Node* u = b.In(DType::kU8, dims, 0, 256);
    Node* v = b.In(DType::kU8, dims, 0, 256);
    Node* s = b.In(DType::kI8, dims, -128, 128);
    Node* t = b.In(DType::kI8, dims, -128, 128);
    std::vector<Node*> out;
    for (Node* x : {u, s}) {
      Node* y = x == u ? v : t;
      for (const char* op : {"add", "sub", "mul", "maximum", "minimum", "eq",
                             "lt", "ge", "logical_and"}) {
        out.push_back(b.Call(op, {x, y}));
      }
      for (const char* op : {"relu", "abs", "logical_not", "exp"}) {
        out.push_back(b.Call(op, {x}));
      }
      out.push_back(
          b.Call("clamp", {x}, {{"min", int64_t{10}}, {"max", int64_t{100}}}));
      out.push_back(b.Call("gt", {x, int64_t{100}}));
    }
    b.Out(out);
    ExpectOrcMatchesInterp(b, kPointwiseTol);
  }
}

TEST(OrcPointwise, BoolOps) {
  ORC_TEST_SEED(rng);
  for (const auto& [sa, sb] : BinaryShapes()) {
    SCOPED_TRACE(absl::StrCat(DimsText(sa), " with ", DimsText(sb)));
    ModuleBuilder b(rng);
    Node* p = b.In(DType::kBool, sa);
    Node* q = b.In(DType::kBool, sb);
    Node* x = b.In(DType::kI64, sa, -50, 50);
    Node* y = b.In(DType::kI64, sb, -50, 50);
    Node* f = b.In(DType::kF32, sb, -3, 3);
    std::vector<Node*> out;
    for (const char* op : {"logical_and", "logical_or", "eq", "ne", "lt", "ge",
                           "add", "mul", "maximum", "minimum"}) {
      out.push_back(b.Call(op, {p, q}));
    }
    out.push_back(b.Call("logical_not", {p}));
    out.push_back(b.Call("abs", {p}));
    out.push_back(b.Call("add", {p, x}));  // bool + i64 -> i64.
    out.push_back(b.Call("mul", {q, f}));  // bool * f32 -> f32.
    out.push_back(b.Call("where", {p, x, y}));
    out.push_back(b.Call("where", {p, x, f}));
    out.push_back(b.Call("where", {p, x, int64_t{-7}}));
    out.push_back(b.Call("where", {p, q, false}));
    out.push_back(b.Call("where", {p, true, q}));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kPointwiseTol);
  }
}

TEST(OrcPointwise, Casts) {
  ORC_TEST_SEED(rng);
  for (const Dims& dims : {Dims{}, Dims{13}, Dims{1003}, Dims{2, 0, 3}}) {
    SCOPED_TRACE(DimsText(dims));
    ModuleBuilder b(rng);
    Node* f = b.In(DType::kF32, dims, -100, 100);
    Node* g = b.In(Grid(DType::kF32, dims, rng));  // Zeros among them.
    Node* u = b.In(DType::kF32, dims, 0, 255);
    Node* d = b.In(DType::kF64, dims, -100, 100);
    Node* i = b.In(DType::kI64, dims, -300, 300);
    Node* i32 = b.In(DType::kI32, dims, -1000, 1000);
    Node* bl = b.In(DType::kBool, dims);
    Node* u8 = b.In(DType::kU8, dims, 0, 256);
    std::vector<Node*> out;
    auto cast = [&](Node* x, DType to) {
      out.push_back(b.Call("cast", {x}, {{"dtype", to}}));
    };
    for (DType to : {DType::kI32, DType::kI64, DType::kI8, DType::kF64,
                     DType::kBool, DType::kF32}) {
      cast(f, to);
    }
    cast(g, DType::kBool);
    cast(g, DType::kI64);
    cast(u, DType::kU8);
    for (DType to : {DType::kF32, DType::kI32, DType::kI64, DType::kBool}) {
      cast(d, to);
    }
    for (DType to : {DType::kF32, DType::kF64, DType::kI32, DType::kI8,
                     DType::kU8, DType::kBool, DType::kI64}) {
      cast(i, to);
    }
    cast(i32, DType::kI8);
    cast(i32, DType::kI64);
    cast(i32, DType::kF32);
    for (DType to : {DType::kF32, DType::kI64, DType::kI32, DType::kU8}) {
      cast(bl, to);
    }
    for (DType to : {DType::kF32, DType::kI64, DType::kI8, DType::kBool}) {
      cast(u8, to);
    }
    b.Out(out);
    ExpectOrcMatchesInterp(b, kExact);
  }
}

// Float to integer conversions truncate toward zero and saturate, NaN
// gives 0 (the interpreter's ConvertValue); integers into narrower
// integers wrap.
TEST(OrcPointwise, CastsOutOfRange) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* f = b.In(interp_test::F32({10}, {NAN, INFINITY, -INFINITY, 1e30, -1e30, 300.7,
                                         -300.7, 127.9, -128.9, 255.5}));
  Node* i = b.In(interp_test::I64({6}, {-1, 256, 300, -129, 4294967296.0, 9e18}));
  std::vector<Node*> out;
  for (DType to : {DType::kI8, DType::kU8, DType::kI32, DType::kI64, DType::kBool}) {
    out.push_back(b.Call("cast", {f}, {{"dtype", to}}));
    out.push_back(b.Call("cast", {i}, {{"dtype", to}}));
  }
  b.Out(out);
  ExpectOrcMatchesInterp(b, kExact);
}

// Chains of pointwise ops that the backend fuses into one loop each, with
// broadcasting, dtype changes and shared inputs inside the group.
TEST(OrcPointwise, FusedChains) {
  ORC_TEST_SEED(rng);
  for (const auto& [sa, sb] : BinaryShapes()) {
    SCOPED_TRACE(absl::StrCat(DimsText(sa), " with ", DimsText(sb)));
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, sa, -3, 3);
    Node* y = b.In(DType::kF32, sb, -3, 3);
    Node* i = b.In(DType::kI64, sb, -20, 20);
    Node* c = b.In(DType::kBool, sa);
    std::vector<Node*> out;
    out.push_back(b.Call("relu", {b.Call("add", {b.Call("mul", {x, 2.0}), y})}));
    out.push_back(b.Call(
        "where", {b.Call("gt", {x, 0.0}), b.Call("exp", {x}),
                  b.Call("mul", {x, 0.1})}));
    out.push_back(b.Call(
        "mul", {b.Call("cast", {b.Call("add", {b.Call("cast", {x}, {{"dtype", DType::kI32}}),
                                               int64_t{1}})},
                       {{"dtype", DType::kF32}}),
                0.5}));
    out.push_back(b.Call("add", {b.Call("mul", {b.Call("sigmoid", {x}),
                                                b.Call("tanh", {y})}),
                                 1.0}));
    out.push_back(b.Call(
        "logical_and",
        {b.Call("gt", {b.Call("add", {b.Call("mul", {i, int64_t{3}}), i}),
                       int64_t{0}}),
         c}));
    out.push_back(b.Call("sqrt", {b.Call("abs", {b.Call("add", {i, x})})}));
    out.push_back(b.Call(
        "gelu", {b.Call("sub", {b.Call("div", {x, b.Call("add", {b.Call("abs", {y}), 1.0})}),
                                b.Call("neg", {y})})},
        {{"approximate", "tanh"}}));
    // A value used twice inside one group.
    Node* sq = b.Call("mul", {x, x});
    out.push_back(b.Call("silu", {b.Call("add", {sq, y})}));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kPointwiseTol);
  }
}

// ---------------------------------------------------------------------------
// Data movement: results must be exact.

TEST(OrcDataMovement, ViewsOfViews) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kI64}) {
    SCOPED_TRACE(DTypeName(dtype));
    ExpectOrcMatchesInterp(ViewsOfViews(rng, dtype), kExact);
  }
}

TEST(OrcDataMovement, ViewsAndAliases) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kI64, DType::kBool}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b(rng);
    Node* x = b.In(dtype, {2, 3, 4, 5}, -50, 50);
    Node* ones = b.In(dtype, {1, 3, 1, 5}, -50, 50);
    Node* e = b.In(dtype, {3, 1, 5}, -50, 50);
    Node* s = b.In(dtype, {}, -50, 50);
    Node* z = b.In(dtype, {2, 0, 3}, -50, 50);
    std::vector<Node*> out;
    // Aliases as outputs (copied), and aliases read by later steps.
    out.push_back(b.Call("reshape", {x, Ints({6, 20})}));
    out.push_back(b.Call("reshape", {x, Ints({-1, 5})}));
    out.push_back(b.Call("flatten", {x}));
    out.push_back(b.Call("flatten", {x, int64_t{1}, int64_t{2}}));
    out.push_back(b.Call("squeeze", {ones}));
    out.push_back(b.Call("squeeze", {ones, Ints({2})}));
    out.push_back(b.Call("squeeze", {ones, Ints({-4})}));
    out.push_back(b.Call("unsqueeze", {x, int64_t{0}}));
    out.push_back(b.Call("unsqueeze", {e, int64_t{-1}}));
    out.push_back(b.Call("identity", {x}));
    out.push_back(b.Call("dropout", {x}));
    out.push_back(b.Call("reshape", {s, Ints({1, 1})}));
    out.push_back(b.Call("reshape", {z, Ints({0, 6})}));
    out.push_back(b.Call(
        "permute", {b.Call("reshape", {x, Ints({6, 4, 5})}), Ints({2, 0, 1})}));
    // Copies through strides.
    out.push_back(b.Call("permute", {x, Ints({3, 1, 0, 2})}));
    out.push_back(b.Call("permute", {x, Ints({-1, 0, -2, 1})}));
    out.push_back(b.Call("transpose", {x, int64_t{0}, int64_t{3}}));
    out.push_back(b.Call("transpose", {x, int64_t{-1}, int64_t{-3}}));
    out.push_back(b.Call("transpose", {x, int64_t{1}, int64_t{1}}));
    out.push_back(b.Call("permute", {z, Ints({2, 1, 0})}));
    out.push_back(b.Call("expand", {e, Ints({2, 3, 4, 5})}));
    out.push_back(b.Call("expand", {e, Ints({2, -1, 7, -1})}));
    out.push_back(b.Call("expand", {s, Ints({3, 4})}));
    out.push_back(b.Call("expand", {ones, Ints({2, 3, 4, 5})}));
    out.push_back(b.Call("expand", {z, Ints({4, 2, 0, 3})}));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kExact);
  }
}

// Outputs that share a buffer: the same value twice, an alias of another
// output, an input, a module tensor.
TEST(OrcDataMovement, OutputsThatShareBuffers) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {3, 5}, -2, 2);
  Node* c = b.Const(DType::kF32, {3, 5}, -2, 2);
  Node* r = b.Call("relu", {x});
  b.Out({r, r, b.Call("reshape", {r, Ints({15})}), x, x, c,
         b.Call("flatten", {c}), b.Call("identity", {r})});
  ExpectOrcMatchesInterp(b, kExact);
}

// Many intermediates that cannot fuse, read again much later: the arena
// planned from their lifetimes must not let any two live ones overlap.
TEST(OrcDataMovement, ManyLiveIntermediates) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {4, 6, 5}, -2, 2);
  std::vector<Node*> kept = {x};
  Node* v = x;
  for (int i = 0; i < 12; ++i) {
    switch (i % 4) {
      case 0:
        v = b.Call("softmax", {v, int64_t{-1}});
        break;
      case 1:
        v = b.Call("transpose", {v, int64_t{0}, int64_t{1}});
        v = b.Call("transpose", {b.Call("exp", {v}), int64_t{0}, int64_t{1}});
        break;
      case 2:
        v = b.Call("layer_norm", {v, Ints({5})});
        break;
      case 3: {
        ArgumentList parts = {v, kept[kept.size() / 2]};
        v = b.Call("slice", {b.Call("concat", {Argument(parts)}, {{"dim", int64_t{-1}}})},
                   {{"dim", int64_t{-1}}, {"start", int64_t{2}}, {"end", int64_t{7}}});
        break;
      }
    }
    kept.push_back(v);
  }
  Node* total = kept[0];
  for (size_t i = 1; i < kept.size(); ++i) total = b.Call("add", {total, kept[i]});
  b.Out({total, kept[3], b.Call("sum", {kept[7]}, {{"dim", Ints({1})}})});
  ExpectOrcMatchesInterp(b, kReduceTol);
}

TEST(OrcDataMovement, Slices) {
  constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kI64, DType::kBool}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b(rng);
    Node* x = b.In(dtype, {4, 7, 5}, -50, 50);
    Node* v = b.In(dtype, {1003}, -50, 50);
    std::vector<Node*> out;
    auto slice = [&](Node* in, int64_t dim, Argument start, Argument end,
                     int64_t step) {
      out.push_back(b.Call("slice", {in}, {{"dim", dim}, {"start", start},
                                           {"end", end}, {"step", step}}));
    };
    slice(x, 1, int64_t{1}, Argument(), 1);
    slice(x, 1, Argument(), int64_t{2}, 1);
    slice(x, 1, int64_t{-2}, Argument(), 1);
    slice(x, 1, Argument(), int64_t{-1}, 1);
    slice(x, 1, int64_t{-100}, int64_t{100}, 1);
    slice(x, 1, Argument(), Argument(), 2);
    slice(x, 1, int64_t{1}, kOpen, 3);
    slice(x, -1, int64_t{1}, int64_t{4}, 2);
    slice(x, 0, int64_t{-3}, int64_t{-1}, 1);
    slice(x, 2, int64_t{4}, int64_t{5}, 7);
    slice(x, 1, int64_t{3}, int64_t{1}, 1);   // Empty.
    slice(x, 1, int64_t{9}, Argument(), 1);   // Start past the end: empty.
    slice(x, -2, int64_t{-5}, int64_t{-2}, 2);
    slice(v, 0, int64_t{1}, int64_t{1000}, 3);
    slice(v, 0, int64_t{-17}, Argument(), 1);
    // A slice read by another step, and a slice of a slice.
    Node* inner = b.Call("slice", {x}, {{"dim", int64_t{1}}, {"start", int64_t{2}},
                                       {"end", int64_t{6}}, {"step", int64_t{1}}});
    out.push_back(b.Call("slice", {inner}, {{"dim", int64_t{2}}, {"start", int64_t{1}},
                                           {"step", int64_t{2}}}));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kExact);
  }
}

TEST(OrcDataMovement, ConcatPadSplit) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kI64, DType::kBool}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b(rng);
    Node* x = b.In(dtype, {2, 3, 4, 5}, -50, 50);
    Node* x1 = b.In(dtype, {2, 1, 4, 5}, -50, 50);
    Node* x0 = b.In(dtype, {2, 0, 4, 5}, -50, 50);
    Node* w = b.In(dtype, {2, 3, 4, 2}, -50, 50);
    Node* v = b.In(dtype, {1003}, -50, 50);
    Node* v7 = b.In(dtype, {7}, -50, 50);
    Node* m = b.In(dtype, {7, 6}, -50, 50);
    Node* f = b.In(DType::kF32, {2, 3, 4, 5}, -3, 3);
    Node* z = b.In(dtype, {3, 0}, -50, 50);
    std::vector<Node*> out;
    auto list = [](std::vector<Node*> nodes) {
      ArgumentList l;
      for (Node* n : nodes) l.push_back(n);
      return Argument(std::move(l));
    };
    out.push_back(b.Call("concat", {list({x, x})}));
    out.push_back(b.Call("concat", {list({x, x1, x0, x})}, {{"dim", int64_t{1}}}));
    out.push_back(b.Call("concat", {list({x, w})}, {{"dim", int64_t{-1}}}));
    out.push_back(b.Call("concat", {list({v, v7, v})}));
    out.push_back(b.Call("concat", {list({x0, x0})}, {{"dim", int64_t{1}}}));
    out.push_back(b.Call("concat", {list({x, f})}, {{"dim", int64_t{2}}}));  // Promotes.
    out.push_back(b.Call("concat", {list({m})}));
    // pad: last dim first, (before, after) pairs.
    out.push_back(b.Call("pad", {m, Ints({1, 2})}));
    out.push_back(b.Call("pad", {m, Ints({1, 2, 3, 0})}, {{"value", 1.0}}));
    out.push_back(b.Call("pad", {x, Ints({0, 0, 2, 2})}, {{"value", -1.0}}));
    out.push_back(b.Call("pad", {x, Ints({1, 1, 1, 1, 1, 1, 1, 1})}));
    out.push_back(b.Call("pad", {m, Ints({-1, 1})}));  // Crops.
    out.push_back(b.Call("pad", {m, Ints({0, 0, -2, -3})}));
    out.push_back(b.Call("pad", {v, Ints({5, 9})}));
    out.push_back(b.Call("pad", {z, Ints({1, 1})}, {{"value", 1.0}}));
    out.push_back(b.Call("pad", {x0, Ints({1, 0})}));
    // Mirrored and repeated edges (reflect pads stay below the dim).
    out.push_back(b.Call("pad", {m, Ints({5, 2, 1, 6})}, {{"mode", "reflect"}}));
    out.push_back(b.Call("pad", {x, Ints({1, 4, 3, 0})}, {{"mode", "reflect"}}));
    out.push_back(b.Call("pad", {m, Ints({7, 1, 0, 9})}, {{"mode", "replicate"}}));
    out.push_back(b.Call("pad", {x1, Ints({2, 2, 2, 2, 3, 1})}, {{"mode", "replicate"}}));
    // split: every piece through getitem, negative indices included.
    Node* chunks = b.Call("split", {m, int64_t{3}});
    for (int64_t i : {0, 1, 2, -1}) {
      out.push_back(b.Call("getitem", {chunks, i}));
    }
    Node* sections =
        b.Call("split", {m, Ints({2, 0, 4})}, {{"dim", int64_t{-1}}});
    for (int64_t i : {0, 1, 2, -2}) {
      out.push_back(b.Call("getitem", {sections, i}));
    }
    Node* pieces = b.Call("split", {x, Ints({1, 2})}, {{"dim", int64_t{1}}});
    out.push_back(b.Call("getitem", {pieces, int64_t{1}}));
    out.push_back(b.Call("getitem", {pieces, int64_t{-2}}));
    Node* vs = b.Call("split", {v, int64_t{100}});
    out.push_back(b.Call("getitem", {vs, int64_t{10}}));
    out.push_back(b.Call("getitem", {vs, int64_t{3}}));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kExact);
  }
}

// ---------------------------------------------------------------------------
// Reductions and normalizations.

std::vector<std::optional<std::vector<int64_t>>> DimChoices() {
  return {std::nullopt, std::vector<int64_t>{0},    std::vector<int64_t>{1},
          std::vector<int64_t>{2}, std::vector<int64_t>{-1},
          std::vector<int64_t>{0, 2}, std::vector<int64_t>{-1, -3},
          std::vector<int64_t>{0, 1, 2}, std::vector<int64_t>{}};
}

Kwargs ReduceKwargs(const std::optional<std::vector<int64_t>>& dims,
                    bool keepdim) {
  Kwargs k = {{"keepdim", keepdim}};
  if (dims.has_value()) k.push_back({"dim", Ints(*dims)});
  return k;
}

TEST(OrcReduce, FloatReductionsOverDimLists) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " keepdim ", keepdim));
      ModuleBuilder b(rng);
      Node* x = b.In(dtype, {3, 5, 7}, -3, 3);
      std::vector<Node*> out;
      for (const auto& dims : DimChoices()) {
        for (const char* op : {"sum", "mean", "amax", "amin"}) {
          out.push_back(b.Call(op, {x}, ReduceKwargs(dims, keepdim)));
        }
      }
      b.Out(out);
      ExpectOrcMatchesInterp(b, kReduceTol);
    }
  }
}

// Long rows. Their data has a positive mean, so that each sum is well
// conditioned: a sum of 13,000 signed terms that cancels to almost nothing
// differs between f32 accumulation (orc) and the interpreter's double by
// more than 1e-4 of its small result, and says nothing about orc. (Signed
// data with cancellation runs in the short rows above.)
TEST(OrcReduce, LongAndOddRows) {
  ORC_TEST_SEED(rng);
  for (const Dims& dims : {Dims{1003}, Dims{13, 1003}, Dims{33, 1, 7}}) {
    SCOPED_TRACE(DimsText(dims));
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, dims, -1, 3);
    std::vector<Node*> out;
    for (const char* op : {"sum", "mean", "amax", "amin"}) {
      out.push_back(b.Call(op, {x}));
      out.push_back(b.Call(op, {x}, {{"dim", Ints({0})}}));
      out.push_back(b.Call(op, {x}, {{"dim", Ints({-1})}, {"keepdim", true}}));
    }
    b.Out(out);
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

TEST(OrcReduce, RankZeroAndEmpty) {
  ORC_TEST_SEED(rng);
  {
    SCOPED_TRACE("rank 0");
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {}, -3, 3);
    std::vector<Node*> out;
    for (const char* op : {"sum", "mean", "amax", "amin"}) {
      out.push_back(b.Call(op, {x}));
      out.push_back(b.Call(op, {x}, {{"keepdim", true}}));
      out.push_back(b.Call(op, {x}, {{"dim", Ints({0})}}));
      out.push_back(b.Call(op, {x}, {{"dim", Ints({-1})}, {"keepdim", true}}));
    }
    b.Out(out);
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
  {
    SCOPED_TRACE("empty");
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {2, 0, 3}, -3, 3);
    Node* i = b.In(DType::kI64, {2, 0, 3}, -3, 3);
    std::vector<Node*> out;
    out.push_back(b.Call("sum", {x}, {{"dim", Ints({1})}}));  // Zeros.
    out.push_back(b.Call("sum", {x}));
    out.push_back(b.Call("sum", {i}, {{"dim", Ints({1})}, {"keepdim", true}}));
    out.push_back(b.Call("mean", {x}, {{"dim", Ints({1})}}));  // NaN.
    for (const char* op : {"amax", "amin", "sum", "mean"}) {
      out.push_back(b.Call(op, {x}, {{"dim", Ints({0})}}));  // Empty result.
      out.push_back(b.Call(op, {x}, {{"dim", Ints({2})}, {"keepdim", true}}));
    }
    b.Out(out);
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

TEST(OrcReduce, IntegerAndBoolReductions) {
  ORC_TEST_SEED(rng);
  struct Input {
    DType dtype;
    double lo, hi;
  };
  for (const Input& in : {Input{DType::kI64, -50, 50}, Input{DType::kI32, -50, 50},
                          Input{DType::kI8, -128, 128}, Input{DType::kU8, 0, 256},
                          Input{DType::kBool, 0, 2}}) {
    SCOPED_TRACE(DTypeName(in.dtype));
    ModuleBuilder b(rng);
    Node* x = b.In(in.dtype, {3, 5, 7}, in.lo, in.hi);
    std::vector<Node*> out;
    for (const auto& dims : DimChoices()) {
      for (const char* op : {"sum", "amax", "amin"}) {
        out.push_back(b.Call(op, {x}, ReduceKwargs(dims, false)));
      }
    }
    out.push_back(b.Call("sum", {x}, {{"dim", Ints({1})}, {"keepdim", true}}));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kExact);
  }
}

TEST(OrcReduce, SoftmaxAlongEveryDim) {
  ORC_TEST_SEED(rng);
  struct Case {
    DType dtype;
    Dims dims;
    double range;
  };
  for (const Case& c :
       {Case{DType::kF32, {4, 7}, 5}, Case{DType::kF32, {2, 3, 5}, 5},
        Case{DType::kF32, {1003}, 5}, Case{DType::kF32, {3, 1003}, 50},
        Case{DType::kF32, {2, 0, 3}, 5}, Case{DType::kF32, {1, 1, 9}, 5},
        Case{DType::kF64, {4, 7}, 50}, Case{DType::kF32, {}, 5}}) {
    SCOPED_TRACE(absl::StrCat(DTypeName(c.dtype), DimsText(c.dims)));
    ModuleBuilder b(rng);
    Node* x = b.In(c.dtype, c.dims, -c.range, c.range);
    std::vector<Node*> out;
    const int64_t rank = static_cast<int64_t>(c.dims.size());
    for (int64_t dim = -std::max<int64_t>(rank, 1);
         dim < std::max<int64_t>(rank, 1); ++dim) {
      out.push_back(b.Call("softmax", {x, dim}));
      out.push_back(b.Call("log_softmax", {x, dim}));
    }
    b.Out(out);
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

// Rows with NaN, masked (-inf) entries, only -inf, and +inf: the NaN
// pattern must be the interpreter's (PyTorch's) whatever the shift.
TEST(OrcReduce, SoftmaxOnSpecialValues) {
  ORC_TEST_SEED(rng);
  const double inf = INFINITY;
  const std::vector<double> rows = {1,    NAN,  2,    -0.5,  // NaN spreads.
                                    -inf, 0,    1,    -inf,  // Masked.
                                    -inf, -inf, -inf, -inf,  // All masked: NaN.
                                    inf,  1,    0,    2,     // +inf: NaN.
                                    3,    3,    3,    3};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b(rng);
    Node* x = b.In(interp_test::T(dtype, {5, 4}, rows));
    b.Out({b.Call("softmax", {x, int64_t{-1}}), b.Call("log_softmax", {x, int64_t{-1}}),
           b.Call("softmax", {x, int64_t{0}})});
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

TEST(OrcReduce, LayerNorm) {
  ORC_TEST_SEED(rng);
  struct Case {
    DType dtype;
    Dims dims;
    Dims normalized;
  };
  for (const Case& c : {Case{DType::kF32, {4, 7}, {7}},
                        Case{DType::kF32, {2, 3, 5}, {3, 5}},
                        Case{DType::kF32, {2, 3, 5}, {5}},
                        Case{DType::kF32, {3, 1003}, {1003}},
                        Case{DType::kF32, {7}, {7}},
                        Case{DType::kF32, {0, 7}, {7}},
                        Case{DType::kF32, {2, 1, 1}, {1, 1}},
                        Case{DType::kF64, {4, 2, 7}, {2, 7}}}) {
    SCOPED_TRACE(absl::StrCat(DTypeName(c.dtype), DimsText(c.dims), " over ",
                              DimsText(c.normalized)));
    ModuleBuilder b(rng);
    Node* x = b.In(c.dtype, c.dims, -3, 5);
    Node* w = b.In(c.dtype, c.normalized, 0.5, 2);
    Node* bias = b.In(c.dtype, c.normalized, -1, 1);
    Node* cw = b.Const(c.dtype, c.normalized, 0.5, 2);
    const Argument shape = Ints(c.normalized);
    std::vector<Node*> out;
    out.push_back(b.Call("layer_norm", {x, shape}));
    out.push_back(b.Call("layer_norm", {x, shape, w, bias}));
    out.push_back(b.Call("layer_norm", {x, shape}, {{"weight", w}}));
    out.push_back(b.Call("layer_norm", {x, shape}, {{"bias", bias}}));
    out.push_back(b.Call("layer_norm", {x, shape, cw, bias}, {{"eps", 1e-3}}));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

TEST(OrcReduce, BatchNorm) {
  ORC_TEST_SEED(rng);
  for (const Dims& dims : {Dims{5, 3}, Dims{2, 3, 4, 5}, Dims{1, 7, 13},
                           Dims{2, 3, 0, 4}, Dims{4, 1}}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), DimsText(dims)));
      const Dims channels = {dims[1]};
      ModuleBuilder b(rng);
      Node* x = b.In(dtype, dims, -3, 3);
      Node* mean = b.In(dtype, channels, -1, 1);
      Node* var = b.In(dtype, channels, 0.25, 2);
      Node* w = b.In(dtype, channels, 0.5, 2);
      Node* bias = b.Const(dtype, channels, -1, 1);
      std::vector<Node*> out;
      out.push_back(b.Call("batch_norm", {x, mean, var, w, bias}));
      out.push_back(b.Call("batch_norm", {x, mean, var}));
      out.push_back(b.Call("batch_norm", {x, mean, var}, {{"weight", w}, {"eps", 0.1}}));
      out.push_back(b.Call("batch_norm", {x, mean, var}, {{"bias", bias}}));
      b.Out(out);
      ExpectOrcMatchesInterp(b, kReduceTol);
    }
  }
}

// ---------------------------------------------------------------------------
// Matrix products (oneDNN).

TEST(OrcGemm, Linear) {
  ORC_TEST_SEED(rng);
  struct Case {
    Dims input;
    int64_t out;
  };
  for (const Case& c : {Case{{5, 8}, 16}, Case{{2, 3, 8}, 4}, Case{{8}, 3},
                        Case{{7, 13}, 33}, Case{{0, 8}, 4}, Case{{1, 1}, 1},
                        Case{{3, 1000}, 17}}) {
    SCOPED_TRACE(absl::StrCat(DimsText(c.input), " -> ", c.out));
    const int64_t k = c.input.back();
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, c.input, -1, 1);
    Node* w = b.In(DType::kF32, {c.out, k}, -1, 1);
    Node* bias = b.In(DType::kF32, {c.out}, -1, 1);
    Node* cw = b.Const(DType::kF32, {c.out, k}, -1, 1);
    Node* cb = b.Const(DType::kF32, {c.out}, -1, 1);
    b.Out({b.Call("linear", {x, w}), b.Call("linear", {x, w}, {{"bias", bias}}),
           b.Call("linear", {x, cw, cb}), b.Call("linear", {x, cw})});
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

TEST(OrcGemm, Matmul) {
  ORC_TEST_SEED(rng);
  struct Case {
    Dims a, b;
  };
  for (const Case& c : {Case{{5, 7}, {7, 3}}, Case{{2, 5, 7}, {7, 3}},
                        Case{{5, 7}, {2, 7, 3}}, Case{{2, 5, 7}, {2, 7, 3}},
                        Case{{2, 1, 5, 7}, {3, 7, 4}}, Case{{3, 1, 5, 7}, {1, 2, 7, 4}},
                        Case{{7}, {7, 3}}, Case{{2, 5, 7}, {7}},
                        Case{{7}, {7}}, Case{{7}, {4, 7, 3}},
                        Case{{33, 130}, {130, 65}}, Case{{1, 1}, {1, 1}},
                        Case{{0, 7}, {7, 3}}, Case{{4, 0}, {0, 3}},
                        // Small products of computed values are generated
                        // loops: a long K is summed in a loop, not written out.
                        Case{{2, 4, 16, 16}, {2, 4, 16, 16}}, Case{{2, 3, 40}, {2, 40, 5}},
                        Case{{3, 33}, {4, 33, 17}},
                        // Empty results: no columns, no batches.
                        Case{{4, 7}, {7, 0}}, Case{{0, 4, 7}, {7, 3}},
                        Case{{0, 2, 3}, {1, 3, 4}}}) {
    for (DType dtype : {DType::kF32, DType::kF64}) {  // f64: generated, any size.
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), DimsText(c.a), " @ ", DimsText(c.b)));
      ModuleBuilder b(rng);
      Node* x = b.In(dtype, c.a, -1, 1);
      Node* y = b.In(dtype, c.b, -1, 1);
      Node* cy = b.Const(dtype, c.b, -1, 1);
      b.Out({b.Call("matmul", {x, y}), b.Call("matmul", {x, cy})});
      ExpectOrcMatchesInterp(b, kReduceTol);
    }
  }
}

TEST(OrcGemm, LinearActivation) {
  ORC_TEST_SEED(rng);
  for (const char* activation : {"relu", "gelu", "gelu_tanh"}) {
    for (const char* layout : {"out_in", "in_out"}) {
      for (const Dims& input : {Dims{5, 8}, Dims{2, 3, 13}, Dims{13}}) {
        SCOPED_TRACE(absl::StrCat(activation, " ", layout, " ", DimsText(input)));
        const int64_t k = input.back(), n = 11;
        const Dims wdims = std::string(layout) == "out_in" ? Dims{n, k} : Dims{k, n};
        ModuleBuilder b(rng);
        Node* x = b.In(DType::kF32, input, -2, 2);
        Node* w = b.In(DType::kF32, wdims, -1, 1);
        Node* bias = b.In(DType::kF32, {n}, -1, 1);
        Node* cw = b.Const(DType::kF32, wdims, -1, 1);
        const Kwargs kw = {{"activation", activation}, {"weight_layout", layout}};
        Kwargs with_bias = kw;
        with_bias.push_back({"bias", bias});
        b.Out({b.Call("graft::linear_activation", {x, w}, with_bias),
               b.Call("graft::linear_activation", {x, cw}, kw)});
        ExpectOrcMatchesInterp(b, kReduceTol);
      }
    }
  }
}

// GEMMs inside a graph: results of other steps as operands, and pointwise
// work on the GEMM's result.
TEST(OrcGemm, BetweenOtherSteps) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {2, 6, 16}, -1, 1);
  Node* w1 = b.Const(DType::kF32, {32, 16}, -0.5, 0.5);
  Node* b1 = b.Const(DType::kF32, {32}, -0.5, 0.5);
  Node* w2 = b.Const(DType::kF32, {16, 32}, -0.5, 0.5);
  Node* ln_w = b.Const(DType::kF32, {16}, 0.5, 1.5);
  Node* h = b.Call("gelu", {b.Call("linear", {b.Call("relu", {x}), w1, b1})});
  Node* y = b.Call("add", {b.Call("linear", {h, w2}), x});
  Node* n = b.Call("layer_norm", {y, Ints({16})}, {{"weight", ln_w}});
  Node* q = b.Call("slice", {n}, {{"dim", int64_t{-1}}, {"end", int64_t{8}}});
  Node* k = b.Call("slice", {n}, {{"dim", int64_t{-1}}, {"start", int64_t{8}}});
  Node* scores = b.Call("matmul", {q, b.Call("transpose", {k, int64_t{-1}, int64_t{-2}})});
  Node* attn = b.Call("softmax", {b.Call("mul", {scores, 0.35}), int64_t{-1}});
  b.Out({b.Call("matmul", {attn, k}), h});
  ExpectOrcMatchesInterp(b, kReduceTol);
}

// relu and gelu right after a library call become its post-op; not when
// something else reads the call's result.
TEST(OrcGemm, ActivationsAfterLibraryCalls) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {6, 10}, -2, 2);
  Node* w = b.Const(DType::kF32, {12, 10}, -1, 1);
  Node* bias = b.In(DType::kF32, {12}, -1, 1);
  Node* m = b.In(DType::kF32, {10, 7}, -1, 1);
  Node* shared = b.Call("linear", {x, w, bias});
  b.Out({b.Call("relu", {b.Call("linear", {x, w, bias})}),
         b.Call("gelu", {b.Call("linear", {x, w})}),
         b.Call("gelu", {b.Call("matmul", {x, m})}, {{"approximate", "tanh"}}),
         b.Call("relu", {shared}), b.Call("neg", {shared}),
         b.Call("relu", {b.Call("graft::linear_activation", {x, w},
                                {{"activation", "gelu"}})})});
  ExpectOrcMatchesInterp(b, kReduceTol);
}

// matmul by a constant weight plus a constant bias, which orc turns into
// linear; and the near misses it must leave alone.
TEST(OrcGemm, MatmulPlusBias) {
  ORC_TEST_SEED(rng);
  for (const Dims& input : {Dims{5, 8}, Dims{2, 3, 8}, Dims{1, 8}}) {
    SCOPED_TRACE(DimsText(input));
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, input, -1, 1);
    Node* w = b.Const(DType::kF32, {8, 11}, -1, 1);
    Node* bias = b.Const(DType::kF32, {11}, -1, 1);
    Node* one = b.Const(DType::kF32, {1}, -1, 1);
    Node* row = b.Const(DType::kF32, {1, 11}, -1, 1);
    Node* live_bias = b.In(DType::kF32, {11}, -1, 1);
    Node* shared = b.Call("matmul", {x, w});
    b.Out({b.Call("add", {b.Call("matmul", {x, w}), bias}),
           b.Call("add", {bias, b.Call("matmul", {x, w})}),
           b.Call("relu", {b.Call("add", {b.Call("matmul", {x, w}), bias})}),
           b.Call("add", {b.Call("matmul", {x, w}), one}),
           b.Call("add", {b.Call("matmul", {x, w}), row}),
           b.Call("add", {b.Call("matmul", {x, w}), live_bias}),
           b.Call("add", {shared, bias}), b.Call("neg", {shared})});
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

// Linear layers small enough to run as generated loops (up to 2^14
// multiply-adds): with and without bias, with ReLU in both weight layouts,
// a computed weight, K up to 32 (sums in registers) and beyond, 3-D
// inputs, and NaN rows (ReLU keeps NaN).
TEST(OrcGemm, SmallLinearLayersAsLoops) {
  ORC_TEST_SEED(rng);
  for (const auto& [rows, k, n] : std::vector<std::tuple<Dims, int64_t, int64_t>>{
           {{2}, 8, 32}, {{3, 5}, 7, 9}, {{4}, 33, 40}, {{1}, 1, 1}, {{6}, 64, 30}}) {
    SCOPED_TRACE(absl::StrCat(DimsText(rows), " k ", k, " n ", n));
    ModuleBuilder b(rng);
    Dims xd = rows;
    xd.push_back(k);
    Node* x = b.In(DType::kF32, xd, -1, 1);
    Node* w = b.Const(DType::kF32, {n, k}, -1, 1);
    Node* w_in_out = b.Const(DType::kF32, {k, n}, -1, 1);
    Node* bias = b.Const(DType::kF32, {n}, -1, 1);
    Node* live_w = b.In(DType::kF32, {n, k}, -1, 1);
    b.Out({b.Call("linear", {x, w}), b.Call("linear", {x, w}, {{"bias", bias}}),
           b.Call("linear", {x, live_w}, {{"bias", bias}}),
           b.Call("graft::linear_activation", {x, w, bias}),
           b.Call("graft::linear_activation", {x, w_in_out}, {{"weight_layout", "in_out"}})});
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
  // Operands given as keyword arguments, in another order.
  {
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {3, 8}, -1, 1);
    Node* w = b.Const(DType::kF32, {6, 8}, -1, 1);
    Node* bias = b.Const(DType::kF32, {6}, -1, 1);
    Node* m = b.In(DType::kF32, {8, 5}, -1, 1);
    b.Out({b.Call("linear", {}, {{"bias", bias}, {"input", x}, {"weight", w}}),
           b.Call("linear", {}, {{"weight", w}, {"input", x}}),
           b.Call("matmul", {}, {{"other", m}, {"input", x}})});
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
  // A scalar bias (linear's type rule allows one), small and large: orc
  // refuses both (generated loops and oneDNN take one bias per feature),
  // and through the fallback the result is the interpreter's.
  {
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {3, 8}, -1, 1);
    Node* scalar = b.Const(DType::kF32, {}, -1, 1);
    Node* small = b.Call("linear", {x, b.Const(DType::kF32, {6, 8}, -1, 1)}, {{"bias", scalar}});
    Node* large = b.Call("linear", {x, b.Const(DType::kF32, {300, 8}, -1, 1)}, {{"bias", scalar}});
    b.Out({small, large});
    EXPECT_FALSE(Orc().CanRun(*small, {}).ok());
    EXPECT_FALSE(Orc().CanRun(*large, {}).ok());
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(b.inputs()));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> compiled,
                         CompileWithFallback(Orc(), b.module(), {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, compiled->Run(b.inputs()));
    ExpectAllClose(got, want, kReduceTol);
  }
  // A NaN in a row gives a NaN row, through the ReLU too (oneDNN's fused
  // ReLU, for larger layers, gives 0 there: docs/ops.md).
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{3, 4}}) {
    ModuleBuilder b(rng);
    Tensor x = RandomData(DType::kF32, {2, k}, rng);
    x.SetFromDouble(1, NAN);
    Node* in = b.In(x);
    Node* w = b.Const(DType::kF32, {n, k}, -1, 1);
    b.Out({b.Call("graft::linear_activation", {in, w}), b.Call("linear", {in, w})});
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

// Steps of the same op on the same shapes share one function, compiled
// once: a chain of 20 (linear, tanh) pairs with 20 different weights
// leaves the entry function and the two shared steps in the optimized IR
// (GRAFT_ORC_DUMP_IR), where single-use steps would all be inlined into
// the entry. The results are the interpreter's.
TEST(OrcProgram, IdenticalStepsShareOneFunction) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* y = b.In(DType::kF32, {2, 8}, -1, 1);
  for (int i = 0; i < 20; ++i) {
    y = b.Call("tanh", {b.Call("linear", {y, b.Const(DType::kF32, {8, 8}, -1, 1)})});
  }
  b.Out({y});
  const std::string dir = absl::StrCat(::testing::TempDir(), "/graft_ir_", getpid());
  std::filesystem::create_directories(dir);
  setenv("GRAFT_ORC_DUMP_IR", dir.c_str(), 1);
  ExpectOrcMatchesInterp(b, kReduceTol);
  unsetenv("GRAFT_ORC_DUMP_IR");
  std::ifstream ir(dir + "/graft.ll");
  ASSERT_TRUE(ir.good()) << dir;
  int defined = 0;
  for (std::string line; std::getline(ir, line);) defined += absl::StartsWith(line, "define ");
  EXPECT_EQ(defined, 3);
  std::filesystem::remove_all(dir);
}

TEST(OrcGemm, Conv2d) {
  ORC_TEST_SEED(rng);
  struct Case {
    Dims input;
    int64_t out_channels;
    Dims kernel;
    Kwargs kwargs;
    int64_t groups = 1;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 9}, 4, {3, 3}, {}},
      {{2, 3, 9, 9}, 4, {3, 3}, {{"stride", Ints({2})}, {"padding", Ints({1})}}},
      {{1, 3, 13, 11}, 5, {3, 2},
       {{"stride", Ints({2, 1})}, {"padding", Ints({1, 0})}, {"dilation", Ints({2, 1})}}},
      {{2, 6, 8, 8}, 9, {3, 3}, {{"groups", int64_t{3}}}, 3},
      {{2, 4, 7, 7}, 4, {3, 3}, {{"groups", int64_t{4}}, {"padding", Ints({1})}}, 4},
      {{3, 9, 9}, 4, {1, 1}, {}},
      {{1, 1, 1, 1}, 1, {1, 1}, {}},
      {{0, 3, 5, 5}, 2, {3, 3}, {}},
  };
  for (const Case& c : cases) {
    const int64_t channels = c.input[c.input.size() - 3];
    SCOPED_TRACE(absl::StrCat(DimsText(c.input), " -> ", c.out_channels,
                              " kernel ", DimsText(c.kernel), " groups ", c.groups));
    const Dims wdims = {c.out_channels, channels / c.groups, c.kernel[0], c.kernel[1]};
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, c.input, -1, 1);
    Node* w = b.In(DType::kF32, wdims, -1, 1);
    Node* bias = b.In(DType::kF32, {c.out_channels}, -1, 1);
    Node* cw = b.Const(DType::kF32, wdims, -1, 1);
    auto conv = [&](Node* weight, Node* bias_or_null) {
      Kwargs kw = c.kwargs;
      if (bias_or_null != nullptr) kw.push_back({"bias", bias_or_null});
      return b.Call("conv2d", {x, weight}, kw);
    };
    b.Out({conv(w, bias), conv(cw, nullptr), b.Call("relu", {conv(cw, bias)}),
           b.Call("gelu", {conv(w, nullptr)}),
           b.Call("gelu", {conv(cw, bias)}, {{"approximate", "tanh"}})});
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

// Convolutions whose results orc may keep channels-last (NHWC), read by
// every kind of step: pointwise ones (also broadcasting against NCHW
// values), batch_norm (folded into the convolution when constant),
// pooling, and steps that need NCHW (reshape, reductions, softmax,
// concat, slice, permute, another convolution, outputs).
TEST(OrcGemm, ConvolutionsFeedingEveryKindOfStep) {
  ORC_TEST_SEED(rng);
  for (const Dims& input : {Dims{2, 3, 10, 9}, Dims{1, 4, 7, 7}}) {
    SCOPED_TRACE(DimsText(input));
    const int64_t c = input[1];
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, input, -1, 1);
    Node* w1 = b.Const(DType::kF32, {8, c, 3, 3}, -0.5, 0.5);
    Node* b1 = b.Const(DType::kF32, {8}, -0.5, 0.5);
    Node* w2 = b.Const(DType::kF32, {8, 8, 3, 3}, -0.3, 0.3);
    Node* w3 = b.Const(DType::kF32, {8, 8, 1, 1}, -0.5, 0.5);
    Node* mean = b.Const(DType::kF32, {8}, -0.5, 0.5);
    Node* var = b.Const(DType::kF32, {8}, 0.5, 2);
    Node* gamma = b.Const(DType::kF32, {8}, 0.5, 1.5);
    Node* beta = b.Const(DType::kF32, {8}, -0.5, 0.5);
    Node* live_mean = b.In(DType::kF32, {8}, -0.5, 0.5);
    Node* per_channel = b.In(DType::kF32, {1, 8, 1, 1}, -1, 1);
    Node* c1 = b.Call("conv2d", {x, w1}, {{"bias", b1}, {"padding", Ints({1})}});
    Node* bn = b.Call("batch_norm", {c1, mean, var, gamma, beta});
    Node* r = b.Call("relu", {bn});
    Node* c2 = b.Call("conv2d", {r, w2}, {{"padding", Ints({1})}});
    Node* bn2 = b.Call("batch_norm", {c2, live_mean, var});  // Not foldable.
    Node* sum = b.Call("add", {b.Call("mul", {bn2, per_channel}), r});
    Node* pooled = b.Call("max_pool2d", {sum}, {{"kernel_size", Ints({2})}});
    Node* avg = b.Call("avg_pool2d", {sum}, {{"kernel_size", Ints({3})}, {"stride", Ints({2})},
                                             {"padding", Ints({1})}});
    Node* c3 = b.Call("conv2d", {pooled, w3});
    Node* gap = b.Call("adaptive_avg_pool2d", {c3, Ints({1, 1})});
    ArgumentList pair = {c1, sum};
    b.Out({b.Call("flatten", {gap, int64_t{1}}), c1, pooled, avg,
           b.Call("sum", {c2}, {{"dim", Ints({1})}}),
           b.Call("softmax", {c3, int64_t{1}}),
           b.Call("concat", {Argument(pair)}, {{"dim", int64_t{1}}}),
           b.Call("slice", {c2}, {{"dim", int64_t{1}}, {"start", int64_t{2}},
                                  {"end", int64_t{5}}}),
           b.Call("permute", {c3, Ints({0, 2, 3, 1})}),
           b.Call("reshape", {b.Call("sigmoid", {c2}), Ints({-1})}),
           b.Call("mean", {b.Call("gelu", {c1}), Ints({2, 3})}),
           // A channels-last value broadcast into a rank-5 product.
           b.Call("mul", {c2, b.In(DType::kF32, {2, input[0], 8, input[2], input[3]}, -1, 1)})});
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

TEST(OrcReduce, Pooling) {
  ORC_TEST_SEED(rng);
  for (const Dims& dims : {Dims{2, 3, 11, 9}, Dims{3, 11, 9}, Dims{1, 2, 4, 4}}) {
    SCOPED_TRACE(DimsText(dims));
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, dims, -3, 3);
    std::vector<Node*> out;
    const std::vector<Kwargs> windows = {
        {{"kernel_size", Ints({3})}},
        {{"kernel_size", Ints({2})}},
        {{"kernel_size", Ints({3})}, {"stride", Ints({2})}, {"padding", Ints({1})}},
        {{"kernel_size", Ints({3, 2})}, {"stride", Ints({2, 1})},
         {"padding", Ints({1, 0})}},
        {{"kernel_size", Ints({3})}, {"stride", Ints({2})}, {"ceil_mode", true}},
        {{"kernel_size", Ints({3})}, {"stride", Ints({2})}, {"padding", Ints({1})},
         {"ceil_mode", true}},
    };
    for (const Kwargs& w : windows) {
      out.push_back(b.Call("max_pool2d", {x}, w));
      out.push_back(b.Call("avg_pool2d", {x}, w));
      Kwargs exclusive = w;
      exclusive.push_back({"count_include_pad", false});
      out.push_back(b.Call("avg_pool2d", {x}, exclusive));
    }
    out.push_back(b.Call("max_pool2d", {x}, {{"kernel_size", Ints({2, 2})},
                                             {"dilation", Ints({2})}}));
    out.push_back(b.Call("max_pool2d", {x}, {{"kernel_size", Ints({3})},
                                             {"padding", Ints({1})},
                                             {"dilation", Ints({1, 2})}}));
    for (const Dims& size : {Dims{1, 1}, Dims{3, 2}, Dims{4}, Dims{11, 9},
                             Dims{13, 10}}) {
      out.push_back(b.Call("adaptive_avg_pool2d", {x, Ints(size)}));
    }
    b.Out(out);
    ExpectOrcMatchesInterp(b, kReduceTol);
  }
}

// After a convolution, pooling reads channels-last (NHWC) values: windows
// that cross the border, dilated and uneven ones, and NaN, which wins
// whichever tap it is in.
TEST(OrcReduce, MaxPoolChannelsLastWithNaN) {
  ORC_TEST_SEED(rng);
  for (int64_t channels : {3, 8, 17}) {
    SCOPED_TRACE(channels);
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {2, 4, 9, 7}, -2, 2);
    Node* w = b.Const(DType::kF32, {channels, 4, 1, 1}, -1, 1);
    std::vector<double> holes(2 * channels * 9 * 7, 0.0);
    for (size_t i = 0; i < holes.size(); i += 29) holes[i] = NAN;
    Node* nans = b.In(interp_test::T(DType::kF32, {2, channels, 9, 7}, holes));
    Node* act = b.Call("add", {b.Call("conv2d", {x, w}), nans});
    std::vector<Node*> out;
    const std::vector<Kwargs> windows = {
        {{"kernel_size", Ints({3})}, {"stride", Ints({2})}, {"padding", Ints({1})}},
        {{"kernel_size", Ints({3, 2})}, {"stride", Ints({1, 2})}, {"padding", Ints({1, 0})}},
        {{"kernel_size", Ints({3})}, {"stride", Ints({2})}, {"ceil_mode", true}},
        {{"kernel_size", Ints({3})}, {"padding", Ints({1})}, {"dilation", Ints({2, 1})}},
        {{"kernel_size", Ints({6})}},  // More taps than kept in registers.
    };
    for (const Kwargs& k : windows) out.push_back(b.Call("max_pool2d", {act}, k));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kReduceTol);  // The convolutions round differently.
  }
}

// Running sums along every dim, forwards and backwards, inclusive and
// exclusive; integers and bool sum in i64.
TEST(OrcReduce, Cumsum) {
  ORC_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kBool}) {
    for (const Dims& dims : {Dims{2, 5, 3}, Dims{7}, Dims{}, Dims{3, 1, 4}, Dims{2, 0, 3}}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), DimsText(dims)));
      ModuleBuilder b(rng);
      Node* x = b.In(dtype, dims, -3, 3);
      std::vector<Node*> out;
      const int64_t rank = std::max<int64_t>(static_cast<int64_t>(dims.size()), 1);
      for (int64_t dim = -rank; dim < rank; ++dim) {
        for (bool exclusive : {false, true}) {
          for (bool reverse : {false, true}) {
            out.push_back(b.Call("cumsum", {x, dim},
                                 {{"exclusive", exclusive}, {"reverse", reverse}}));
          }
        }
      }
      b.Out(out);
      ExpectOrcMatchesInterp(b, IsFloatingPoint(dtype) ? kReduceTol : kExact);
    }
  }
}

TEST(OrcReduce, MaxPoolOnIntegers) {
  ORC_TEST_SEED(rng);
  struct Input {
    DType dtype;
    double lo, hi;
  };
  for (const Input& in : {Input{DType::kI64, -50, 50}, Input{DType::kI32, -50, 50},
                          Input{DType::kI8, -128, 128}, Input{DType::kU8, 0, 256}}) {
    SCOPED_TRACE(DTypeName(in.dtype));
    ModuleBuilder b(rng);
    Node* x = b.In(in.dtype, {2, 3, 7, 7}, in.lo, in.hi);
    b.Out({b.Call("max_pool2d", {x}, {{"kernel_size", Ints({3})}}),
           b.Call("max_pool2d", {x}, {{"kernel_size", Ints({3})},
                                      {"stride", Ints({2})},
                                      {"padding", Ints({1})}})});
    ExpectOrcMatchesInterp(b, kExact);
  }
}

// ---------------------------------------------------------------------------
// Quantization, index lookups, argmax and creation ops.

// Values on a grid of quarter steps, so x / 0.5 meets every .5 tie.
Tensor QuarterGrid(DType dtype, const Dims& dims, std::mt19937_64& rng, int64_t lo,
                   int64_t hi) {
  Tensor ints = RandomData(DType::kI64, dims, rng, static_cast<double>(lo),
                           static_cast<double>(hi));
  Tensor t(dtype, dims);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    t.SetFromDouble(i, ints.GetAsDouble(i) * 0.25);
  }
  return t;
}

TEST(OrcQuant, QuantizeAndDequantize) {
  ORC_TEST_SEED(rng);
  for (const Dims& dims : {Dims{2, 3, 5}, Dims{1003}, Dims{}, Dims{2, 0, 3}}) {
    SCOPED_TRACE(DimsText(dims));
    const int64_t rank = static_cast<int64_t>(dims.size());
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, dims, -40, 40);
    Node* ties = b.In(QuarterGrid(DType::kF32, dims, rng, -200, 200));
    Node* d = b.In(DType::kF64, dims, -3, 3);
    Node* q8 = b.In(DType::kI8, dims, -128, 128);
    Node* qu = b.In(DType::kU8, dims, 0, 256);
    Node* q32 = b.In(DType::kI32, dims, -1000, 1000);
    Node* one_scale = b.In(DType::kF32, {1}, 0.05, 0.5);
    Node* one_zp = b.In(DType::kI64, {}, -5, 5);
    std::vector<Node*> out;
    auto quantize = [&](Node* in, double scale, int64_t zp, DType dtype) {
      out.push_back(b.Call("quantize_per_tensor", {in, scale, zp, dtype}));
    };
    quantize(x, 0.1, 0, DType::kI8);  // Saturates both ends.
    quantize(x, 0.37, 5, DType::kI8);
    quantize(x, 0.2, 128, DType::kU8);
    quantize(ties, 0.5, 0, DType::kI8);  // Round half to even.
    quantize(ties, 0.5, 3, DType::kU8);
    // Ties again, at a scale whose reciprocal is inexact (1 / 0.765625),
    // where x times the rounded reciprocal misses about one tie in four:
    // orc's division made from a multiply must round them as the
    // interpreter's division does.
    out.push_back(b.Call("quantize_per_tensor",
                         {b.Call("mul", {ties, 1.53125}), 0.765625, int64_t{0}, DType::kI8}));
    quantize(d, 0.01, -7, DType::kI8);
    out.push_back(b.Call("dequantize", {q8, 0.1, int64_t{3}}));
    out.push_back(b.Call("dequantize", {qu, 0.25, int64_t{128}}, {{"dtype", DType::kF64}}));
    out.push_back(b.Call("dequantize", {q32, 0.001, int64_t{0}}));
    out.push_back(b.Call("dequantize", {q8, one_scale, one_zp}));
    // A round trip through both, fused with pointwise work around it.
    out.push_back(b.Call(
        "relu", {b.Call("dequantize",
                        {b.Call("quantize_per_tensor",
                                {b.Call("mul", {x, 0.5}), 0.05, int64_t{-3}, DType::kI8}),
                         0.05, int64_t{-3}})}));
    if (rank >= 2) {
      const int64_t c = dims[1];
      Node* scales = b.In(DType::kF32, {c}, 0.05, 0.5);
      Node* scales64 = b.In(DType::kF64, {c}, 0.05, 0.5);
      Node* zps = b.In(DType::kI64, {c}, -10, 10);
      Node* zps32 = b.In(DType::kI32, {c}, 100, 150);
      out.push_back(b.Call("quantize_per_channel",
                           {x, scales, zps, int64_t{1}, DType::kI8}));
      out.push_back(b.Call("quantize_per_channel",
                           {ties, scales64, zps32, int64_t{1 - rank}, DType::kU8}));
      out.push_back(b.Call("dequantize", {q8, scales, zps}, {{"axis", int64_t{1}}}));
      out.push_back(b.Call("dequantize", {qu, scales64, int64_t{7}},
                           {{"axis", int64_t{1 - rank}}, {"dtype", DType::kF64}}));
    }
    b.Out(out);
    ExpectOrcMatchesInterp(b, kPointwiseTol);
  }
}

TEST(OrcQuant, QuantizeSpecialValues) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(interp_test::T(DType::kF32, {8},
                                {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e30, -1e30, 12.5}));
  b.Out({b.Call("quantize_per_tensor", {x, 0.5, int64_t{2}, DType::kI8}),
         b.Call("quantize_per_tensor", {x, 0.5, int64_t{200}, DType::kU8}),
         // A subnormal scale, whose reciprocal is infinite: 0 / scale is 0.
         b.Call("quantize_per_tensor", {x, 1e-310, int64_t{3}, DType::kI8})});
  ExpectOrcMatchesInterp(b, kExact);
}

TEST(OrcIndex, GatherIndexSelectEmbedding) {
  ORC_TEST_SEED(rng);
  for (DType index_type : {DType::kI64, DType::kI32}) {
    for (DType dtype : {DType::kF32, DType::kI64, DType::kBool}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " by ", DTypeName(index_type)));
      ModuleBuilder b(rng);
      Node* x = b.In(dtype, {4, 7, 5}, -50, 50);
      Node* table = b.In(dtype, {10, 6}, -50, 50);
      Node* v = b.In(dtype, {1003}, -50, 50);
      Node* s = b.In(dtype, {}, -50, 50);
      Node* g0 = b.In(index_type, {3, 7, 5}, 0, 4);
      Node* g1 = b.In(index_type, {4, 9, 2}, 0, 7);
      Node* g2 = b.In(index_type, {2, 3, 5}, 0, 5);
      Node* sel = b.In(index_type, {6}, 0, 7);
      Node* sel0 = b.In(index_type, {}, 0, 4);
      Node* ids = b.In(index_type, {2, 3}, 0, 10);
      Node* ids1 = b.In(index_type, {1003}, 0, 10);
      Node* vsel = b.In(index_type, {13}, 0, 1003);
      Node* empty = b.In(index_type, {0}, 0, 4);
      b.Out({b.Call("gather", {x, int64_t{0}, g0}), b.Call("gather", {x, int64_t{1}, g1}),
             b.Call("gather", {x, int64_t{-1}, g2}),
             b.Call("index_select", {x, int64_t{1}, sel}),
             b.Call("index_select", {x, int64_t{-3}, sel0}),
             b.Call("index_select", {x, int64_t{0}, empty}),
             b.Call("index_select", {v, int64_t{0}, vsel}),
             b.Call("index_select", {s, int64_t{0}, b.In(index_type, {1}, 0, 1)}),
             b.Call("embedding", {ids, table}), b.Call("embedding", {ids1, table}),
             b.Call("embedding", {sel0, table})});
      ExpectOrcMatchesInterp(b, kExact);
    }
  }
}

// An index out of range is an error of the run, with a message, on both
// backends; the executable keeps working for good indices.
TEST(OrcIndex, OutOfRangeIndicesFailTheRun) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* table = b.In(DType::kF32, {10, 6}, -1, 1);
  Node* ids = b.In(DType::kI64, {5}, 0, 10);
  Node* x = b.In(DType::kF32, {4, 7}, -1, 1);
  Node* g = b.In(DType::kI64, {4, 7}, 0, 7);
  b.Out({b.Call("embedding", {ids, table}), b.Call("gather", {x, int64_t{1}, g}),
         b.Call("index_select", {x, int64_t{0}, ids})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp,
                       Interp().Compile(b.module(), {}));
  std::vector<Tensor> good = b.inputs();
  good[1] = interp_test::I64({5}, {0, 1, 2, 3, 3});
  ASSERT_OK(orc->Run(good).status());
  for (const std::vector<double>& bad :
       {std::vector<double>{0, 1, 2, 3, 10}, std::vector<double>{-1, 0, 0, 0, 0},
        std::vector<double>{0, 1, 2, 3, 1e12}}) {
    std::vector<Tensor> in = good;
    in[1] = interp_test::I64({5}, bad);
    SCOPED_TRACE(absl::StrCat("index ", bad[0], ",", bad[4]));
    EXPECT_FALSE(interp->Run(in).ok());
    EXPECT_THAT(orc->Run(in), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("out of range")));
  }
  std::vector<Tensor> in = good;
  in[3] = interp_test::T(DType::kI64, {4, 7}, std::vector<double>(28, 7));
  EXPECT_FALSE(orc->Run(in).ok());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run(good));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(good));
  ExpectAllClose(got, want, kExact);
}

TEST(OrcIndex, Argmax) {
  ORC_TEST_SEED(rng);
  struct Input {
    DType dtype;
    double lo, hi;
    bool grid;
  };
  for (const Input& in : {Input{DType::kF32, -3, 3, false}, Input{DType::kF32, 0, 0, true},
                          Input{DType::kF64, -3, 3, false}, Input{DType::kI64, -3, 3, false},
                          Input{DType::kU8, 0, 256, false}, Input{DType::kI8, -128, 128, false},
                          Input{DType::kBool, 0, 2, false}}) {
    SCOPED_TRACE(absl::StrCat(DTypeName(in.dtype), in.grid ? " grid" : ""));
    ModuleBuilder b(rng);
    const Dims dims = {3, 5, 7};
    Node* x = in.grid ? b.In(Grid(in.dtype, dims, rng)) : b.In(in.dtype, dims, in.lo, in.hi);
    Node* v = b.In(in.dtype, {1003}, in.lo, in.hi);
    Node* s = b.In(in.dtype, {}, in.lo, in.hi);
    std::vector<Node*> out;
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      out.push_back(b.Call("argmax", {x}, {{"dim", dim}}));
      out.push_back(b.Call("argmax", {x}, {{"dim", dim}, {"keepdim", true}}));
    }
    out.push_back(b.Call("argmax", {x}));
    out.push_back(b.Call("argmax", {x}, {{"keepdim", true}}));
    out.push_back(b.Call("argmax", {v}));
    out.push_back(b.Call("argmax", {s}));
    out.push_back(b.Call("argmax", {s}, {{"dim", int64_t{0}}}));
    b.Out(out);
    ExpectOrcMatchesInterp(b, kExact);
  }
  // NaN counts as the maximum; the first one wins.
  ModuleBuilder b(rng);
  Node* x = b.In(interp_test::F32({2, 5}, {1, NAN, 3, NAN, 2, -INFINITY, -INFINITY, 0, 5, 5}));
  b.Out({b.Call("argmax", {x}, {{"dim", int64_t{1}}}), b.Call("argmax", {x}),
         b.Call("argmax", {x}, {{"dim", int64_t{0}}})});
  ExpectOrcMatchesInterp(b, kExact);
}

TEST(OrcCreate, ZerosFullArange) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {3, 4}, -1, 1);
  std::vector<Node*> out;
  out.push_back(b.Call("zeros", {Ints({3, 4})}));
  out.push_back(b.Call("zeros", {Ints({})}, {{"dtype", DType::kI64}}));
  out.push_back(b.Call("zeros", {Ints({2, 0})}, {{"dtype", DType::kBool}}));
  out.push_back(b.Call("full", {Ints({5}), 2.5}));
  out.push_back(b.Call("full", {Ints({2, 3}), int64_t{-7}}, {{"dtype", DType::kI32}}));
  out.push_back(b.Call("full", {Ints({1003}), true}, {{"dtype", DType::kBool}}));
  // Float literals into integer dtypes truncate and saturate; integer
  // literals are exact, and wrap into narrower dtypes.
  out.push_back(b.Call("full", {Ints({4}), 300.7}, {{"dtype", DType::kU8}}));
  out.push_back(b.Call("full", {Ints({4}), -1e30}, {{"dtype", DType::kI64}}));
  out.push_back(b.Call("full", {Ints({4}), 1e30}, {{"dtype", DType::kI64}}));
  out.push_back(b.Call("full", {Ints({4}), -2.9}, {{"dtype", DType::kI32}}));
  out.push_back(b.Call("full", {Ints({4}), int64_t{300}}, {{"dtype", DType::kU8}}));
  out.push_back(b.Call("full", {Ints({2}), int64_t{9007199254740993}},
                       {{"dtype", DType::kI64}}));
  out.push_back(b.Call("arange", {int64_t{0}, int64_t{10}}));
  out.push_back(b.Call("arange", {int64_t{-5}, int64_t{1003}, int64_t{7}}));
  out.push_back(b.Call("arange", {int64_t{10}, int64_t{-3}, int64_t{-4}}));
  out.push_back(b.Call("arange", {0.5, 3.0, 0.3}));
  out.push_back(b.Call("arange", {int64_t{0}, int64_t{5}}, {{"dtype", DType::kF32}}));
  out.push_back(b.Call("arange", {-1.5, 4.0, 1.5}, {{"dtype", DType::kI64}}));
  out.push_back(b.Call("arange", {int64_t{3}, int64_t{3}}));
  out.push_back(b.Call("arange", {0.0, 1.0, 0.1}, {{"dtype", DType::kF64}}));
  // Created values used by later steps.
  out.push_back(b.Call("add", {x, b.Call("arange", {int64_t{0}, int64_t{4}})}));
  out.push_back(b.Call("mul", {x, b.Call("full", {Ints({3, 1}), 3.0})}));
  b.Out(out);
  ExpectOrcMatchesInterp(b, kPointwiseTol);
  // A module of creation ops only: no inputs at all.
  ModuleBuilder c(rng);
  c.Out({c.Call("arange", {int64_t{0}, int64_t{6}}), c.Call("zeros", {Ints({2})})});
  ExpectOrcMatchesInterp(c, kExact);
}

// ---------------------------------------------------------------------------
// What the backend claims, and how it fails.

// An op only this test knows (schema and interpreter kernel): orc cannot
// have code for it, whatever else it learns.
const char kMysteryOp[] = "orc_test::mystery";

void RegisterMysteryOp() {
  static const bool registered = [] {
    OpSchema schema;
    schema.name = kMysteryOp;
    schema.params = {ParamSpec{"input", ParamKind::kTensor}};
    schema.infer = [](const InferContext& ctx)
        -> absl::StatusOr<std::vector<TensorType>> {
      return std::vector<TensorType>{ctx.Type("input")};
    };
    EXPECT_OK(OpRegistry::Global().Register(std::move(schema)));
    auto kernel =
        [](const interp::KernelContext& ctx) -> absl::StatusOr<interp::Value> {
      absl::StatusOr<Tensor> x = ctx.Input("input");
      if (!x.ok()) return x.status();
      Tensor out(x->dtype(), x->dims());
      for (int64_t i = 0; i < x->NumElements(); ++i) {
        out.SetFromDouble(i, 3 * x->GetAsDouble(i) + 1);
      }
      return interp::Value(out);
    };
    EXPECT_OK(interp::KernelTable::Global().Register(kMysteryOp, kernel));
    return true;
  }();
  (void)registered;
}

TEST(OrcCanRun, RefusesAnUnknownOpWithAReasonAndFallsBack) {
  RegisterMysteryOp();
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {4, 9}, -2, 2);
  Node* m = b.Call(kMysteryOp, {b.Call("relu", {x})});
  b.Out({b.Call("softmax", {b.Call("exp", {m}), int64_t{-1}})});
  const Node* mystery = nullptr;
  for (const Node* n : b.module().graph().nodes()) {
    if (n->is_call(kMysteryOp)) mystery = n;
  }
  ASSERT_NE(mystery, nullptr);
  const absl::Status reason = Orc().CanRun(*mystery, {});
  EXPECT_THAT(reason, StatusIs(absl::StatusCode::kUnimplemented,
                               HasSubstr(kMysteryOp)));
  // Compile refuses it; CompileWithFallback runs it on the interpreter and
  // the rest on orc.
  EXPECT_FALSE(Orc().Compile(b.module(), {}).ok());
  CompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                       CompileWithFallback(Orc(), b.module(), {}, &report));
  ASSERT_EQ(report.breaks.size(), 1u);
  EXPECT_EQ(report.breaks[0].op, kMysteryOp);
  EXPECT_EQ(report.breaks[0].reason, std::string(reason.message()));
  EXPECT_EQ(report.backend_partitions, 2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                       Interp().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(b.inputs()));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run(b.inputs()));
  ExpectAllClose(got, want, kReduceTol);

  // The same with a symbolic batch: orc's parts compile at each size.
  ModuleBuilder s(rng);
  Node* y = s.graph().Placeholder("y", TensorType{DType::kF32, {Dim::Symbol("n"), 9}});
  s.Out({s.Call("softmax", {s.Call(kMysteryOp, {s.Call("relu", {y})}), int64_t{0}})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> split,
                       CompileWithFallback(Orc(), s.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> whole,
                       Interp().Compile(s.module(), {}));
  for (int64_t n : {1, 4, 1}) {
    SCOPED_TRACE(absl::StrCat("n ", n));
    const std::vector<Tensor> in = {RandomData(DType::kF32, {n, 9}, rng)};
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got_n, split->Run(in));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want_n, whole->Run(in));
    ExpectAllClose(got_n, want_n, kReduceTol);
  }
}

TEST(OrcCanRun, RefusesTrainingDropout) {
  ORC_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {4, 9}, -2, 2);
  Node* d = b.Call("dropout", {x}, {{"training", true}});
  b.Out({d});
  EXPECT_THAT(Orc().CanRun(*d, {}), StatusIs(absl::StatusCode::kUnimplemented,
                                             HasSubstr("training")));
}

// Whatever CanRun accepts, Compile must compile: else CompileWithFallback
// fails where it should have fallen back.
TEST(OrcCanRun, WhatItClaimsItCompiles) {
  ORC_TEST_SEED(rng);
  struct Case {
    const char* what;
    std::function<Node*(ModuleBuilder&)> build;
  };
  const std::vector<Case> cases = {
      {"linear f64",
       [](ModuleBuilder& b) {
         return b.Call("linear", {b.In(DType::kF64, {3, 4}), b.In(DType::kF64, {5, 4}),
                                  b.In(DType::kF64, {5})});
       }},
      {"matmul i64",
       [](ModuleBuilder& b) {
         return b.Call("matmul", {b.In(DType::kI64, {3, 4}, -5, 5),
                                  b.In(DType::kI64, {4, 2}, -5, 5)});
       }},
      {"linear_activation f64",
       [](ModuleBuilder& b) {
         return b.Call("graft::linear_activation",
                       {b.In(DType::kF64, {3, 4}), b.In(DType::kF64, {5, 4})});
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ModuleBuilder b(rng);
    Node* n = c.build(b);
    b.Out({b.Call("relu", {n})});
    CompileReport report;
    absl::StatusOr<std::unique_ptr<Executable>> e =
        CompileWithFallback(Orc(), b.module(), {}, &report);
    ASSERT_OK(e.status());
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                         Interp().Compile(b.module(), {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(b.inputs()));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, (*e)->Run(b.inputs()));
    ExpectAllClose(got, want, kReduceTol);
    if (Orc().CanRun(*n, {}).ok()) {
      EXPECT_OK(Orc().Compile(b.module(), {}).status());
    } else {
      EXPECT_EQ(report.breaks.size(), 1u);
    }
  }
}

// ---------------------------------------------------------------------------
// Executables: threads, symbolic sizes, bad inputs.

constexpr absl::string_view kBlock = R"(
tensor w1 : f32[32,16] = random(seed=1)
tensor b1 : f32[32] = random(seed=2)
tensor w2 : f32[16,32] = random(seed=3)
tensor g : f32[16] = random(seed=4)

graph():
    %x : f32[batch,16] = placeholder[target=x]
    %w1 : f32[32,16] = get_attr[target=w1]
    %b1 : f32[32] = get_attr[target=b1]
    %w2 : f32[16,32] = get_attr[target=w2]
    %g : f32[16] = get_attr[target=g]
    %fc1 = call_function[target=linear](args = (%x, %w1), kwargs = {bias: %b1})
    %act = call_function[target=gelu](args = (%fc1,), kwargs = {})
    %fc2 = call_function[target=linear](args = (%act, %w2), kwargs = {})
    %res = call_function[target=add](args = (%fc2, %x), kwargs = {})
    %ln = call_function[target=layer_norm](args = (%res, [16]), kwargs = {weight: %g})
    %sm = call_function[target=softmax](args = (%ln,), kwargs = {dim: -1})
    %total = call_function[target=sum](args = (%sm,), kwargs = {dim: [0]})
    return (sm, total)
)";

Module Block() {
  absl::StatusOr<Module> m = ParseModule(kBlock);
  EXPECT_OK(m);
  return m.ok() ? *std::move(m) : Module();
}

constexpr absl::string_view kConvNet = R"(
tensor k : f32[8,3,3,3] = random(seed=5)
tensor kb : f32[8] = random(seed=6)
tensor fw : f32[5,32] = random(seed=7)

graph():
    %x : f32[2,3,8,8] = placeholder[target=x]
    %k : f32[8,3,3,3] = get_attr[target=k]
    %kb : f32[8] = get_attr[target=kb]
    %fw : f32[5,32] = get_attr[target=fw]
    %conv = call_function[target=conv2d](args = (%x, %k), kwargs = {bias: %kb, padding: [1]})
    %act = call_function[target=relu](args = (%conv,), kwargs = {})
    %pool = call_function[target=max_pool2d](args = (%act, [3]), kwargs = {stride: [3]})
    %flat = call_function[target=flatten](args = (%pool, 1), kwargs = {})
    %fc = call_function[target=linear](args = (%flat, %fw), kwargs = {})
    return (fc, pool)
)";

// Runs `m` from four threads at once, each on its own inputs: every result
// equals the one a single-threaded run gave for the same inputs.
void ExpectConcurrentRunsMatch(const Module& m, const Dims& input_dims,
                               std::mt19937_64& rng) {
  CompileOptions fixed;
  fixed.input_types = {TensorType{DType::kF32, Shape(input_dims.begin(), input_dims.end())}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Orc().Compile(m, fixed));
  constexpr int kThreads = 4, kRuns = 60;
  std::vector<std::vector<Tensor>> inputs(kThreads);
  std::vector<std::vector<std::vector<Tensor>>> single(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRuns; ++r) {
      inputs[t].push_back(RandomData(DType::kF32, input_dims, rng));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, e->Run({inputs[t].back()}));
      single[t].push_back(std::move(out));
    }
  }
  // The single-threaded results are right to begin with.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                       Interp().Compile(m, fixed));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run({inputs[0][0]}));
  ExpectAllClose(single[0][0], want, kReduceTol);

  std::atomic<int> mismatches{0}, errors{0};
  std::vector<double> worst(kThreads, 0.0);  // Largest difference, per thread.
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        absl::StatusOr<std::vector<Tensor>> out = e->Run({inputs[t][r]});
        if (!out.ok()) {
          ++errors;
          continue;
        }
        for (size_t i = 0; i < out->size(); ++i) {
          if (!(*out)[i].BitwiseEqual(single[t][r][i])) {
            ++mismatches;
            for (int64_t k = 0; k < (*out)[i].NumElements(); ++k) {
              worst[t] = std::max(worst[t], std::fabs((*out)[i].GetAsDouble(k) -
                                                      single[t][r][i].GetAsDouble(k)));
            }
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0)
      << "outputs differ from the single-threaded run's by up to "
      << *std::max_element(worst.begin(), worst.end());
}

TEST(OrcExecutable, ConcurrentRunsMatchASingleThread) {
  ORC_TEST_SEED(rng);
  {
    SCOPED_TRACE("linear block");
    ExpectConcurrentRunsMatch(Block(), {24, 16}, rng);
  }
  SCOPED_TRACE("conv net");
  absl::StatusOr<Module> conv = ParseModule(kConvNet);
  ASSERT_OK(conv.status());
  ExpectConcurrentRunsMatch(*conv, {2, 3, 8, 8}, rng);
}

// A symbolic executable whose first runs at several new sizes come from
// several threads at once: each size is compiled once, every result right.
TEST(OrcExecutable, ConcurrentFirstRunsAtNewSizes) {
  ORC_TEST_SEED(rng);
  Module m = Block();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Orc().Compile(m, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(m, {}));
  constexpr int kThreads = 4;
  std::vector<std::vector<Tensor>> inputs, want;
  for (int t = 0; t < 2 * kThreads; ++t) {
    inputs.push_back({RandomData(DType::kF32, {1 + t % 5, 16}, rng)});
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> w, reference->Run(inputs.back()));
    want.push_back(std::move(w));
  }
  std::vector<absl::StatusOr<std::vector<Tensor>>> got(inputs.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < inputs.size(); i += kThreads) got[i] = e->Run(inputs[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("run ", i, " at batch ", inputs[i][0].dim(0)));
    ASSERT_OK(got[i].status());
    ExpectAllClose(*got[i], want[i], kReduceTol);
  }
}

// Inputs held by another device are brought to the host first.
TEST(OrcExecutable, InputsOnAnotherDevice) {
  ORC_TEST_SEED(rng);
  Module m = Block();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Orc().Compile(m, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(m, {}));
  auto device = std::make_shared<backend_test::FakeDeviceAllocator>();
  const Tensor host = RandomData(DType::kF32, {3, 16}, rng);
  ASSERT_OK_AND_ASSIGN(Tensor on_device, CopyToDevice(host, device));
  ASSERT_FALSE(on_device.on_host());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({on_device}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run({host}));
  for (const Tensor& t : got) EXPECT_TRUE(t.on_host());
  ExpectAllClose(got, want, kReduceTol);
  EXPECT_GT(device->to_host.load(), 0);
}

TEST(OrcExecutable, SymbolicBatchCompiledOnceRunsAtEverySize) {
  ORC_TEST_SEED(rng);
  Module m = Block();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Orc().Compile(m, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                       Interp().Compile(m, {}));
  for (int64_t batch : {1, 3, 8, 3, 1}) {
    SCOPED_TRACE(absl::StrCat("batch ", batch));
    std::vector<Tensor> in = {RandomData(DType::kF32, {batch, 16}, rng)};
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run(in));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(in));
    EXPECT_EQ(got[0].dims(), (Dims{batch, 16}));
    ExpectAllClose(got, want, kReduceTol);
  }
  // A symbolic dim shared by two inputs, and one of size 0.
  ModuleBuilder b(rng);
  Node* x = b.graph().Placeholder("x", TensorType{DType::kF32, {Dim::Symbol("n"), 5}});
  Node* y = b.graph().Placeholder("y", TensorType{DType::kF32, {Dim::Symbol("n"), 1}});
  b.Out({b.Call("sum", {b.Call("mul", {x, y})}, {{"dim", Ints({0})}}),
         b.Call("relu", {b.Call("sub", {x, y})})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e2, Orc().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> r2,
                       Interp().Compile(b.module(), {}));
  for (int64_t n : {4, 0, 1003}) {
    SCOPED_TRACE(absl::StrCat("n ", n));
    std::vector<Tensor> in = {RandomData(DType::kF32, {n, 5}, rng),
                              RandomData(DType::kF32, {n, 1}, rng)};
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e2->Run(in));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, r2->Run(in));
    ExpectAllClose(got, want, kReduceTol);
  }
}

TEST(OrcExecutable, WrongInputsGiveClearErrors) {
  Module m = Block();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> symbolic, Orc().Compile(m, {}));
  CompileOptions fixed;
  fixed.input_types = {TensorType{DType::kF32, {4, 16}}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> fixed_e, Orc().Compile(m, fixed));
  for (Executable* e : {symbolic.get(), fixed_e.get()}) {
    EXPECT_THAT(e->Run({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("expected 1 input")));
    EXPECT_THAT(e->Run({Tensor(DType::kF32, {4, 16}), Tensor(DType::kF32, {4, 16})}),
                StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(e->Run({Tensor(DType::kI64, {4, 16})}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x")));
    EXPECT_THAT(e->Run({Tensor(DType::kF32, {4, 15})}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x")));
    EXPECT_THAT(e->Run({Tensor(DType::kF32, {4, 16, 1})}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x")));
    EXPECT_THAT(e->Run({Tensor(DType::kF32, {16})}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x")));
    EXPECT_THAT(e->Run({Tensor()}), StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_THAT(fixed_e->Run({Tensor(DType::kF32, {5, 16})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x")));
  // Still good after all that.
  EXPECT_OK(fixed_e->Run({Tensor(DType::kF32, {4, 16})}).status());
  EXPECT_OK(symbolic->Run({Tensor(DType::kF32, {2, 16})}).status());

  // Sizes for which the module's types do not work out (an odd count
  // reshaped to two rows) are an error of the run, not a crash.
  std::mt19937_64 rng(1);
  ModuleBuilder b(rng);
  Node* x = b.graph().Placeholder("x", TensorType{DType::kF32, {Dim::Symbol("a")}});
  b.Out({b.Call("relu", {b.Call("reshape", {x, Ints({2, -1})})})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Orc().Compile(b.module(), {}));
  EXPECT_FALSE(e->Run({Tensor(DType::kF32, {3})}).ok());
  EXPECT_OK(e->Run({Tensor(DType::kF32, {4})}).status());
  // One symbol bound to two sizes.
  ModuleBuilder b2(rng);
  Node* p = b2.graph().Placeholder("p", TensorType{DType::kF32, {Dim::Symbol("n")}});
  Node* q = b2.graph().Placeholder("q", TensorType{DType::kF32, {Dim::Symbol("n")}});
  b2.Out({b2.Call("mul", {p, q})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e2, Orc().Compile(b2.module(), {}));
  EXPECT_THAT(e2->Run({Tensor(DType::kF32, {3}), Tensor(DType::kF32, {4})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n")));
}

TEST(OrcExecutable, RefusesBadOptions) {
  Module m = Block();
  CompileOptions typo;
  typo.options = {{"thread", "2"}};
  EXPECT_THAT(Orc().Compile(m, typo), StatusIs(absl::StatusCode::kInvalidArgument,
                                               HasSubstr("thread")));
  CompileOptions bad;
  bad.options = {{"threads", "many"}};
  EXPECT_THAT(Orc().Compile(m, bad), StatusIs(absl::StatusCode::kInvalidArgument));
  CompileOptions gpu;
  gpu.device_index = 1;
  EXPECT_THAT(Orc().Compile(m, gpu), StatusIs(absl::StatusCode::kInvalidArgument));
  CompileOptions two;
  two.options = {{"threads", "2"}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Orc().Compile(m, two));
  EXPECT_OK(e->Run({Tensor(DType::kF32, {3, 16})}).status());
}

// matmul_precision=bf16: matrix products by constant weights multiply in
// bf16; the results stay within DESIGN's bf16 tolerance (1e-2) of the
// interpreter's f32 ones. Without AVX512_BF16 the option is refused with a
// reason.
TEST(OrcExecutable, Bf16MatmulsStayWithinTheBf16Tolerance) {
  Module m = Block();
  CompileOptions bf16;
  bf16.options = {{"matmul_precision", "bf16"}};
  absl::StatusOr<std::unique_ptr<Executable>> e = Orc().Compile(m, bf16);
  if (!__builtin_cpu_supports("avx512bf16")) {
    EXPECT_THAT(e, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("AVX512_BF16")));
    GTEST_SKIP() << "this CPU has no AVX512_BF16";
  }
  ASSERT_OK(e);
  std::mt19937_64 rng(FreshSeed());
  // 512 rows: layers of 262k multiply-adds, which run through oneDNN
  // (tiny ones run as generated f32 loops whatever the precision).
  const Tensor x = RandomData(DType::kF32, {512, 16}, rng);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(m, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run({x}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, (*e)->Run({x}));
  ExpectAllClose(got, want, 1e-2, (*e)->output_signature());
  // Not f32: bf16 products round the inputs to 8 bits of mantissa.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> f32, Orc().Compile(m, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> exact, f32->Run({x}));
  EXPECT_FALSE(got[0].BitwiseEqual(exact[0]));
  CompileOptions wrong;
  wrong.options = {{"matmul_precision", "fp8"}};
  EXPECT_THAT(Orc().Compile(m, wrong), StatusIs(absl::StatusCode::kInvalidArgument,
                                                HasSubstr("f32 or bf16")));
}

}  // namespace
}  // namespace graft::orc_test
