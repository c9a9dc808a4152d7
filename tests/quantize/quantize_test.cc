// Post-training quantization: the range observer's calibrators, prepare and
// convert, and the accuracy of whole models quantized to int8 against
// their float originals on held-out inputs.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "graph/int4_ops.h"
#include "graph/parser.h"
#include "graph/quant_ops.h"
#include "gtest/gtest.h"
#include "backends/interp/interpreter.h"
#include "graph/random_tensor.h"
#include "graph/verifier.h"
#include "passes/quantize/convert.h"
#include "passes/shape_prop.h"
#include "passes/quantize/dynamic.h"
#include "passes/quantize/lower.h"
#include "passes/quantize/equalize.h"
#include "passes/quantize/prepare.h"
#include "passes/quantize/range_observer.h"
#include "passes/quantize/weight_only.h"
#include "quantize/accuracy.h"
#include "quantize/calibration.h"
#include "quantize/quantize_model.h"
#include "serialize/model_io.h"
#include "serialize/npy.h"
#include "support/status_matchers.h"
#include "tests/backends/model_files.h"

namespace graft::quantize {
namespace {

using ::graft::passes::quantize::Calibrator;
using ::graft::passes::quantize::QuantConfig;
using ::graft::passes::quantize::RangeObserver;
using ::graft::testing::StatusIs;
using ::testing::HasSubstr;

Tensor Uniform(int64_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(dist(rng));
  return t;
}

TEST(RangeObserver, WideningKeepsEveryCount) {
  RangeObserver o;
  o.Add(Uniform(1000, -1, 1, 1));
  o.Add(Uniform(1000, -10, 10, 2));
  EXPECT_EQ(o.count(), 2000);
  double total = 0;
  for (double c : o.bins()) total += c;
  EXPECT_EQ(total, 2000);
  EXPECT_GE(o.span(), 10 * 0.99);
  EXPECT_LE(o.min(), -9);
  EXPECT_GE(o.max(), 9);
}

Tensor Normal(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0, 1);
  Tensor t(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(dist(rng));
  return t;
}

// The squared error of quantizing `t` symmetric int8 with threshold `th`.
double QuantError(const Tensor& t, double th) {
  const double step = th / 127;
  double error = 0;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const double x = t.data<float>()[i];
    const double q = std::clamp(std::nearbyint(x / step), -127.0, 127.0) * step;
    error += (x - q) * (x - q);
  }
  return error;
}

// Every calibrator from one pass over a bell-shaped body and one far
// outlier: percentile and entropy clip the outlier, MSE picks a threshold
// with no more squared error than MinMax's, and MinMax keeps everything.
TEST(RangeObserver, EveryCalibratorComesFromOnePass) {
  RangeObserver o;
  Tensor data = Normal(100000, 3);
  data.data<float>()[0] = 50;  // One outlier.
  o.Add(data);
  EXPECT_NEAR(o.Range(Calibrator::kMinMax, DType::kI8, true).second, 50, 1e-6);
  for (Calibrator c : {Calibrator::kPercentile, Calibrator::kEntropy}) {
    SCOPED_TRACE(std::string(passes::quantize::CalibratorName(c)));
    const auto range = o.Range(c, DType::kI8, true);
    EXPECT_LT(range.second, 10) << "the outlier should be clipped";
    EXPECT_GT(range.second, 1) << "the body should not be";
    EXPECT_EQ(range.first, -range.second);
  }
  const double mse = o.Range(Calibrator::kMse, DType::kI8, true).second;
  EXPECT_LE(QuantError(data, mse), QuantError(data, 50) * 1.01);
  EXPECT_LT(mse, 50);
}

// The squared error of f8e4m3 quantization with scale th / 448.
double Float8QuantError(const Tensor& t, double th) {
  const double scale = th / 448;
  double error = 0;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const double x = t.data<float>()[i];
    const double q =
        Float8E4M3ToFloat(DoubleToFloat8E4M3(std::clamp(x / scale, -448.0, 448.0))) * scale;
    error += (x - q) * (x - q);
  }
  return error;
}

