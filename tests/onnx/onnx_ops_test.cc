// The ONNX operators one by one: small models imported and run on the
// interpreter, compared with values worked out by hand from the ONNX
// operator specifications.

#include "gtest/gtest.h"

#ifdef GRAFT_HAVE_ONNX

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "support/status_matchers.h"
#include "tests/onnx/onnx_test_util.h"

namespace graft::onnx_test {
namespace {

using ::graft::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> Targets(ModelBuilder& b) {
  absl::StatusOr<Module> m = b.Import();
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? CallTargets(*m) : std::vector<std::string>{};
}

// --- Elementwise
// ----------------------------------------------------------------

TEST(OnnxOps, BinaryBroadcast) {
  ModelBuilder b;
  b.FloatInput("a", {2, 2});
  b.FloatInput("b", {2});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    b.Node(op, {"a", "b"}, {std::string(op) + "_y"});
    b.Output(std::string(op) + "_y");
  }
  auto out = RunModel(b, {F32({2, 2}, {1, 2, 3, 4}), F32({2}, {10, 20})});
  ASSERT_EQ(out.size(), 4u);
  ExpectTensor(out[0], DType::kF32, {2, 2}, {11, 22, 13, 24});
  ExpectTensor(out[1], DType::kF32, {2, 2}, {-9, -18, -7, -16});
  ExpectTensor(out[2], DType::kF32, {2, 2}, {10, 40, 30, 80});
  ExpectTensor(out[3], DType::kF32, {2, 2}, {0.1, 0.1, 0.3, 0.2});
}

TEST(OnnxOps, IntegerDivTruncates) {
  ModelBuilder b;
  b.Input("a", TP::INT64, std::vector<int64_t>{4});
  b.Int64Initializer("d", {4}, {2, 2, -4, 3});
  b.Node("Div", {"a", "d"}, {"y"});
  b.Output("y");
  auto out = RunModel(b, {I64({4}, {7, -7, 6, -1})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kI64, {4}, {3, -3, -1, 0});
}

TEST(OnnxOps, ScalarConstantsBecomeLiterals) {
  ModelBuilder b;
  b.FloatInput("x", {3});
  b.FloatInitializer("two", {}, {2});
  b.Node("Pow", {"x", "two"}, {"y"});
  b.Output("y");
  EXPECT_THAT(Targets(b), ElementsAre("pow"));
  auto out = RunModel(b, {F32({3}, {1, 2, -3})});
  ExpectTensor(out[0], DType::kF32, {3}, {1, 4, 9});
}

struct UnaryCase {
  const char* op;
  std::vector<double> in, expected;
};

TEST(OnnxOps, Unary) {
  const double e = std::exp(1.0);
  for (const UnaryCase& c : std::vector<UnaryCase>{
           {"Relu", {-1, 2}, {0, 2}},
           {"Sigmoid", {0, 0}, {0.5, 0.5}},
           {"Tanh", {0, 1}, {0, 0.7615941559557649}},
           {"Exp", {0, 1}, {1, e}},
           {"Log", {1, e}, {0, 1}},
           {"Sqrt", {4, 9}, {2, 3}},
           {"Erf", {0, 1}, {0, 0.8427007929497149}},
           {"Neg", {1, -2}, {-1, 2}},
           {"Abs", {-1, 2}, {1, 2}},
           {"Reciprocal", {4, -0.5}, {0.25, -2}},
           {"Floor", {-1.5, 2.7}, {-2, 2}},
           {"Ceil", {-1.5, 2.2}, {-1, 3}},
           // Halves go to the even neighbour.
           {"Round", {2.5, -3.5}, {2, -4}},
           {"Round", {0.5, 1.4999}, {0, 1}},
       }) {
    SCOPED_TRACE(c.op);
    ModelBuilder b;
    b.FloatInput("x", {2});
    b.Node(c.op, {"x"}, {"y"});
    b.Output("y");
    auto out = RunModel(b, {F32({2}, c.in)});
    ASSERT_EQ(out.size(), 1u);
    ExpectTensor(out[0], DType::kF32, {2}, c.expected, 1e-5);
  }
}

TEST(OnnxOps, LeakyReluAndGelu) {
  ModelBuilder b(20);
  b.FloatInput("x", {2});
  AttrFloat(b.Node("LeakyRelu", {"x"}, {"l"}), "alpha", 0.1f);
  b.Node("Gelu", {"x"}, {"g"});
  AttrString(b.Node("Gelu", {"x"}, {"t"}), "approximate", "tanh");
  b.Output("l");
  b.Output("g");
  b.Output("t");
  auto out = RunModel(b, {F32({2}, {-10, 1})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF32, {2}, {-1, 1});
  // gelu(-10) = -10 * Phi(-10) ~ -7.6e-23; gelu(1) = Phi(1).
  ExpectTensor(out[1], DType::kF32, {2}, {0, 0.8413447460685429}, 1e-5);
  ExpectTensor(out[2], DType::kF32, {2}, {0, 0.8411919906082768}, 1e-5);
}

TEST(OnnxOps, ClipWithConstantAndRunTimeBounds) {
  ModelBuilder b;
  b.FloatInput("x", {4});
  b.FloatInput("lo", {});
  b.FloatInitializer("min", {}, {-1});
  b.FloatInitializer("max", {}, {1});
  b.Node("Clip", {"x", "min", "max"}, {"both"});
  b.Node("Clip", {"x", "", "max"}, {"upper"});
  b.Node("Clip", {"x"}, {"none"});
  b.Node("Clip", {"x", "lo"}, {"dynamic"});
  for (const char* o : {"both", "upper", "none", "dynamic"}) b.Output(o);
  auto out = RunModel(b, {F32({4}, {-2, -0.5, 0.5, 2}), F32({}, {0})});
  ASSERT_EQ(out.size(), 4u);
  ExpectTensor(out[0], DType::kF32, {4}, {-1, -0.5, 0.5, 1});
  ExpectTensor(out[1], DType::kF32, {4}, {-2, -0.5, 0.5, 1});
  ExpectTensor(out[2], DType::kF32, {4}, {-2, -0.5, 0.5, 2});
  ExpectTensor(out[3], DType::kF32, {4}, {0, 0, 0.5, 2});
}

TEST(OnnxOps, ComparisonsAndLogic) {
  ModelBuilder b;
  b.FloatInput("a", {3});
  b.FloatInput("b", {3});
  b.Node("Equal", {"a", "b"}, {"eq"});
  b.Node("Less", {"a", "b"}, {"lt"});
  b.Node("Greater", {"a", "b"}, {"gt"});
  b.Node("Where", {"lt", "a", "b"}, {"min"});
  b.Node("Not", {"eq"}, {"ne"});
  b.Node("And", {"lt", "ne"}, {"and"});
  b.Node("Or", {"lt", "eq"}, {"or"});
  for (const char* o : {"eq", "lt", "gt", "min", "ne", "and", "or"})
    b.Output(o);
  auto out = RunModel(b, {F32({3}, {1, 2, 3}), F32({3}, {3, 2, 1})});
  ASSERT_EQ(out.size(), 7u);
  ExpectTensor(out[0], DType::kBool, {3}, {0, 1, 0});
  ExpectTensor(out[1], DType::kBool, {3}, {1, 0, 0});
  ExpectTensor(out[2], DType::kBool, {3}, {0, 0, 1});
  ExpectTensor(out[3], DType::kF32, {3}, {1, 2, 1});
  ExpectTensor(out[4], DType::kBool, {3}, {1, 0, 1});
  ExpectTensor(out[5], DType::kBool, {3}, {1, 0, 0});
  ExpectTensor(out[6], DType::kBool, {3}, {1, 1, 0});
}

TEST(OnnxOps, IsNaNIsNotEqualToItself) {
  ModelBuilder b;
  b.FloatInput("x", {3});
  b.Node("IsNaN", {"x"}, {"y"});
  b.Output("y");
  EXPECT_THAT(Targets(b), ElementsAre("ne"));
  auto out = RunModel(b, {F32({3}, {std::nan(""), 1, -INFINITY})});
  ExpectTensor(out[0], DType::kBool, {3}, {1, 0, 0});
}

TEST(OnnxOps, Cast) {
  ModelBuilder b;
  b.FloatInput("x", {3});
  AttrInt(b.Node("Cast", {"x"}, {"i"}), "to", TP::INT64);
  AttrInt(b.Node("Cast", {"x"}, {"b"}), "to", TP::BOOL);
  AttrInt(b.Node("Cast", {"x"}, {"same"}), "to", TP::FLOAT);
  b.Output("i");
  b.Output("b");
  b.Output("same");
  auto out = RunModel(b, {F32({3}, {2.7, -2.7, 0})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kI64, {3}, {2, -2, 0});
  ExpectTensor(out[1], DType::kBool, {3}, {1, 1, 0});
  ExpectTensor(out[2], DType::kF32, {3}, {2.7, -2.7, 0});
}

// --- Linear algebra, convolution, pooling
// --------------------------------------

TEST(OnnxOps, MatMul) {
  ModelBuilder b;
  b.FloatInput("a", {2, 3});
  b.FloatInitializer("b", {3, 2}, {1, 0, 0, 1, 1, 1});
  b.Node("MatMul", {"a", "b"}, {"y"});
  b.Output("y");
  auto out = RunModel(b, {F32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ExpectTensor(out[0], DType::kF32, {2, 2}, {4, 5, 10, 11});
}

// 2 * A^T B + 0.5 C.
TEST(OnnxOps, GemmWithTransposeAlphaBeta) {
  ModelBuilder b;
  b.FloatInput("a", {3, 2});
  b.FloatInitializer("b", {3, 2}, {1, 0, 0, 1, 1, 1});
  b.FloatInitializer("c", {2, 2}, {1, 2, 3, 4});
  onnx::NodeProto* g = b.Node("Gemm", {"a", "b", "c"}, {"y"});
  AttrInt(g, "transA", 1);
  AttrFloat(g, "alpha", 2);
  AttrFloat(g, "beta", 0.5);
  b.Output("y");
  auto out = RunModel(b, {F32({3, 2}, {1, 2, 3, 4, 5, 6})});
  ExpectTensor(out[0], DType::kF32, {2, 2}, {12.5, 17, 17.5, 22});
}

// x = 1..9 in 3x3, kernel [[1,0],[0,1]], bias 10: each output is
// x[i][j] + x[i+1][j+1] + 10 over the padded input.
ModelBuilder Conv2x2(const std::vector<int64_t>& pads,
                     const std::string& auto_pad = "") {
  ModelBuilder b;
  b.FloatInput("x", {1, 1, 3, 3});
  b.FloatInitializer("w", {1, 1, 2, 2}, {1, 0, 0, 1});
  b.FloatInitializer("bias", {1}, {10});
  onnx::NodeProto* n = b.Node("Conv", {"x", "w", "bias"}, {"y"});
  if (!pads.empty()) AttrInts(n, "pads", pads);
  if (!auto_pad.empty()) AttrString(n, "auto_pad", auto_pad);
  b.Output("y");
  return b;
}

Tensor Nine() { return F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }

TEST(OnnxOps, ConvPadding) {
  ModelBuilder valid = Conv2x2({});
  ExpectTensor(RunModel(valid, {Nine()})[0], DType::kF32, {1, 1, 2, 2},
               {16, 18, 22, 24});
  // Pads [top, left, bottom, right] = [0, 0, 1, 1]: an explicit pad node.
  ModelBuilder asym = Conv2x2({0, 0, 1, 1});
  EXPECT_THAT(Targets(asym), ElementsAre("pad", "conv2d"));
  ExpectTensor(RunModel(asym, {Nine()})[0], DType::kF32, {1, 1, 3, 3},
               {16, 18, 13, 22, 24, 16, 17, 18, 19});
  ModelBuilder upper = Conv2x2({}, "SAME_UPPER");
  ExpectTensor(RunModel(upper, {Nine()})[0], DType::kF32, {1, 1, 3, 3},
               {16, 18, 13, 22, 24, 16, 17, 18, 19});
  ModelBuilder lower = Conv2x2({}, "SAME_LOWER");
  ExpectTensor(RunModel(lower, {Nine()})[0], DType::kF32, {1, 1, 3, 3},
               {11, 12, 13, 14, 16, 18, 17, 22, 24});
  // Symmetric pads stay inside conv2d.
  ModelBuilder sym = Conv2x2({1, 1, 1, 1});
  EXPECT_THAT(Targets(sym), ElementsAre("conv2d"));
}

TEST(OnnxOps, Conv1d) {
  ModelBuilder b;
  b.FloatInput("x", {1, 1, 4});
  b.FloatInitializer("w", {1, 1, 2}, {2, 1});
  AttrInts(b.Node("Conv", {"x", "w"}, {"y"}), "pads", {1, 0});
  b.Output("y");
  // Padded [0,1,2,3,4]; y[i] = 2 p[i] + p[i+1].
  auto out = RunModel(b, {F32({1, 1, 4}, {1, 2, 3, 4})});
  ExpectTensor(out[0], DType::kF32, {1, 1, 4}, {1, 4, 7, 10});
}

// A 3-D convolution computed directly, for ConvertConv3d's checks: x
// [N, C, T, H, W], w [Co, C/g, KT, KH, KW], ONNX's pads (begins, ends).
std::vector<double> DirectConv3d(const std::vector<double>& x, const std::vector<int64_t>& xd,
                                 const std::vector<double>& w, const std::vector<int64_t>& wd,
                                 const std::vector<double>& bias, int64_t group,
                                 const std::vector<int64_t>& stride,
                                 const std::vector<int64_t>& dilation,
                                 const std::vector<int64_t>& pads, std::vector<int64_t>& out_dims) {
  out_dims = {xd[0], wd[0]};
  for (int i = 0; i < 3; ++i) {
    out_dims.push_back((xd[2 + i] + pads[i] + pads[3 + i] - dilation[i] * (wd[2 + i] - 1) - 1) /
                           stride[i] + 1);
  }
  const int64_t cg = wd[1], cog = wd[0] / group;
  std::vector<double> y;
  for (int64_t n = 0; n < out_dims[0]; ++n)
    for (int64_t o = 0; o < out_dims[1]; ++o)
      for (int64_t t = 0; t < out_dims[2]; ++t)
        for (int64_t i = 0; i < out_dims[3]; ++i)
          for (int64_t j = 0; j < out_dims[4]; ++j) {
            double sum = bias.empty() ? 0 : bias[o];
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t a = 0; a < wd[2]; ++a)
                for (int64_t b = 0; b < wd[3]; ++b)
                  for (int64_t e = 0; e < wd[4]; ++e) {
                    const int64_t tt = t * stride[0] + a * dilation[0] - pads[0];
                    const int64_t ii = i * stride[1] + b * dilation[1] - pads[1];
                    const int64_t jj = j * stride[2] + e * dilation[2] - pads[2];
                    if (tt < 0 || tt >= xd[2] || ii < 0 || ii >= xd[3] || jj < 0 || jj >= xd[4]) {
                      continue;
                    }
                    const int64_t ci = (o / cog) * cg + c;
                    sum += x[(((n * xd[1] + ci) * xd[2] + tt) * xd[3] + ii) * xd[4] + jj] *
                           w[(((o * cg + c) * wd[2] + a) * wd[3] + b) * wd[4] + e];
                  }
            y.push_back(sum);
          }
  return y;
}

// 3-D convolutions (video models: r3d_18, r2plus1d_18) against the direct
// sum: groups, strides, dilations, padding equal and unequal per side, a
// temporal kernel of 1, 2 and 3, with and without bias.
TEST(OnnxOps, Conv3d) {
  struct Case {
    std::vector<int64_t> x, w, stride, dilation, pads;
    int64_t group;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{2, 4, 5, 6, 7}, {6, 2, 3, 2, 3}, {2, 1, 2}, {1, 2, 1}, {1, 0, 1, 0, 1, 1}, 2, true},
      {{1, 3, 4, 5, 5}, {4, 3, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 1, false},
      {{1, 2, 3, 4, 4}, {2, 2, 1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1, 0, 1, 1}, 1, true},
      {{1, 2, 6, 3, 3}, {3, 2, 2, 1, 1}, {3, 1, 1}, {2, 1, 1}, {0, 0, 0, 0, 0, 0}, 1, true},
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("x ", absl::StrJoin(c.x, ","), " w ", absl::StrJoin(c.w, ",")));
    auto draw = [&](int64_t n) {
      std::vector<float> v(n);
      for (float& f : v) f = u(rng);
      return v;
    };
    auto count = [](const std::vector<int64_t>& d) {
      int64_t n = 1;
      for (int64_t v : d) n *= v;
      return n;
    };
    const std::vector<float> x = draw(count(c.x)), w = draw(count(c.w)), bias = draw(c.w[0]);
    ModelBuilder b;
    b.FloatInput("x", c.x);
    b.FloatInitializer("w", c.w, w);
    std::vector<std::string> inputs = {"x", "w"};
    if (c.bias) {
      b.FloatInitializer("bias", {c.w[0]}, bias);
      inputs.push_back("bias");
    }
    onnx::NodeProto* n = b.Node("Conv", inputs, {"y"});
    AttrInts(n, "strides", c.stride);
    AttrInts(n, "dilations", c.dilation);
    AttrInts(n, "pads", c.pads);
    AttrInt(n, "group", c.group);
    b.Output("y");
    std::vector<int64_t> out_dims;
    const std::vector<double> want = DirectConv3d(
        std::vector<double>(x.begin(), x.end()), c.x, std::vector<double>(w.begin(), w.end()),
        c.w, c.bias ? std::vector<double>(bias.begin(), bias.end()) : std::vector<double>{},
        c.group, c.stride, c.dilation, c.pads, out_dims);
    std::vector<double> xd(x.begin(), x.end());
    auto out = RunModel(b, {F32(c.x, xd)});
    ExpectTensor(out[0], DType::kF32, out_dims, want, 1e-5);
  }
}

// A 3-D pooling computed directly: the maximum or the average of each
// window (averages over the window's input elements, or over the padded
// input's with count_include_pad), with PyTorch's ceil_mode rule.
std::vector<double> DirectPool3d(const std::vector<double>& x, const std::vector<int64_t>& xd,
                                 bool max, const std::vector<int64_t>& k,
                                 const std::vector<int64_t>& stride,
                                 const std::vector<int64_t>& dilation,
                                 const std::vector<int64_t>& pads, bool ceil_mode, bool count_pad,
                                 std::vector<int64_t>& out_dims) {
  out_dims = {xd[0], xd[1]};
  for (int i = 0; i < 3; ++i) {
    const int64_t room = xd[2 + i] + pads[i] + pads[3 + i] - dilation[i] * (k[i] - 1) - 1;
    int64_t n = (ceil_mode ? (room + stride[i] - 1) / stride[i] : room / stride[i]) + 1;
    if (ceil_mode && (n - 1) * stride[i] >= xd[2 + i] + pads[i]) --n;
    out_dims.push_back(n);
  }
  std::vector<double> y;
  for (int64_t nc = 0; nc < xd[0] * xd[1]; ++nc)
    for (int64_t t = 0; t < out_dims[2]; ++t)
      for (int64_t i = 0; i < out_dims[3]; ++i)
        for (int64_t j = 0; j < out_dims[4]; ++j) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int64_t count = 0;
          for (int64_t a = 0; a < k[0]; ++a)
            for (int64_t b = 0; b < k[1]; ++b)
              for (int64_t e = 0; e < k[2]; ++e) {
                const int64_t p[3] = {t * stride[0] + a * dilation[0] - pads[0],
                                      i * stride[1] + b * dilation[1] - pads[1],
                                      j * stride[2] + e * dilation[2] - pads[2]};
                bool inside = true, in_padded = true;
                for (int d = 0; d < 3; ++d) {
                  inside &= p[d] >= 0 && p[d] < xd[2 + d];
                  in_padded &= p[d] < xd[2 + d] + pads[3 + d];
                }
                if (count_pad ? in_padded : inside) ++count;
                if (!inside) continue;
                const double v = x[((nc * xd[2] + p[0]) * xd[3] + p[1]) * xd[4] + p[2]];
                best = std::max(best, v);
                sum += v;
              }
          y.push_back(max ? best : sum / static_cast<double>(count));
        }
  return y;
}

// 3-D max and average pooling (S3D's) against the direct computation:
// strides, dilations, pads, ceil_mode, count_include_pad either way.
TEST(OnnxOps, Pool3d) {
  struct Case {
    bool max;
    std::vector<int64_t> x, kernel, stride, dilation, pads;
    bool ceil_mode, count_pad;
  };
  const std::vector<Case> cases = {
      {true, {1, 2, 5, 6, 7}, {3, 3, 3}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, false, false},
      {true, {1, 1, 5, 5, 5}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, true, false},
      {true, {2, 1, 6, 5, 5}, {2, 3, 3}, {1, 1, 1}, {2, 1, 1}, {0, 0, 0, 0, 0, 0}, false, false},
      {true, {1, 2, 4, 6, 6}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1, 0, 1, 1}, false, false},
      {false, {1, 2, 4, 7, 7}, {2, 7, 7}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, false, false},
      {false, {1, 2, 5, 5, 6}, {3, 3, 3}, {2, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, false, false},
      {false, {1, 2, 5, 5, 6}, {3, 3, 3}, {2, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, false, true},
      // Unequal pads, in time and in the planes.
      {true, {1, 1, 6, 5, 5}, {3, 2, 3}, {2, 1, 1}, {1, 1, 1}, {2, 1, 0, 0, 0, 1}, false, false},
      {false, {1, 1, 6, 5, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 0, 1, 0, 0, 1}, false, false},
  };
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.max ? "max" : "average", " x ", absl::StrJoin(c.x, ","),
                              " kernel ", absl::StrJoin(c.kernel, ",")));
    int64_t n = 1;
    for (int64_t d : c.x) n *= d;
    std::vector<double> x(n);
    for (double& v : x) v = u(rng);
    ModelBuilder b;
    b.FloatInput("x", c.x);
    onnx::NodeProto* node = b.Node(c.max ? "MaxPool" : "AveragePool", {"x"}, {"y"});
    AttrInts(node, "kernel_shape", c.kernel);
    AttrInts(node, "strides", c.stride);
    if (c.max) AttrInts(node, "dilations", c.dilation);
    AttrInts(node, "pads", c.pads);
    AttrInt(node, "ceil_mode", c.ceil_mode);
    if (!c.max) AttrInt(node, "count_include_pad", c.count_pad);
    b.Output("y");
    std::vector<int64_t> out_dims;
    const std::vector<double> want = DirectPool3d(x, c.x, c.max, c.kernel, c.stride, c.dilation,
                                                  c.pads, c.ceil_mode, c.count_pad, out_dims);
    auto out = RunModel(b, {F32(c.x, x)});
    ExpectTensor(out[0], DType::kF32, out_dims, want, 1e-6);
  }
}

// A 3-D pooling and convolution of a symbolic batch: the frames fold into
// it, and the model runs at two batch sizes.
TEST(OnnxOps, Pool3dAndConv3dOfASymbolicBatch) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, std::vector<std::string>{"n", "1", "4", "4", "4"});
  b.FloatInitializer("w", {1, 1, 2, 1, 1}, {1, 1});
  b.Node("Conv", {"x", "w"}, {"c"});
  AttrInts(b.Node("MaxPool", {"c"}, {"y"}), "kernel_shape", {1, 2, 2});
  b.Output("y");
  for (int64_t n : {1, 3}) {
    std::vector<double> x;
    for (int64_t i = 0; i < n * 64; ++i) x.push_back(static_cast<double>(i % 64));
    // x[t][h][w] = 16 t + 4 h + w; the convolution adds frames t and
    // t + 1, and each 2 x 2 window's largest is at its bottom right.
    std::vector<double> want;
    for (int64_t m = 0; m < n; ++m)
      for (int64_t t = 0; t < 3; ++t)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 3; ++j) {
            const double top = 16.0 * t + 4.0 * (i + 1) + (j + 1);
            want.push_back(top + top + 16.0);
          }
    auto out = RunModel(b, {F32({n, 1, 4, 4, 4}, x)});
    ExpectTensor(out[0], DType::kF32, {n, 1, 3, 3, 3}, want, 1e-6);
  }
}

