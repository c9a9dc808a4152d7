// QOperator-format models (QLinearConv, QLinearMatMul and ONNX Runtime's
// com.microsoft quantized operators): imported as DequantizeLinear, the
// float operator and QuantizeLinear, and compared with the operators'
// definitions worked out here in integers. Scales are powers of two, so
// the float path is exact and results must match to the last step.

#include "gtest/gtest.h"

#ifdef GRAFT_HAVE_ONNX

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "passes/pass_context.h"
#include "passes/pipeline.h"
#include "tests/onnx/onnx_test_util.h"

namespace graft::onnx_test {
namespace {

using ::testing::HasSubstr;

// Deterministic integers in [lo, hi].
std::vector<double> Ints(int n, int lo, int hi, uint32_t seed) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v.push_back(lo + static_cast<int>((seed >> 8) % static_cast<uint32_t>(hi - lo + 1)));
  }
  return v;
}

// ONNX's QuantizeLinear: round half to even, add the zero point, saturate.
double Quantize(double real, double scale, int zero_point, bool is_signed) {
  const double q = std::nearbyint(real / scale) + zero_point;
  return std::clamp(q, is_signed ? -128.0 : 0.0, is_signed ? 127.0 : 255.0);
}

void ScalarInitializer(ModelBuilder& b, const std::string& name, float scale) {
  b.FloatInitializer(name, {}, {scale});
}

void ZeroPoint(ModelBuilder& b, const std::string& name, DType dtype, int v) {
  b.RawInitializer(name, T(dtype, {}, {static_cast<double>(v)}));
}

TEST(OnnxQOperator, QLinearConvIsItsIntegerDefinition) {
  // x u8 [1, 2, 4, 4], w i8 [3, 2, 3, 3] per output channel, an int32 bias,
  // pads 1; y u8.
  const std::vector<double> x = Ints(32, 0, 255, 1), w = Ints(54, -127, 127, 2);
  const std::vector<double> bias = {100, -300, 7};
  const double xs = 0.5, ys = 64;
  const std::vector<double> ws = {0.25, 0.125, 0.5};
  const int xzp = 120, yzp = 10;
  ModelBuilder b(13);
  b.Input("x", TP::UINT8, std::vector<int64_t>{1, 2, 4, 4});
  ScalarInitializer(b, "xs", xs);
  ZeroPoint(b, "xzp", DType::kU8, xzp);
  b.RawInitializer("w", T(DType::kI8, {3, 2, 3, 3}, w));
  b.FloatInitializer("ws", {3}, {0.25f, 0.125f, 0.5f});
  b.RawInitializer("wzp", T(DType::kI8, {3}, {0, 0, 0}));
  ScalarInitializer(b, "ys", ys);
  ZeroPoint(b, "yzp", DType::kU8, yzp);
  b.RawInitializer("bias", T(DType::kI32, {3}, bias));
  onnx::NodeProto* n =
      b.Node("QLinearConv", {"x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "bias"}, {"y"}, "qconv");
  AttrInts(n, "pads", {1, 1, 1, 1});
  AttrInts(n, "kernel_shape", {3, 3});
  b.Output("y");
  std::vector<double> want;
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        double acc = bias[c];
        for (int ci = 0; ci < 2; ++ci) {
          for (int ki = 0; ki < 3; ++ki) {
            for (int kj = 0; kj < 3; ++kj) {
              const int r = i + ki - 1, s = j + kj - 1;
              if (r < 0 || r >= 4 || s < 0 || s >= 4) continue;
              acc += (x[ci * 16 + r * 4 + s] - xzp) * w[((c * 2 + ci) * 3 + ki) * 3 + kj];
            }
          }
        }
        want.push_back(Quantize(acc * xs * ws[c], ys, yzp, false));
      }
    }
  }
  auto out = RunModel(b, {T(DType::kU8, {1, 2, 4, 4}, x)});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kU8, {1, 3, 4, 4}, want, 0);

  // quantize-lower turns it into graft's int8 convolution, as for QDQ.
  ONNX_ASSERT_OK_AND_ASSIGN(module, b.Import());
  ONNX_ASSERT_OK_AND_ASSIGN(lower, passes::Pipeline::FromString("quantize-lower"));
  passes::PassContext ctx;
  ASSERT_TRUE(lower.Run(module, ctx).ok());
  EXPECT_THAT(CallTargets(module), ::testing::Contains(::testing::HasSubstr("quantized_conv2d")));
  EXPECT_THAT(CallTargets(module), ::testing::Not(::testing::Contains("conv2d")));
}

