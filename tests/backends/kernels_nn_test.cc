// matmul, linear, conv2d, pooling, softmax and normalization against
// hand-worked values and properties.

#include <cmath>
#include <limits>
#include <random>

#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// 0, 1, 2, ... n-1 as f32 with `dims`.
Tensor Iota(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return F32(std::move(dims), v);
}

TEST(NnKernels, Matmul2D) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, RunBinary("matmul", F32({2, 3}, {1, 2, 3, 4, 5, 6}),
                     F32({3, 2}, {7, 8, 9, 10, 11, 12})));
  ExpectTensor(out, DType::kF32, {2, 2}, {58, 64, 139, 154});
}

TEST(NnKernels, MatmulVectorRules) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      dot, RunBinary("matmul", F32({3}, {1, 2, 3}), F32({3}, {4, 5, 6})));
  ExpectTensor(dot, DType::kF32, {}, {32});
  GRAFT_ASSERT_OK_AND_ASSIGN(vm, RunBinary("matmul", F32({2}, {1, 2}),
                                           F32({2, 3}, {1, 2, 3, 4, 5, 6})));
  ExpectTensor(vm, DType::kF32, {3}, {9, 12, 15});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      mv, RunBinary("matmul", F32({2, 3}, {1, 2, 3, 4, 5, 6}),
                    F32({3}, {1, 0, -1})));
  ExpectTensor(mv, DType::kF32, {2}, {-2, -2});
  absl::StatusOr<Tensor> bad =
      RunBinary("matmul", F32({2, 3}, {1, 2, 3, 4, 5, 6}),
                F32({2, 3}, {1, 2, 3, 4, 5, 6}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("node %matmul (matmul)"));
  EXPECT_FALSE(RunBinary("matmul", F32({}, {1}), F32({1}, {1})).ok());
  EXPECT_FALSE(
      RunBinary("matmul", F32({1}, {1}), T(DType::kF64, {1}, {1})).ok());
}

TEST(NnKernels, MatmulBatchBroadcast) {
  // a: [2,1,2,2], batch i is (i+1) * identity; b: [3,2,2] arbitrary.
  // Result [2,3,2,2]: batch (i, j) is (i+1) * b_j.
  std::vector<double> a = {1, 0, 0, 1, 2, 0, 0, 2};
  std::vector<double> b(12);
  for (int i = 0; i < 12; ++i) b[i] = i * 0.5 - 2;
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int e = 0; e < 4; ++e) expected.push_back((i + 1) * b[j * 4 + e]);
    }
  }
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, RunBinary("matmul", F32({2, 1, 2, 2}, a), F32({3, 2, 2}, b)));
  ExpectTensor(out, DType::kF32, {2, 3, 2, 2}, expected);
}

// A plain triple loop, the reference for bigger products.
std::vector<double> NaiveMatmul(const Tensor& a, const Tensor& b, int64_t m,
                                int64_t k, int64_t n, bool b_transposed) {
  std::vector<double> out(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        s += a.GetAsDouble(i * k + p) *
             b.GetAsDouble(b_transposed ? j * k + p : p * n + j);
      }
      out[i * n + j] = s;
    }
  }
  return out;
}

TEST(NnKernels, MatmulAcrossBlockSizes) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  // n and k cross the kernel's cache block sizes (1024 and 128).
  const int64_t m = 3, k = 131, n = 1031;
  Tensor a = Random(DType::kF64, {m, k}, seed);
  Tensor b = Random(DType::kF64, {k, n}, seed + 1);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, RunBinary("matmul", a, b));
  ExpectTensor(out, DType::kF64, {m, n}, NaiveMatmul(a, b, m, k, n, false),
               1e-12);
}

