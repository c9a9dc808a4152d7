// Real models exported from PyTorch by tests/onnx_models/export_models.py:
// each is imported with ImportOnnxFile, run on the interpreter (and on each
// compiled backend the build has, before and after the built-in passes)
// with the inputs the script saved, and its outputs are compared with the
// outputs PyTorch computed for the same inputs.
//
// Every output element must satisfy
//     |got - want| <= kAtol + kRtol * |want|      (kRtol 1e-4, kAtol 1e-5)
// the rule of numpy.isclose: 1e-4 relative, with an absolute floor of 1e-5
// for values near zero. Shapes and dtypes must match exactly.
//
// tests/onnx_models/manifest.txt says which files belong to which model; see
// docs/onnx.md ("Test models") for how to regenerate them. ResNet-18 is too
// large to commit: its test runs only when GRAFT_RESNET18_DIR names the
// directory `export_models.py --resnet18 DIR` wrote. In a build without
// ONNX import every import test skips, saying what to install.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "backends/backend.h"
#include "backends/fallback_executable.h"
#include "backends/interp/constant_evaluator.h"
#include "backends/interp/interpreter.h"
#include "gmock/gmock.h"
#include "graph/module.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "onnx/onnx_import.h"
#include "passes/pass_context.h"
#include "passes/pipeline.h"
#include "serialize/npy.h"

namespace graft {
namespace {

constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

// One model of a manifest whose outputs are checked: its directory holds
// model.onnx, input_<name>.npy per graph input and output_<name>.npy per
// graph output, in the graph's order.
struct ModelEntry {
  std::string dir;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

// A model holding an op the importer does not support: importing it must
// fail with an error that names the op type and the node.
struct UnsupportedEntry {
  std::string dir;
  std::string op_type;
  std::string node;
};

// The manifest export_models.py writes, one model per line:
//   model <dir> inputs <name,...> outputs <name,...>
//   unsupported <dir> op <op type> node <node name>
// '#' starts a comment line.
struct Manifest {
  std::string root;  // The directory the manifest is in.
  std::vector<ModelEntry> models;
  std::vector<UnsupportedEntry> unsupported;
};

absl::StatusOr<Manifest> ReadManifest(const std::string& root) {
  const std::string path = root + "/manifest.txt";
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  Manifest manifest;
  manifest.root = root;
  std::string line;
  int line_number = 0;
  while (std::getline(file, line)) {
    ++line_number;
    std::vector<std::string> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty() || words[0][0] == '#') continue;
    const std::string where = absl::StrCat(path, ":", line_number, ": ");
    if (words.size() == 6 && words[0] == "model" && words[2] == "inputs" &&
        words[4] == "outputs") {
      manifest.models.push_back({words[1], absl::StrSplit(words[3], ','),
                                 absl::StrSplit(words[5], ',')});
    } else if (words.size() == 6 && words[0] == "unsupported" &&
               words[2] == "op" && words[4] == "node") {
      manifest.unsupported.push_back({words[1], words[3], words[5]});
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "not a model line: ", line));
    }
  }
  return manifest;
}

// The committed models' directory, from the source root ctest passes.
std::string CommittedModelsDir() {
  const char* source = std::getenv("GRAFT_SOURCE_DIR");
  return source == nullptr ? "" : absl::StrCat(source, "/tests/onnx_models");
}