TEST(OnnxQOperator, QLinearMatMulWithAScalePerColumnOfB) {
  const std::vector<double> a = Ints(6, 0, 255, 3), bq = Ints(12, -100, 100, 4);
  const double as = 0.25, ys = 4;
  const std::vector<double> bs = {0.5, 0.25, 1, 2};
  const int azp = 128, yzp = -3;
  ModelBuilder b(13);
  b.Input("a", TP::UINT8, std::vector<int64_t>{2, 3});
  ScalarInitializer(b, "as", as);
  ZeroPoint(b, "azp", DType::kU8, azp);
  b.RawInitializer("b", T(DType::kI8, {3, 4}, bq));
  b.FloatInitializer("bs", {4}, {0.5f, 0.25f, 1, 2});
  b.RawInitializer("bzp", T(DType::kI8, {4}, {0, 0, 0, 0}));
  ScalarInitializer(b, "ys", ys);
  ZeroPoint(b, "yzp", DType::kI8, yzp);
  b.Node("QLinearMatMul", {"a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"}, {"y"});
  b.Output("y");
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += (a[i * 3 + k] - azp) * bq[k * 4 + j];
      want.push_back(Quantize(acc * as * bs[j], ys, yzp, true));
    }
  }
  auto out = RunModel(b, {T(DType::kU8, {2, 3}, a)});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kI8, {2, 4}, want, 0);
}