TEST(OnnxOps, BatchNormalization) {
  ModelBuilder b;
  b.FloatInput("x", {1, 2, 1, 2});
  b.FloatInitializer("scale", {2}, {1, 2});
  b.FloatInitializer("bias", {2}, {0, 1});
  b.FloatInitializer("mean", {2}, {1, 3});
  b.FloatInitializer("var", {2}, {4, 1});
  onnx::NodeProto* n = b.Node("BatchNormalization",
                              {"x", "scale", "bias", "mean", "var"}, {"y"});
  AttrFloat(n, "epsilon", 0);
  AttrFloat(n, "momentum", 0.9f);
  b.Output("y");
  auto out = RunModel(b, {F32({1, 2, 1, 2}, {1, 2, 3, 4})});
  // Channel 0: (x - 1) / 2; channel 1: (x - 3) * 2 + 1.
  ExpectTensor(out[0], DType::kF32, {1, 2, 1, 2}, {0, 0.5, 1, 3});
}

TEST(OnnxOps, MaxPool) {
  std::vector<double> v16, v25;
  for (int i = 0; i < 16; ++i) v16.push_back(i);
  for (int i = 0; i < 25; ++i) v25.push_back(i);
  ModelBuilder b;
  b.FloatInput("x", {1, 1, 4, 4});
  onnx::NodeProto* n = b.Node("MaxPool", {"x"}, {"y"});
  AttrInts(n, "kernel_shape", {2, 2});
  AttrInts(n, "strides", {2, 2});
  b.Output("y");
  ExpectTensor(RunModel(b, {F32({1, 1, 4, 4}, v16)})[0], DType::kF32,
               {1, 1, 2, 2}, {5, 7, 13, 15});

  ModelBuilder ceil;
  ceil.FloatInput("x", {1, 1, 5, 5});
  n = ceil.Node("MaxPool", {"x"}, {"y"});
  AttrInts(n, "kernel_shape", {2, 2});
  AttrInts(n, "strides", {2, 2});
  AttrInt(n, "ceil_mode", 1);
  ceil.Output("y");
  ExpectTensor(RunModel(ceil, {F32({1, 1, 5, 5}, v25)})[0], DType::kF32,
               {1, 1, 3, 3}, {6, 8, 9, 16, 18, 19, 21, 23, 24});

  // Padding the end only: the pad holds -inf, so it never wins.
  ModelBuilder asym;
  asym.FloatInput("x", {1, 1, 2, 2});
  n = asym.Node("MaxPool", {"x"}, {"y"});
  AttrInts(n, "kernel_shape", {2, 2});
  AttrInts(n, "pads", {0, 0, 1, 1});
  asym.Output("y");
  ExpectTensor(RunModel(asym, {F32({1, 1, 2, 2}, {-4, -3, -2, -1})})[0],
               DType::kF32, {1, 1, 2, 2}, {-1, -1, -1, -1});
}

