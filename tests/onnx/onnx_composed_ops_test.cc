// The ONNX operators graft imports as compositions of its own ops
// (ConvTranspose, Resize, InstanceNormalization, GroupNormalization,
// DepthToSpace, SpaceToDepth, Tile, GatherND, OneHot, Einsum, the composed
// reductions, ArgMin, LSTM, GRU, RNN): small models run on the
// interpreter, against values worked out by hand from the ONNX operator
// specifications.

#include "gtest/gtest.h"

#ifdef GRAFT_HAVE_ONNX

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/onnx/onnx_test_util.h"

namespace graft::onnx_test {
namespace {

using ::testing::HasSubstr;

// --- Mod ---------------------------------------------------------------------

// Mod of run-time values: fmod=0 takes the divisor's sign (Python's %),
// fmod=1 the dividend's (C's fmod), for integers and floats.
TEST(OnnxComposedOps, ModOfRunTimeValues) {
  for (const int64_t fmod : {0, 1}) {
    SCOPED_TRACE(absl::StrCat("fmod ", fmod));
    ModelBuilder b;
    b.Input("a", TP::INT64, std::vector<int64_t>{6});
    b.Input("b", TP::INT64, std::vector<int64_t>{6});
    b.FloatInput("x", {4});
    b.FloatInput("y", {4});
    AttrInt(b.Node("Mod", {"a", "b"}, {"r"}), "fmod", fmod);
    AttrInt(b.Node("Mod", {"x", "y"}, {"s"}), "fmod", fmod);
    b.Output("r");
    b.Output("s");
    auto out = RunModel(b, {I64({6}, {-7, 7, -7, 7, 5, 0}), I64({6}, {3, -3, -3, 3, 5, 4}),
                            F32({4}, {5.5, -5.5, 5.5, -0.75}), F32({4}, {2, 2, -2, 0.5})});
    ASSERT_EQ(out.size(), 2u);
    if (fmod == 0) {
      ExpectTensor(out[0], DType::kI64, {6}, {2, -2, -1, 1, 0, 0});
      ExpectTensor(out[1], DType::kF32, {4}, {1.5, 0.5, -0.5, 0.25});
    } else {
      ExpectTensor(out[0], DType::kI64, {6}, {-1, 1, -1, 1, 0, 0});
      ExpectTensor(out[1], DType::kF32, {4}, {1.5, -1.5, 1.5, -0.25});
    }
  }
}

// --- ConvTranspose -----------------------------------------------------------

// x = [1, 2, 3], w = [1, 10, 100], stride 2: each x[i] stamps x[i] * w at
// 2i, so y = [1, 10, 102, 20, 203, 30, 300]; pads crop the ends and
// output_padding adds one more column at the end.
TEST(OnnxComposedOps, ConvTranspose1d) {
  for (const auto& [pads, output_padding, want] :
       std::vector<std::tuple<std::vector<int64_t>, int64_t, std::vector<double>>>{
           {{0, 0}, 0, {1, 10, 102, 20, 203, 30, 300}},
           {{1, 1}, 0, {10, 102, 20, 203, 30}},
           {{1, 1}, 1, {10, 102, 20, 203, 30, 300}},
           {{0, 2}, 0, {1, 10, 102, 20, 203}},
       }) {
    ModelBuilder b;
    b.FloatInput("x", {1, 1, 3});
    b.FloatInitializer("w", {1, 1, 3}, {1, 10, 100});
    onnx::NodeProto* n = b.Node("ConvTranspose", {"x", "w"}, {"y"});
    AttrInts(n, "strides", {2});
    AttrInts(n, "pads", pads);
    AttrInts(n, "output_padding", {output_padding});
    b.Output("y");
    auto out = RunModel(b, {F32({1, 1, 3}, {1, 2, 3})});
    ASSERT_EQ(out.size(), 1u);
    ExpectTensor(out[0], DType::kF32, {1, 1, static_cast<int64_t>(want.size())}, want);
  }
}

// Each input pixel stamps the kernel into its own 2x2 block; bias added.
TEST(OnnxComposedOps, ConvTranspose2dStrideAndBias) {
  ModelBuilder b;
  b.FloatInput("x", {1, 1, 2, 2});
  b.FloatInitializer("w", {1, 1, 2, 2}, {1, 10, 100, 1000});
  b.FloatInitializer("bias", {1}, {0.5});
  AttrInts(b.Node("ConvTranspose", {"x", "w", "bias"}, {"y"}), "strides", {2, 2});
  b.Output("y");
  auto out = RunModel(b, {F32({1, 1, 2, 2}, {1, 2, 3, 4})});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> want = {1, 10, 2, 20, 100, 1000, 200, 2000, 3, 30, 4, 40, 300, 3000, 400, 4000};
  for (double& v : want) v += 0.5;
  ExpectTensor(out[0], DType::kF32, {1, 1, 4, 4}, want);
}

// A 3-D transposed convolution of kernel = stride (a 3-D UNet's
// upsampling): each input voxel stamps x * W into its own block, summed
// over input channels, plus the bias; against that stamping written out.
// Other attributes are refused by name.
TEST(OnnxComposedOps, ConvTranspose3dStrideOfItsKernel) {
  const std::vector<int64_t> xd = {2, 3, 2, 3, 2}, k = {2, 1, 3};
  const int64_t cout = 2;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<double> x(2 * 3 * 2 * 3 * 2), bias = {0.25, -0.5};
  std::vector<float> w(3 * cout * 2 * 1 * 3);
  for (double& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  ModelBuilder b;
  b.FloatInput("x", xd);
  b.FloatInitializer("w", {3, cout, k[0], k[1], k[2]}, w);
  b.FloatInitializer("bias", {cout}, {0.25f, -0.5f});
  AttrInts(b.Node("ConvTranspose", {"x", "w", "bias"}, {"y"}), "strides", k);
  b.Output("y");
  const std::vector<int64_t> yd = {2, cout, xd[2] * k[0], xd[3] * k[1], xd[4] * k[2]};
  std::vector<double> want(2 * cout * yd[2] * yd[3] * yd[4]);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t t = 0; t < yd[2]; ++t)
        for (int64_t i = 0; i < yd[3]; ++i)
          for (int64_t j = 0; j < yd[4]; ++j) {
            double sum = bias[o];
            for (int64_t c = 0; c < 3; ++c) {
              const double in = x[(((n * 3 + c) * xd[2] + t / k[0]) * xd[3] + i / k[1]) * xd[4] +
                                  j / k[2]];
              sum += in * w[(((c * cout + o) * k[0] + t % k[0]) * k[1] + i % k[1]) * k[2] + j % k[2]];
            }
            want[(((n * cout + o) * yd[2] + t) * yd[3] + i) * yd[4] + j] = sum;
          }
  auto out = RunModel(b, {F32(xd, x)});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, yd, want, 1e-6);