TEST(NnKernels, Linear) {
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, r.Run("linear", {r.In(F32({2, 3}, {1, 2, 3, 4, 5, 6})),
                            r.In(F32({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5})),
                            r.In(F32({2}, {10, 20}))}));
  ExpectTensor(out, DType::kF32, {2, 2}, {8, 23, 8, 27.5});
  // No bias; 1-D and 3-D inputs.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      vec, RunBinary("linear", F32({3}, {1, 2, 3}), F32({1, 3}, {1, 1, 1})));
  ExpectTensor(vec, DType::kF32, {1}, {6});
  GRAFT_ASSERT_OK_AND_ASSIGN(batched,
                             RunBinary("linear", F32({2, 1, 2}, {1, 2, 3, 4}),
                                       F32({3, 2}, {1, 0, 0, 1, 1, 1})));
  ExpectTensor(batched, DType::kF32, {2, 1, 3}, {1, 2, 3, 3, 4, 7});
  // Integers multiply exactly in i64.
  GRAFT_ASSERT_OK_AND_ASSIGN(ints, RunBinary("linear", I64({1, 2}, {3, 4}),
                                             I64({1, 2}, {1000000, 2})));
  ExpectTensor(ints, DType::kI64, {1, 1}, {3000008});
  absl::StatusOr<Tensor> bad = RunBinary(
      "linear", F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({2, 2}, {1, 2, 3, 4}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("node %linear (linear)"));
}

TEST(NnKernels, LinearMatchesNaiveProduct) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  // k = 19 exercises both the 8-wide part of the dot product and its tail.
  const int64_t m = 5, k = 19, n = 7;
  Tensor x = Random(DType::kF64, {m, k}, seed);
  Tensor w = Random(DType::kF64, {n, k}, seed + 1);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, RunBinary("linear", x, w));
  ExpectTensor(out, DType::kF64, {m, n}, NaiveMatmul(x, w, m, k, n, true),
               1e-12);
  // f16 computes in f32 and rounds once at the end.
  Tensor xh = CastForTest(x, DType::kF16);
  Tensor wh = CastForTest(w, DType::kF16);
  GRAFT_ASSERT_OK_AND_ASSIGN(half, RunBinary("linear", xh, wh));
  ExpectTensor(half, DType::kF16, {m, n}, NaiveMatmul(xh, wh, m, k, n, true),
               2e-3);
}

TEST(NnKernels, Conv2dHandWorked) {
  // out[y][x] = in[y][x] - in[y+1][x+1] = -4 for in = 1..9 (3x3).
  const Tensor in = F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = F32({1, 1, 2, 2}, {1, 0, 0, -1});
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("conv2d", {r.In(in), r.In(w), r.In(F32({1}, {1}))}));
    ExpectTensor(out, DType::kF32, {1, 1, 2, 2}, {-3, -3, -3, -3});
  }
  {  // Padding 1: out[y][x] = in[y-1][x-1] - in[y][x], zero outside.
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("conv2d", {r.In(in), r.In(w)}, {{"padding", 1}}));
    auto at = [](int y, int x) {
      return y >= 0 && y < 3 && x >= 0 && x < 3 ? 1.0 + 3 * y + x : 0.0;
    };
    std::vector<double> expected;
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 4; ++x)
        expected.push_back(at(y - 1, x - 1) - at(y, x));
    }
    ExpectTensor(out, DType::kF32, {1, 1, 4, 4}, expected);
  }
  {  // Unbatched [C,H,W] input and stride 2.
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("conv2d",
                   {r.In(F32({1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})),
                    r.In(F32({1, 1, 1, 1}, {2}))},
                   {{"stride", 2}}));
    ExpectTensor(out, DType::kF32, {1, 2, 2}, {2, 6, 14, 18});
  }
}

