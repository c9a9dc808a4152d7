// Operators as models of opsets 7 to 12 write them: the versions before
// opset 13 that differ from later ones (lists as attributes rather than
// inputs, Softmax over a flattened tail, Upsample and Resize-10's nearest
// rule), and operators only such models hold (Upsample, Scatter, LRN).
// Expected values are worked out here from the ONNX operator
// specifications.

#include "gtest/gtest.h"

#ifdef GRAFT_HAVE_ONNX

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "tests/onnx/onnx_test_util.h"

namespace graft::onnx_test {
namespace {

using ::testing::HasSubstr;

std::vector<double> Iota(int n, double scale, double offset) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(i * scale + offset);
  return v;
}

TEST(OnnxLegacyOpsets, SqueezeAndUnsqueezeTakeAxesAsAnAttribute) {
  for (int64_t opset : {7, 11, 12}) {
    SCOPED_TRACE(opset);
    ModelBuilder b(opset);
    b.FloatInput("x", {2, 1, 3});
    AttrInts(b.Node("Squeeze", {"x"}, {"s"}), "axes", {1});
    AttrInts(b.Node("Unsqueeze", {"s"}, {"u"}), "axes", {0, 3});
    b.Output("u");
    auto out = RunModel(b, {F32({2, 1, 3}, Iota(6, 1, 0))});
    ASSERT_EQ(out.size(), 1u);
    ExpectTensor(out[0], DType::kF32, {1, 2, 3, 1}, Iota(6, 1, 0));
  }
  // The form of the other opsets is refused by name.
  ModelBuilder input_early(12);
  input_early.FloatInput("x", {2, 1});
  input_early.Int64Initializer("axes", {1}, {1});
  input_early.Node("Squeeze", {"x", "axes"}, {"y"}, "sq");
  input_early.Output("y");
  EXPECT_THAT(ImportError(input_early),
              HasSubstr("axes is an attribute before opset 13, not input 1 (the model imports "
                        "opset 12)"));
  ModelBuilder attribute_late(13);
  attribute_late.FloatInput("x", {2});
  AttrInts(attribute_late.Node("Unsqueeze", {"x"}, {"y"}, "un"), "axes", {0});
  attribute_late.Output("y");
  EXPECT_THAT(ImportError(attribute_late),
              HasSubstr("axes is input 1 from opset 13, not an attribute"));
  ModelBuilder missing(11);
  missing.FloatInput("x", {2});
  missing.Node("Unsqueeze", {"x"}, {"y"}, "un");
  missing.Output("y");
  EXPECT_THAT(ImportError(missing), HasSubstr("Unsqueeze needs axes"));
}

TEST(OnnxLegacyOpsets, SplitTakesItsSizesAsAnAttribute) {
  ModelBuilder b(11);
  b.FloatInput("x", {2, 3});
  onnx::NodeProto* n = b.Node("Split", {"x"}, {"a", "b"});
  AttrInt(n, "axis", -1);
  AttrInts(n, "split", {1, 2});
  b.Output("a");
  b.Output("b");
  auto out = RunModel(b, {F32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {2, 1}, {1, 4});
  ExpectTensor(out[1], DType::kF32, {2, 2}, {2, 3, 5, 6});
}

TEST(OnnxLegacyOpsets, ReduceSumTakesAxesAsAnAttributeBeforeOpset13) {
  ModelBuilder b(12);
  b.FloatInput("x", {2, 3});
  onnx::NodeProto* n = b.Node("ReduceSum", {"x"}, {"y"});
  AttrInts(n, "axes", {1});
  AttrInt(n, "keepdims", 0);
  b.Output("y");
  auto out = RunModel(b, {F32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2}, {6, 15});
}

// Before opset 13, Softmax sees its input as [dims before axis, the rest]
// (axis 1 by default) and normalizes each row of that.
TEST(OnnxLegacyOpsets, SoftmaxNormalizesEverythingFromItsAxisOn) {
  const std::vector<double> x = Iota(12, 0.3, -1.5);
  auto expected = [&](int64_t group, bool log) {
    std::vector<double> y(x.size());
    for (size_t start = 0; start < x.size(); start += group) {
      double sum = 0;
      for (int64_t i = 0; i < group; ++i) sum += std::exp(x[start + i]);
      for (int64_t i = 0; i < group; ++i) {
        y[start + i] = log ? x[start + i] - std::log(sum) : std::exp(x[start + i]) / sum;
      }
    }
    return y;
  };
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(op);
    const bool log = std::string(op) == "LogSoftmax";
    ModelBuilder b(11);
    b.Input("x", TP::FLOAT, std::vector<std::string>{"n", "3", "m"});  // Symbolic dims in the tail too.
    b.Node(op, {"x"}, {"by_default"});         // axis 1: rows of 6.
    AttrInt(b.Node(op, {"x"}, {"last"}), "axis", 2);  // rows of 2.
    AttrInt(b.Node(op, {"x"}, {"all"}), "axis", 0);   // one row of 12.
    b.Output("by_default");
    b.Output("last");
    b.Output("all");
    auto out = RunModel(b, {F32({2, 3, 2}, x)});
    ASSERT_EQ(out.size(), 3u);
    ExpectTensor(out[0], DType::kF32, {2, 3, 2}, expected(6, log), 1e-5);
    ExpectTensor(out[1], DType::kF32, {2, 3, 2}, expected(2, log), 1e-5);
    ExpectTensor(out[2], DType::kF32, {2, 3, 2}, expected(12, log), 1e-5);
  }
  // From opset 13, over the one axis (-1 by default).
  ModelBuilder b(13);
  b.FloatInput("x", {2, 3, 2});
  AttrInt(b.Node("Softmax", {"x"}, {"y"}), "axis", 1);
  b.Output("y");
  auto out = RunModel(b, {F32({2, 3, 2}, x)});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> per_axis(12);
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 2; ++k) {
      double sum = 0;
      for (int c = 0; c < 3; ++c) sum += std::exp(x[n * 6 + c * 2 + k]);
      for (int c = 0; c < 3; ++c) per_axis[n * 6 + c * 2 + k] = std::exp(x[n * 6 + c * 2 + k]) / sum;
    }
  }
  ExpectTensor(out[0], DType::kF32, {2, 3, 2}, per_axis, 1e-5);
}