// Expects `got` to match `want` by the rule at the top of this file.
void ExpectClose(const Tensor& got, const Tensor& want,
                 const std::string& what) {
  ASSERT_EQ(DTypeName(got.dtype()), DTypeName(want.dtype())) << what;
  ASSERT_EQ(got.dims(), want.dims())
      << what << ": got " << got.TypeString() << ", want " << want.TypeString();
  int64_t bad = 0;
  double worst = 0;  // The largest error as a multiple of the allowed one.
  int64_t worst_index = -1;
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    const double g = got.GetAsDouble(i);
    const double w = want.GetAsDouble(i);
    const double allowed = kAtol + kRtol * std::abs(w);
    const double error = std::abs(g - w);
    if (!(error <= allowed)) {  // NaN fails too.
      ++bad;
      if (bad <= 5) {
        ADD_FAILURE() << what << ": element " << i << " is " << g
                      << ", PyTorch gives " << w << " (error " << error
                      << ", allowed " << allowed << ")";
      }
    }
    if (std::isnan(error) || error / allowed > worst) {
      worst = std::isnan(error) ? INFINITY : error / allowed;
      worst_index = i;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.NumElements()
                    << " elements differ; worst is element " << worst_index
                    << " at " << worst << " times the allowed error";
}

// Expects PyTorch's outputs not to be degenerate, so that matching them
// means something.
void ExpectNontrivial(const Tensor& want, const std::string& what) {
  double max_abs = 0;
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    max_abs = std::max(max_abs, std::abs(want.GetAsDouble(i)));
  }
  EXPECT_GT(max_abs, 1e-3) << what << ": PyTorch's output is all near zero";
}

absl::StatusOr<const ModelEntry*> FindModel(const Manifest& manifest,
                                            absl::string_view dir) {
  for (const ModelEntry& entry : manifest.models) {
    if (entry.dir == dir) return &entry;
  }
  return absl::NotFoundError(
      absl::StrCat(manifest.root, "/manifest.txt lists no model ", dir));
}

// Imports model `dir` of the manifest in `root`, runs it on the
// interpreter with the saved inputs and compares every output.
// The passes graft's own pipelines run before compiling (as graft demo and
// the ORC tests do).
constexpr const char* kBuiltinPipeline =
    "shape-prop,canonicalize,fold-batchnorm,fold-constants,cse,dce,"
    "fuse-linear-activation,fuse-elementwise,shape-prop";

void CheckModel(const std::string& root, absl::string_view dir) {
  absl::StatusOr<Manifest> manifest = ReadManifest(root);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  absl::StatusOr<const ModelEntry*> entry = FindModel(*manifest, dir);
  ASSERT_TRUE(entry.ok()) << entry.status();
  const std::string model_dir = absl::StrCat(root, "/", (*entry)->dir);

  absl::StatusOr<Module> module = ImportOnnxFile(model_dir + "/model.onnx");
  ASSERT_TRUE(module.ok()) << module.status();

  // Inputs are given in placeholder order, which is the ONNX graph's input
  // order; the names must be the ONNX names too.
  const std::vector<ValueSignature> placeholders =
      PlaceholderSignature(module->graph());
  ASSERT_EQ(placeholders.size(), (*entry)->inputs.size())
      << "placeholders of the imported " << dir;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    const std::string& name = (*entry)->inputs[i];
    EXPECT_EQ(placeholders[i].name, name) << "placeholder " << i;
    absl::StatusOr<Tensor> input =
        ReadNpy(absl::StrCat(model_dir, "/input_", name, ".npy"));
    ASSERT_TRUE(input.ok()) << input.status();
    inputs.push_back(*std::move(input));
  }

  interp::Interpreter interpreter(*module);
  absl::StatusOr<std::vector<Tensor>> outputs = interpreter.Run(inputs);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), (*entry)->outputs.size())
      << "outputs of the imported " << dir;
  for (size_t i = 0; i < outputs->size(); ++i) {
    const std::string& name = (*entry)->outputs[i];
    absl::StatusOr<Tensor> want =
        ReadNpy(absl::StrCat(model_dir, "/output_", name, ".npy"));
    ASSERT_TRUE(want.ok()) << want.status();
    const std::string what = absl::StrCat(dir, " output ", name);
    ExpectNontrivial(*want, what);
    ExpectClose((*outputs)[i], *want, what);
  }

  // Every compiled backend this build has, on the model as imported and
  // after the built-in passes, against the same outputs of PyTorch's.
  for (const std::string& name : BackendRegistry::Global().Names()) {
    if (name == "interp") continue;
    for (const char* text : {"", kBuiltinPipeline}) {
      SCOPED_TRACE(absl::StrCat("backend ", name, text[0] ? " after " : "", text));
      Module m = module->Clone();
      if (text[0] != '\0') {
        absl::StatusOr<passes::Pipeline> pipeline = passes::Pipeline::FromString(text);
        ASSERT_TRUE(pipeline.ok()) << pipeline.status();
        passes::PassContext ctx;
        ctx.constant_evaluator = interp::EvaluateNode;
        ASSERT_TRUE(pipeline->Run(m, ctx).ok());
      }
      absl::StatusOr<std::unique_ptr<Backend>> backend = CreateBackend(name);
      ASSERT_TRUE(backend.ok()) << backend.status();
      absl::StatusOr<std::unique_ptr<Executable>> compiled =
          CompileWithFallback(**backend, m, {});
      ASSERT_TRUE(compiled.ok()) << compiled.status();
      absl::StatusOr<std::vector<Tensor>> got = (*compiled)->Run(inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), (*entry)->outputs.size());
      for (size_t i = 0; i < got->size(); ++i) {
        const std::string& output = (*entry)->outputs[i];
        absl::StatusOr<Tensor> want =
            ReadNpy(absl::StrCat(model_dir, "/output_", output, ".npy"));
        ASSERT_TRUE(want.ok()) << want.status();
        ExpectClose((*got)[i], *want, absl::StrCat(dir, " output ", output, " on ", name));
      }
    }
  }
}