// ONNX Runtime's com.microsoft operators, as its QOperator format writes
// them around the convolutions and products (QLinearSoftmax: the committed
// encoder of tests/onnx_models/qoperator).
TEST(OnnxQOperator, OnnxRuntimesQuantizedOperators) {
  const std::vector<double> x = Ints(12, 0, 255, 5), y = Ints(12, 0, 255, 6);
  const double xs = 0.125, ys = 0.25, zs = 0.5;
  const int xzp = 100, yzp = 130, zzp = 60;
  ModelBuilder b(13);
  b.Input("x", TP::UINT8, std::vector<int64_t>{1, 3, 2, 2});
  b.Input("y", TP::UINT8, std::vector<int64_t>{1, 3, 2, 2});
  ScalarInitializer(b, "xs", xs);
  ScalarInitializer(b, "ys", ys);
  ScalarInitializer(b, "zs", zs);
  ZeroPoint(b, "xzp", DType::kU8, xzp);
  ZeroPoint(b, "yzp", DType::kU8, yzp);
  ZeroPoint(b, "zzp", DType::kU8, zzp);
  auto ms = [&](const char* op, std::vector<std::string> in, const char* out) {
    onnx::NodeProto* n = b.Node(op, in, {out});
    n->set_domain("com.microsoft");
    b.Output(out);
    return n;
  };
  ms("QLinearAdd", {"x", "xs", "xzp", "y", "ys", "yzp", "zs", "zzp"}, "add");
  ms("QLinearMul", {"x", "xs", "xzp", "y", "ys", "yzp", "zs", "zzp"}, "mul");
  ms("QLinearGlobalAveragePool", {"x", "xs", "xzp", "zs", "zzp"}, "pool");
  AttrInt(ms("QLinearConcat", {"zs", "zzp", "x", "xs", "xzp", "y", "ys", "yzp"}, "cat"), "axis", 1);
  AttrFloat(ms("QLinearLeakyRelu", {"x", "xs", "xzp", "zs", "zzp"}, "leaky"), "alpha", 0.25f);
  ms("QLinearSigmoid", {"x", "xs", "xzp", "zs", "zzp"}, "sigmoid");
  auto out = RunModel(b, {T(DType::kU8, {1, 3, 2, 2}, x), T(DType::kU8, {1, 3, 2, 2}, y)});
  ASSERT_EQ(out.size(), 6u);
  std::vector<double> add, mul, pool, cat, leaky, sigmoid;
  for (int i = 0; i < 12; ++i) {
    const double fx = (x[i] - xzp) * xs, fy = (y[i] - yzp) * ys;
    add.push_back(Quantize(fx + fy, zs, zzp, false));
    mul.push_back(Quantize(fx * fy, zs, zzp, false));
    leaky.push_back(Quantize(fx < 0 ? 0.25 * fx : fx, zs, zzp, false));
    sigmoid.push_back(Quantize(1 / (1 + std::exp(-fx)), zs, zzp, false));
  }
  for (int c = 0; c < 3; ++c) {
    double sum = 0;
    for (int k = 0; k < 4; ++k) sum += (x[c * 4 + k] - xzp) * xs;
    pool.push_back(Quantize(sum / 4, zs, zzp, false));
  }
  for (int i = 0; i < 12; ++i) cat.push_back(Quantize((x[i] - xzp) * xs, zs, zzp, false));
  for (int i = 0; i < 12; ++i) cat.push_back(Quantize((y[i] - yzp) * ys, zs, zzp, false));
  ExpectTensor(out[0], DType::kU8, {1, 3, 2, 2}, add, 0);
  ExpectTensor(out[1], DType::kU8, {1, 3, 2, 2}, mul, 0);
  ExpectTensor(out[2], DType::kU8, {1, 3, 1, 1}, pool, 0);
  ExpectTensor(out[3], DType::kU8, {1, 6, 2, 2}, cat, 0);
  ExpectTensor(out[4], DType::kU8, {1, 3, 2, 2}, leaky, 0);
  ExpectTensor(out[5], DType::kU8, {1, 3, 2, 2}, sigmoid, 0);
}

// QGemm with transB, alpha and an int32 bias in units of alpha * a_scale *
// b_scale; without y_scale its result is float.
TEST(OnnxQOperator, QGemmWithAFloatResult) {
  const std::vector<double> a = Ints(6, -128, 127, 7), bq = Ints(6, -128, 127, 8);
  const std::vector<double> c = {40, -9};
  const double as = 0.5, alpha = 0.5;
  const std::vector<double> bs = {0.25, 2};
  ModelBuilder b(13);
  b.Input("a", TP::INT8, std::vector<int64_t>{3, 2});
  ScalarInitializer(b, "as", as);
  ZeroPoint(b, "azp", DType::kI8, 0);
  b.RawInitializer("b", T(DType::kI8, {2, 2}, {bq[0], bq[1], bq[2], bq[3]}));
  b.FloatInitializer("bs", {2}, {0.25f, 2});
  b.RawInitializer("c", T(DType::kI32, {2}, c));
  onnx::NodeProto* n = b.Node("QGemm", {"a", "as", "azp", "b", "bs", "", "c"}, {"y"});
  n->set_domain("com.microsoft");
  AttrInt(n, "transB", 1);
  AttrFloat(n, "alpha", static_cast<float>(alpha));
  b.Output("y");
  std::vector<double> want;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      double acc = 0;
      for (int k = 0; k < 2; ++k) acc += a[i * 2 + k] * bq[j * 2 + k];
      want.push_back(alpha * as * bs[j] * (acc + c[j]));
    }
  }
  auto out = RunModel(b, {T(DType::kI8, {3, 2}, a)});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {3, 2}, want, 1e-6);
}