TEST(OnnxLegacyOpsets, SliceTakesStartsEndsAndAxesAsAttributesBeforeOpset10) {
  ModelBuilder b(9);
  b.FloatInput("x", {3, 4});
  onnx::NodeProto* n = b.Node("Slice", {"x"}, {"y"});
  AttrInts(n, "starts", {1, -3});
  AttrInts(n, "ends", {1000, -1});
  AttrInts(n, "axes", {0, 1});
  onnx::NodeProto* all_axes = b.Node("Slice", {"x"}, {"z"});
  AttrInts(all_axes, "starts", {0, 2});
  AttrInts(all_axes, "ends", {1, 4});
  b.Output("y");
  b.Output("z");
  auto out = RunModel(b, {F32({3, 4}, Iota(12, 1, 0))});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {2, 2}, {5, 6, 9, 10});
  ExpectTensor(out[1], DType::kF32, {1, 2}, {2, 3});

  ModelBuilder inputs(9);
  inputs.FloatInput("x", {3});
  inputs.Int64Initializer("s", {1}, {1});
  inputs.Int64Initializer("e", {1}, {2});
  inputs.Node("Slice", {"x", "s", "e"}, {"y"}, "sl");
  inputs.Output("y");
  EXPECT_THAT(ImportError(inputs), HasSubstr("starts is an attribute before opset 10"));
}