  ModelBuilder overlapping;
  overlapping.FloatInput("x", {1, 1, 2, 2, 2});
  overlapping.FloatInitializer("w", {1, 1, 3, 3, 3}, std::vector<float>(27, 1));
  AttrInts(overlapping.Node("ConvTranspose", {"x", "w"}, {"y"}), "strides", {2, 2, 2});
  overlapping.Output("y");
  EXPECT_THAT(ImportError(overlapping),
              HasSubstr("a 3-D ConvTranspose is supported only with strides equal to its kernel"));
}

// Two groups of one channel each: channel c scales by its own weight. A
// 3x3 kernel with pads 1 and stride 1 keeps the size; the flipped kernel
// shows: y[i] = sum_k x[i + 1 - k] w[k].
TEST(OnnxComposedOps, ConvTransposeGroupsAndFlip) {
  ModelBuilder b;
  b.FloatInput("x", {1, 2, 1, 1});
  b.FloatInitializer("w", {2, 1, 1, 1}, {5, 7});
  AttrInt(b.Node("ConvTranspose", {"x", "w"}, {"y"}), "group", 2);
  b.FloatInput("s", {1, 1, 1, 3});
  b.FloatInitializer("k", {1, 1, 1, 3}, {1, 2, 3});
  onnx::NodeProto* n = b.Node("ConvTranspose", {"s", "k"}, {"z"});
  AttrInts(n, "pads", {0, 1, 0, 1});
  b.Output("y");
  b.Output("z");
  auto out = RunModel(b, {F32({1, 2, 1, 1}, {1, 2}), F32({1, 1, 1, 3}, {1, 10, 100})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {1, 2, 1, 1}, {5, 14});
  // Full result [1, 12, 123, 230, 300] with one column cropped each side.
  ExpectTensor(out[1], DType::kF32, {1, 1, 1, 3}, {12, 123, 230});
}

// output_shape fixes the pads: SAME_UPPER puts the odd one at the end.
TEST(OnnxComposedOps, ConvTransposeOutputShape) {
  ModelBuilder b;
  b.FloatInput("x", {1, 1, 3});
  b.FloatInitializer("w", {1, 1, 3}, {1, 10, 100});
  onnx::NodeProto* n = b.Node("ConvTranspose", {"x", "w"}, {"y"});
  AttrInts(n, "strides", {2});
  AttrInts(n, "output_shape", {6});
  b.Output("y");
  // Full result has 7 columns; one pad in total, at the beginning (not
  // SAME_UPPER).
  auto out = RunModel(b, {F32({1, 1, 3}, {1, 2, 3})});
  ExpectTensor(out[0], DType::kF32, {1, 1, 6}, {10, 102, 20, 203, 30, 300});
}

// A direct transposed convolution, as ONNX defines it, for checking both
// of the importer's decompositions: y[n, m, oh, ow] = bias[m] + sum of
// x[n, c, ih, iw] * w[c, m - g * mg, kh, kw] over the channels c of m's
// group g, where oh = ih * sh + kh * dh - pad_top (and so for w).
std::vector<double> DirectConvTranspose(const Tensor& x, const Tensor& w, const std::vector<double>& bias,
                                        int64_t groups, const std::vector<int64_t>& stride,
                                        const std::vector<int64_t>& dilation, const std::vector<int64_t>& pads,
                                        int64_t oh_size, int64_t ow_size) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t mg = w.dim(1), kh = w.dim(2), kw = w.dim(3), cg = c / groups, m = mg * groups;
  std::vector<double> y(n * m * oh_size * ow_size, 0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < wd; ++j)
          for (int64_t ml = 0; ml < mg; ++ml)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t oh = i * stride[0] + a * dilation[0] - pads[0];
                const int64_t ow = j * stride[1] + e * dilation[1] - pads[1];
                if (oh < 0 || oh >= oh_size || ow < 0 || ow >= ow_size) continue;
                const int64_t mo = (ci / cg) * mg + ml;
                y[((b * m + mo) * oh_size + oh) * ow_size + ow] +=
                    x.GetAsDouble(((b * c + ci) * h + i) * wd + j) *
                    w.GetAsDouble(((ci * mg + ml) * kh + a) * kw + e);
              }
  for (int64_t b = 0; b < n; ++b)
    for (int64_t mo = 0; mo < m; ++mo)
      for (int64_t k = 0; k < oh_size * ow_size; ++k) y[(b * m + mo) * oh_size * ow_size + k] += bias[mo];
  return y;
}

// Random weights and inputs over kernels the stride divides (the phase
// decomposition: UNet's 2/2, a GAN's 4/2 with pads 1, groups, output_padding
// within the end pad, stride 3) and ones it does not (the spread-out input:
// 3/2, dilation), against the direct formula.
TEST(OnnxComposedOps, ConvTransposeAgainstTheDirectFormula) {
  struct Case {
    int64_t kernel, stride, dilation, groups;
    std::vector<int64_t> pads;  // top, left, bottom, right
    int64_t output_padding;
  };
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const Case& k : std::vector<Case>{{2, 2, 1, 1, {0, 0, 0, 0}, 0},
                                         {4, 2, 1, 1, {1, 1, 1, 1}, 0},
                                         {4, 2, 1, 2, {1, 2, 2, 1}, 1},
                                         {3, 3, 1, 1, {0, 1, 2, 0}, 0},
                                         {6, 3, 1, 2, {2, 2, 2, 2}, 2},
                                         {3, 2, 1, 2, {1, 1, 1, 1}, 1},
                                         {2, 2, 2, 1, {0, 0, 0, 0}, 0},
                                         {3, 1, 1, 1, {1, 1, 1, 1}, 0}}) {
    SCOPED_TRACE(absl::StrCat("kernel ", k.kernel, " stride ", k.stride, " dilation ", k.dilation,
                              " groups ", k.groups, " output_padding ", k.output_padding));
    const int64_t c = 4, mg = 3, h = 3, wd = 4;
    Tensor x(DType::kF32, {2, c, h, wd}), w(DType::kF32, {c, mg, k.kernel, k.kernel});
    for (int64_t i = 0; i < x.NumElements(); ++i) x.SetFromDouble(i, u(rng));
    for (int64_t i = 0; i < w.NumElements(); ++i) w.SetFromDouble(i, u(rng));
    std::vector<double> bias(mg * k.groups);
    for (double& v : bias) v = u(rng);
    std::vector<float> wv(w.NumElements()), bv(bias.begin(), bias.end());
    for (int64_t i = 0; i < w.NumElements(); ++i) wv[i] = static_cast<float>(w.GetAsDouble(i));
    ModelBuilder b;
    b.FloatInput("x", {2, c, h, wd});
    b.FloatInitializer("w", w.dims(), wv);
    b.FloatInitializer("b", {mg * k.groups}, bv);
    onnx::NodeProto* n = b.Node("ConvTranspose", {"x", "w", "b"}, {"y"});
    AttrInts(n, "strides", {k.stride, k.stride});
    AttrInts(n, "dilations", {k.dilation, k.dilation});
    AttrInts(n, "pads", k.pads);
    AttrInts(n, "output_padding", {k.output_padding, k.output_padding});
    AttrInt(n, "group", k.groups);
    b.Output("y");
    auto out = RunModel(b, {x});
    ASSERT_EQ(out.size(), 1u);
    const int64_t span = (k.kernel - 1) * k.dilation + 1;
    const int64_t oh = (h - 1) * k.stride + span + k.output_padding - k.pads[0] - k.pads[2];
    const int64_t ow = (wd - 1) * k.stride + span + k.output_padding - k.pads[1] - k.pads[3];
    ExpectTensor(out[0], DType::kF32, {2, mg * k.groups, oh, ow},
                 DirectConvTranspose(x, w, bias, k.groups, {k.stride, k.stride},
                                     {k.dilation, k.dilation}, {k.pads[0], k.pads[1]}, oh, ow),
                 1e-5);
  }
}