// ONNX's example of DynamicQuantizeLinear, and an input of zeros (a range
// of 0 takes the scale 1 / 255).
TEST(OnnxQOperator, DynamicQuantizeLinear) {
  for (const std::vector<double>& x :
       std::vector<std::vector<double>>{{0, 2, -3, -2.5, 1.34, 0.5}, {0, 0, 0, 0, 0, 0}}) {
    ModelBuilder b(11);
    b.FloatInput("x", {6});
    b.Node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zero_point"});
    b.Output("y");
    b.Output("scale");
    b.Output("zero_point");
    auto out = RunModel(b, {F32({6}, x)});
    ASSERT_EQ(out.size(), 3u);
    float hi = 0, lo = 0;
    for (double v : x) {
      hi = std::max(hi, static_cast<float>(v));
      lo = std::min(lo, static_cast<float>(v));
    }
    const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    const double zero_point = std::nearbyint(std::clamp(-lo / scale, 0.0f, 255.0f));
    std::vector<double> y;
    for (double v : x) {
      y.push_back(std::clamp(std::nearbyint(static_cast<float>(v) / scale) + zero_point, 0.0, 255.0));
    }
    ExpectTensor(out[0], DType::kU8, {6}, y, 0);
    ExpectTensor(out[1], DType::kF32, {}, {scale}, 1e-7);
    ExpectTensor(out[2], DType::kU8, {}, {zero_point}, 0);
  }
}

// What quantize_dynamic writes for a linear layer: DynamicQuantizeLinear of
// the input, MatMulInteger with the int8 weight, Cast, Mul by both scales.
TEST(OnnxQOperator, MatMulIntegerAndConvIntegerAreExactIntegerSums) {
  const std::vector<double> a = Ints(6, 0, 255, 9), w = Ints(12, -127, 127, 10);
  ModelBuilder b(13);
  b.Input("a", TP::UINT8, std::vector<int64_t>{2, 3});
  b.Input("azp", TP::UINT8, std::vector<int64_t>{});
  b.RawInitializer("w", T(DType::kI8, {3, 4}, w));
  b.RawInitializer("wzp", T(DType::kI8, {4}, {0, 1, -2, 3}));
  b.Node("MatMulInteger", {"a", "w", "azp", "wzp"}, {"y"});
  b.Output("y", TP::INT32);
  const std::vector<double> wzp = {0, 1, -2, 3};
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += (a[i * 3 + k] - 77) * (w[k * 4 + j] - wzp[j]);
      want.push_back(acc);
    }
  }
  auto out = RunModel(b, {T(DType::kU8, {2, 3}, a), T(DType::kU8, {}, {77})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kI32, {2, 4}, want, 0);

  // A zero point per row of A (opset 10: MatMulInteger's own).
  ModelBuilder rows(10);
  rows.Input("a", TP::UINT8, std::vector<int64_t>{2, 3});
  rows.RawInitializer("azp", T(DType::kU8, {2}, {1, 200}));
  rows.RawInitializer("w", T(DType::kI8, {3, 4}, w));
  rows.Node("MatMulInteger", {"a", "w", "azp"}, {"y"});
  rows.Output("y");
  want.clear();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += (a[i * 3 + k] - (i == 0 ? 1 : 200)) * w[k * 4 + j];
      want.push_back(acc);
    }
  }
  out = RunModel(rows, {T(DType::kU8, {2, 3}, a)});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kI32, {2, 4}, want, 0);

  // [1, 1, 3, 3] by two [1, 3, 3] kernels, w's zero point per channel.
  const std::vector<double> x = Ints(9, 0, 255, 11), k = Ints(18, -127, 127, 12);
  ModelBuilder c(13);
  c.Input("x", TP::UINT8, std::vector<int64_t>{1, 1, 3, 3});
  c.RawInitializer("xzp", T(DType::kU8, {}, {128}));
  c.RawInitializer("k", T(DType::kI8, {2, 1, 3, 3}, k));
  c.RawInitializer("kzp", T(DType::kI8, {2}, {5, -5}));
  c.Node("ConvInteger", {"x", "k", "xzp", "kzp"}, {"y"});
  c.Output("y");
  std::vector<double> sums(2, 0);
  for (int m = 0; m < 2; ++m) {
    for (int t = 0; t < 9; ++t) sums[m] += (x[t] - 128) * (k[m * 9 + t] - (m == 0 ? 5 : -5));
  }
  out = RunModel(c, {T(DType::kU8, {1, 1, 3, 3}, x)});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kI32, {1, 2, 1, 1}, sums, 0);
}

