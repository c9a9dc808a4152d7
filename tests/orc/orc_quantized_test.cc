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

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/fallback_executable.h"
#include "backends/orc/program.h"
#include "graph/random_tensor.h"
#include "graph/int4_ops.h"
#include "graph/parser.h"
#include "graph/quant_ops.h"
#include "gtest/gtest.h"
#include "passes/quantize/dynamic.h"
#include "passes/shape_prop.h"
#include "passes/quantize/lower.h"
#include "passes/quantize/weight_only.h"
#include "quantize/accuracy.h"
#include "quantize/quantize_model.h"
#include "runtime/library_call.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/float8_quantize_case.h"
#include "tests/backends/int8_models.h"
#include "tests/backends/model_files.h"
#include "tests/orc/orc_test_util.h"
#include "workloads/benchmark_mlp.h"

namespace graft::orc_test {
namespace {

using ::graft::testing::StatusIs;
using ::testing::HasSubstr;

// Why orc refuses the int8 products of `m` on this CPU: without VNNI
// oneDNN would sum them through saturating int16, so orc leaves them to
// the interpreter and says so; empty where it runs them.
std::string NoInt8ProductsHere(const Module& m) {
  for (const Node* n : m.graph().nodes()) {
    if (!n->is_call(kQuantizedLinearOp) && !n->is_call(kQuantizedConv2dOp) &&
        !n->is_call(kDynamicQuantizedLinearOp)) {
      continue;
    }
    const absl::Status s = Orc().CanRun(*n, {});
    if (absl::StrContains(s.message(), "VNNI")) return std::string(s.message());
  }
  return "";
}

// Skips a test that runs int8 products on orc where the CPU has no VNNI.
#define SKIP_WITHOUT_INT8_PRODUCTS(module)                                    \
  if (const std::string why = NoInt8ProductsHere(module); !why.empty()) {      \
    GTEST_SKIP() << "this CPU runs int8 products on the interpreter: " << why; \
  }

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
    SKIP_WITHOUT_INT8_PRODUCTS(lowered);
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
    SKIP_WITHOUT_INT8_PRODUCTS(*m);
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

// f8e4m3 quantize (per tensor and per channel) and dequantize run on orc
// with nothing falling back, and give the interpreter's values
// (tests/backends/float8_quantize_case.h).
TEST(OrcQuantized, Float8QuantizeOpsMatchTheInterpreterBitForBit) {
  backend_test::Float8QuantizeCase c = backend_test::MakeFloat8QuantizeCase();
  for (const Node* n : c.module.graph().nodes()) {
    if (n->is_call("quantize_per_tensor") || n->is_call("quantize_per_channel") ||
        n->is_call("dequantize")) {
      EXPECT_OK(Orc().CanRun(*n, {}));
    }
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(c.module, c.options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(c.module, c.options));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run(c.inputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(c.inputs));
  backend_test::ExpectFloat8ResultsMatch(got, want);
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
  SKIP_WITHOUT_INT8_PRODUCTS(lowered);
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

// The reference graph of a quantized model (graft quantize without
// --lower): its dequantized weights become constants when it compiles
// (FoldDequantizedWeights), so oneDNN prepacks them, as a float model's
// (with products over weights computed each run, ResNet-50's reference
// graph took 14 s a run instead of 89 ms). The results are the
// interpreter's.
TEST(OrcQuantized, AReferenceGraphsWeightsCompileAsConstants) {
  absl::StatusOr<Module> m = ParseModule(R"(
tensor w : i8[8,4,3,3] = random(seed=1)
tensor s : f32[8] = full(0.004)
tensor z : i64[8] = zeros
tensor l : i8[10,8] = random(seed=3)

graph():
    %x : f32[2,4,9,9] = placeholder[target=x]
    %q = call_function[target=quantize_per_tensor](args = (%x, 0.02, 0, i8), kwargs = {})
    %xd = call_function[target=dequantize](args = (%q, 0.02, 0), kwargs = {})
    %w = get_attr[target=w]
    %s = get_attr[target=s]
    %z = get_attr[target=z]
    %wd = call_function[target=dequantize](args = (%w, %s, %z), kwargs = {axis: 0})
    %c = call_function[target=conv2d](args = (%xd, %wd), kwargs = {padding: [1]})
    %m = call_function[target=mean](args = (%c, [2, 3]), kwargs = {})
    %l = get_attr[target=l]
    %ld = call_function[target=dequantize](args = (%l, 0.01, 3), kwargs = {})
    %y = call_function[target=linear](args = (%m, %ld), kwargs = {})
    return y
)");
  ASSERT_OK(m.status());
  if (runtime::PackingIdentity() == "none") GTEST_SKIP() << "built without oneDNN";
  ASSERT_OK(passes::PropagateShapes(*m).status());
  const std::vector<Tensor> inputs = {RandomTensor(DType::kF32, {2, 4, 9, 9}, std::random_device{}())};
  ASSERT_OK_AND_ASSIGN(orc::Program program,
                       orc::BuildProgram(*m, {inputs[0].type()}, orc::ProgramOptions{}));
  int products = 0;
  for (const Node* n : program.module->graph().nodes()) {
    if (!n->is_call("conv2d") && !n->is_call("linear")) continue;
    ++products;
    EXPECT_EQ(n->arg(1).node()->op(), OpCode::kGetAttr) << n->Ref();
  }
  EXPECT_EQ(products, 2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(*m, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(*m, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run(inputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(inputs));
  EXPECT_GE(quantize::Sqnr(want[0], got[0]), 100);
}

// A small MLP like the benchmark's, with a symbolic batch. Judged by SQNR
// (as the convolutions above): oneDNN requantizes the u8 activations in f32
// where the interpreter uses double, so a value on a rounding tie may land
// one step apart, and the next layer carries that step (about 1e-3 of the
// output's range) to a few elements.
TEST(OrcQuantized, TheBenchmarkMlpShapeAtAnyBatch) {
  const Module lowered = backend_test::Int8Lowered(BuildBenchmarkMlp(3, 1));
  SKIP_WITHOUT_INT8_PRODUCTS(lowered);
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