// For f8e4m3 the error calibrators model its grid (steps that grow with
// the value), not 127 uniform steps: on a body and one far outlier, MSE's
// threshold has no more f8e4m3 error than MinMax's (the uniform model would
// clip the outlier hard, paying for it in full), and entropy's keeps the body.
TEST(RangeObserver, Float8CalibratorsModelItsGrid) {
  RangeObserver o;
  Tensor data = Normal(100000, 3);
  data.data<float>()[0] = 50;
  o.Add(data);
  const double mse = o.Range(Calibrator::kMse, DType::kF8E4M3, true).second;
  EXPECT_LE(Float8QuantError(data, mse), Float8QuantError(data, 50) * 1.01) << "threshold " << mse;
  const double uniform = o.Range(Calibrator::kMse, DType::kI8, true).second;
  EXPECT_GT(Float8QuantError(data, uniform), Float8QuantError(data, 50) * 1.05)
      << "the int8 threshold " << uniform << " should cost f8e4m3 more than MinMax";
  // Entropy over 128 uniform levels clips the body itself (about 6 here),
  // at many times MinMax's f8e4m3 error; over f8e4m3's levels it does not.
  const double entropy = o.Range(Calibrator::kEntropy, DType::kF8E4M3, true).second;
  EXPECT_LT(Float8QuantError(data, entropy), Float8QuantError(data, 50) * 2) << "threshold " << entropy;
  const double uniform_entropy = o.Range(Calibrator::kEntropy, DType::kI8, true).second;
  EXPECT_GT(Float8QuantError(data, uniform_entropy), Float8QuantError(data, 50) * 10)
      << "the int8 threshold " << uniform_entropy;
}

// An overflow upstream (inf) or NaN says nothing of the range.
TEST(RangeObserver, NonFiniteValuesAreSkipped) {
  RangeObserver o;
  Tensor t = Normal(1000, 5);
  t.data<float>()[0] = std::numeric_limits<float>::infinity();
  t.data<float>()[1] = -std::numeric_limits<float>::infinity();
  t.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  o.Add(t);
  EXPECT_EQ(o.count(), 997);
  EXPECT_LT(o.max(), 10);
  EXPECT_GT(o.min(), -10);
  for (Calibrator c : {Calibrator::kMinMax, Calibrator::kPercentile, Calibrator::kEntropy,
                       Calibrator::kMse}) {
    const auto range = o.Range(c, DType::kI8, true);
    EXPECT_TRUE(std::isfinite(range.second));
    EXPECT_GT(range.second, 1);
  }
}

TEST(RangeObserver, AffineU8CoversMinAndMax) {
  RangeObserver o;
  o.Add(Uniform(1000, 0, 6, 4));
  const passes::quantize::QuantParams p = o.Params(Calibrator::kMinMax, DType::kU8, false);
  EXPECT_EQ(p.zero_point, 0);
  EXPECT_NEAR(p.scale * 255, o.max(), 1e-9);
}

constexpr char kPerceptron[] = R"(
tensor fc1.weight : f32[16,8] = random(seed=1)
tensor fc1.bias : f32[16] = random(seed=2)
tensor fc2.weight : f32[4,16] = random(seed=3)

graph():
    %x : f32[batch,8] = placeholder[target=x]
    %w1 = get_attr[target=fc1.weight]
    %b1 = get_attr[target=fc1.bias]
    %fc1 = call_function[target=linear](args = (%x, %w1), kwargs = {bias: %b1})
    %relu = call_function[target=relu](args = (%fc1,), kwargs = {})
    %w2 = get_attr[target=fc2.weight]
    %fc2 = call_function[target=linear](args = (%relu, %w2), kwargs = {})
    return fc2
)";

Module Parse(const std::string& text) {
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_OK(m.status());
  return m.ok() ? *std::move(m) : Module();
}

Module LoadTestModel(const std::string& name) {
  backend_test::FindSourceDir();
  absl::StatusOr<Module> m =
      LoadModel(backend_test::SourceDir() + "/tests/onnx_models/" + name + "/model.onnx");
  EXPECT_OK(m.status());
  return m.ok() ? *std::move(m) : Module();
}

int CountCalls(const Module& m, absl::string_view op) {
  int n = 0;
  for (const Node* node : m.graph().nodes()) n += node->is_call(op);
  return n;
}

TEST(Prepare, ObservesEveryActivationOnce) {
  Module m = Parse(kPerceptron);
  ASSERT_OK_AND_ASSIGN(passes::quantize::PrepareReport r, passes::quantize::Prepare(m, {}));
  EXPECT_THAT(r.quantized, ::testing::ElementsAre("fc1", "fc2"));
  // x (fc1's input) and relu (fc2's); the results feed float ops.
  EXPECT_EQ(r.observers, 2);
  EXPECT_EQ(CountCalls(m, kObserveOp), 2);
}