// Skips the test in a build without ONNX import (the importer's functions
// exist there but only return an error).
#define GRAFT_REQUIRE_ONNX()                               \
  do {                                                     \
    if (!HaveOnnx()) GTEST_SKIP() << OnnxMissingMessage(); \
  } while (false)

// Skips the test without ONNX import or without the committed models.
#define GRAFT_REQUIRE_ONNX_MODELS()                                        \
  do {                                                                     \
    GRAFT_REQUIRE_ONNX();                                                  \
    if (CommittedModelsDir().empty()) {                                    \
      GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set (ctest sets it to the " \
                      "source root)";                                      \
    }                                                                      \
  } while (false)

// The manifest is well formed and every file it names exists, so a model
// the script adds cannot be silently missing; with or without ONNX.
TEST(OnnxModelsTest, ManifestListsEveryCommittedModel) {
  if (CommittedModelsDir().empty()) {
    GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set (ctest sets it)";
  }
  absl::StatusOr<Manifest> manifest = ReadManifest(CommittedModelsDir());
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  std::vector<std::string> dirs;
  for (const ModelEntry& entry : manifest->models) {
    dirs.push_back(entry.dir);
    const std::string base = absl::StrCat(manifest->root, "/", entry.dir);
    EXPECT_TRUE(std::ifstream(base + "/model.onnx").good()) << base;
    for (const std::string& name : entry.inputs) {
      EXPECT_TRUE(ReadNpy(absl::StrCat(base, "/input_", name, ".npy")).ok())
          << base << " input " << name;
    }
    for (const std::string& name : entry.outputs) {
      EXPECT_TRUE(ReadNpy(absl::StrCat(base, "/output_", name, ".npy")).ok())
          << base << " output " << name;
    }
  }
  // One TEST below per model; a new model needs a new TEST.
  EXPECT_THAT(dirs, ::testing::UnorderedElementsAre(
                        "mlp", "cnn", "gpt2_block_opset13", "gpt2_block_opset17", "cumsum",
                        "unet", "recurrent", "misc", "legacy_opset9", "legacy_opset10",
                        "legacy_opset11", "loops"));
  ASSERT_EQ(manifest->unsupported.size(), 1u);
  EXPECT_EQ(manifest->unsupported[0].dir, "unsupported_nonzero");
}

// Linear + ReLU + Linear: Gemm with transB, Relu.
TEST(OnnxModelsTest, Mlp) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "mlp");
}