TEST(OnnxOps, AveragePoolCountIncludePad) {
  for (int count_pad : {0, 1}) {
    SCOPED_TRACE(count_pad);
    ModelBuilder b;
    b.FloatInput("x", {1, 1, 2, 2});
    onnx::NodeProto* n = b.Node("AveragePool", {"x"}, {"y"});
    AttrInts(n, "kernel_shape", {2, 2});
    AttrInts(n, "strides", {1, 1});
    AttrInts(n, "pads", {1, 1, 1, 1});
    AttrInt(n, "count_include_pad", count_pad);
    b.Output("y");
    auto out = RunModel(b, {F32({1, 1, 2, 2}, {1, 2, 3, 4})});
    if (count_pad == 0) {
      ExpectTensor(out[0], DType::kF32, {1, 1, 3, 3},
                   {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
    } else {
      ExpectTensor(out[0], DType::kF32, {1, 1, 3, 3},
                   {0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1});
    }
  }
}

TEST(OnnxOps, GlobalPools) {
  ModelBuilder b;
  b.FloatInput("x", {1, 2, 2, 2});
  b.Node("GlobalAveragePool", {"x"}, {"avg"});
  b.Node("GlobalMaxPool", {"x"}, {"max"});
  b.Output("avg");
  b.Output("max");
  auto out = RunModel(b, {F32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  ExpectTensor(out[0], DType::kF32, {1, 2, 1, 1}, {2.5, 6.5});
  ExpectTensor(out[1], DType::kF32, {1, 2, 1, 1}, {4, 8});
}

TEST(OnnxOps, SoftmaxDefaultsToTheLastAxis) {
  ModelBuilder b(13);
  b.FloatInput("x", {1, 2});
  b.Node("Softmax", {"x"}, {"s"});
  b.Node("LogSoftmax", {"x"}, {"l"});
  b.Output("s");
  b.Output("l");
  auto out = RunModel(b, {F32({1, 2}, {0, std::log(3.0)})});
  ExpectTensor(out[0], DType::kF32, {1, 2}, {0.25, 0.75}, 1e-5);
  ExpectTensor(out[1], DType::kF32, {1, 2}, {std::log(0.25), std::log(0.75)},
               1e-5);
}

TEST(OnnxOps, LayerNormalization) {
  ModelBuilder b(17);
  b.FloatInput("x", {1, 4});
  b.FloatInitializer("scale", {4}, {1, 1, 2, 2});
  b.FloatInitializer("bias", {4}, {0, 0, 0, 1});
  AttrFloat(b.Node("LayerNormalization", {"x", "scale", "bias"}, {"y"}),
            "epsilon", 0);
  b.Output("y");
  // Mean 2.5, variance 1.25.
  const double s = std::sqrt(1.25);
  auto out = RunModel(b, {F32({1, 4}, {1, 2, 3, 4})});
  ExpectTensor(out[0], DType::kF32, {1, 4},
               {-1.5 / s, -0.5 / s, 2 * 0.5 / s, 2 * 1.5 / s + 1}, 1e-5);
}

TEST(OnnxOps, DropoutAndIdentityPassThrough) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  b.Node("Dropout", {"x"}, {"d"});
  b.Node("Identity", {"d"}, {"y"});
  b.Output("y");
  EXPECT_THAT(Targets(b), ElementsAre());
  ExpectTensor(RunModel(b, {F32({2}, {1, 2})})[0], DType::kF32, {2}, {1, 2});
}

// training_mode as PyTorch exports it: a bool constant. Off, or on with a
// ratio of 0 (torchvision's Swin), the input passes through; on with
// another ratio it is refused with the node named.
TEST(OnnxOps, DropoutTakesABoolTrainingModeInput) {
  for (const auto& [training, ratio] :
       std::vector<std::pair<bool, float>>{{false, 0.5f}, {true, 0.0f}, {true, 0.5f}}) {
    SCOPED_TRACE(absl::StrCat(training, " ", ratio));
    ModelBuilder b;
    b.FloatInput("x", {2});
    b.FloatInitializer("ratio", {}, {ratio});
    b.NewTensor("training", onnx::TensorProto::BOOL, {})->add_int32_data(training);
    b.Node("Dropout", {"x", "ratio", "training"}, {"y"}, "drop");
    b.Output("y");
    if (!training || ratio == 0) {
      ExpectTensor(RunModel(b, {F32({2}, {1, 2})})[0], DType::kF32, {2}, {1, 2});
      continue;
    }
    EXPECT_THAT(b.Import().status(),
                StatusIs(absl::StatusCode::kUnimplemented,
                         AllOf(HasSubstr("drop"), HasSubstr("training_mode"))));
  }
}

// --- Reductions -------------------------------------------------------------

TEST(OnnxOps, ReduceAxesByOpset) {
  ModelBuilder attr(13);
  attr.FloatInput("x", {2, 3});
  onnx::NodeProto* n = attr.Node("ReduceMean", {"x"}, {"y"});
  AttrInts(n, "axes", {1});
  AttrInt(n, "keepdims", 0);
  attr.Output("y");
  std::vector<double> v = {1, 2, 3, 4, 5, 6};
  ExpectTensor(RunModel(attr, {F32({2, 3}, v)})[0], DType::kF32, {2}, {2, 5});

  ModelBuilder input(18);
  input.FloatInput("x", {2, 3});
  input.IntsConstant("axes", {1});
  AttrInt(input.Node("ReduceMean", {"x", "axes"}, {"y"}), "keepdims", 0);
  input.Output("y");
  ExpectTensor(RunModel(input, {F32({2, 3}, v)})[0], DType::kF32, {2}, {2, 5});

  ModelBuilder sum(13);
  sum.FloatInput("x", {2, 3});
  sum.IntsConstant("axes", {0});
  sum.Node("ReduceSum", {"x", "axes"}, {"s"});
  sum.Node("ReduceMax", {"x"}, {"m"});
  AttrInt(sum.Node("ReduceSum", {"x"}, {"noop"}), "noop_with_empty_axes", 1);
  sum.Output("s");
  sum.Output("m");
  sum.Output("noop");
  auto out = RunModel(sum, {F32({2, 3}, v)});
  ExpectTensor(out[0], DType::kF32, {1, 3}, {5, 7, 9});
  ExpectTensor(out[1], DType::kF32, {1, 1}, {6});
  ExpectTensor(out[2], DType::kF32, {2, 3}, v);
}

TEST(OnnxOps, IntegerReduceSumKeepsItsDtype) {
  ModelBuilder b;
  b.Input("x", TP::INT32, std::vector<int64_t>{3});
  AttrInt(b.Node("ReduceSum", {"x"}, {"y"}), "keepdims", 0);
  b.Output("y");
  auto out = RunModel(b, {T(DType::kI32, {3}, {1, 2, 3})});
  ExpectTensor(out[0], DType::kI32, {}, {6});
}

// --- Shapes -----------------------------------------------------------------

std::vector<double> Iota(int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST(OnnxOps, FlattenReshapeTranspose) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3, 4});
  AttrInt(b.Node("Flatten", {"x"}, {"f2"}), "axis", 2);
  AttrInt(b.Node("Flatten", {"x"}, {"f0"}), "axis", 0);
  b.Node("Flatten", {"x"}, {"f1"});
  b.IntsConstant("shape", {0, -1});
  b.Node("Reshape", {"x", "shape"}, {"r"});
  AttrInts(b.Node("Transpose", {"r"}, {"t"}), "perm", {1, 0});
  for (const char* o : {"f2", "f0", "f1", "r", "t"}) b.Output(o);
  auto out = RunModel(b, {F32({2, 3, 4}, Iota(24))});
  ASSERT_EQ(out.size(), 5u);
  ExpectTensor(out[0], DType::kF32, {6, 4}, Iota(24));
  ExpectTensor(out[1], DType::kF32, {1, 24}, Iota(24));
  ExpectTensor(out[2], DType::kF32, {2, 12}, Iota(24));
  ExpectTensor(out[3], DType::kF32, {2, 12}, Iota(24));
  std::vector<double> transposed;
  for (int j = 0; j < 12; ++j) {
    for (int i = 0; i < 2; ++i) transposed.push_back(i * 12 + j);
  }
  ExpectTensor(out[4], DType::kF32, {12, 2}, transposed);
}

TEST(OnnxOps, SqueezeUnsqueezeExpand) {
  ModelBuilder b;
  b.FloatInput("x", {1, 3, 1});
  b.IntsConstant("sq", {0, 2});
  b.Node("Squeeze", {"x", "sq"}, {"s"});
  b.IntsConstant("unsq", {0, -1});
  b.Node("Unsqueeze", {"s", "unsq"}, {"u"});
  b.Node("Squeeze", {"x"}, {"all"});
  // Expand broadcasts both ways: [3,1] to [2,1,4] gives [2,3,4].
  b.IntsConstant("shape", {2, 1, 4});
  b.IntsConstant("col_axes", {0});
  b.Node("Squeeze", {"x", "col_axes"}, {"c"});
  b.Node("Expand", {"c", "shape"}, {"e"});
  for (const char* o : {"s", "u", "all", "e"}) b.Output(o);
  auto out = RunModel(b, {F32({1, 3, 1}, {1, 2, 3})});
  ASSERT_EQ(out.size(), 4u);
  ExpectTensor(out[0], DType::kF32, {3}, {1, 2, 3});
  ExpectTensor(out[1], DType::kF32, {1, 3, 1}, {1, 2, 3});
  ExpectTensor(out[2], DType::kF32, {3}, {1, 2, 3});
  std::vector<double> expanded;
  for (int rep = 0; rep < 2; ++rep) {
    for (double v : {1, 2, 3}) expanded.insert(expanded.end(), 4, v);
  }
  ExpectTensor(out[3], DType::kF32, {2, 3, 4}, expanded);
}

TEST(OnnxOps, ConcatAndSplit) {
  ModelBuilder b(18);
  b.FloatInput("a", {2, 1});
  b.FloatInput("b", {2, 2});
  AttrInt(b.Node("Concat", {"a", "b"}, {"c"}), "axis", 1);
  b.FloatInput("x", {7});
  AttrInt(b.Node("Split", {"x"}, {"p0", "p1", "p2"}), "num_outputs", 3);
  b.IntsConstant("sizes", {2, 5});
  b.Node("Split", {"x", "sizes"}, {"q0", "q1"});
  for (const char* o : {"c", "p0", "p1", "p2", "q0", "q1"}) b.Output(o);
  auto out = RunModel(
      b, {F32({2, 1}, {1, 2}), F32({2, 2}, {3, 4, 5, 6}), F32({7}, Iota(7))});
  ASSERT_EQ(out.size(), 6u);
  ExpectTensor(out[0], DType::kF32, {2, 3}, {1, 3, 4, 2, 5, 6});
  ExpectTensor(out[1], DType::kF32, {3}, {0, 1, 2});
  ExpectTensor(out[2], DType::kF32, {3}, {3, 4, 5});
  ExpectTensor(out[3], DType::kF32, {1}, {6});
  ExpectTensor(out[4], DType::kF32, {2}, {0, 1});
  ExpectTensor(out[5], DType::kF32, {5}, {2, 3, 4, 5, 6});

  // Opset 13: no split input means equal pieces, one per output.
  ModelBuilder equal(13);
  equal.FloatInput("x", {6});
  equal.Node("Split", {"x"}, {"a", "b"});
  equal.Output("a");
  equal.Output("b");
  auto halves = RunModel(equal, {F32({6}, Iota(6))});
  ExpectTensor(halves[0], DType::kF32, {3}, {0, 1, 2});
  ExpectTensor(halves[1], DType::kF32, {3}, {3, 4, 5});
}

TEST(OnnxOps, Slice) {
  ModelBuilder b;
  b.FloatInput("x", {2, 5});
  b.IntsConstant("starts", {-4});
  b.IntsConstant("ends", {std::numeric_limits<int64_t>::max()});
  b.IntsConstant("axes", {1});
  b.IntsConstant("steps", {2});
  b.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  b.IntsConstant("s0", {0});
  b.IntsConstant("e0", {1});
  b.Node("Slice", {"x", "s0", "e0"}, {"row"});
  b.Output("y");
  b.Output("row");
  auto out = RunModel(b, {F32({2, 5}, Iota(10))});
  ExpectTensor(out[0], DType::kF32, {2, 2}, {1, 3, 6, 8});
  ExpectTensor(out[1], DType::kF32, {1, 5}, {0, 1, 2, 3, 4});
}

TEST(OnnxOps, Gather) {
  // A known negative scalar index: the last row.
  ModelBuilder scalar;
  scalar.FloatInput("data", {3, 2});
  scalar.IntsConstant("i", {-1}, /*scalar=*/true);
  scalar.Node("Gather", {"data", "i"}, {"y"});
  scalar.Output("y");
  Tensor data = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  ExpectTensor(RunModel(scalar, {data})[0], DType::kF32, {2}, {5, 6});

  // Run-time indices into a table: embedding, negative ones wrapped.
  ModelBuilder lookup;
  lookup.Input("ids", TP::INT64, std::vector<int64_t>{2});
  lookup.FloatInitializer("table", {3, 2}, {1, 2, 3, 4, 5, 6});
  lookup.Node("Gather", {"table", "ids"}, {"y"});
  lookup.Output("y");
  EXPECT_THAT(Targets(lookup), Contains("embedding"));
  ExpectTensor(RunModel(lookup, {I64({2}, {-1, 0})})[0], DType::kF32, {2, 2},
               {5, 6, 1, 2});

  // Known 2-D indices along axis 1: out[i][j][k] = data[i][idx[j][k]].
  ModelBuilder two_d;
  two_d.FloatInput("data", {2, 2});
  two_d.Int64Initializer("idx", {2, 2}, {1, 0, 0, -2});
  AttrInt(two_d.Node("Gather", {"data", "idx"}, {"y"}), "axis", 1);
  two_d.Output("y");
  ExpectTensor(RunModel(two_d, {F32({2, 2}, {1, 2, 3, 4})})[0], DType::kF32,
               {2, 2, 2}, {2, 1, 1, 1, 4, 3, 3, 3});
}

TEST(OnnxOps, Pad) {
  ModelBuilder b;
  b.FloatInput("x", {1, 2});
  b.IntsConstant("pads", {0, 1, 0, 2});
  b.FloatInitializer("nine", {}, {9});
  b.Node("Pad", {"x", "pads", "nine"}, {"c"});
  b.FloatInput("z", {1, 3});
  b.IntsConstant("pads1", {0, 1, 0, 1});
  AttrString(b.Node("Pad", {"z", "pads1"}, {"r"}), "mode", "reflect");
  AttrString(b.Node("Pad", {"z", "pads1"}, {"e"}), "mode", "edge");
  b.Output("c");
  b.Output("r");
  b.Output("e");
  auto out = RunModel(b, {F32({1, 2}, {1, 2}), F32({1, 3}, {1, 2, 3})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF32, {1, 5}, {9, 1, 2, 9, 9});
  ExpectTensor(out[1], DType::kF32, {1, 5}, {2, 1, 2, 3, 2});
  ExpectTensor(out[2], DType::kF32, {1, 5}, {1, 1, 2, 3, 3});
}

TEST(OnnxOps, ShapeConstantOfShapeRange) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  b.Node("Shape", {"x"}, {"s"});
  onnx::NodeProto* c = b.Node("ConstantOfShape", {"s"}, {"sevens"});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::INT64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_int64_data(7);
  b.IntsConstant("start", {1}, true);
  b.IntsConstant("limit", {10}, true);
  b.IntsConstant("delta", {3}, true);
  b.Node("Range", {"start", "limit", "delta"}, {"r"});
  b.Output("sevens");
  b.Output("r");
  auto out = RunModel(b, {F32({2, 3}, Iota(6))});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kI64, {2, 3}, {7, 7, 7, 7, 7, 7});
  ExpectTensor(out[1], DType::kI64, {3}, {1, 4, 7});
}

