// Quantized models on the orc backend: the int8 products quantize-lower
// makes (graft::quantized_linear and graft::quantized_conv2d, oneDNN's int8
// matmul and convolution) and the reference
// graph's quantize/dequantize, against the interpreter, with nothing
// falling back.

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/fallback_executable.h"
#include "graph/random_tensor.h"
#include "graph/int4_ops.h"
#include "graph/parser.h"
#include "graph/quant_ops.h"
#include "gtest/gtest.h"
#include "passes/quantize/dynamic.h"
#include "passes/quantize/lower.h"
#include "passes/quantize/weight_only.h"
#include "quantize/accuracy.h"
#include "quantize/quantize_model.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/int8_models.h"
#include "tests/backends/model_files.h"
#include "tests/orc/orc_test_util.h"
#include "workloads/benchmark_mlp.h"

namespace graft::orc_test {
namespace {

using ::graft::testing::StatusIs;
using ::testing::HasSubstr;

TEST(OrcQuantized, Int8ModelsMatchTheInterpreter) {
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  for (const char* name : {"mlp", "gpt2_block_opset17", "gpt2_block_opset13", "cnn", "cnn+affine"}) {
    SCOPED_TRACE(name);
    const std::string model = std::string(name).substr(0, std::string(name).find('+'));
    absl::StatusOr<Module> m =
        LoadModel(backend_test::SourceDir() + "/tests/onnx_models/" + model + "/model.onnx");
    if (!m.ok()) GTEST_SKIP() << m.status();
    // The affine case has zero points, which the int8 convolutions take
    // from the padding too.
    const Module lowered = backend_test::Int8Lowered(*m, /*affine=*/std::string(name).find("affine") != std::string::npos);
    const std::vector<Tensor> inputs =
        backend_test::RandomInputs(PlaceholderSignature(lowered.graph()), std::random_device{}());
    // Exact int32 sums on both sides; the scaling differs in rounding only.
    // But an int8 result a product writes for the next one can land one
    // step apart where its value sits within rounding of a step boundary,
    // and attention's softmax magnifies such a step: compared as quantized
    // graphs are (DESIGN section 5), by SQNR, with nothing falling back.
    for (const Node* n : lowered.graph().nodes()) {
      EXPECT_OK(Orc().CanRun(*n, {})) << n->Ref();
    }
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(lowered, {}));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(lowered, {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(inputs));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_GE(quantize::Sqnr(want[i], got[i]), 50);
  }
}

// The MLP and GPT-2 block of tests/onnx_models, or none where the source
// tree or ONNX support is missing.
std::vector<std::pair<std::string, Module>> OnnxTestModels() {
  std::vector<std::pair<std::string, Module>> models;
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty()) return models;
  for (const char* name : {"mlp", "gpt2_block_opset17"}) {
    absl::StatusOr<Module> m =
        LoadModel(backend_test::SourceDir() + "/tests/onnx_models/" + name + "/model.onnx");
    if (!m.ok()) return {};
    models.emplace_back(name, *std::move(m));
  }
  return models;
}

// `m` on orc and on the interpreter with the same fresh random inputs:
// every output at least `min_sqnr` dB from the interpreter's.
void ExpectOrcNearInterp(const Module& m, double min_sqnr) {
  const std::vector<Tensor> inputs =
      backend_test::RandomInputs(PlaceholderSignature(m.graph()), std::random_device{}());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(m, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(m, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run(inputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(inputs));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_GE(quantize::Sqnr(want[i], got[i]), min_sqnr);
}

// Dynamic quantization: the rows are quantized as the interpreter does
// them and the int32 sums are exact; but a row's float input (a layer
// norm's result, say) may differ in its last bit between the backends and
// round to the other step, so they are compared by SQNR.
TEST(OrcQuantized, DynamicInt8ProductsMatchTheInterpreter) {
  std::vector<std::pair<std::string, Module>> models = OnnxTestModels();
  if (models.empty()) GTEST_SKIP() << "no GRAFT_SOURCE_DIR or no ONNX support";
  for (auto& [name, model] : models) {
    SCOPED_TRACE(name);
    Module* m = &model;
    ASSERT_OK_AND_ASSIGN(passes::quantize::DynamicReport report,
                         passes::quantize::QuantizeDynamic(*m, {}));
    ASSERT_FALSE(report.quantized.empty());
    for (const Node* n : m->graph().nodes()) {
      if (n->is_call(kDynamicQuantizedLinearOp)) {
        EXPECT_OK(Orc().CanRun(*n, {})) << n->Ref();
      }
    }
    ExpectOrcNearInterp(*m, 50);
  }
}

// Weight-only int4 (its values two to a byte, read through
// graft::unpack_int4): orc compiles the whole model, the unpacking done
// once at compile time, and gives the interpreter's results.
TEST(OrcQuantized, PackedInt4WeightsUnpackAtCompileTime) {
  std::vector<std::pair<std::string, Module>> models = OnnxTestModels();
  if (models.empty()) GTEST_SKIP() << "no GRAFT_SOURCE_DIR or no ONNX support";
  for (auto& [name, model] : models) {
    SCOPED_TRACE(name);
    Module* m = &model;
    passes::quantize::WeightOnlyConfig config;
    config.bits = 4;
    config.group_size = 16;
    ASSERT_OK_AND_ASSIGN(passes::quantize::WeightOnlyReport report,
                         passes::quantize::QuantizeWeightsOnly(*m, config));
    ASSERT_FALSE(report.quantized.empty());
    EXPECT_TRUE(report.unpacked.empty());
    int unpacks = 0;
    for (const Node* n : m->graph().nodes()) {
      if (!n->is_call(kUnpackInt4Op)) continue;
      ++unpacks;
      EXPECT_OK(Orc().CanRun(*n, {})) << n->Ref();  // No graph break.
    }
    EXPECT_EQ(unpacks, static_cast<int>(report.quantized.size()));
    ExpectOrcNearInterp(*m, 80);
  }
}

// The same element of two results: equal bits, or both NaN.
bool SameElement(const Tensor& a, const Tensor& b, int64_t i) {
  const double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::signbit(x) == std::signbit(y) && x == y;
}

// f8e4m3 quantize (per tensor and per channel) and dequantize run on orc
// with nothing falling back, and give the interpreter's values: every one
// of the 256 codes dequantized; values at ties between two codes, in the
// subnormal range, at and past 448, zeros, infinities and NaN quantized.
TEST(OrcQuantized, Float8QuantizeOpsMatchTheInterpreterBitForBit) {
  absl::StatusOr<Module> m = ParseModule(R"(
graph():
    %x = placeholder[target=x]
    %codes = placeholder[target=codes]
    %scales = placeholder[target=scales]
    %zero_points = placeholder[target=zero_points]
    %q = call_function[target=quantize_per_tensor](args = (%x, 0.25, 0, f8e4m3), kwargs = {})
    %c = call_function[target=quantize_per_channel](args = (%x, %scales, %zero_points, 0, f8e4m3), kwargs = {})
    %t = call_function[target=transpose](args = (%q, 0, 1), kwargs = {})
    %d = call_function[target=dequantize](args = (), kwargs = {input: %t, scale: 0.25, zero_point: 0})
    %e = call_function[target=dequantize](args = (%codes, 0.5, 0), kwargs = {})
    return (q, c, d, e)
)");
  ASSERT_OK(m.status());
  for (const Node* n : m->graph().nodes()) {
    if (n->is_call("quantize_per_tensor") || n->is_call("quantize_per_channel") ||
        n->is_call("dequantize")) {
      EXPECT_OK(Orc().CanRun(*n, {}));
    }
  }
  // Values of x / 0.25: each f8e4m3 magnitude's ties (k + 1/2 steps) and
  // near-ties, subnormals, the edges of the range, and the odd ones.
  std::vector<float> values;
  for (int e = -9; e <= 9; ++e) {
    for (int k = 0; k < 16; ++k) {
      const float step = std::ldexp(1.0f, std::max(e, -6) - 3);
      const float base = std::ldexp(1.0f, e) + k * step;
      for (float v : {base, base + step / 2, std::nextafter(base + step / 2, 0.0f),
                      std::nextafter(base + step / 2, 1e9f)}) {
        values.push_back(v * 0.25f);
        values.push_back(-v * 0.25f);
      }
    }
  }
  // Below the smallest subnormal 2^-9: the tie at 2^-10 rounds to 0, past it up.
  for (float v : {0.0f, -0.0f, 0x1p-10f, 0x1.8p-10f, 0x1p-11f, -0x1p-10f, -0x1.8p-10f,
                  447.0f, 448.0f, 449.0f, 464.0f, 480.0f, 1e30f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min()}) {
    values.push_back(v * 0.25f);
  }
  while (values.size() % 8 != 0) values.push_back(1.0f);
  const int64_t rows = 8, cols = static_cast<int64_t>(values.size()) / 8;
  Tensor x(DType::kF32, {rows, cols});
  std::copy(values.begin(), values.end(), x.data<float>());
  Tensor codes(DType::kF8E4M3, {256});
  for (int i = 0; i < 256; ++i) codes.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  Tensor scales(DType::kF32, {rows});
  for (int64_t i = 0; i < rows; ++i) scales.data<float>()[i] = std::ldexp(1.0f, i - 3);
  Tensor zero_points(DType::kI64, {rows});
  std::fill_n(zero_points.data<int64_t>(), rows, 0);
  CompileOptions options;
  options.input_types = {x.type(), codes.type(), scales.type(), zero_points.type()};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(*m, options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(*m, options));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run({x, codes, scales, zero_points}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run({x, codes, scales, zero_points}));
  ASSERT_EQ(got.size(), 4u);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(r == 0 ? "quantize_per_tensor" : "quantize_per_channel");
    ASSERT_EQ(got[r].dtype(), DType::kF8E4M3);
    for (int64_t i = 0; i < got[r].NumElements(); ++i) {
      ASSERT_EQ(got[r].data<uint8_t>()[i], want[r].data<uint8_t>()[i])
          << "element " << i << " of x / scale";
    }
  }
  for (int r = 2; r < 4; ++r) {
    for (int64_t i = 0; i < got[r].NumElements(); ++i) {
      ASSERT_TRUE(SameElement(got[r], want[r], i))
          << "output " << r << " element " << i << ": " << got[r].GetAsDouble(i) << " vs "
          << want[r].GetAsDouble(i);
    }
  }
}

// Grouped and depthwise int8 convolutions run channels-last (oneDNN has no
// fast NCHW int8 kernel) and agree with the interpreter.
TEST(OrcQuantized, GroupedInt8Convolutions) {
  absl::StatusOr<Module> m = ParseModule(R"(
tensor w1 : f32[8,2,3,3] = random(seed=1)
tensor w2 : f32[8,1,3,3] = random(seed=2)
tensor w3 : f32[4,8,1,1] = random(seed=3)

graph():
    %x : f32[2,8,12,12] = placeholder[target=x]
    %w1 = get_attr[target=w1]
    %c1 = call_function[target=conv2d](args = (%x, %w1), kwargs = {padding: [1], groups: 4})
    %r1 = call_function[target=relu](args = (%c1,), kwargs = {})
    %w2 = get_attr[target=w2]
    %c2 = call_function[target=conv2d](args = (%r1, %w2), kwargs = {padding: [1], stride: [2], groups: 8})
    %w3 = get_attr[target=w3]
    %c3 = call_function[target=conv2d](args = (%c2, %w3), kwargs = {})
    return c3
)");
  ASSERT_OK(m.status());
  const Module lowered = backend_test::Int8Lowered(*m);
  int convs = 0;
  for (const Node* n : lowered.graph().nodes()) {
    if (!n->is_call(kQuantizedConv2dOp)) continue;
    ++convs;
    EXPECT_OK(Orc().CanRun(*n, {})) << n->Ref();
  }
  EXPECT_EQ(convs, 3);
  const std::vector<Tensor> inputs = {RandomTensor(DType::kF32, {2, 8, 12, 12}, std::random_device{}())};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(lowered, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(lowered, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run(inputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(inputs));
  EXPECT_GE(quantize::Sqnr(want[0], got[0]), 50);
}

// A small MLP like the benchmark's, with a symbolic batch. Judged by SQNR
// (as the convolutions above): oneDNN requantizes the u8 activations in f32
// where the interpreter uses double, so a value on a rounding tie may land
// one step apart, and the next layer carries that step (about 1e-3 of the
// output's range) to a few elements.
TEST(OrcQuantized, TheBenchmarkMlpShapeAtAnyBatch) {
  const Module lowered = backend_test::Int8Lowered(BuildBenchmarkMlp(3, 1));
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  const std::vector<Tensor> inputs = {RandomTensor(DType::kF32, {3, 1024}, seed)};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(lowered, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(lowered, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run(inputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(inputs));
  EXPECT_GE(quantize::Sqnr(want[0], got[0]), 50);
}

}  // namespace
}  // namespace graft::orc_test