TEST(NnKernels, Conv2dEqualsIm2colMatmul) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const int64_t n = 2, c = 4, h = 5, w = 6, oc = 6, groups = 2, kh = 3, kw = 2;
  const int64_t sh = 2, sw = 1, ph = 1, pw = 0, dh = 1, dw = 2;
  const int64_t cg = c / groups, ocg = oc / groups;
  Tensor x = Random(DType::kF64, {n, c, h, w}, seed);
  Tensor wt = Random(DType::kF64, {oc, cg, kh, kw}, seed + 1);
  Tensor bias = Random(DType::kF64, {oc}, seed + 2);
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(out,
                             r.Run("conv2d", {r.In(x), r.In(wt), r.In(bias)},
                                   {{"stride", Ints({sh, sw})},
                                    {"padding", Ints({ph, pw})},
                                    {"dilation", Ints({dh, dw})},
                                    {"groups", groups}}));
  const int64_t oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
  const int64_t ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  ASSERT_EQ(out.dims(), (std::vector<int64_t>{n, oc, oh, ow}));
  // im2col: for each image and group, a [cg*kh*kw, oh*ow] matrix; the
  // output is weight_g [ocg, cg*kh*kw] times it, plus bias.
  std::vector<double> expected(n * oc * oh * ow);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t rows = cg * kh * kw, cols = oh * ow;
      std::vector<double> col(rows * cols, 0.0);
      for (int64_t ci = 0; ci < cg; ++ci) {
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            for (int64_t y = 0; y < oh; ++y) {
              for (int64_t xx = 0; xx < ow; ++xx) {
                const int64_t iy = y * sh - ph + i * dh,
                              ix = xx * sw - pw + j * dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                col[((ci * kh + i) * kw + j) * cols + y * ow + xx] =
                    x.GetAsDouble(((b * c + g * cg + ci) * h + iy) * w + ix);
              }
            }
          }
        }
      }
      for (int64_t o = 0; o < ocg; ++o) {
        for (int64_t p = 0; p < cols; ++p) {
          double s = bias.GetAsDouble(g * ocg + o);
          for (int64_t q = 0; q < rows; ++q) {
            s += wt.GetAsDouble((g * ocg + o) * rows + q) * col[q * cols + p];
          }
          expected[(b * oc + g * ocg + o) * cols + p] = s;
        }
      }
    }
  }
  ExpectTensor(out, DType::kF64, {n, oc, oh, ow}, expected, 1e-12);
}

TEST(NnKernels, Conv2dErrors) {
  OpRunner r;
  absl::StatusOr<Tensor> bad =
      r.Run("conv2d", {r.In(F32({1, 3, 4, 4}, std::vector<double>(48, 1))),
                       r.In(F32({2, 2, 1, 1}, {1, 1, 1, 1}))});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("node %conv2d (conv2d)"));
  OpRunner r2;
  EXPECT_FALSE(
      r2.Run("conv2d", {r2.In(F32({1, 1, 2, 2}, {1, 2, 3, 4})),
                        r2.In(F32({1, 1, 3, 3}, std::vector<double>(9, 1)))})
          .ok());
}

TEST(NnKernels, MaxPool2d) {
  const Tensor x = Iota({1, 1, 4, 4});
  GRAFT_ASSERT_OK_AND_ASSIGN(k2, RunUnary("max_pool2d", x, {2}));
  ExpectTensor(k2, DType::kF32, {1, 1, 2, 2}, {5, 7, 13, 15});
  GRAFT_ASSERT_OK_AND_ASSIGN(s1, RunUnary("max_pool2d", x, {2, 1}));
  ExpectTensor(s1, DType::kF32, {1, 1, 3, 3}, {5, 6, 7, 9, 10, 11, 13, 14, 15});
  // Padding is never the maximum: windows rows {-1,0},{1,2},{3,4}.
  GRAFT_ASSERT_OK_AND_ASSIGN(p1, RunUnary("max_pool2d", x, {2, 2, 1}));
  ExpectTensor(p1, DType::kF32, {1, 1, 3, 3}, {0, 2, 3, 8, 10, 11, 12, 14, 15});
  // Dilation 2: window (0,0) reads rows/cols {0,2}.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      dil, RunUnary("max_pool2d", x, {2, 1}, {{"dilation", 2}}));
  ExpectTensor(dil, DType::kF32, {1, 1, 2, 2}, {10, 11, 14, 15});
  // ceil_mode keeps a last, partial window.
  const Tensor y = Iota({1, 1, 5, 5});
  GRAFT_ASSERT_OK_AND_ASSIGN(floor_mode, RunUnary("max_pool2d", y, {2}));
  ExpectTensor(floor_mode, DType::kF32, {1, 1, 2, 2}, {6, 8, 16, 18});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      ceil_mode, RunUnary("max_pool2d", y, {2}, {{"ceil_mode", true}}));
  ExpectTensor(ceil_mode, DType::kF32, {1, 1, 3, 3},
               {6, 8, 9, 16, 18, 19, 21, 23, 24});
  // Unbatched input; NaN wins.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      nan, RunUnary("max_pool2d", F32({1, 2, 2}, {1, kNaN, 3, 4}), {2}));
  ExpectTensor(nan, DType::kF32, {1, 1, 1}, {kNaN});
  EXPECT_FALSE(RunUnary("max_pool2d", x, {2, int64_t{1} << 62}).ok());
  absl::StatusOr<Tensor> pad = RunUnary("max_pool2d", x, {2, 2, 2});
  ASSERT_FALSE(pad.ok());
  EXPECT_THAT(pad.status().message(), HasSubstr("half"));
}