TEST(OnnxOps, Trilu) {
  ModelBuilder b(14);
  b.FloatInput("x", {3, 3});
  b.Node("Trilu", {"x"}, {"upper"});
  b.IntsConstant("k", {-1}, /*scalar=*/true);
  AttrInt(b.Node("Trilu", {"x", "k"}, {"lower"}), "upper", 0);
  b.Output("upper");
  b.Output("lower");
  auto out = RunModel(b, {F32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {3, 3}, {1, 2, 3, 0, 5, 6, 0, 0, 9});
  ExpectTensor(out[1], DType::kF32, {3, 3}, {0, 0, 0, 4, 0, 0, 7, 8, 0});
}

TEST(OnnxOps, GatherElements) {
  ModelBuilder b;
  b.FloatInput("data", {2, 2});
  b.Int64Initializer("idx", {2, 2}, {-1, 0, 1, 0});
  AttrInt(b.Node("GatherElements", {"data", "idx"}, {"y"}), "axis", 1);
  b.Output("y");
  // y[i][j] = data[i][idx[i][j]], -1 being the last.
  auto out = RunModel(b, {F32({2, 2}, {1, 2, 3, 4})});
  ExpectTensor(out[0], DType::kF32, {2, 2}, {2, 1, 4, 3});
}

TEST(OnnxOps, ComposedActivations) {
  ModelBuilder b;
  b.FloatInput("x", {4});
  b.Node("HardSigmoid", {"x"}, {"hs"});
  b.Node("HardSwish", {"x"}, {"hw"});
  b.FloatInitializer("slope", {1}, {0.5});
  b.Node("PRelu", {"x", "slope"}, {"pr"});
  b.Node("IsInf", {"x"}, {"inf"});
  for (const char* o : {"hs", "hw", "pr", "inf"}) b.Output(o);
  auto out = RunModel(b, {F32({4}, {-4, 0, 1, INFINITY})});
  ASSERT_EQ(out.size(), 4u);
  // clamp(0.2 x + 0.5, 0, 1); x * clamp(x / 6 + 0.5, 0, 1).
  ExpectTensor(out[0], DType::kF32, {4}, {0, 0.5, 0.7, 1}, 1e-5);
  ExpectTensor(out[1], DType::kF32, {4}, {0, 0, 2.0 / 3.0, INFINITY}, 1e-5);
  ExpectTensor(out[2], DType::kF32, {4}, {-2, 0, 1, INFINITY});
  ExpectTensor(out[3], DType::kBool, {4}, {0, 0, 0, 1});
}

// Activations ONNX has and graft composes: values from the ONNX definitions
// (std:: functions here), at the edges (0, +-inf, NaN) too.
TEST(OnnxOps, MoreComposedActivations) {
  ModelBuilder b;
  b.FloatInput("x", {7});
  AttrFloat(b.Node("Elu", {"x"}, {"elu"}), "alpha", 0.5f);
  b.Node("Selu", {"x"}, {"selu"});
  AttrFloat(b.Node("Celu", {"x"}, {"celu"}), "alpha", 2.0f);
  b.Node("Softplus", {"x"}, {"softplus"});
  b.Node("Softsign", {"x"}, {"softsign"});
  b.Node("Sign", {"x"}, {"sign"});
  b.Node("Tan", {"x"}, {"tan"});
  const char* outputs[] = {"elu", "selu", "celu", "softplus", "softsign", "sign", "tan"};
  for (const char* o : outputs) b.Output(o);
  const std::vector<double> x = {-3, -0.5, 0, 0.25, 40, -INFINITY, NAN};
  auto out = RunModel(b, {F32({7}, x)});
  ASSERT_EQ(out.size(), 7u);
  auto map = [&](auto f) {
    std::vector<double> y;
    for (double v : x) y.push_back(f(v));
    return y;
  };
  const double selu_alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  ExpectTensor(out[0], DType::kF32, {7},
               map([](double v) { return v > 0 ? v : 0.5 * std::expm1(v); }), 1e-5);
  ExpectTensor(out[1], DType::kF32, {7},
               map([&](double v) { return gamma * (v > 0 ? v : selu_alpha * std::expm1(v)); }),
               1e-5);
  ExpectTensor(out[2], DType::kF32, {7},
               map([](double v) {
                 return std::isnan(v) ? v : std::max(0.0, v) + std::min(0.0, 2 * std::expm1(v / 2));
               }),
               1e-5);
  ExpectTensor(out[3], DType::kF32, {7}, map([](double v) { return std::log1p(std::exp(v)); }),
               1e-5);
  ExpectTensor(out[4], DType::kF32, {7},
               map([](double v) { return v / (1 + std::abs(v)); }),
               1e-5);
  ExpectTensor(out[5], DType::kF32, {7},
               map([](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : v; }));
  ExpectTensor(out[6], DType::kF32, {7}, map([](double v) { return std::tan(v); }), 1e-5);
}

// The inverse and hyperbolic functions map to graft's ops of the same
// names: values from the C library, NaN outside each domain, and an opset
// older than the operator refused by name.
TEST(OnnxOps, InverseAndHyperbolicFunctions) {
  struct Function {
    const char* op;
    double (*reference)(double);
  };
  const Function functions[] = {
      {"Asin", [](double v) { return std::asin(v); }},   {"Acos", [](double v) { return std::acos(v); }},
      {"Atan", [](double v) { return std::atan(v); }},   {"Sinh", [](double v) { return std::sinh(v); }},
      {"Cosh", [](double v) { return std::cosh(v); }},   {"Asinh", [](double v) { return std::asinh(v); }},
      {"Acosh", [](double v) { return std::acosh(v); }}, {"Atanh", [](double v) { return std::atanh(v); }},
  };
  ModelBuilder b;
  b.FloatInput("x", {7});
  for (const Function& f : functions) {
    b.Node(f.op, {"x"}, {f.op});
    b.Output(f.op);
  }
  const std::vector<double> x = {-2, -0.5, 0, 0.25, 1, 3, NAN};
  auto out = RunModel(b, {F32({7}, x)});
  ASSERT_EQ(out.size(), std::size(functions));
  for (size_t i = 0; i < std::size(functions); ++i) {
    SCOPED_TRACE(functions[i].op);
    std::vector<double> y;
    for (double v : x) y.push_back(functions[i].reference(v));
    ExpectTensor(out[i], DType::kF32, {7}, y, 1e-6);
  }
  ModelBuilder old(/*opset=*/8);
  old.FloatInput("x", {2});
  old.Node("Sinh", {"x"}, {"y"});
  old.Output("y");
  EXPECT_THAT(ImportError(old), HasSubstr("Sinh needs opset 9"));
}

// Operators of older opsets graft imports as the ones that define them:
// values worked out from ONNX's definitions.
TEST(OnnxOps, ShrinkThresholdedReluHardmax) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  onnx::NodeProto* shrink = b.Node("Shrink", {"x"}, {"shrink"});
  AttrFloat(shrink, "lambd", 1.5f);
  AttrFloat(shrink, "bias", 0.5f);
  AttrFloat(b.Node("ThresholdedRelu", {"x"}, {"thresholded"}), "alpha", 2.0f);
  b.Node("Hardmax", {"x"}, {"last"});
  AttrInt(b.Node("Hardmax", {"x"}, {"first"}), "axis", 0);
  for (const char* o : {"shrink", "thresholded", "last", "first"}) b.Output(o);
  auto out = RunModel(b, {F32({2, 3}, {-2, 1, 3, 3, 3, -1})});
  ASSERT_EQ(out.size(), 4u);
  ExpectTensor(out[0], DType::kF32, {2, 3}, {-1.5, 0, 2.5, 2.5, 2.5, 0});
  ExpectTensor(out[1], DType::kF32, {2, 3}, {0, 0, 3, 3, 3, 0});
  // The first largest: row 1's tie goes to column 0. Down the columns:
  // rows 1, 1 and 0.
  ExpectTensor(out[2], DType::kF32, {2, 3}, {0, 0, 1, 1, 0, 0});
  ExpectTensor(out[3], DType::kF32, {2, 3}, {0, 0, 1, 1, 1, 0});
}