TEST(OnnxComposedOps, ConvTransposeNeedsAKnownWeight) {
  ModelBuilder b;
  b.FloatInput("x", {1, 1, 3});
  b.FloatInput("w", {1, 1, 3});
  b.Node("ConvTranspose", {"x", "w"}, {"y"});
  b.Output("y");
  EXPECT_THAT(ImportError(b), HasSubstr("must be known at import time"));
}

// --- Resize ------------------------------------------------------------------

ModelBuilder ResizeModel(std::vector<int64_t> in_dims, std::vector<float> scales,
                         std::vector<int64_t> sizes, const std::string& mode,
                         const std::string& coordinates, const std::string& nearest = "",
                         float cubic_a = 0) {
  ModelBuilder b;
  b.FloatInput("x", in_dims);
  std::vector<std::string> inputs = {"x", ""};
  if (!scales.empty()) {
    b.FloatInitializer("scales", {static_cast<int64_t>(scales.size())}, scales);
    inputs.push_back("scales");
  } else {
    inputs.push_back("");
    b.Int64Initializer("sizes", {static_cast<int64_t>(sizes.size())}, sizes);
    inputs.push_back("sizes");
  }
  onnx::NodeProto* n = b.Node("Resize", inputs, {"y"});
  AttrString(n, "mode", mode);
  AttrString(n, "coordinate_transformation_mode", coordinates);
  if (!nearest.empty()) AttrString(n, "nearest_mode", nearest);
  if (cubic_a != 0) AttrFloat(n, "cubic_coeff_a", cubic_a);
  b.Output("y");
  return b;
}

TEST(OnnxComposedOps, ResizeNearest) {
  // Asymmetric with floor (PyTorch's nearest): each value twice.
  ModelBuilder up = ResizeModel({1, 1, 1, 3}, {1, 1, 1, 2}, {}, "nearest", "asymmetric", "floor");
  ExpectTensor(RunModel(up, {F32({1, 1, 1, 3}, {1, 2, 3})})[0], DType::kF32, {1, 1, 1, 6},
               {1, 1, 2, 2, 3, 3});
  // half_pixel from 4 to 3: sources 0.1667, 1.5, 2.8333; 1.5 rounds down
  // with round_prefer_floor and up with round_prefer_ceil.
  ModelBuilder down = ResizeModel({1, 4}, {}, {1, 3}, "nearest", "half_pixel");
  ExpectTensor(RunModel(down, {F32({1, 4}, {10, 20, 30, 40})})[0], DType::kF32, {1, 3}, {10, 20, 40});
  ModelBuilder ceil = ResizeModel({1, 4}, {}, {1, 3}, "nearest", "half_pixel", "round_prefer_ceil");
  ExpectTensor(RunModel(ceil, {F32({1, 4}, {10, 20, 30, 40})})[0], DType::kF32, {1, 3}, {10, 30, 40});
}

TEST(OnnxComposedOps, ResizeLinear) {
  // half_pixel, 2 -> 4: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25
  // (clamped to 1).
  ModelBuilder half = ResizeModel({1, 2}, {1, 2}, {}, "linear", "half_pixel");
  ExpectTensor(RunModel(half, {F32({1, 2}, {0, 8})})[0], DType::kF32, {1, 4}, {0, 2, 6, 8});
  // align_corners, 3 -> 5: sources 0, 0.5, 1, 1.5, 2.
  ModelBuilder corners = ResizeModel({1, 3}, {}, {1, 5}, "linear", "align_corners");
  ExpectTensor(RunModel(corners, {F32({1, 3}, {0, 4, 16})})[0], DType::kF32, {1, 5}, {0, 2, 4, 10, 16});
  // Two dims: bilinear is linear along each.
  ModelBuilder two = ResizeModel({1, 1, 2, 2}, {}, {1, 1, 3, 3}, "linear", "align_corners");
  ExpectTensor(RunModel(two, {F32({1, 1, 2, 2}, {0, 2, 4, 6})})[0], DType::kF32, {1, 1, 3, 3},
               {0, 1, 2, 2, 3, 4, 4, 5, 6});
  // pytorch_half_pixel to a size of 1 reads position 0.
  ModelBuilder one = ResizeModel({1, 3}, {}, {1, 1}, "linear", "pytorch_half_pixel");
  ExpectTensor(RunModel(one, {F32({1, 3}, {7, 8, 9})})[0], DType::kF32, {1, 1}, {7});
}

// Keys's cubic convolution: with a = -0.75 (the default) the weight of a
// tap 1.5 away is a (1.5^3 - 5 1.5^2 + 8 1.5 - 4) = -0.09375.
TEST(OnnxComposedOps, ResizeCubic) {
  ModelBuilder b = ResizeModel({1, 4}, {}, {1, 8}, "cubic", "align_corners", "", -0.5f);
  auto out = RunModel(b, {F32({1, 4}, {0, 1, 2, 3})});
  ASSERT_EQ(out.size(), 1u);
  // With a = -0.5, cubic convolution reproduces a linear ramp where all four taps are
  // inside (sources 9/7 and 12/7) and at whole sources (the ends).
  for (int o : {0, 3, 4, 7}) EXPECT_NEAR(out[0].GetAsDouble(o), o * 3.0 / 7.0, 1e-5) << o;
  ModelBuilder mid = ResizeModel({1, 4}, {1, 2}, {}, "cubic", "asymmetric");
  // Source 1.5 (output 3): taps at 0..3.
  auto m = RunModel(mid, {F32({1, 4}, {1, 0, 0, 0})});
  EXPECT_NEAR(m[0].GetAsDouble(3), -0.09375, 1e-6);
}

TEST(OnnxComposedOps, ResizeRefusesWhatItCannotDo) {
  ModelBuilder crop = ResizeModel({1, 4}, {1, 2}, {}, "linear", "tf_crop_and_resize");
  EXPECT_THAT(ImportError(crop), HasSubstr("tf_crop_and_resize"));
  ModelBuilder mode = ResizeModel({1, 4}, {1, 2}, {}, "area", "half_pixel");
  EXPECT_THAT(ImportError(mode), HasSubstr("\"area\""));
}

// --- Normalization -------------------------------------------------------------

// Each [n, c] normalized over its spatial values: [1, 3] -> [-1, 1] (up to
// eps), then scale and bias per channel.
TEST(OnnxComposedOps, InstanceNormalization) {
  ModelBuilder b;
  b.FloatInput("x", {1, 2, 2});
  b.FloatInitializer("scale", {2}, {2, 3});
  b.FloatInitializer("bias", {2}, {0.5, -1});
  AttrFloat(b.Node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}), "epsilon", 0);
  b.Output("y");
  auto out = RunModel(b, {F32({1, 2, 2}, {1, 3, 10, 20})});
  ExpectTensor(out[0], DType::kF32, {1, 2, 2}, {-1.5, 2.5, -4, 2}, 1e-5);
}

// Two groups of two channels: group 0 is {1, 3, 5, 7} (mean 4, variance
// 5), group 1 is {0, 0, 2, 2}; opset 18's scale and bias are per group.
TEST(OnnxComposedOps, GroupNormalization) {
  ModelBuilder b(18);
  b.FloatInput("x", {1, 4, 2});
  b.FloatInitializer("scale", {2}, {1, 2});
  b.FloatInitializer("bias", {2}, {0, 1});
  onnx::NodeProto* n = b.Node("GroupNormalization", {"x", "scale", "bias"}, {"y"});
  AttrInt(n, "num_groups", 2);
  AttrFloat(n, "epsilon", 0);
  b.Output("y");
  auto out = RunModel(b, {F32({1, 4, 2}, {1, 3, 5, 7, 0, 0, 2, 2})});
  const double s = std::sqrt(5.0);
  ExpectTensor(out[0], DType::kF32, {1, 4, 2}, {-3 / s, -1 / s, 1 / s, 3 / s, -1, -1, 3, 3}, 1e-5);
}