TEST(NnKernels, AvgPool2d) {
  const Tensor x = Iota({1, 1, 4, 4});
  GRAFT_ASSERT_OK_AND_ASSIGN(k2, RunUnary("avg_pool2d", x, {2}));
  ExpectTensor(k2, DType::kF32, {1, 1, 2, 2}, {2.5, 4.5, 10.5, 12.5});
  // Padding 1, stride 2: window (0,1) holds in[0][1] + in[0][2] = 3 and two
  // padding cells; window (0,2) holds in[0][3] = 3 and three padding cells.
  GRAFT_ASSERT_OK_AND_ASSIGN(with_pad, RunUnary("avg_pool2d", x, {2, 2, 1}));
  ASSERT_EQ(with_pad.dims(), (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_FLOAT_EQ(with_pad.GetAsDouble(0), 0.0);
  EXPECT_FLOAT_EQ(with_pad.GetAsDouble(1), 3.0 / 4);
  EXPECT_FLOAT_EQ(with_pad.GetAsDouble(2), 3.0 / 4);
  GRAFT_ASSERT_OK_AND_ASSIGN(no_pad, RunUnary("avg_pool2d", x, {2, 2, 1},
                                              {{"count_include_pad", false}}));
  EXPECT_FLOAT_EQ(no_pad.GetAsDouble(1), 3.0 / 2);
  EXPECT_FLOAT_EQ(no_pad.GetAsDouble(2), 3.0);
  EXPECT_FLOAT_EQ(no_pad.GetAsDouble(8), 15.0);
  // ceil_mode: windows past the input are divided by their clipped size.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      ceil_mode,
      RunUnary("avg_pool2d", Iota({1, 1, 3, 3}), {2}, {{"ceil_mode", true}}));
  ExpectTensor(ceil_mode, DType::kF32, {1, 1, 2, 2}, {2, 3.5, 6.5, 8});
  EXPECT_FALSE(
      RunUnary("avg_pool2d", T(DType::kI32, {1, 1, 2, 2}, {1, 2, 3, 4}), {2})
          .ok());
}

TEST(NnKernels, AdaptiveAvgPool2d) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      two, RunUnary("adaptive_avg_pool2d", Iota({1, 1, 4, 4}), {2}));
  ExpectTensor(two, DType::kF32, {1, 1, 2, 2}, {2.5, 4.5, 10.5, 12.5});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      one, RunUnary("adaptive_avg_pool2d", Iota({1, 1, 4, 4}), {1}));
  ExpectTensor(one, DType::kF32, {1, 1, 1, 1}, {7.5});
  // Overlapping windows: 3 -> 2 uses rows [0,2) and [1,3).
  GRAFT_ASSERT_OK_AND_ASSIGN(
      overlap,
      RunUnary("adaptive_avg_pool2d", Iota({1, 3, 3}), {Ints({2, 2})}));
  ExpectTensor(overlap, DType::kF32, {1, 2, 2}, {2, 3, 5, 6});
}

TEST(NnKernels, SoftmaxHandWorked) {
  // e^k / (e + e^2 + e^3) for k = 1, 2, 3.
  GRAFT_ASSERT_OK_AND_ASSIGN(s, RunUnary("softmax", F32({3}, {1, 2, 3}), {0}));
  ExpectTensor(s, DType::kF32, {3},
               {0.09003057317, 0.24472847105, 0.66524095577});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      ls, RunUnary("log_softmax", F32({3}, {1, 2, 3}), {-1}));
  ExpectTensor(ls, DType::kF32, {3},
               {-2.40760596444, -1.40760596444, -0.40760596444});
  // Large values do not overflow.
  GRAFT_ASSERT_OK_AND_ASSIGN(big,
                             RunUnary("softmax", F32({2}, {1000, 1000}), {0}));
  ExpectTensor(big, DType::kF32, {2}, {0.5, 0.5});
  // Along dim 0 of [2,2]: columns.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      cols, RunUnary("softmax", F32({2, 2}, {0, 5, 0, 5}), {0}));
  ExpectTensor(cols, DType::kF32, {2, 2}, {0.5, 0.5, 0.5, 0.5});
  // An all -inf row has no distribution: NaN, as in PyTorch.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      ninf, RunUnary("softmax", F32({2}, {-INFINITY, -INFINITY}), {0}));
  ExpectTensor(ninf, DType::kF32, {2}, {kNaN, kNaN});
  // Softmax needs a floating-point input.
  EXPECT_FALSE(RunUnary("softmax", I64({2}, {1, 2}), {0}).ok());
}

