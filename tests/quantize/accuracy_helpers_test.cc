// The accuracy helpers of post-training quantization that need calibration
// data: SmoothQuant (activation outliers moved into the weights) and bias
// correction (the mean error of int8 weights taken out of the bias).

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "passes/quantize/smooth_quant.h"
#include "passes/shape_prop.h"
#include "backends/interp/interpreter.h"
#include "quantize/accuracy.h"
#include "quantize/channel_stats.h"
#include "quantize/quantize_model.h"
#include "support/status_matchers.h"

namespace graft::quantize {
namespace {

using ::graft::testing::StatusIs;
using ::testing::HasSubstr;

// layer_norm -> fc1 -> relu -> fc2, with two of the norm's channels scaled
// up, as the outlier channels of large language models are.
constexpr char kNormThenMlp[] = R"(
tensor ln.weight : f32[16] = random(seed=5)
tensor ln.bias : f32[16] = random(seed=6)
tensor fc1.weight : f32[32,16] = random(seed=1)
tensor fc1.bias : f32[32] = random(seed=2)
tensor fc2.weight : f32[8,32] = random(seed=3)

graph():
    %x : f32[batch,16] = placeholder[target=x]
    %g = get_attr[target=ln.weight]
    %b = get_attr[target=ln.bias]
    %ln = call_function[target=layer_norm](args = (%x, [16]), kwargs = {weight: %g, bias: %b})
    %w1 = get_attr[target=fc1.weight]
    %b1 = get_attr[target=fc1.bias]
    %fc1 = call_function[target=linear](args = (%ln, %w1), kwargs = {bias: %b1})
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

Module WithOutlierChannels() {
  Module m = Parse(kNormThenMlp);
  Tensor g = m.FindTensor("ln.weight")->Clone();
  g.data<float>()[3] = 100.0f;
  g.data<float>()[11] = -60.0f;
  m.SetTensor("ln.weight", g);
  // SmoothQuant reads the activations' types (their channel counts).
  EXPECT_OK(passes::PropagateShapes(m).status());
  return m;
}

std::vector<Sample> Samples(const Module& m, int count, uint64_t seed) {
  absl::StatusOr<std::vector<Sample>> s = RandomSamples(m, count, seed, {{"batch", 8}});
  EXPECT_OK(s.status());
  return s.ok() ? *std::move(s) : std::vector<Sample>();
}

TEST(ChannelStats, GathersMaximaAndMeansPerChannel) {
  const Module m = WithOutlierChannels();
  const std::vector<Sample> samples = Samples(m, 3, 1);
  ASSERT_OK_AND_ASSIGN(auto stats, CollectChannelStats(m, samples, {{"x", -1}, {"ln", 1}}));
  // The input's channels, checked against the samples themselves.
  const ChannelStats& x = stats["x"];
  ASSERT_EQ(x.abs_max.size(), 16u);
  double max0 = 0, sum0 = 0;
  for (const Sample& s : samples) {
    for (int64_t r = 0; r < 8; ++r) {
      const double v = s[0].data<float>()[r * 16];
      max0 = std::max(max0, std::fabs(v));
      sum0 += v;
    }
  }
  EXPECT_DOUBLE_EQ(x.abs_max[0], max0);
  EXPECT_NEAR(x.Mean()[0], sum0 / 24, 1e-12);
  EXPECT_EQ(x.count[0], 24);
  // The norm's outlier channel stands out.
  EXPECT_GT(stats["ln"].abs_max[3], 10 * stats["ln"].abs_max[0]);
  EXPECT_THAT(CollectChannelStats(m, samples, {{"nope", -1}}).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
}

TEST(SmoothQuant, KeepsWhatTheFloatModelComputes) {
  const Module m = WithOutlierChannels();
  const std::vector<Sample> samples = Samples(m, 8, 1);
  passes::quantize::QuantConfig config;
  std::vector<ChannelAxis> values;
  for (const std::string& v : passes::quantize::SmoothableActivations(m, config)) {
    values.push_back({v, -1});
  }
  ASSERT_OK_AND_ASSIGN(auto stats, CollectChannelStats(m, samples, values));
  std::map<std::string, std::vector<double>> abs_max;
  for (const auto& [name, s] : stats) abs_max[name] = s.abs_max;
  Module smoothed = m.Clone();
  ASSERT_OK_AND_ASSIGN(passes::quantize::SmoothQuantReport report,
                       passes::quantize::SmoothQuant(smoothed, config, abs_max, 0.5));
  // fc1 reads the norm, whose weight and bias take the scales; fc2 reads
  // relu(fc1), whose rows take them.
  EXPECT_EQ(report.folded, 2);
  EXPECT_EQ(report.inserted, 0);
  EXPECT_THAT(report.smoothed,
              ::testing::ElementsAre(HasSubstr("ln -> fc1 (folded into the layer_norm)"),
                                     HasSubstr("relu -> fc2 (folded into the linear before)")));
  EXPECT_NE(smoothed.FindTensor("ln.weight")->data<float>()[3], 100.0f);
  ASSERT_OK_AND_ASSIGN(AccuracyReport same, MeasureAccuracy(m, smoothed, Samples(m, 4, 7), {}));
  EXPECT_GE(same.model_sqnr, 100);
  EXPECT_THAT(passes::quantize::SmoothQuant(smoothed, config, abs_max, 1.5).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("alpha")));
}

QuantizeResult Quantized(const Module& m, std::optional<double> alpha, bool bias_correction,
                         bool per_channel) {
  QuantizeOptions options;
  options.config.per_channel_weights = per_channel;
  options.calibration = Samples(m, 32, 1);
  options.evaluation = Samples(m, 8, 999);
  options.smooth_quant_alpha = alpha;
  options.bias_correction = bias_correction;
  absl::StatusOr<QuantizeResult> r = QuantizeModel(m, options);
  EXPECT_OK(r.status());
  return r.ok() ? *std::move(r) : QuantizeResult();
}

double QuantizedSqnr(const Module& m, std::optional<double> alpha) {
  const QuantizeResult r = Quantized(m, alpha, false, true);
  return r.accuracy.has_value() ? r.accuracy->model_sqnr : 0;
}

// The root mean square, over output channels, of the mean difference
// between `quantized`'s output and `original`'s over `samples`: the
// systematic part of the error.
double MeanErrorRms(const Module& original, const Module& quantized,
                    const std::vector<Sample>& samples) {
  interp::Interpreter a(original), b(quantized);
  std::vector<double> mean;
  int64_t rows = 0;
  for (const Sample& s : samples) {
    absl::StatusOr<std::vector<Tensor>> x = a.Run(s), y = b.Run(s);
    EXPECT_OK(x.status());
    EXPECT_OK(y.status());
    if (!x.ok() || !y.ok()) return 0;
    const Tensor& fx = (*x)[0];
    const Tensor& fy = (*y)[0];
    const int64_t channels = fx.dims().back();
    mean.resize(channels, 0.0);
    for (int64_t i = 0; i < fx.NumElements(); ++i) {
      mean[i % channels] += fy.data<float>()[i] - fx.data<float>()[i];
    }
    rows += fx.NumElements() / channels;
  }
  double sum = 0;
  for (double v : mean) sum += (v / rows) * (v / rows);
  return std::sqrt(sum / mean.size());
}

TEST(SmoothQuant, HelpsActivationsWithOutlierChannels) {
  const Module m = WithOutlierChannels();
  const double before = QuantizedSqnr(m, std::nullopt);
  const double after = QuantizedSqnr(m, 0.5);
  std::printf("int8 with outlier channels: %.1f dB, with SmoothQuant %.1f dB\n", before, after);
  EXPECT_GT(after, before + 4);
}

// A layer whose inputs are all positive (mean 0.5, as after a ReLU or a
// sigmoid) and whose weights quantize coarsely (one scale per tensor, one
// row much larger than the rest): the weights' rounding error then shifts
// every output channel by a constant, which bias correction removes. (What
// remains comes from rounding the activations, which it does not touch.)
constexpr char kPositiveInputs[] = R"(
tensor fc.weight : f32[24,64] = random(seed=11)
tensor fc.bias : f32[24] = random(seed=12)
tensor head.weight : f32[4,24] = random(seed=13)

graph():
    %x : f32[batch,64] = placeholder[target=x]
    %sig = call_function[target=sigmoid](args = (%x,), kwargs = {})
    %w = get_attr[target=fc.weight]
    %b = get_attr[target=fc.bias]
    %fc = call_function[target=linear](args = (%sig, %w), kwargs = {bias: %b})
    %wh = get_attr[target=head.weight]
    %head = call_function[target=linear](args = (%fc, %wh), kwargs = {})
    return head
)";

TEST(BiasCorrection, TakesTheWeightsMeanErrorOutOfTheBias) {
  Module m = Parse(kPositiveInputs);
  Tensor w = m.FindTensor("fc.weight")->Clone();
  for (int64_t k = 0; k < 64; ++k) w.data<float>()[k] *= 40;  // One large row.
  m.SetTensor("fc.weight", w);
  ASSERT_OK(passes::PropagateShapes(m).status());
  const QuantizeResult plain = Quantized(m, std::nullopt, false, false);
  const QuantizeResult corrected = Quantized(m, std::nullopt, true, false);
  const std::vector<Sample> eval = Samples(m, 16, 4242);
  const double before = MeanErrorRms(m, plain.module, eval);
  const double after = MeanErrorRms(m, corrected.module, eval);
  std::printf("per-tensor int8 weights: mean output error %.4g (%.1f dB), with bias correction "
              "%.4g (%.1f dB)\n",
              before, plain.accuracy->model_sqnr, after, corrected.accuracy->model_sqnr);
  EXPECT_LT(after, 0.7 * before);
  EXPECT_GE(corrected.accuracy->model_sqnr, plain.accuracy->model_sqnr);
  // head had no bias: it gets one.
  EXPECT_THAT(corrected.converted.bias_corrected, ::testing::UnorderedElementsAre("fc", "head"));
  EXPECT_TRUE(plain.converted.bias_corrected.empty());
}

// A bf16 or f16 layer keeps its dtype: bias correction leaves it alone
// rather than giving it an f32 bias it cannot add.
TEST(BiasCorrection, LeavesHalfPrecisionLayersAlone) {
  Module m = Parse(R"(
tensor w : f16[8,16] = random(seed=1)

graph():
    %x : f16[4,16] = placeholder[target=x]
    %w = get_attr[target=w]
    %y = call_function[target=linear](args = (%x, %w), kwargs = {})
    return y
)");
  ASSERT_OK(passes::PropagateShapes(m).status());
  QuantizeOptions options;
  options.calibration = Samples(m, 4, 1);
  options.bias_correction = true;
  ASSERT_OK_AND_ASSIGN(QuantizeResult r, QuantizeModel(m, options));
  EXPECT_TRUE(r.converted.bias_corrected.empty());
  EXPECT_EQ(r.converted.quantized.size(), 1u);
}

}  // namespace
}  // namespace graft::quantize