TEST(OnnxLegacyOpsets, PadTakesPadsAndItsValueAsAttributesBeforeOpset11) {
  ModelBuilder b(10);
  b.FloatInput("x", {2, 2});
  onnx::NodeProto* constant = b.Node("Pad", {"x"}, {"c"});
  AttrInts(constant, "pads", {0, 1, 1, 0});
  AttrFloat(constant, "value", 1.5f);
  onnx::NodeProto* reflect = b.Node("Pad", {"x"}, {"r"});
  AttrInts(reflect, "pads", {0, 1, 0, 1});
  AttrString(reflect, "mode", "reflect");
  b.Output("c");
  b.Output("r");
  auto out = RunModel(b, {F32({2, 2}, {1, 2, 3, 4})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {3, 3}, {1.5, 1, 2, 1.5, 3, 4, 1.5, 1.5, 1.5});
  ExpectTensor(out[1], DType::kF32, {2, 4}, {2, 1, 2, 1, 4, 3, 4, 3});
}

TEST(OnnxLegacyOpsets, ClipTakesMinAndMaxAsAttributesBeforeOpset11) {
  ModelBuilder b(10);
  b.FloatInput("x", {4});
  onnx::NodeProto* both = b.Node("Clip", {"x"}, {"both"});
  AttrFloat(both, "min", -1);
  AttrFloat(both, "max", 0.5f);
  AttrFloat(b.Node("Clip", {"x"}, {"low"}), "min", 0);
  b.Output("both");
  b.Output("low");
  auto out = RunModel(b, {F32({4}, {-3, -0.5, 0.25, 7})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {4}, {-1, -0.5, 0.25, 0.5});
  ExpectTensor(out[1], DType::kF32, {4}, {0, 0, 0.25, 7});

  ModelBuilder inputs(10);
  inputs.FloatInput("x", {4});
  inputs.FloatInitializer("lo", {}, {0});
  inputs.Node("Clip", {"x", "lo"}, {"y"}, "clip");
  inputs.Output("y");
  EXPECT_THAT(ImportError(inputs), HasSubstr("min and max are attributes before opset 11"));
}

TEST(OnnxLegacyOpsets, TopKTakesKAsAnAttributeBeforeOpset10) {
  ModelBuilder b(9);
  b.FloatInput("x", {5});
  AttrInt(b.Node("TopK", {"x"}, {"values", "indices"}), "k", 2);
  b.Output("values");
  b.Output("indices");
  auto out = RunModel(b, {F32({5}, {3, 9, -1, 4, 8})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kF32, {2}, {9, 8});
  ExpectTensor(out[1], DType::kI64, {2}, {1, 4});
}

TEST(OnnxLegacyOpsets, DropoutWithItsRatioAttributeIsTheIdentity) {
  ModelBuilder b(10);
  b.FloatInput("x", {3});
  AttrFloat(b.Node("Dropout", {"x"}, {"y"}), "ratio", 0.5f);
  b.Output("y");
  auto out = RunModel(b, {F32({3}, {1, -2, 3})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {3}, {1, -2, 3});
  // Before opset 10 the mask has the input's type.
  ModelBuilder masked(9);
  masked.FloatInput("x", {3});
  AttrFloat(masked.Node("Dropout", {"x"}, {"y", "mask"}), "ratio", 0.5f);
  masked.Node("Mul", {"y", "mask"}, {"z"});
  masked.Output("z");
  out = RunModel(masked, {F32({3}, {1, -2, 3})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {3}, {1, -2, 3});
}

TEST(OnnxLegacyOpsets, BatchNormalizationAcceptsSpatialOneOnly) {
  auto model = [](int64_t spatial) {
    ModelBuilder b(8);
    b.FloatInput("x", {1, 2, 1, 1});
    b.FloatInitializer("scale", {2}, {2, 1});
    b.FloatInitializer("bias", {2}, {0, 1});
    b.FloatInitializer("mean", {2}, {1, 0});
    b.FloatInitializer("var", {2}, {4, 1});
    onnx::NodeProto* n = b.Node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                                {"y"}, "bn");
    AttrFloat(n, "epsilon", 0);
    AttrInt(n, "spatial", spatial);
    b.Output("y");
    return b;
  };
  ModelBuilder per_channel = model(1);
  auto out = RunModel(per_channel, {F32({1, 2, 1, 1}, {5, 3})});
  ASSERT_EQ(out.size(), 1u);
  // (x - mean) / sqrt(var) * scale + bias.
  ExpectTensor(out[0], DType::kF32, {1, 2, 1, 1}, {4, 4});
  ModelBuilder per_element = model(0);
  EXPECT_THAT(ImportError(per_element), HasSubstr("spatial=0"));
}

// Upsample and Resize-10 read the input at o / scale, rounded down when
// enlarging and up when shrinking (as ONNX Runtime does).
TEST(OnnxLegacyOpsets, UpsampleAndResize10) {
  const std::vector<double> x = {1, 2, 3, 4};
  {
    ModelBuilder b(7);  // Scales as an attribute, the example of the ONNX specification.
    b.FloatInput("x", {1, 1, 2, 2});
    AttrFloats(b.Node("Upsample", {"x"}, {"y"}), "scales", {1, 1, 2, 3});
    b.Output("y");
    auto out = RunModel(b, {F32({1, 1, 2, 2}, x)});
    ASSERT_EQ(out.size(), 1u);
    ExpectTensor(out[0], DType::kF32, {1, 1, 4, 6},
                 {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  }
  {
    ModelBuilder b(9);  // Scales as input 1; linear from positions o / 2.
    b.FloatInput("x", {1, 1, 2, 2});
    b.FloatInitializer("scales", {4}, {1, 1, 2, 2});
    AttrString(b.Node("Upsample", {"x", "scales"}, {"y"}), "mode", "linear");
    b.Output("y");
    auto out = RunModel(b, {F32({1, 1, 2, 2}, x)});
    ASSERT_EQ(out.size(), 1u);
    // Rows at 0, 0.5, 1, 1 (clamped), columns the same.
    ExpectTensor(out[0], DType::kF32, {1, 1, 4, 4},
                 {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4});
  }
  {
    ModelBuilder b(10);
    b.FloatInput("x", {1, 5});
    b.FloatInitializer("shrink", {2}, {1, 0.6f});
    b.FloatInitializer("grow", {2}, {1, 1.5f});
    b.Node("Resize", {"x", "shrink"}, {"small"});
    b.Node("Resize", {"x", "grow"}, {"large"});
    b.Output("small");
    b.Output("large");
    auto out = RunModel(b, {F32({1, 5}, {10, 11, 12, 13, 14})});
    ASSERT_EQ(out.size(), 2u);
    // 3 = floor(5 * 0.6) positions 0, 1.67, 3.33 rounded up; 7 positions
    // 0, 0.67, 1.33, 2, 2.67, 3.33, 4 rounded down.
    ExpectTensor(out[0], DType::kF32, {1, 3}, {10, 12, 14});
    ExpectTensor(out[1], DType::kF32, {1, 7}, {10, 10, 11, 12, 12, 13, 14});
  }
}

TEST(OnnxLegacyOpsets, UpsampleRefusesScalesBelowOne) {
  ModelBuilder b(7);
  b.FloatInput("x", {1, 1, 2, 2});
  AttrFloats(b.Node("Upsample", {"x"}, {"y"}, "up"), "scales", {1, 1, 0.5f, 1});
  b.Output("y");
  EXPECT_THAT(ImportError(b), HasSubstr("node 'up' (Upsample): Upsample's scale 0.5 is below 1"));
}

TEST(OnnxLegacyOpsets, ResizeOfOpset11WithTfHalfPixelForNearest) {
  ModelBuilder b(11);
  b.FloatInput("x", {1, 2});
  b.FloatInitializer("roi", {0}, {});
  b.FloatInitializer("scales", {2}, {1, 2});
  onnx::NodeProto* n = b.Node("Resize", {"x", "roi", "scales"}, {"y"});
  AttrString(n, "coordinate_transformation_mode", "tf_half_pixel_for_nn");
  b.Output("y");
  auto out = RunModel(b, {F32({1, 2}, {5, 7})});
  ASSERT_EQ(out.size(), 1u);
  // Positions (o + 0.5) / 2 = 0.25, 0.75, 1.25, 1.75, rounded (halves
  // down) and clamped: 0, 1, 1, 1.
  ExpectTensor(out[0], DType::kF32, {1, 4}, {5, 7, 7, 7});
}

TEST(OnnxLegacyOpsets, ScatterIsScatterElements) {
  ModelBuilder b(9);
  b.FloatInput("data", {2, 3});
  b.Int64Initializer("indices", {1, 2}, {2, 0});
  b.FloatInput("updates", {1, 2});
  AttrInt(b.Node("Scatter", {"data", "indices", "updates"}, {"y"}), "axis", 1);
  b.Output("y");
  auto out = RunModel(b, {F32({2, 3}, {0, 0, 0, 0, 0, 0}), F32({1, 2}, {8, 9})});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2, 3}, {9, 0, 8, 0, 0, 0});
}

TEST(OnnxLegacyOpsets, LocalResponseNormalization) {
  const int64_t n = 2, c = 5, hw = 3, size = 4;
  const double alpha = 0.3, beta = 0.75, bias = 2;
  const std::vector<double> x = Iota(n * c * hw, 0.37, -4);
  std::vector<double> expected(x.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < hw; ++p) {
        double sum = 0;
        // floor((size - 1) / 2) channels before, ceil((size - 1) / 2) after.
        for (int64_t i = std::max<int64_t>(0, ch - 1); i <= std::min<int64_t>(c - 1, ch + 2); ++i) {
          sum += x[(b * c + i) * hw + p] * x[(b * c + i) * hw + p];
        }
        const int64_t at = (b * c + ch) * hw + p;
        expected[at] = x[at] / std::pow(bias + alpha / size * sum, beta);
      }
    }
  }
  // A window wider than twice the channels sums them all.
  {
    ModelBuilder wide(9);
    wide.FloatInput("x", {1, 2, 1, 1});
    AttrInt(wide.Node("LRN", {"x"}, {"y"}), "size", int64_t{1} << 40);
    wide.Output("y");
    auto out = RunModel(wide, {F32({1, 2, 1, 1}, {1, 2})});
    ASSERT_EQ(out.size(), 1u);
    const double divisor = std::pow(1 + 1e-4 / static_cast<double>(int64_t{1} << 40) * 5, 0.75);
    ExpectTensor(out[0], DType::kF32, {1, 2, 1, 1}, {1 / divisor, 2 / divisor}, 1e-6);
  }
  ModelBuilder m(9);
  m.Input("x", TP::FLOAT, std::vector<std::string>{"batch", "5", "1", "3"});
  onnx::NodeProto* lrn = m.Node("LRN", {"x"}, {"y"});
  AttrInt(lrn, "size", size);
  AttrFloat(lrn, "alpha", static_cast<float>(alpha));
  AttrFloat(lrn, "beta", static_cast<float>(beta));
  AttrFloat(lrn, "bias", static_cast<float>(bias));
  m.Output("y");
  auto out = RunModel(m, {F32({n, c, 1, hw}, x)});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {n, c, 1, hw}, expected, 1e-5);
}

TEST(OnnxLegacyOpsets, AnOperatorNewerThanTheModelsOpsetIsRefused) {
  ModelBuilder b(8);
  b.Input("c", TP::BOOL, std::vector<int64_t>{2});
  b.FloatInput("x", {2});
  b.Node("Where", {"c", "x", "x"}, {"y"}, "w");
  b.Output("y");
  EXPECT_THAT(ImportError(b), HasSubstr("Where needs opset 9 or later, but the model imports opset 8"));
}

}  // namespace
}  // namespace graft::onnx_test

#endif  // GRAFT_HAVE_ONNX