// Conv2d, BatchNorm2d (eval, non-trivial running statistics, two eps),
// ReLU, MaxPool2d and AvgPool2d with padding (not counted in the average),
// AdaptiveAvgPool2d, Flatten, Linear.
TEST(OnnxModelsTest, Cnn) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "cnn");
}

// A GPT-2 block at opset 13, exported without PyTorch's constant folding:
// LayerNorm decomposed into ReduceMean/Sub/Pow/Sqrt/Div, causal attention
// with Split, Reshape, Transpose, MatMul, Softmax, GPT-2's tanh GELU
// through Pow and Tanh, and what the importer must fold: view()'s target
// shapes as Unsqueeze/Concat of Constants, the mask as Slice/Equal/Cast of
// a buffer feeding Where, and Transposes of the weights.
TEST(OnnxModelsTest, Gpt2BlockOpset13) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "gpt2_block_opset13");
}

// The same block at opset 17, where LayerNorm is one LayerNormalization.
TEST(OnnxModelsTest, Gpt2BlockOpset17) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "gpt2_block_opset17");
}

// One model as PyTorch 1.13 exports it at opsets 9, 10 and 11: Pad
// (reflect and constant), Clip, Slice and TopK with attributes at 9 and
// inputs from 10; Upsample (9), Resize-10 and Resize-11 for nearest
// upsampling; Split, Squeeze/Unsqueeze and ReduceSum with attributes;
// Softmax over dim 1 of a 3-D tensor (transposed to the last) and
// LogSoftmax at opsets before 13; Dropout in eval.
TEST(OnnxModelsTest, LegacyOpsets) {
  GRAFT_REQUIRE_ONNX_MODELS();
  for (const char* dir : {"legacy_opset9", "legacy_opset10", "legacy_opset11"}) {
    SCOPED_TRACE(dir);
    CheckModel(CommittedModelsDir(), dir);
  }
}

// ReLU then CumSum along dim 1 (the axis a Constant input).
TEST(OnnxModelsTest, Cumsum) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "cumsum");
}

// An encoder/decoder: GroupNorm (InstanceNormalization between Reshapes),
// InstanceNorm2d, ConvTranspose2d (stride 2; grouped, with output_padding),
// PixelShuffle (DepthToSpace), nearest, bilinear (align_corners off and
// on) and bicubic Resize.
TEST(OnnxModelsTest, Unet) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "unet");
}

// A two-layer bidirectional LSTM (batch first), a GRU, an RNN and a
// ConvTranspose1d; the final states are outputs too.
TEST(OnnxModelsTest, Recurrent) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "recurrent");
}

// EmbeddingBag and a scripted loop: Loops unrolled at import, a list as a
// sequence, and the inverse trigonometric functions.
TEST(OnnxModelsTest, Loops) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "loops");
}

// Round, Floor, Ceil, Tile, ReduceL2 (F.normalize), ReduceLogSumExp,
// ArgMin, Einsum, OneHot, ReduceL1.
TEST(OnnxModelsTest, Misc) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckModel(CommittedModelsDir(), "misc");
}

// Models exported by torch.onnx.export's default of PyTorch 2.11 (the
// torch.export-based exporter, opset 20, weights in external data; a few
// by the TorchScript exporter): a U-Net-like model, an LSTM, Hugging
// Face's BERT, GPT-2, Llama, T5 encoder and wav2vec2 at tiny sizes, PyTorch's
// TransformerEncoder and scaled_dot_product_attention, an MLP with a
// dynamic batch (tests/onnx_models/zoo/manifest.txt).
// The models of the manifest in `root` (at least `at_least` of them).
std::vector<ModelEntry> ManifestModels(const std::string& root, size_t at_least) {
  absl::StatusOr<Manifest> manifest = ReadManifest(root);
  EXPECT_TRUE(manifest.ok()) << manifest.status();
  if (!manifest.ok()) return {};
  EXPECT_GE(manifest->models.size(), at_least) << root;
  return manifest->models;
}