// A result that another quantized call reads is observed once, for both.
TEST(Prepare, AResultAQuantizedCallReadsIsObservedOnce) {
  Module m = Parse(R"(
tensor w1 : f32[4,4] = random(seed=1)
tensor w2 : f32[4,4] = random(seed=2)

graph():
    %x : f32[2,4] = placeholder[target=x]
    %w1 = get_attr[target=w1]
    %a = call_function[target=linear](args = (%x, %w1), kwargs = {})
    %w2 = get_attr[target=w2]
    %b = call_function[target=linear](args = (%a, %w2), kwargs = {})
    %c = call_function[target=add](args = (%a, %b), kwargs = {})
    return c
)");
  ASSERT_OK_AND_ASSIGN(passes::quantize::PrepareReport r, passes::quantize::Prepare(m, {}));
  EXPECT_EQ(r.observers, 2);  // x, a.
}

TEST(Prepare, BadConfigurationsSayWhatIsWrong) {
  Module m = Parse(kPerceptron);
  QuantConfig config;
  config.skip = {"fc9*"};
  EXPECT_THAT(passes::quantize::Prepare(m, config).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("skip glob 'fc9*' matches no call")));
  Module ints = Parse(R"(
graph():
    %a : i64[2,3] = placeholder[target=a]
    %b : i64[3,2] = placeholder[target=b]
    %m = call_function[target=matmul](args = (%a, %b), kwargs = {})
    return m
)");
  EXPECT_THAT(passes::quantize::Prepare(ints, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot quantize %m (matmul): it reads %a i64[2,3]")));
}

TEST(Prepare, AValueReadTwiceIsObservedOnce) {
  Module m = Parse(R"(
graph():
    %x : f32[3,3] = placeholder[target=x]
    %m = call_function[target=matmul](args = (%x, %x), kwargs = {})
    return m
)");
  ASSERT_OK_AND_ASSIGN(passes::quantize::PrepareReport r, passes::quantize::Prepare(m, {}));
  EXPECT_EQ(r.observers, 1);
}

TEST(Prepare, AnUntypedInputIsAnError) {
  Module m = Parse(R"(
tensor w : f32[4,4] = random(seed=1)

graph():
    %x = placeholder[target=x]
    %w = get_attr[target=w]
    %y = call_function[target=linear](args = (%x, %w), kwargs = {})
    return y
)");
  EXPECT_THAT(passes::quantize::Prepare(m, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the type of %x is unknown")));
}

// Only quantized calls read quantized values: a bias add, or a call kept
// float, reads the float value even where a quantized call reads the same.
TEST(Convert, OnlyQuantizedCallsReadQuantizedValues) {
  Module m = Parse(R"(
tensor w1 : f32[4,4] = random(seed=1)
tensor w2 : f32[4,4] = random(seed=2)
tensor w3 : f32[4,4] = random(seed=3)

graph():
    %x : f32[2,4] = placeholder[target=x]
    %w1 = get_attr[target=w1]
    %a = call_function[target=linear](args = (%x, %w1), kwargs = {})
    %w2 = get_attr[target=w2]
    %b = call_function[target=linear](args = (%a, %w2), kwargs = {})
    %w3 = get_attr[target=w3]
    %k = call_function[target=linear](args = (%a, %w3), kwargs = {})
    %c = call_function[target=add](args = (%a, %b), kwargs = {})
    %d = call_function[target=add](args = (%c, %k), kwargs = {})
    return d
)");
  QuantizeOptions options;
  options.config.skip = {"k"};
  ASSERT_OK_AND_ASSIGN(options.calibration, RandomSamples(m, 4, 1));
  ASSERT_OK_AND_ASSIGN(QuantizeResult r, QuantizeModel(m, options));
  const Graph& g = r.module.graph();
  EXPECT_TRUE(g.FindNode("b")->arg(0).node()->is_call("dequantize"));
  EXPECT_EQ(g.FindNode("k")->arg(0).node()->name(), "a");
  EXPECT_EQ(g.FindNode("c")->arg(0).node()->name(), "a");
  EXPECT_THAT(r.converted.quantized, ::testing::ElementsAre("a", "b"));
}

// The lowered int8 products compute what the reference graph does (int32
// sums scaled once instead of float sums of dequantized values): at least
// 60 dB apart. The audit lists what did not fuse.
TEST(Lower, Int8ProductsAgreeWithTheReferenceGraph) {
  for (const char* name : {"mlp", "gpt2_block_opset17", "cnn"}) {
    SCOPED_TRACE(name);
    backend_test::FindSourceDir();
    absl::StatusOr<Module> m =
        LoadModel(backend_test::SourceDir() + "/tests/onnx_models/" + name + "/model.onnx");
    ASSERT_OK(m.status());
    QuantizeOptions options;
    ASSERT_OK_AND_ASSIGN(options.calibration, RandomSamples(*m, 8, 1));
    ASSERT_OK_AND_ASSIGN(QuantizeResult r, QuantizeModel(*m, options));
    Module lowered = r.module.Clone();
    ASSERT_OK_AND_ASSIGN(passes::quantize::LowerReport audit, passes::quantize::Lower(lowered));
    std::printf("%s", audit.ToString().c_str());
    EXPECT_FALSE(audit.lowered.empty());
    EXPECT_GT(audit.int8_macs, 0);
    EXPECT_GT(CountCalls(lowered, kQuantizedLinearOp) + CountCalls(lowered, kQuantizedConv2dOp),
              0);
    if (std::string(name) == "cnn") {
      // Every convolution and the classifier: all of the work in int8.
      EXPECT_EQ(CountCalls(lowered, "conv2d"), 0);
      EXPECT_GT(CountCalls(lowered, kQuantizedConv2dOp), 0);
      EXPECT_EQ(audit.int8_macs, audit.total_macs);
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Sample> eval, RandomSamples(*m, 2, 7));
    interp::Interpreter reference(r.module), int8(lowered);
    for (const Sample& s : eval) {
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference.Run(s));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, int8.Run(s));
      for (size_t i = 0; i < want.size(); ++i) EXPECT_GE(Sqnr(want[i], got[i]), 60);
    }
  }
}

TEST(Lower, ProductsOfTwoActivationsAreListed) {
  Module m = LoadTestModel("gpt2_block_opset17");
  QuantizeOptions options;
  ASSERT_OK_AND_ASSIGN(options.calibration, RandomSamples(m, 4, 1));
  ASSERT_OK_AND_ASSIGN(QuantizeResult r, QuantizeModel(m, options));
  ASSERT_OK_AND_ASSIGN(passes::quantize::LowerReport audit, passes::quantize::Lower(r.module));
  // Attention's q @ k^T and p @ v: both operands quantized activations.
  EXPECT_THAT(audit.unfused, ::testing::Contains(HasSubstr("a product of two activations")));
  EXPECT_LT(audit.int8_macs, audit.total_macs);
}

// Weight-only: int8 per group is close to float; int4 loses more, and
// smaller groups lose less.
double WeightOnlySqnr(const Module& m, int bits, int64_t group) {
  Module q = m.Clone();
  passes::quantize::WeightOnlyConfig config;
  config.bits = bits;
  config.group_size = group;
  absl::StatusOr<passes::quantize::WeightOnlyReport> r =
      passes::quantize::QuantizeWeightsOnly(q, config);
  EXPECT_OK(r.status());
  absl::StatusOr<std::vector<Sample>> eval = RandomSamples(m, 4, 5);
  EXPECT_OK(eval.status());
  absl::StatusOr<AccuracyReport> a = MeasureAccuracy(m, q, *eval, {});
  EXPECT_OK(a.status());
  return a->model_sqnr;
}

TEST(WeightOnly, Int8AndInt4PerGroup) {
  Module m = LoadTestModel("gpt2_block_opset17");
  const double int8 = WeightOnlySqnr(m, 8, 32);
  const double int4_group = WeightOnlySqnr(m, 4, 16);
  const double int4_channel = WeightOnlySqnr(m, 4, 0);
  std::printf("int8/32 %.1f dB, int4/16 %.1f dB, int4 per channel %.1f dB\n", int8, int4_group,
              int4_channel);
  EXPECT_GE(int8, 40);
  EXPECT_LT(int4_group, int8);
  EXPECT_GT(int4_group, int4_channel);
  EXPECT_GE(int4_group, 15);
}

// 4-bit values two to a byte: each weight, rebuilt from its byte's nibble
// (low for even positions) times its group's scale, lies within half a
// scale of the float weight; an odd group keeps one value per byte.
TEST(WeightOnly, StoresIntValuesAndGroupScales) {
  Module m = Parse(kPerceptron);
  const Tensor w = m.FindTensor("fc1.weight")->Clone();
  passes::quantize::WeightOnlyConfig config;
  config.bits = 4;
  config.group_size = 4;
  ASSERT_OK_AND_ASSIGN(passes::quantize::WeightOnlyReport r,
                       passes::quantize::QuantizeWeightsOnly(m, config));
  EXPECT_THAT(r.quantized, ::testing::ElementsAre("fc1", "fc2"));
  EXPECT_TRUE(r.unpacked.empty());
  const Tensor* q = m.FindTensor("fc1.weight_int4");
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->dtype(), DType::kU8);
  EXPECT_EQ(q->dims(), (std::vector<int64_t>{16, 2, 2}));
  EXPECT_EQ(m.FindTensor("fc1.weight"), nullptr);  // The float weight is gone.
  const Tensor* scales = m.FindTensor("fc1.weight_int4_scales");
  ASSERT_NE(scales, nullptr);
  EXPECT_EQ(scales->dims(), (std::vector<int64_t>{16, 2, 1}));
  int far = 0;
  for (int64_t i = 0; i < w.NumElements(); ++i) {
    const uint8_t byte = q->data<uint8_t>()[i / 2];
    const int value = i % 2 == 0 ? LowInt4(byte) : HighInt4(byte);
    const double scale = scales->data<float>()[i / 4];
    far += std::fabs(value * scale - w.data<float>()[i]) > scale / 2 + 1e-7;
  }
  EXPECT_EQ(far, 0);
  EXPECT_TRUE(Verify(m).ok());

  config.group_size = 0;  // One group of all 5 input features: odd.
  ASSERT_OK_AND_ASSIGN(Module three, ParseModule(R"(
tensor w : f32[4,5] = random(seed=1)
graph():
    %x : f32[2,5] = placeholder[target=x]
    %w = get_attr[target=w]
    %y = call_function[target=linear](args = (%x, %w), kwargs = {})
    return y
)"));
  ASSERT_OK_AND_ASSIGN(r, passes::quantize::QuantizeWeightsOnly(three, config));
  EXPECT_THAT(r.unpacked, ::testing::ElementsAre("y"));
  ASSERT_NE(three.FindTensor("w_int4"), nullptr);
  EXPECT_EQ(three.FindTensor("w_int4")->dtype(), DType::kI8);
}

// Cross-layer equalization keeps the function and evens the channels'
// ranges, which per-tensor weights quantize better.
TEST(Equalize, KeepsTheModelAndHelpsPerTensorWeights) {
  Module m = Parse(kPerceptron);
  // Make fc1's hidden units' ranges very unequal.
  Tensor w1 = m.FindTensor("fc1.weight")->Clone();
  for (int64_t k = 0; k < 8; ++k) w1.data<float>()[k] *= 50;
  m.SetTensor("fc1.weight", w1);
  Module equalized = m.Clone();
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> pairs,
                       passes::quantize::EqualizeLayers(equalized));
  EXPECT_THAT(pairs, ::testing::ElementsAre("fc1 -> fc2"));
  ASSERT_OK_AND_ASSIGN(std::vector<Sample> eval, RandomSamples(m, 4, 3, {{"batch", 4}}));
  ASSERT_OK_AND_ASSIGN(AccuracyReport same, MeasureAccuracy(m, equalized, eval, {}));
  EXPECT_GE(same.model_sqnr, 100);  // The same function, up to rounding.
  auto per_tensor_sqnr = [&](const Module& model) {
    QuantizeOptions options;
    options.config.per_channel_weights = false;
    options.calibration = *RandomSamples(model, 16, 1, {{"batch", 4}});
    options.evaluation = eval;
    absl::StatusOr<QuantizeResult> r = QuantizeModel(model, options);
    EXPECT_OK(r.status());
    return r->accuracy->model_sqnr;
  };
  const double before = per_tensor_sqnr(m), after = per_tensor_sqnr(equalized);
  std::printf("per-tensor int8 weights: %.1f dB before equalization, %.1f dB after\n", before,
              after);
  EXPECT_GT(after, before + 3);
}