TEST(OnnxOps, NormalizationsEyeLikeAndGlobalLpPool) {
  for (const int64_t opset : {11, 18}) {  // The reductions' axes as attributes, then inputs.
    SCOPED_TRACE(opset);
    ModelBuilder b(opset);
    b.FloatInput("x", {1, 2, 1, 2});
    b.Node("LpNormalization", {"x"}, {"l2"});
    onnx::NodeProto* l1 = b.Node("LpNormalization", {"x"}, {"l1"});
    AttrInt(l1, "axis", 1);
    AttrInt(l1, "p", 1);
    b.Node("MeanVarianceNormalization", {"x"}, {"mvn"});
    b.Node("GlobalLpPool", {"x"}, {"pool"});
    b.FloatInput("m", {2, 3});
    AttrInt(b.Node("EyeLike", {"m"}, {"eye"}), "k", 1);
    for (const char* o : {"l2", "l1", "mvn", "pool", "eye"}) b.Output(o);
    auto out = RunModel(b, {F32({1, 2, 1, 2}, {3, 4, -6, 8}), F32({2, 3}, {9, 9, 9, 9, 9, 9})});
    ASSERT_EQ(out.size(), 5u);
    ExpectTensor(out[0], DType::kF32, {1, 2, 1, 2}, {0.6, 0.8, -0.6, 0.8}, 1e-6);
    ExpectTensor(out[1], DType::kF32, {1, 2, 1, 2}, {3.0 / 9, 4.0 / 12, -6.0 / 9, 8.0 / 12}, 1e-6);
    // Channel 0: mean 3.5, std 0.5; channel 1: mean 1, std 7.
    ExpectTensor(out[2], DType::kF32, {1, 2, 1, 2}, {-1, 1, -1, 1}, 1e-6);
    ExpectTensor(out[3], DType::kF32, {1, 2, 1, 1}, {5, 10}, 1e-5);
    ExpectTensor(out[4], DType::kF32, {2, 3}, {0, 1, 0, 0, 0, 1});
  }
  // A zero vector normalizes to zeros (ONNX's reference, ONNX Runtime).
  ModelBuilder zero;
  zero.FloatInput("x", {2, 2});
  zero.Node("LpNormalization", {"x"}, {"y"});
  zero.Output("y");
  auto out = RunModel(zero, {F32({2, 2}, {0, 0, 3, -4})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2, 2}, {0, 0, 0.6, -0.8}, 1e-6);
}