// CheckModel for every model of the manifest in `root` (at least
// `at_least` of them).
void CheckManifestModels(const std::string& root, size_t at_least) {
  for (const ModelEntry& entry : ManifestModels(root, at_least)) {
    SCOPED_TRACE(entry.dir);
    CheckModel(root, entry.dir);
  }
}

TEST(OnnxModelsTest, ExportedByTorchExport) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckManifestModels(CommittedModelsDir() + "/zoo", 4);
}

// Each model of `root` (quantized by ONNX Runtime's quantize_static) imports
// as graft's reference quantized graph and gives ONNX Runtime's outputs;
// quantize-lower then turns every product of a weight into an int8 op
// (products of two run-time values, attention's, stay float), and the
// results on every backend are ONNX Runtime's too.
void CheckQuantizedByOnnxRuntime(const std::string& root) {
  for (const ModelEntry& entry : ManifestModels(root, 4)) {
    SCOPED_TRACE(entry.dir);
    CheckModel(root, entry.dir);
    const std::string dir = absl::StrCat(root, "/", entry.dir);
    absl::StatusOr<Module> module = ImportOnnxFile(dir + "/model.onnx");
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<passes::Pipeline> lower = passes::Pipeline::FromString("quantize-lower");
    ASSERT_TRUE(lower.ok()) << lower.status();
    passes::PassContext ctx;
    ASSERT_TRUE(lower->Run(*module, ctx).ok());
    for (const Node* n : module->graph().nodes()) {
      if (!n->is_call("linear") && !n->is_call("conv2d") && !n->is_call("matmul")) continue;
      const Node* weight = n->inputs()[1];
      if (weight->is_call("dequantize")) weight = weight->inputs()[0];
      EXPECT_NE(weight->op(), OpCode::kGetAttr)
          << "%" << n->name() << " (" << n->target() << ") was not lowered to int8";
    }
    absl::StatusOr<Tensor> input = ReadNpy(dir + "/input_in0.npy");
    absl::StatusOr<Tensor> want = ReadNpy(dir + "/output_out0.npy");
    ASSERT_TRUE(input.ok() && want.ok());
    for (const std::string& name : BackendRegistry::Global().Names()) {
      SCOPED_TRACE(name);
      absl::StatusOr<std::unique_ptr<Backend>> backend = CreateBackend(name);
      ASSERT_TRUE(backend.ok()) << backend.status();
      absl::StatusOr<std::unique_ptr<Executable>> compiled = CompileWithFallback(**backend, *module, {});
      ASSERT_TRUE(compiled.ok()) << compiled.status();
      absl::StatusOr<std::vector<Tensor>> got = (*compiled)->Run({*input});
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectClose((*got)[0], *want, absl::StrCat(entry.dir, " lowered, on ", name));
    }
  }
}

// QDQ format (tests/onnx_models/qdq/manifest.txt).
TEST(OnnxModelsTest, QuantizedByOnnxRuntime) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckQuantizedByOnnxRuntime(CommittedModelsDir() + "/qdq");
}

// Quantized at run time by ONNX Runtime's quantize_dynamic:
// DynamicQuantizeLinear, MatMulInteger, ConvInteger
// (tests/onnx_models/dynamic/manifest.txt).
TEST(OnnxModelsTest, QuantizedDynamicallyByOnnxRuntime) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckManifestModels(CommittedModelsDir() + "/dynamic", 3);
}

// QOperator format: QLinearConv, QLinearMatMul and com.microsoft's QGemm,
// QLinearAdd, QLinearMul, QLinearSoftmax, QLinearGlobalAveragePool
// (tests/onnx_models/qoperator/manifest.txt).
TEST(OnnxModelsTest, QuantizedByOnnxRuntimeInQOperatorFormat) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckQuantizedByOnnxRuntime(CommittedModelsDir() + "/qoperator");
}