// Scale and bias per channel at opset 18 (as some exporters write them).
TEST(OnnxComposedOps, GroupNormalizationPerChannelAffine) {
  ModelBuilder b(18);
  b.FloatInput("x", {1, 2, 2});
  b.FloatInitializer("scale", {2}, {1, 10});
  b.FloatInitializer("bias", {2}, {0, 1});
  onnx::NodeProto* n = b.Node("GroupNormalization", {"x", "scale", "bias"}, {"y"});
  AttrInt(n, "num_groups", 1);
  AttrFloat(n, "epsilon", 0);
  b.Output("y");
  // One group {1, 3, 5, 7}: mean 4, variance 5.
  auto out = RunModel(b, {F32({1, 2, 2}, {1, 3, 5, 7})});
  const double s = std::sqrt(5.0);
  ExpectTensor(out[0], DType::kF32, {1, 2, 2}, {-3 / s, -1 / s, 10 / s + 1, 30 / s + 1}, 1e-5);
}

// --- Rearranging -------------------------------------------------------------

TEST(OnnxComposedOps, DepthToSpaceAndBack) {
  ModelBuilder b;
  b.FloatInput("x", {1, 4, 1, 1});
  AttrInt(b.Node("DepthToSpace", {"x"}, {"dcr"}), "blocksize", 2);
  onnx::NodeProto* crd = b.Node("DepthToSpace", {"x"}, {"crd"});
  AttrInt(crd, "blocksize", 2);
  AttrString(crd, "mode", "CRD");
  AttrInt(b.Node("SpaceToDepth", {"dcr"}, {"back"}), "blocksize", 2);
  for (const char* o : {"dcr", "crd", "back"}) b.Output(o);
  auto out = RunModel(b, {F32({1, 4, 1, 1}, {1, 2, 3, 4})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF32, {1, 1, 2, 2}, {1, 2, 3, 4});
  ExpectTensor(out[1], DType::kF32, {1, 1, 2, 2}, {1, 2, 3, 4});
  ExpectTensor(out[2], DType::kF32, {1, 4, 1, 1}, {1, 2, 3, 4});
}

// With 8 channels DCR and CRD differ: DCR's output channel 0 takes input
// channels 0, 2, 4, 6; CRD's takes 0, 1, 2, 3.
TEST(OnnxComposedOps, DepthToSpaceModes) {
  ModelBuilder b;
  b.FloatInput("x", {1, 8, 1, 1});
  AttrInt(b.Node("DepthToSpace", {"x"}, {"dcr"}), "blocksize", 2);
  onnx::NodeProto* crd = b.Node("DepthToSpace", {"x"}, {"crd"});
  AttrInt(crd, "blocksize", 2);
  AttrString(crd, "mode", "CRD");
  b.Output("dcr");
  b.Output("crd");
  auto out = RunModel(b, {F32({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7})});
  ExpectTensor(out[0], DType::kF32, {1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
  ExpectTensor(out[1], DType::kF32, {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
}

TEST(OnnxComposedOps, Tile) {
  ModelBuilder b;
  b.FloatInput("x", {2, 2});
  b.IntsConstant("r", {2, 3});
  b.Node("Tile", {"x", "r"}, {"y"});
  b.Output("y");
  auto out = RunModel(b, {F32({2, 2}, {1, 2, 3, 4})});
  ExpectTensor(out[0], DType::kF32, {4, 6},
               {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
}

// Sizes a malformed model makes overflow 64 bits or ask for tables too
// large to build: one error naming the node, never undefined behaviour.
TEST(OnnxComposedOps, SizesThatOverflowAreErrors) {
  auto error = [](ModelBuilder& b) {
    absl::StatusOr<Module> m = b.Import();
    return m.ok() ? std::string() : std::string(m.status().message());
  };
  {
    ModelBuilder b;
    b.FloatInput("x", {2, 2});
    b.IntsConstant("r", {int64_t{1} << 62, 3});
    b.Node("Tile", {"x", "r"}, {"y"});
    b.Output("y");
    EXPECT_THAT(error(b), ::testing::HasSubstr("overflows 64 bits"));
  }
  {
    ModelBuilder b;
    b.FloatInput("x", {1, 4, 2, 2});
    AttrInt(b.Node("DepthToSpace", {"x"}, {"y"}), "blocksize", int64_t{1} << 33);
    b.Output("y");
    EXPECT_THAT(error(b), ::testing::HasSubstr("overflows 64 bits"));
  }
  {
    ModelBuilder b = ResizeModel({1, 1, 2, 2}, {1, 1, 1e30f, 1}, {}, "nearest", "asymmetric");
    EXPECT_THAT(error(b), ::testing::HasSubstr("cannot resize dim 2"));
  }
  {
    ModelBuilder b = ResizeModel({1, 1, 2, 2}, {}, {1, 1, int64_t{1} << 40, 2}, "nearest",
                                 "asymmetric");
    EXPECT_THAT(error(b), ::testing::HasSubstr("cannot resize dim 2"));
  }
}

// Rows picked by (row, column) pairs, one negative; and whole rows by one
// index each.
TEST(OnnxComposedOps, GatherND) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  b.Input("pairs", TP::INT64, std::vector<int64_t>{2, 2});
  b.Input("rows", TP::INT64, std::vector<int64_t>{2, 1});
  b.Node("GatherND", {"x", "pairs"}, {"elements"});
  b.Node("GatherND", {"x", "rows"}, {"picked"});
  b.Output("elements");
  b.Output("picked");
  auto out = RunModel(b, {F32({2, 3}, {1, 2, 3, 4, 5, 6}), T(DType::kI64, {2, 2}, {1, 2, 0, -1}),
                          T(DType::kI64, {2, 1}, {1, 0})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {2}, {6, 3});
  ExpectTensor(out[1], DType::kF32, {2, 3}, {4, 5, 6, 1, 2, 3});
}

// Rows of the data replaced at known indices (one negative); the data and
// the updates are computed at run time.
TEST(OnnxComposedOps, ScatterND) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  b.FloatInput("u", {1, 3});
  b.Int64Initializer("rows", {1, 1}, {-1});
  b.Node("ScatterND", {"x", "rows", "u"}, {"by_row"});
  b.FloatInput("v", {4});
  b.FloatInput("w", {2});
  b.Int64Initializer("at", {2, 1}, {1, 3});
  b.Node("ScatterND", {"v", "at", "w"}, {"by_element"});
  b.Output("by_row");
  b.Output("by_element");
  auto out = RunModel(b, {F32({2, 3}, {0, 0, 0, 1, 1, 1}), F32({1, 3}, {7, 8, 9}),
                          F32({4}, {1, 2, 3, 4}), F32({2}, {9, 10})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {2, 3}, {0, 0, 0, 7, 8, 9});
  ExpectTensor(out[1], DType::kF32, {4}, {1, 9, 3, 10});
}

// Elements written at known indices along an axis (torch.scatter): row r
// of the updates goes to the columns its indices name; a negative index
// counts from the end.
TEST(OnnxComposedOps, ScatterElements) {
  ModelBuilder b;
  b.FloatInput("x", {2, 4});
  b.FloatInput("u", {2, 2});
  b.Int64Initializer("i", {2, 2}, {3, 0, -1, 1});
  AttrInt(b.Node("ScatterElements", {"x", "i", "u"}, {"y"}), "axis", 1);
  b.Output("y");
  auto out = RunModel(b, {F32({2, 4}, {0, 0, 0, 0, 1, 1, 1, 1}), F32({2, 2}, {5, 6, 7, 8})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2, 4}, {6, 0, 0, 5, 1, 8, 1, 7});
}

// Indices computed at run time (a graph network's edges) and reductions
// (torch.scatter_add, index_put with accumulate) run as graft's scatter
// ops: counts of each target, and sums of rows.
TEST(OnnxComposedOps, ScatterWithRunTimeIndicesAndReductions) {
  ModelBuilder b(18);
  b.FloatInput("x", {3});
  b.Input("edges", TP::INT64, std::vector<int64_t>{4});
  b.FloatInput("ones", {4});
  AttrString(b.Node("ScatterElements", {"x", "edges", "ones"}, {"counts"}), "reduction", "add");
  b.FloatInput("table", {3, 2});
  b.Input("rows", TP::INT64, std::vector<int64_t>{2, 1});
  b.FloatInput("updates", {2, 2});
  AttrString(b.Node("ScatterND", {"table", "rows", "updates"}, {"maxed"}), "reduction", "max");
  b.Node("ScatterND", {"table", "rows", "updates"}, {"written"});
  for (const char* o : {"counts", "maxed", "written"}) b.Output(o);
  auto out = RunModel(b, {F32({3}, {0, 10, 0}), T(DType::kI64, {4}, {1, 2, 1, -1}), F32({4}, {1, 1, 1, 1}),
                          F32({3, 2}, {0, 0, 5, 5, 0, 0}), T(DType::kI64, {2, 1}, {1, 0}),
                          F32({2, 2}, {4, 6, -1, 1})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF32, {3}, {0, 12, 2});
  ExpectTensor(out[1], DType::kF32, {3, 2}, {0, 1, 5, 6, 0, 0});
  ExpectTensor(out[2], DType::kF32, {3, 2}, {-1, 1, 4, 6, 0, 0});
}

// x * tanh(softplus(x)), from opset 18.
TEST(OnnxComposedOps, Mish) {
  ModelBuilder b(18);
  b.FloatInput("x", {3});
  b.Node("Mish", {"x"}, {"y"});
  b.Output("y");
  auto out = RunModel(b, {F32({3}, {0, 1, -1})});
  ExpectTensor(out[0], DType::kF32, {3}, {0, 0.8650983882673103, -0.30340146137410895}, 1e-6);
}

// Negative indices count from depth; out-of-range ones get no hit.
TEST(OnnxComposedOps, OneHot) {
  ModelBuilder b;
  b.Input("i", TP::INT64, std::vector<int64_t>{3});
  b.IntsConstant("depth", {3}, /*scalar=*/true);
  b.FloatInitializer("values", {2}, {-1, 5});
  b.Node("OneHot", {"i", "depth", "values"}, {"last"});
  AttrInt(b.Node("OneHot", {"i", "depth", "values"}, {"first"}), "axis", 0);
  b.Output("last");
  b.Output("first");
  auto out = RunModel(b, {T(DType::kI64, {3}, {0, -1, 7})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {3, 3}, {5, -1, -1, -1, -1, 5, -1, -1, -1});
  ExpectTensor(out[1], DType::kF32, {3, 3}, {5, -1, -1, -1, -1, -1, -1, 5, -1});
}

TEST(OnnxComposedOps, Einsum) {
  ModelBuilder b;
  b.FloatInput("a", {2, 3});
  b.FloatInput("v", {3});
  AttrString(b.Node("Einsum", {"a", "a"}, {"gram"}), "equation", "ij,kj->ik");
  AttrString(b.Node("Einsum", {"a"}, {"t"}), "equation", "ij->ji");
  AttrString(b.Node("Einsum", {"a", "v"}, {"av"}), "equation", "...j,j");
  AttrString(b.Node("Einsum", {"a"}, {"total"}), "equation", "ij->");
  AttrString(b.Node("Einsum", {"a", "v"}, {"outer"}), "equation", "ij,k->ikj");
  for (const char* o : {"gram", "t", "av", "total", "outer"}) b.Output(o);
  auto out = RunModel(b, {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({3}, {1, 0, -1})});
  ASSERT_EQ(out.size(), 5u);
  ExpectTensor(out[0], DType::kF32, {2, 2}, {14, 32, 32, 77});
  ExpectTensor(out[1], DType::kF32, {3, 2}, {1, 4, 2, 5, 3, 6});
  ExpectTensor(out[2], DType::kF32, {2}, {-2, -2});
  ExpectTensor(out[3], DType::kF32, {}, {21});
  // outer[i, k, j] = a[i, j] * v[k].
  std::vector<double> outer;
  const double a[2][3] = {{1, 2, 3}, {4, 5, 6}}, v[3] = {1, 0, -1};
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 3; ++j) outer.push_back(a[i][j] * v[k]);
  ExpectTensor(out[4], DType::kF32, {2, 3, 3}, outer);
}

TEST(OnnxComposedOps, EinsumRefusesADiagonal) {
  ModelBuilder b;
  b.FloatInput("a", {3, 3});
  AttrString(b.Node("Einsum", {"a"}, {"d"}), "equation", "ii->i");
  b.Output("d");
  EXPECT_THAT(ImportError(b), HasSubstr("diagonal"));
  ModelBuilder twice;
  twice.FloatInput("a", {3, 3});
  AttrString(twice.Node("Einsum", {"a"}, {"d"}), "equation", "ij->ii");
  twice.Output("d");
  EXPECT_THAT(ImportError(twice), HasSubstr("appears twice"));
}

// --- Reductions ----------------------------------------------------------------

TEST(OnnxComposedOps, ComposedReductionsAndArgMin) {
  ModelBuilder b;
  b.FloatInput("x", {2, 2});
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    onnx::NodeProto* n = b.Node(op, {"x"}, {op});
    AttrInts(n, "axes", {1});
    AttrInt(n, "keepdims", 0);
    b.Output(op);
  }
  onnx::NodeProto* n = b.Node("ArgMin", {"x"}, {"argmin"});
  AttrInt(n, "axis", 1);
  b.Output("argmin");
  auto out = RunModel(b, {F32({2, 2}, {3, -4, 1000, 1000})});
  ASSERT_EQ(out.size(), 6u);
  ExpectTensor(out[0], DType::kF32, {2}, {7, 2000});
  ExpectTensor(out[1], DType::kF32, {2}, {5, std::sqrt(2.0) * 1000}, 1e-4);
  ExpectTensor(out[2], DType::kF32, {2}, {25, 2e6});
  ExpectTensor(out[3], DType::kF32, {2}, {std::log(-1.0), std::log(2000.0)}, 1e-5);
  // 1000 overflows exp in f32: the shift by the maximum keeps it finite.
  ExpectTensor(out[4], DType::kF32, {2}, {std::log(std::exp(3.0) + std::exp(-4.0)), 1000 + std::log(2.0)},
               1e-5);
  // The first smallest.
  ExpectTensor(out[5], DType::kI64, {2, 1}, {1, 0});
}

// --- Quantization ------------------------------------------------------------

// round(x / scale) + zero point, halves to even, saturated to the zero
// point's type; and back: (q - zero point) * scale.
TEST(OnnxComposedOps, QuantizeLinearPerTensor) {
  ModelBuilder b;
  b.FloatInput("x", {5});
  b.FloatInitializer("s", {}, {0.5});
  b.RawInitializer("z", T(DType::kU8, {}, {128}));
  b.Node("QuantizeLinear", {"x", "s", "z"}, {"q"});
  b.Node("DequantizeLinear", {"q", "s", "z"}, {"back"});
  b.Output("q");
  b.Output("back");
  auto out = RunModel(b, {F32({5}, {-1, 0, 0.5, 1.25, 300})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kU8, {5}, {126, 128, 129, 130, 255});
  ExpectTensor(out[1], DType::kF32, {5}, {-1, 0, 0.5, 1, 63.5});
}

// Per axis (axis 0): row r uses scale[r] and zero point[r]; a known int32
// tensor (a quantized bias) is dequantized at import.
TEST(OnnxComposedOps, QuantizeLinearPerAxisAndInt32Bias) {
  ModelBuilder b;
  b.FloatInput("x", {2, 2});
  b.FloatInitializer("s", {2}, {1, 2});
  b.RawInitializer("z", T(DType::kI8, {2}, {0, 1}));
  b.RawInitializer("bias", T(DType::kI32, {2}, {10, -20}));
  b.FloatInitializer("bias_scale", {}, {0.25});
  for (onnx::NodeProto* n : {b.Node("QuantizeLinear", {"x", "s", "z"}, {"q"}),
                             b.Node("DequantizeLinear", {"q", "s", "z"}, {"back"})}) {
    AttrInt(n, "axis", 0);
  }
  b.Node("DequantizeLinear", {"bias", "bias_scale"}, {"b"});
  for (const char* o : {"q", "back", "b"}) b.Output(o);
  auto out = RunModel(b, {F32({2, 2}, {1, -1, 3, 300})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kI8, {2, 2}, {1, -1, 3, 127});
  ExpectTensor(out[1], DType::kF32, {2, 2}, {1, -1, 4, 252});
  ExpectTensor(out[2], DType::kF32, {2}, {2.5, -5});
}

TEST(OnnxComposedOps, QuantizeLinearRefusesWhatItCannotDo) {
  ModelBuilder runtime_scale;
  runtime_scale.FloatInput("x", {2});
  runtime_scale.FloatInput("s", {});
  runtime_scale.Node("QuantizeLinear", {"x", "s"}, {"q"});
  runtime_scale.Output("q");
  EXPECT_THAT(ImportError(runtime_scale), HasSubstr("scale must be known at import time"));
  ModelBuilder wide;
  wide.FloatInput("x", {2});
  wide.FloatInitializer("s", {}, {1});
  wide.RawInitializer("z", T(DType::kI32, {}, {0}));
  wide.Node("QuantizeLinear", {"x", "s", "z"}, {"q"});
  wide.Output("q");
  EXPECT_THAT(ImportError(wide), HasSubstr("int8 and uint8"));
  // A known int32 bias whose zero point has fewer values than its scale.
  ModelBuilder short_zero_point;
  short_zero_point.RawInitializer("bias", T(DType::kI32, {2}, {10, -20}));
  short_zero_point.FloatInitializer("s", {2}, {1, 2});
  short_zero_point.RawInitializer("z", T(DType::kI32, {1}, {0}));
  AttrInt(short_zero_point.Node("DequantizeLinear", {"bias", "s", "z"}, {"b"}), "axis", 0);
  short_zero_point.Output("b");
  EXPECT_THAT(ImportError(short_zero_point), HasSubstr("the zero point has 1 values and the scale 2"));
}

// Gemm with transB and a scalar C: not linear's bias (which is [N]) but an
// add, on every backend.
TEST(OnnxComposedOps, GemmWithAScalarC) {
  ModelBuilder b;
  b.FloatInput("a", {1, 2});
  b.FloatInitializer("w", {3, 2}, {1, 0, 0, 1, 1, 1});
  b.FloatInitializer("c", {}, {0.5});
  AttrInt(b.Node("Gemm", {"a", "w", "c"}, {"y"}), "transB", 1);
  b.Output("y");
  auto out = RunModel(b, {F32({1, 2}, {2, 3})});
  ExpectTensor(out[0], DType::kF32, {1, 3}, {2.5, 3.5, 5.5});
}

// Negative steps (torch.flip exports starts -1, ends INT64_MIN, steps -1):
// ONNX clamps start to [0, n - 1] and end to [-1, n - 1].
TEST(OnnxComposedOps, SliceWithNegativeSteps) {
  ModelBuilder b;
  b.FloatInput("x", {2, 5});
  b.IntsConstant("flip_starts", {-1});
  b.IntsConstant("flip_ends", {std::numeric_limits<int64_t>::min()});
  b.IntsConstant("axis1", {1});
  b.IntsConstant("minus1", {-1});
  b.Node("Slice", {"x", "flip_starts", "flip_ends", "axis1", "minus1"}, {"flipped"});
  b.IntsConstant("from", {4});
  b.IntsConstant("to", {0});
  b.IntsConstant("minus2", {-2});
  b.Node("Slice", {"x", "from", "to", "axis1", "minus2"}, {"every_other"});
  b.IntsConstant("big", {100});
  b.IntsConstant("before_first", {-100});
  b.IntsConstant("axis0", {0});
  b.Node("Slice", {"x", "big", "before_first", "axis0", "minus1"}, {"rows"});
  for (const char* o : {"flipped", "every_other", "rows"}) b.Output(o);
  auto out = RunModel(b, {F32({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF32, {2, 5}, {4, 3, 2, 1, 0, 9, 8, 7, 6, 5});
  ExpectTensor(out[1], DType::kF32, {2, 2}, {4, 2, 9, 7});
  ExpectTensor(out[2], DType::kF32, {2, 5}, {5, 6, 7, 8, 9, 0, 1, 2, 3, 4});
}

// The K largest (or smallest) along an axis, sorted, ties to the lower
// index; -inf entries still come out in their place.
TEST(OnnxComposedOps, TopK) {
  ModelBuilder b;
  b.FloatInput("x", {1, 5});
  b.Input("n", TP::INT32, std::vector<int64_t>{3, 2});
  b.IntsConstant("three", {3});
  b.IntsConstant("five", {5});
  b.IntsConstant("two", {2});
  b.Node("TopK", {"x", "three"}, {"v", "i"});
  b.Node("TopK", {"x", "five"}, {"all_v", "all_i"});
  AttrInt(b.Node("TopK", {"x", "two"}, {"small_v", "small_i"}), "largest", 0);
  AttrInt(b.Node("TopK", {"n", "two"}, {"col_v", "col_i"}), "axis", 0);
  for (const char* o : {"v", "i", "all_v", "all_i", "small_v", "small_i", "col_v", "col_i"}) b.Output(o);
  auto out = RunModel(b, {F32({1, 5}, {1, 3, 3, -INFINITY, 2}),
                          Tensor::FromVector<int32_t>(DType::kI32, {3, 2}, {5, -1, 7, 4, 5, 9})});
  ASSERT_EQ(out.size(), 8u);
  ExpectTensor(out[0], DType::kF32, {1, 3}, {3, 3, 2});
  ExpectTensor(out[1], DType::kI64, {1, 3}, {1, 2, 4});
  ExpectTensor(out[2], DType::kF32, {1, 5}, {3, 3, 2, 1, -INFINITY});
  ExpectTensor(out[3], DType::kI64, {1, 5}, {1, 2, 4, 0, 3});
  ExpectTensor(out[4], DType::kF32, {1, 2}, {-INFINITY, 1});
  ExpectTensor(out[5], DType::kI64, {1, 2}, {3, 0});
  ExpectTensor(out[6], DType::kI32, {2, 2}, {7, 9, 5, 4});
  ExpectTensor(out[7], DType::kI64, {2, 2}, {1, 2, 0, 1});
}

// --- Recurrent -----------------------------------------------------------------

// hidden size 1, one input feature, weights chosen so each gate is easy to
// follow: an RNN with W = 1, R = 0.5 computes h_t = tanh(x_t + 0.5 h_(t-1)).
TEST(OnnxComposedOps, RnnForwardAndReverse) {
  for (const char* direction : {"forward", "reverse"}) {
    SCOPED_TRACE(direction);
    ModelBuilder b;
    b.FloatInput("x", {3, 1, 1});
    b.FloatInitializer("w", {1, 1, 1}, {1});
    b.FloatInitializer("r", {1, 1, 1}, {0.5});
    onnx::NodeProto* n = b.Node("RNN", {"x", "w", "r"}, {"y", "h"});
    AttrInt(n, "hidden_size", 1);
    AttrString(n, "direction", direction);
    b.Output("y");
    b.Output("h");
    auto out = RunModel(b, {F32({3, 1, 1}, {1, -2, 3})});
    ASSERT_EQ(out.size(), 2u);
    const double xs[3] = {1, -2, 3};
    double h = 0, ys[3];
    for (int k = 0; k < 3; ++k) {
      const int t = direction[0] == 'f' ? k : 2 - k;
      h = std::tanh(xs[t] + 0.5 * h);
      ys[t] = h;
    }
    ExpectTensor(out[0], DType::kF32, {3, 1, 1, 1}, {ys[0], ys[1], ys[2]}, 1e-6);
    ExpectTensor(out[1], DType::kF32, {1, 1, 1}, {h}, 1e-6);
  }
}

// One LSTM step by the ONNX equations (gates i, o, f, c), with biases,
// an initial state and the peepholes.
TEST(OnnxComposedOps, LstmOneStep) {
  ModelBuilder b;
  b.FloatInput("x", {1, 1, 1});
  b.FloatInitializer("w", {1, 4, 1}, {0.5, -1, 2, 1});
  b.FloatInitializer("r", {1, 4, 1}, {0.1, 0.2, 0.3, 0.4});
  b.FloatInitializer("bias", {1, 8}, {0.1, 0, 0, 0, 0, 0.2, 0, -0.3});
  b.FloatInitializer("h0", {1, 1, 1}, {0.5});
  b.FloatInitializer("c0", {1, 1, 1}, {-1});
  b.FloatInitializer("p", {1, 3}, {0.25, 0.5, 0.75});
  onnx::NodeProto* n = b.Node("LSTM", {"x", "w", "r", "bias", "", "h0", "c0", "p"}, {"y", "h", "c"});
  AttrInt(n, "hidden_size", 1);
  for (const char* o : {"y", "h", "c"}) b.Output(o);
  auto out = RunModel(b, {F32({1, 1, 1}, {2})});
  ASSERT_EQ(out.size(), 3u);
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  const double x = 2, h0 = 0.5, c0 = -1;
  const double i = sigmoid(0.5 * x + 0.1 * h0 + 0.1 + 0.25 * c0);
  const double f = sigmoid(2 * x + 0.3 * h0 + 0.75 * c0);
  const double g = std::tanh(1 * x + 0.4 * h0 - 0.3);
  const double c = f * c0 + i * g;
  const double o = sigmoid(-1 * x + 0.2 * h0 + 0.2 + 0.5 * c);
  const double h = o * std::tanh(c);
  ExpectTensor(out[0], DType::kF32, {1, 1, 1, 1}, {h}, 1e-6);
  ExpectTensor(out[1], DType::kF32, {1, 1, 1}, {h}, 1e-6);
  ExpectTensor(out[2], DType::kF32, {1, 1, 1}, {c}, 1e-6);
}

// GRU with both linear_before_reset forms (gates z, r, h).
TEST(OnnxComposedOps, GruOneStep) {
  for (int lbr : {0, 1}) {
    SCOPED_TRACE(lbr);
    ModelBuilder b;
    b.FloatInput("x", {1, 1, 1});
    b.FloatInitializer("w", {1, 3, 1}, {0.5, -1, 2});
    b.FloatInitializer("r", {1, 3, 1}, {0.1, 0.2, 0.3});
    b.FloatInitializer("bias", {1, 6}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6});
    b.FloatInitializer("h0", {1, 1, 1}, {0.5});
    onnx::NodeProto* n = b.Node("GRU", {"x", "w", "r", "bias", "", "h0"}, {"y"});
    AttrInt(n, "hidden_size", 1);
    AttrInt(n, "linear_before_reset", lbr);
    b.Output("y");
    auto out = RunModel(b, {F32({1, 1, 1}, {2})});
    auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
    const double x = 2, h0 = 0.5;
    const double z = sigmoid(0.5 * x + 0.1 * h0 + 0.1 + 0.4);
    const double r = sigmoid(-1 * x + 0.2 * h0 + 0.2 + 0.5);
    const double hh = lbr ? std::tanh(2 * x + r * (0.3 * h0 + 0.6) + 0.3)
                          : std::tanh(2 * x + 0.3 * (r * h0) + 0.6 + 0.3);
    const double h = (1 - z) * hh + z * h0;
    ExpectTensor(out[0], DType::kF32, {1, 1, 1, 1}, {h}, 1e-6);
  }
}

// No bias input (nn.GRU(bias=False)), both linear_before_reset forms, and
// an RNN with Relu: h = relu(x w + h r).
TEST(OnnxComposedOps, GruWithoutBiasAndRnnWithRelu) {
  for (int lbr : {0, 1}) {
    SCOPED_TRACE(lbr);
    ModelBuilder b;
    b.FloatInput("x", {1, 1, 1});
    b.FloatInitializer("w", {1, 3, 1}, {0.5, -1, 2});
    b.FloatInitializer("r", {1, 3, 1}, {0.1, 0.2, 0.3});
    b.FloatInitializer("h0", {1, 1, 1}, {0.5});
    onnx::NodeProto* n = b.Node("GRU", {"x", "w", "r", "", "", "h0"}, {"y"});
    AttrInt(n, "hidden_size", 1);
    AttrInt(n, "linear_before_reset", lbr);
    b.Output("y");
    auto out = RunModel(b, {F32({1, 1, 1}, {2})});
    ASSERT_EQ(out.size(), 1u);
    auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
    const double z = sigmoid(0.5 * 2 + 0.1 * 0.5), r = sigmoid(-2 + 0.2 * 0.5);
    const double hh = std::tanh(2 * 2 + r * 0.3 * 0.5);  // Both forms agree without a bias.
    ExpectTensor(out[0], DType::kF32, {1, 1, 1, 1}, {(1 - z) * hh + z * 0.5}, 1e-6);
  }
  ModelBuilder b;
  b.FloatInput("x", {2, 1, 1});
  b.FloatInitializer("w", {1, 1, 1}, {1});
  b.FloatInitializer("r", {1, 1, 1}, {-2});
  onnx::NodeProto* n = b.Node("RNN", {"x", "w", "r"}, {"y"});
  AttrInt(n, "hidden_size", 1);
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("activations");
  a->set_type(onnx::AttributeProto::STRINGS);
  a->add_strings("Relu");
  b.Output("y");
  auto out = RunModel(b, {F32({2, 1, 1}, {3, 5})});
  // h1 = relu(3) = 3; h2 = relu(5 - 2 * 3) = 0.
  ExpectTensor(out[0], DType::kF32, {2, 1, 1, 1}, {3, 0});
}

TEST(OnnxComposedOps, RecurrentRefusesWhatItCannotDo) {
  ModelBuilder b;
  b.FloatInput("x", {2, 1, 1});
  b.FloatInitializer("w", {1, 1, 1}, {1});
  b.FloatInitializer("r", {1, 1, 1}, {1});
  onnx::NodeProto* n = b.Node("RNN", {"x", "w", "r"}, {"y"});
  AttrInt(n, "hidden_size", 1);
  AttrFloat(n, "clip", 3);
  b.Output("y");
  EXPECT_THAT(ImportError(b), HasSubstr("clip"));
}

// GridSample against its definition written out here: each output pixel
// reads the input at the grid's position (unnormalized with or without
// align_corners), bilinear or nearest (halves to even), out-of-range taps
// zero or the position clamped (border).
TEST(OnnxComposedOps, GridSample) {
  const int64_t n = 2, c = 3, h = 4, w = 5, ho = 3, wo = 4;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> value(-2, 2), coord(-1.3, 1.3);
  std::vector<double> x(n * c * h * w), grid(n * ho * wo * 2);
  for (double& v : x) v = value(rng);
  for (double& v : grid) v = coord(rng);
  grid[0] = 1;  // A corner exactly,
  grid[1] = -1;
  grid[2] = 0.25;  // and, with align_corners, x = 2.5: a tie nearest takes to 2.
  grid[5] = std::numeric_limits<double>::quiet_NaN();  // Reads nothing (zeros) or the edge.
  for (const char* mode : {"bilinear", "nearest"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int align : {0, 1}) {
        SCOPED_TRACE(absl::StrCat(mode, " ", padding, " align_corners=", align));
        auto position = [&](double g, int64_t size) {
          double p = align ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
          if (std::isnan(p)) p = -2;  // Outside; with border padding, the first pixel.
          if (std::string(padding) == "reflection") {
            // Mirrored at the corner pixels' centres (align_corners) or outer
            // edges until inside, as PyTorch's reflect_coordinates.
            const double lo = align ? 0 : -0.5, hi = align ? size - 1 : size - 0.5;
            const double d = std::fabs(p - lo), span = hi - lo;
            const double spans = std::floor(d / span), rest = d - spans * span;
            p = std::fmod(spans, 2) == 0 ? lo + rest : hi - rest;
          }
          if (std::string(padding) != "zeros") p = std::clamp(p, 0.0, static_cast<double>(size - 1));
          return p;
        };
        auto at = [&](int64_t b, int64_t ch, double yy, double xx) {
          if (yy < 0 || yy > h - 1 || xx < 0 || xx > w - 1) return 0.0;
          return x[((b * c + ch) * h + static_cast<int64_t>(yy)) * w + static_cast<int64_t>(xx)];
        };
        std::vector<double> want;
        for (int64_t b = 0; b < n; ++b) {
          for (int64_t ch = 0; ch < c; ++ch) {
            for (int64_t i = 0; i < ho * wo; ++i) {
              const double px = position(grid[(b * ho * wo + i) * 2], w);
              const double py = position(grid[(b * ho * wo + i) * 2 + 1], h);
              if (std::string(mode) == "nearest") {
                want.push_back(at(b, ch, std::nearbyint(py), std::nearbyint(px)));
                continue;
              }
              const double x0 = std::floor(px), y0 = std::floor(py), fx = px - x0, fy = py - y0;
              want.push_back(at(b, ch, y0, x0) * (1 - fy) * (1 - fx) + at(b, ch, y0, x0 + 1) * (1 - fy) * fx +
                             at(b, ch, y0 + 1, x0) * fy * (1 - fx) + at(b, ch, y0 + 1, x0 + 1) * fy * fx);
            }
          }
        }
        ModelBuilder m(16);
        m.Input("x", TP::FLOAT, std::vector<std::string>{"batch", "3", "4", "5"});
        m.FloatInput("grid", {n, ho, wo, 2});
        onnx::NodeProto* node = m.Node("GridSample", {"x", "grid"}, {"y"});
        AttrString(node, "mode", mode);
        AttrString(node, "padding_mode", padding);
        AttrInt(node, "align_corners", align);
        m.Output("y");
        auto out = RunModel(m, {F32({n, c, h, w}, x), F32({n, ho, wo, 2}, grid)});
        ASSERT_EQ(out.size(), 1u);
        ExpectTensor(out[0], DType::kF32, {n, c, ho, wo}, want, 1e-5);
      }
    }
  }
  // Positions past 2048 in f16 (which holds whole numbers only to there):
  // the far corner of 64 x 64.
  {
    ModelBuilder half(16);
    half.Input("x", TP::FLOAT16, std::vector<int64_t>{1, 1, 64, 64});
    half.Input("grid", TP::FLOAT16, std::vector<int64_t>{1, 1, 2, 2});
    AttrInt(half.Node("GridSample", {"x", "grid"}, {"y"}), "align_corners", 1);
    half.Output("y");
    std::vector<double> pixels(64 * 64);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<double>(i % 97);
    auto out = RunModel(half, {T(DType::kF16, {1, 1, 64, 64}, pixels), T(DType::kF16, {1, 1, 2, 2}, {1, 1, 1, -1})});
    ASSERT_EQ(out.size(), 1u);
    ExpectTensor(out[0], DType::kF16, {1, 1, 1, 2}, {pixels[4095], pixels[63]}, 0);
  }
  // By hand: x = 5 with align_corners over 5 pixels is mirrored at 4 to 3.
  {
    ModelBuilder mirror(16);
    mirror.FloatInput("x", {1, 1, 1, 5});
    mirror.FloatInput("grid", {1, 1, 1, 2});
    onnx::NodeProto* node = mirror.Node("GridSample", {"x", "grid"}, {"y"});
    AttrString(node, "padding_mode", "reflection");
    AttrInt(node, "align_corners", 1);
    mirror.Output("y");
    auto out = RunModel(mirror, {F32({1, 1, 1, 5}, {10, 11, 12, 13, 14}), F32({1, 1, 1, 2}, {1.5, 0})});
    ASSERT_EQ(out.size(), 1u);
    ExpectTensor(out[0], DType::kF32, {1, 1, 1, 1}, {13});
  }
  ModelBuilder wrap(16);
  wrap.FloatInput("x", {1, 1, 2, 2});
  wrap.FloatInput("grid", {1, 1, 1, 2});
  AttrString(wrap.Node("GridSample", {"x", "grid"}, {"y"}, "gs"), "padding_mode", "wrap");
  wrap.Output("y");
  EXPECT_THAT(ImportError(wrap), HasSubstr("unknown padding_mode \"wrap\" (zeros, border, reflection)"));
}

}  // namespace
}  // namespace graft::onnx_test

#endif  // GRAFT_HAVE_ONNX