TEST(NnKernels, SoftmaxRowsSumToOne) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Tensor x = Random(DType::kF32, {4, 5, 6}, seed, -20, 20);
  for (int64_t dim = 0; dim < 3; ++dim) {
    GRAFT_ASSERT_OK_AND_ASSIGN(s, RunUnary("softmax", x, {dim}));
    const std::vector<int64_t> d = x.dims();
    std::vector<int64_t> stride = {d[1] * d[2], d[2], 1};
    // Sum over `dim` for every position of the other two dims.
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const int64_t pos = (i / stride[dim]) % d[dim];
      if (pos != 0) continue;
      double sum = 0;
      for (int64_t k = 0; k < d[dim]; ++k) {
        const double v = s.GetAsDouble(i + k * stride[dim]);
        EXPECT_GE(v, 0.0);
        sum += v;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << "dim " << dim << " at " << i;
    }
  }
}

TEST(NnKernels, LayerNormHandWorked) {
  // mean 2, variance 2/3: (x - 2) / sqrt(2/3).
  const double r = std::sqrt(1.5);
  GRAFT_ASSERT_OK_AND_ASSIGN(
      plain, RunUnary("layer_norm", F32({1, 3}, {1, 2, 3}), {Ints({3})},
                      {{"eps", 0.0}}));
  ExpectTensor(plain, DType::kF32, {1, 3}, {-r, 0, r});
  OpRunner o;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      affine, o.Run("layer_norm",
                    {o.In(F32({1, 3}, {1, 2, 3})), Ints({3}),
                     o.In(F32({3}, {1, 2, 3})), o.In(F32({3}, {0, 1, 0}))},
                    {{"eps", 0.0}}));
  ExpectTensor(affine, DType::kF32, {1, 3}, {-r, 1, 3 * r});
  absl::StatusOr<Tensor> bad =
      RunUnary("layer_norm", F32({2, 3}, {1, 2, 3, 4, 5, 6}), {Ints({2})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("normalized_shape"));
  EXPECT_FALSE(RunUnary("layer_norm", F32({2}, {1, 2}), {ArgumentList{}}).ok());
}

TEST(NnKernels, LayerNormZeroMeanUnitVariance) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Tensor x = Random(DType::kF32, {3, 4, 8}, seed, -5, 7);
  GRAFT_ASSERT_OK_AND_ASSIGN(
      y, RunUnary("layer_norm", x, {Ints({4, 8})}, {{"eps", 0.0}}));
  for (int64_t row = 0; row < 3; ++row) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < 32; ++i) mean += y.GetAsDouble(row * 32 + i);
    mean /= 32;
    for (int64_t i = 0; i < 32; ++i) {
      const double d = y.GetAsDouble(row * 32 + i) - mean;
      var += d * d;
    }
    var /= 32;
    EXPECT_NEAR(mean, 0.0, 1e-5);
    EXPECT_NEAR(var, 1.0, 1e-4);
  }
}

TEST(NnKernels, BatchNorm) {
  // x [N=1, C=2, L=2]; channel 0: (x - 2) / 2; channel 1: (x - 15) / 5 * 2 + 1.
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, r.Run("batch_norm",
                 {r.In(F32({1, 2, 2}, {1, 3, 10, 20})), r.In(F32({2}, {2, 15})),
                  r.In(F32({2}, {4, 25})), r.In(F32({2}, {1, 2})),
                  r.In(F32({2}, {0, 1}))},
                 {{"eps", 0.0}}));
  ExpectTensor(out, DType::kF32, {1, 2, 2}, {-0.5, 0.5, -1, 3});
  OpRunner r2;
  absl::StatusOr<Tensor> bad = r2.Run(
      "batch_norm", {r2.In(F32({1, 2}, {1, 2})), r2.In(F32({3}, {0, 0, 0})),
                     r2.In(F32({3}, {1, 1, 1}))});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("running_mean"));
}

}  // namespace
}  // namespace graft::interp_test