TEST(Convert, NeedsCalibratedObservers) {
  Module m = Parse(kPerceptron);
  ASSERT_OK(passes::quantize::Prepare(m, {}).status());
  EXPECT_THAT(passes::quantize::Convert(m, {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("calibrate")));
}

TEST(Convert, TheReferenceGraphQuantizesActivationsAndWeights) {
  Module m = Parse(kPerceptron);
  ASSERT_OK_AND_ASSIGN(std::vector<Sample> samples, RandomSamples(m, 8, 1, {{"batch", 4}}));
  QuantizeOptions options;
  options.calibration = samples;
  ASSERT_OK_AND_ASSIGN(QuantizeResult r, QuantizeModel(m, options));
  EXPECT_EQ(CountCalls(r.module, kObserveOp), 0);
  EXPECT_EQ(CountCalls(r.module, "quantize_per_tensor"), 2);
  EXPECT_EQ(CountCalls(r.module, "dequantize"), 2 + 2);  // Activations, weights.
  // The weights are stored as int8, one scale per output channel.
  bool int8_weight = false;
  for (const auto& [name, t] : r.module.tensors()) {
    int8_weight = int8_weight || (t.value.dtype() == DType::kI8 && t.value.dims() ==
                                                                       std::vector<int64_t>{16, 8});
  }
  EXPECT_TRUE(int8_weight);
}

// SQNR of a whole model quantized with per-channel int8 weights and
// per-tensor int8 activations, on held-out random inputs.
double ModelSqnr(const Module& m, Calibrator calibrator, int calibration = 64,
                 DType dtype = DType::kI8) {
  QuantizeOptions options;
  options.config.calibrator = calibrator;
  if (IsFloat8(dtype)) {  // Activations and weights, as graft quantize --dtype fp8.
    options.config.activation_dtype = dtype;
    options.config.weight_dtype = dtype;
  }
  absl::StatusOr<std::vector<Sample>> cal = RandomSamples(m, calibration, 1, {{"batch", 4}});
  absl::StatusOr<std::vector<Sample>> eval = RandomSamples(m, 8, 999, {{"batch", 4}});
  EXPECT_OK(cal.status());
  EXPECT_OK(eval.status());
  options.calibration = *cal;
  options.evaluation = *eval;
  absl::StatusOr<QuantizeResult> r = QuantizeModel(m, options);
  EXPECT_OK(r.status());
  if (!r.ok()) return 0;
  std::printf("%s\n", r->accuracy->ToString().c_str());
  return r->accuracy->model_sqnr;
}

TEST(Accuracy, TheCnnTestModelKeeps45Db) {
  Module m = LoadTestModel("cnn");
  EXPECT_GE(ModelSqnr(m, Calibrator::kMinMax), 45);
}

TEST(Accuracy, TheGpt2BlockKeeps37Db) {
  Module m = LoadTestModel("gpt2_block_opset17");
  EXPECT_GE(ModelSqnr(m, Calibrator::kMinMax), 37);
}

TEST(Accuracy, TheMlpTestModelKeeps36Db) {
  Module m = LoadTestModel("mlp");
  EXPECT_GE(ModelSqnr(m, Calibrator::kMinMax), 36);
}

// fp8 e4m3 activations and weights: 3 mantissa bits keep about 27 to 30 dB
// whatever the range (int8's SQNR depends on how the values fill it).
TEST(Accuracy, TheMlpTestModelKeeps27DbInFp8) {
  Module m = LoadTestModel("mlp");
  EXPECT_GE(ModelSqnr(m, Calibrator::kMinMax, 64, DType::kF8E4M3), 27);
}

// The reference graph stores f8e4m3 weights and quantizes activations to
// f8e4m3; quantize-lower leaves its products in float and lists them.
TEST(Convert, Fp8StoresE4M3WeightsAndLowerListsThem) {
  Module m = LoadTestModel("mlp");
  QuantizeOptions options;
  options.config.activation_dtype = DType::kF8E4M3;
  options.config.weight_dtype = DType::kF8E4M3;
  ASSERT_OK_AND_ASSIGN(options.calibration, RandomSamples(m, 4, 1, {{"batch", 2}}));
  ASSERT_OK_AND_ASSIGN(QuantizeResult r, QuantizeModel(m, options));
  int f8_weights = 0, f8_quantizes = 0;
  for (const auto& [name, tensor] : r.module.tensors()) {
    f8_weights += tensor.value.dtype() == DType::kF8E4M3 ? 1 : 0;
  }
  for (const Node* n : r.module.graph().nodes()) {
    if (n->is_call("quantize_per_tensor")) {
      EXPECT_EQ(n->type()->dtype, DType::kF8E4M3) << n->Ref();
      ++f8_quantizes;
    }
  }
  EXPECT_GT(f8_weights, 0);
  EXPECT_GT(f8_quantizes, 0);
  Module lowered = r.module.Clone();
  ASSERT_OK_AND_ASSIGN(passes::quantize::LowerReport audit, passes::quantize::Lower(lowered));
  EXPECT_TRUE(audit.lowered.empty());
  EXPECT_FALSE(audit.unfused.empty());
  EXPECT_EQ(audit.int8_macs, 0);
}

// An int8 product whose result is quantized to f8e4m3 lowers, and the f8
// quantize stays a step of its own (an int8 product writes i8 or u8 only).
TEST(Lower, AnF8QuantizeAfterAnInt8ProductStaysAStep) {
  absl::StatusOr<Module> m = ParseModule(R"(
tensor w : i8[4,8] = random(seed=1)
graph():
    %x : f32[2,8] = placeholder[target=x]
    %q = call_function[target=quantize_per_tensor](args = (%x, 0.01, 0, i8), kwargs = {})
    %dx = call_function[target=dequantize](args = (%q, 0.01, 0), kwargs = {})
    %w = get_attr[target=w]
    %dw = call_function[target=dequantize](args = (%w, 0.02, 0), kwargs = {})
    %y = call_function[target=linear](args = (%dx, %dw), kwargs = {})
    %f = call_function[target=quantize_per_tensor](args = (%y, 0.05, 0, f8e4m3), kwargs = {})
    %out = call_function[target=dequantize](args = (%f, 0.05, 0), kwargs = {})
    return out
)");
  ASSERT_OK(m.status());
  ASSERT_OK(passes::PropagateShapes(*m).status());
  Module lowered = m->Clone();
  ASSERT_OK_AND_ASSIGN(passes::quantize::LowerReport audit, passes::quantize::Lower(lowered));
  EXPECT_EQ(audit.lowered.size(), 1u);
  int f8 = 0;
  for (const Node* n : lowered.graph().nodes()) {
    if (n->is_call(kQuantizedLinearOp)) {
      EXPECT_EQ(n->type()->dtype, DType::kF32);
    }
    if (n->is_call("quantize_per_tensor") && n->type()->dtype == DType::kF8E4M3) ++f8;
  }
  EXPECT_EQ(f8, 1);
  const std::vector<Tensor> in = {RandomTensor(DType::kF32, {2, 8}, 3)};
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp::Interpreter(*m).Run(in));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, interp::Interpreter(lowered).Run(in));
  EXPECT_GE(Sqnr(want[0], got[0]), 40);
}