// ONNX Runtime's fused operators (com.microsoft), as its optimizers write
// them into saved models; the outputs are ONNX Runtime's own
// (tests/onnx_models/contrib/manifest.txt).
TEST(OnnxModelsTest, FusedOperatorsOfOnnxRuntime) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckManifestModels(CommittedModelsDir() + "/contrib", 3);
}

// Test models as ONNX Runtime's graph optimizer and its transformer
// optimizer save them: FusedConv, FusedGemm, FusedMatMul, FastGelu,
// BiasGelu, SkipLayerNormalization in real graphs; the outputs are ONNX
// Runtime's (tests/onnx_models/ort_optimized/manifest.txt).
TEST(OnnxModelsTest, SavedByOnnxRuntimesOptimizers) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckManifestModels(CommittedModelsDir() + "/ort_optimized", 6);
}

// Resize's antialias (opset 18, shrinking: linear and cubic, each
// coordinate mode's window, exclude_outside) and operators of opsets 23
// and 24: Attention (grouped-query heads, bool and
// float masks, softcap, causal with past keys, 3-D inputs),
// RMSNormalization, RotaryEmbedding (interleaved and not, partial), Swish,
// Cast's round_mode (tests/onnx_models/newer_opsets/manifest.txt).
TEST(OnnxModelsTest, NewerOpsets) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckManifestModels(CommittedModelsDir() + "/newer_opsets", 3);
}

// Local functions: nested calls with attribute references, and a model
// PyTorch exports with export_modules_as_functions
// (tests/onnx_models/functions/manifest.txt).
TEST(OnnxModelsTest, LocalFunctions) {
  GRAFT_REQUIRE_ONNX_MODELS();
  CheckManifestModels(CommittedModelsDir() + "/functions", 2);
}

// torchvision's ResNet-18 (random weights): not committed, about 45 MB.
// Run with
//   /usr/bin/python3 tests/onnx_models/export_models.py --resnet18 /tmp/r18
//   GRAFT_RESNET18_DIR=/tmp/r18 ctest -R OnnxModelsTest.ResNet18
TEST(OnnxModelsTest, ResNet18) {
  GRAFT_REQUIRE_ONNX();
  const char* dir = std::getenv("GRAFT_RESNET18_DIR");
  if (dir == nullptr || *dir == '\0') {
    GTEST_SKIP() << "set GRAFT_RESNET18_DIR to the directory written by "
                    "`/usr/bin/python3 tests/onnx_models/export_models.py "
                    "--resnet18 DIR` to run this test (docs/onnx.md)";
  }
  CheckModel(dir, "resnet18");
}

// A model with an op outside the supported set must fail to import, with
// an error that names the op type and the node.
TEST(OnnxModelsTest, UnsupportedOpIsNamed) {
  GRAFT_REQUIRE_ONNX_MODELS();
  absl::StatusOr<Manifest> manifest = ReadManifest(CommittedModelsDir());
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  ASSERT_FALSE(manifest->unsupported.empty());
  for (const UnsupportedEntry& entry : manifest->unsupported) {
    const std::string path =
        absl::StrCat(manifest->root, "/", entry.dir, "/model.onnx");
    absl::StatusOr<Module> module = ImportOnnxFile(path);
    ASSERT_FALSE(module.ok())
        << path << " imported, but holds " << entry.op_type;
    const std::string message(module.status().message());
    EXPECT_THAT(message, ::testing::HasSubstr(entry.node));
    // PyTorch's node names contain the op type ("/Round"), so the op type
    // must also appear apart from the node name.
    EXPECT_THAT(absl::StrReplaceAll(message, {{entry.node, ""}}),
                ::testing::HasSubstr(entry.op_type))
        << message;
  }
}

}  // namespace
}  // namespace graft