// CumSum with its axis an input, exclusive and reverse; an int32 input
// keeps its dtype (graft sums in i64 and casts back).
TEST(OnnxOps, CumSum) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  b.Input("n", TP::INT32, std::vector<int64_t>{3});
  b.IntsConstant("axis", {1});
  b.IntsConstant("first", {0});
  b.Node("CumSum", {"x", "axis"}, {"plain"});
  onnx::NodeProto* both = b.Node("CumSum", {"x", "first"}, {"both"});
  AttrInt(both, "exclusive", 1);
  AttrInt(both, "reverse", 1);
  b.IntsConstant("zero", {0});
  b.Node("CumSum", {"n", "zero"}, {"ints"});
  for (const char* o : {"plain", "both", "ints"}) b.Output(o);
  auto out = RunModel(b, {F32({2, 3}, {1, 2, 3, 4, 5, 6}),
                          Tensor::FromVector<int32_t>(DType::kI32, {3}, {5, -2, 7})});
  ASSERT_EQ(out.size(), 3u);
  ExpectTensor(out[0], DType::kF32, {2, 3}, {1, 3, 6, 4, 9, 15});
  ExpectTensor(out[1], DType::kF32, {2, 3}, {4, 5, 6, 0, 0, 0});
  ExpectTensor(out[2], DType::kI32, {3}, {5, 3, 10});
}