// --min-sqnr: the worst calls return to float until the target is met, and
// the report says which and why.
TEST(Accuracy, MinSqnrReturnsTheWorstCallsToFloat) {
  Module m = LoadTestModel("gpt2_block_opset17");
  QuantizeOptions options;
  ASSERT_OK_AND_ASSIGN(options.calibration, RandomSamples(m, 8, 1));
  ASSERT_OK_AND_ASSIGN(options.evaluation, RandomSamples(m, 4, 999));
  ASSERT_OK_AND_ASSIGN(QuantizeResult all, QuantizeModel(m, options));
  const double before = all.accuracy->model_sqnr;
  options.min_sqnr = before + 3;
  ASSERT_OK_AND_ASSIGN(QuantizeResult some, QuantizeModel(m, options));
  std::printf("%s\n", some.accuracy->ToString().c_str());
  EXPECT_GE(some.accuracy->model_sqnr, before + 3);
  ASSERT_FALSE(some.accuracy->kept_float.empty());
  EXPECT_THAT(some.accuracy->kept_float_reasons[0], HasSubstr("the lowest"));
  EXPECT_LT(some.accuracy->nodes.size(), all.accuracy->nodes.size());
}

// The op itself, on numbers worked out by hand: row 0's largest magnitude
// is 127 (scale 1), -64.5 rounds to -64 (to even), the sum is
// 127*2 + (-64)*(-1) = 318, times 0.5, plus 1; row 1 is zeros: the bias.
TEST(Dynamic, TheOpQuantizesEachRowByItsOwnRange) {
  Module m = Parse(R"(
tensor w : i8[1,2] = [2, -1]
tensor s : f32[1] = [0.5]
tensor b : f32[1] = [1.0]

graph():
    %x : f32[2,2] = placeholder[target=x]
    %w = get_attr[target=w]
    %s = get_attr[target=s]
    %b = get_attr[target=b]
    %y = call_function[target=graft::dynamic_quantized_linear](args = (%x, %w, %s), kwargs = {bias: %b})
    return y
)");
  interp::Interpreter interpreter(m);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y,
                       interpreter.Run({Tensor::FromVector<float>(DType::kF32, {2, 2},
                                                                   {127.0f, -64.5f, 0.0f, 0.0f})}));
  EXPECT_THAT(y[0].span<float>(), ::testing::ElementsAre(160.0f, 1.0f));
}