// A model of one com.microsoft unary QLinear op (X, scale, zero point,
// the same for Y) on a u8 input of `dims`, with the int attribute given.
ModelBuilder OneMicrosoftUnary(const std::string& op, const std::string& name, std::vector<int64_t> dims,
                               const std::string& attribute, int64_t value) {
  ModelBuilder b(13);
  b.Input("x", TP::UINT8, dims);
  ScalarInitializer(b, "s", 1);
  ZeroPoint(b, "z", DType::kU8, 0);
  onnx::NodeProto* n = b.Node(op, {"x", "s", "z", "s", "z"}, {"y"}, name);
  n->set_domain("com.microsoft");
  AttrInt(n, attribute, value);
  b.Output("y");
  return b;
}

TEST(OnnxQOperator, ErrorsNameTheQuantizedNode) {
  ModelBuilder nhwc = OneMicrosoftUnary("QLinearGlobalAveragePool", "gap", {1, 2, 2, 3}, "channels_last", 1);
  EXPECT_THAT(ImportError(nhwc), HasSubstr("node 'gap' (com.microsoft.QLinearGlobalAveragePool): "
                                           "channels_last=1 is not supported"));
  ModelBuilder old_softmax = OneMicrosoftUnary("QLinearSoftmax", "sm", {2, 3}, "opset", 12);
  EXPECT_THAT(ImportError(old_softmax),
              HasSubstr("the Softmax of opset 12 in a model of opset 13 is not supported"));
  ModelBuilder early(9);
  early.Input("x", TP::UINT8, std::vector<int64_t>{1, 2});
  early.Node("QLinearMatMul", {"x", "s", "z", "x", "s", "z", "s", "z"}, {"y"}, "qm9");
  early.Output("y");
  EXPECT_THAT(ImportError(early),
              HasSubstr("node 'qm9' (QLinearMatMul): QLinearMatMul needs opset 10 or later, but the model "
                        "imports opset 9"));
  ModelBuilder short_conv(13);
  short_conv.Input("x", TP::UINT8, std::vector<int64_t>{1, 1, 2, 2});
  short_conv.Node("QLinearConv", {"x"}, {"y"}, "qc");
  short_conv.Output("y");
  EXPECT_THAT(ImportError(short_conv), HasSubstr("node 'qc' (QLinearConv): needs at least 8 inputs"));
  // A scale computed at run time is refused by the part that reads it.
  ModelBuilder run_time(13);
  run_time.Input("a", TP::UINT8, std::vector<int64_t>{1, 2});
  run_time.FloatInput("s", {});
  ZeroPoint(run_time, "z", DType::kU8, 0);
  run_time.RawInitializer("b", T(DType::kU8, {2, 1}, {1, 2}));
  run_time.Node("QLinearMatMul", {"a", "s", "z", "b", "s", "z", "s", "z"}, {"y"}, "qm");
  run_time.Output("y");
  EXPECT_THAT(ImportError(run_time),
              HasSubstr("node 'qm' (QLinearMatMul): its DequantizeLinear: the scale must be known at import time"));
}

}  // namespace
}  // namespace graft::onnx_test

#endif  // GRAFT_HAVE_ONNX