TEST(OnnxOps, VariadicMaxMinSum) {
  ModelBuilder b;
  for (const char* n : {"a", "b", "c"}) b.FloatInput(n, {2});
  b.Node("Max", {"a", "b", "c"}, {"max"});
  b.Node("Min", {"a", "b", "c"}, {"min"});
  b.Node("Sum", {"a", "b", "c"}, {"sum"});
  b.Node("Max", {"a"}, {"one"});
  for (const char* o : {"max", "min", "sum", "one"}) b.Output(o);
  auto out =
      RunModel(b, {F32({2}, {1, 5}), F32({2}, {3, 2}), F32({2}, {0, 9})});
  ASSERT_EQ(out.size(), 4u);
  ExpectTensor(out[0], DType::kF32, {2}, {3, 9});
  ExpectTensor(out[1], DType::kF32, {2}, {0, 2});
  ExpectTensor(out[2], DType::kF32, {2}, {4, 16});
  ExpectTensor(out[3], DType::kF32, {2}, {1, 5});
}

TEST(OnnxOps, CastLikeArgMaxReduceMinSize) {
  ModelBuilder b(18);
  b.FloatInput("x", {2, 3});
  b.Input("like", TP::INT64, std::vector<int64_t>{1});
  b.Node("CastLike", {"x", "like"}, {"cast"});
  onnx::NodeProto* am = b.Node("ArgMax", {"x"}, {"argmax"});
  AttrInt(am, "axis", 1);
  AttrInt(am, "keepdims", 0);
  b.IntsConstant("axes", {1});
  b.Node("ReduceMin", {"x", "axes"}, {"min"});
  b.Node("Size", {"x"}, {"size"});
  for (const char* o : {"cast", "argmax", "min", "size"}) b.Output(o);
  auto out = RunModel(b, {F32({2, 3}, {1.5, 5, 2, 7, -0.5, 7}), I64({1}, {0})});
  ASSERT_EQ(out.size(), 4u);
  ExpectTensor(out[0], DType::kI64, {2, 3}, {1, 5, 2, 7, 0, 7});
  ExpectTensor(out[1], DType::kI64, {2}, {1, 0});
  ExpectTensor(out[2], DType::kF32, {2, 1}, {1.5, -0.5});
  ExpectTensor(out[3], DType::kI64, {}, {6});
}

}  // namespace
}  // namespace graft::onnx_test

#else  // !GRAFT_HAVE_ONNX

TEST(OnnxOps, NeedsOnnx) {
  GTEST_SKIP() << "graft was built without ONNX (libonnx-dev)";
}

#endif  // GRAFT_HAVE_ONNX