TEST(Dynamic, LinearsAndConstantMatmulsNeedNoCalibration) {
  const Module original = LoadTestModel("gpt2_block_opset17");
  Module m = original.Clone();
  ASSERT_OK_AND_ASSIGN(passes::quantize::DynamicReport report,
                       passes::quantize::QuantizeDynamic(m, {}));
  // The block's four weight products; attention's two products of
  // activations stay float.
  EXPECT_EQ(report.quantized.size(), 4u);
  EXPECT_EQ(CountCalls(m, "graft::dynamic_quantized_linear"), 4);
  EXPECT_EQ(CountCalls(m, "matmul"), 2);
  ASSERT_OK_AND_ASSIGN(std::vector<Sample> eval, RandomSamples(original, 4, 999));
  ASSERT_OK_AND_ASSIGN(AccuracyReport accuracy, MeasureAccuracy(original, m, eval, {}));
  std::printf("dynamic int8 GPT-2-style block: %.1f dB\n", accuracy.model_sqnr);
  EXPECT_GE(accuracy.model_sqnr, 37);
  Module bad = original.Clone();
  EXPECT_THAT(passes::quantize::QuantizeDynamic(bad, {"nothing*"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nothing*' matches no")));
}

// The quantize step that reads value `name` in a converted module.
const Node* QuantizeOf(const Module& m, const std::string& name) {
  for (const Node* n : m.graph().nodes()) {
    if (n->is_call("quantize_per_tensor") && n->arg(0).is_node() &&
        n->arg(0).node()->name() == name) {
      return n;
    }
  }
  return nullptr;
}

TEST(Overrides, AnActivationTakesItsOwnDtypeAndObserver) {
  Module m = Parse(kPerceptron);
  QuantizeOptions options;
  ASSERT_OK_AND_ASSIGN(options.calibration, RandomSamples(m, 8, 1, {{"batch", 4}}));
  ASSERT_OK_AND_ASSIGN(QuantizeResult plain, QuantizeModel(m, options));
  ASSERT_NE(QuantizeOf(plain.module, "x"), nullptr);
  EXPECT_EQ(QuantizeOf(plain.module, "x")->arg(3).dtype_value(), DType::kI8);
  ASSERT_OK_AND_ASSIGN(passes::quantize::ActivationOverride o,
                       passes::quantize::ParseActivationOverride("x:dtype=uint8,observer=percentile"));
  options.config.overrides = {o};
  ASSERT_OK_AND_ASSIGN(QuantizeResult r, QuantizeModel(m, options));
  // x, uniform in [-1, 1): affine u8, its zero point near the middle.
  const Node* q = QuantizeOf(r.module, "x");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->arg(3).dtype_value(), DType::kU8);
  EXPECT_GT(q->arg(2).int_value(), 100);
  EXPECT_LT(q->arg(2).int_value(), 156);
  // The other activation keeps the defaults.
  EXPECT_EQ(QuantizeOf(r.module, "relu")->arg(1).number(),
            QuantizeOf(plain.module, "relu")->arg(1).number());
  options.config.overrides[0].glob = "nothing*";
  EXPECT_THAT(QuantizeModel(m, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("override 'nothing*' matches no quantized activation")));
  for (const char* bad : {"x", "x:dtype=int4", "x:observer=best", ":dtype=int8", "x:colour=red"}) {
    EXPECT_THAT(passes::quantize::ParseActivationOverride(bad).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("override"))) << bad;
  }
}

TEST(Calibration, AFolderOfTheWrongShapeNamesTheFile) {
  Module m = Parse(kPerceptron);
  const std::string dir = ::testing::TempDir() + "/calib_wrong_shape";
  std::filesystem::create_directories(dir);
  ASSERT_OK(WriteNpy(dir + "/a.npy", Tensor(DType::kF32, {2, 7})));
  EXPECT_THAT(LoadSamples(dir, m).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a.npy")));
}

}  // namespace
}  // namespace graft::quantize
