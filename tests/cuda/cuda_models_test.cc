// Whole models on the CUDA backend: every model of the repository, with
// the interpreter taking what cuda does not claim, against the
// interpreter; and, on any machine, the generated kernels of every model
// compiled by NVRTC for Hopper (a code generator bug shows without a GPU).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/compile_cache.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "backends/fallback_executable.h"
#include "gmock/gmock.h"
#include "graph/int4_ops.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "onnx/onnx_import.h"
#include "passes/cast_float.h"
#include "passes/quantize/weight_only.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/cache_dirs.h"
#include "tests/backends/model_files.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

namespace fs = std::filesystem;
using ::graft::backend_test::ModelFiles;
using ::graft::backend_test::RandomInputs;
using ::graft::testing::StatusIs;
using ::testing::HasSubstr;

std::string NameOf(const std::string& path) {
  return absl::StrCat(fs::path(path).parent_path().filename().string(), "/",
                      fs::path(path).filename().string());
}

TEST(CudaCodegen, EveryModelsKernelsCompileWithNvrtc) {
  backend_test::FindSourceDir();
  const std::vector<std::string> files = ModelFiles(HaveOnnx());
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  int compiled = 0, units_that_load = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    ASSERT_OK_AND_ASSIGN(Module module, LoadModel(path));
    std::vector<TensorType> types;
    for (const ValueSignature& s : PlaceholderSignature(module.graph())) {
      ASSERT_TRUE(s.type.has_value());
      TensorType t = *s.type;
      for (Dim& d : t.shape) {
        if (d.is_symbolic()) d = Dim(3);
      }
      types.push_back(t);
    }
    for (const char* precision : {"f32", "bf16"}) {
      cuda::CudaOptions options;
      options.precision = precision;
      absl::StatusOr<StepProgram> program = cuda::BuildCudaProgram(module, types, options);
      if (!program.ok()) {
        // Models with ops that fall back compile in pieces on a GPU.
        std::printf("%s (%s): not one program: %s\n", NameOf(path).c_str(), precision,
                    std::string(program.status().message()).c_str());
        continue;
      }
      ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(*program, {}, 132));
      ASSERT_OK_AND_ASSIGN(std::vector<std::string> cubins,
                           cuda::CompileUnitsToCubins(source.units, "sm_90"));
      EXPECT_EQ(cubins.size(), source.units.size());
      // No generated kernel reads through the non-coherent path, which
      // may return what a buffer held before the kernel this one waits
      // for wrote it (kernel_preamble.h, g_ld). The products of few rows
      // use it for module weights only, which no kernel writes.
      for (const std::string& unit : source.units) {
        if (unit.find("g_skinny::gemm<") != std::string::npos) continue;
        ASSERT_OK_AND_ASSIGN(std::string ptx, cuda::CompileToPtx(unit, "compute_90"));
        units_that_load += ptx.find("ld.global") != std::string::npos;
        EXPECT_THAT(ptx, ::testing::Not(HasSubstr("ld.global.nc")));
      }
      ++compiled;
    }
  }
  EXPECT_GT(compiled, 0);
  EXPECT_GT(units_that_load, 0);  // The PTX check looked at loads.
}

// Two layers of the same shapes (a repeated block, as in every
// transformer): their products and pointwise kernels are generated once
// and launched twice; each product of few rows is a translation unit of
// its own, compiled beside the others; every launch names a kernel its
// unit defines. Then, on a GPU, the program matches the interpreter.
TEST(CudaCodegen, ARepeatedLayerIsCompiledOnce) {
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* h = b.In(RandomData(DType::kF32, {4, 96}, rng, -1, 1));
  for (int layer = 0; layer < 3; ++layer) {
    Node* w = b.Const(RandomData(DType::kF32, {96, 96}, rng, -0.3, 0.3));
    Node* bias = b.Const(RandomData(DType::kF32, {96}, rng, -0.5, 0.5));
    h = b.Call("tanh", {b.Call("linear", {h, w, bias})});
  }
  b.Out({h});
  std::vector<TensorType> types{b.inputs()[0].type()};
  ASSERT_OK_AND_ASSIGN(StepProgram program, cuda::BuildCudaProgram(b.module(), types, {}));
  ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(program, {}, 132));
  std::vector<std::string> product_names, tanh_names;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    for (const cuda::KernelLaunch& launch : source.launches[i]) {
      (launch.split_k_scratch ? product_names : tanh_names).push_back(launch.name);
      ASSERT_GE(launch.unit, 0);
      ASSERT_LT(launch.unit, static_cast<int>(source.units.size()));
      EXPECT_THAT(source.units[launch.unit], HasSubstr(absl::StrCat(") ", launch.name, "(")))
          << "launch of " << launch.name << " in unit " << launch.unit;
    }
  }
  ASSERT_EQ(product_names.size(), 3u);
  ASSERT_EQ(tanh_names.size(), 3u);
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(product_names[i], product_names[0]);
    EXPECT_EQ(tanh_names[i], tanh_names[0]);
  }
  // The copy kernels and the tanh share the first unit; the product has
  // its own.
  auto kernels_in = [](const std::string& unit) {
    int n = 0;
    for (size_t at = unit.find("__global__"); at != std::string::npos;
         at = unit.find("__global__", at + 1)) {
      ++n;
    }
    return n;
  };
  ASSERT_EQ(source.units.size(), 2u);
  EXPECT_EQ(kernels_in(source.units[0]), 3);
  EXPECT_EQ(kernels_in(source.units[1]), 1);
  EXPECT_THAT(source.units[1], HasSubstr(absl::StrCat(") ", product_names[0], "(")));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> cubins,
                       cuda::CompileUnitsToCubins(source.units, "sm_90"));
  ASSERT_EQ(cubins.size(), source.units.size());
  for (const std::string& cubin : cubins) EXPECT_GT(cubin.size(), 0u);
  SKIP_WITHOUT_GPU();
  ExpectCudaMatchesInterp(b, kReduceTol);
}

// Weight-only int4 weights (two to a byte, graft::unpack_int4) become
// module tensors of int8 values when the program is built: no step of the
// program unpacks, and its kernels compile.
TEST(CudaCodegen, PackedInt4WeightsUnpackWhenTheProgramIsBuilt) {
  absl::StatusOr<Module> m = ParseModule(R"(
tensor w : f32[64,96] = random(seed=1)
graph():
    %x : f32[4,96] = placeholder[target=x]
    %w = get_attr[target=w]
    %y = call_function[target=linear](args = (%x, %w), kwargs = {})
    return y
)");
  ASSERT_OK(m.status());
  passes::quantize::WeightOnlyConfig config;
  config.bits = 4;
  config.group_size = 32;
  ASSERT_OK_AND_ASSIGN(passes::quantize::WeightOnlyReport report,
                       passes::quantize::QuantizeWeightsOnly(*m, config));
  ASSERT_EQ(report.quantized.size(), 1u);
  for (const Node* n : m->graph().nodes()) {
    if (n->is_call(kUnpackInt4Op)) {
      EXPECT_OK(cuda::CanLower(*n));  // No graph break.
    }
  }
  for (const char* precision : {"f32", "bf16"}) {
    SCOPED_TRACE(precision);
    cuda::CudaOptions options;
    options.precision = precision;
    ASSERT_OK_AND_ASSIGN(StepProgram program,
                         cuda::BuildCudaProgram(*m, {TensorType{DType::kF32, {4, 96}}}, options));
    for (const Step& step : program.steps) EXPECT_FALSE(step.node->is_call(kUnpackInt4Op));
    ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(program, options, 132));
    EXPECT_OK(cuda::CompileUnitsToCubins(source.units, "sm_90").status());
  }
}

TEST(CudaCodegen, ACompileErrorQuotesTheGeneratedLine) {
  const std::string source = "extern \"C\" __global__ void k() {\n  int x = undefined_name;\n}\n";
  EXPECT_THAT(cuda::CompileToCubin(source, "sm_90").status(),
              StatusIs(absl::StatusCode::kInternal,
                       ::testing::AllOf(::testing::HasSubstr("undefined_name"),
                                        ::testing::HasSubstr("2 |   int x"))));
}

// A submodule's ops and tensors are cast with the rest of the model
// (the program inlines it first): its product multiplies in bf16.
TEST(CudaCodegen, ASubmoduleIsCastWithTheModel) {
  absl::StatusOr<Module> m = ParseModule(R"(
submodule block {
  tensor w : f32[8,8] = random(seed=1)
  graph():
      %a : f32[2,8] = placeholder[target=a]
      %w = get_attr[target=w]
      %y = call_function[target=linear](args = (%a, %w), kwargs = {})
      return y
}
graph():
    %x : f32[2,8] = placeholder[target=x]
    %g = call_module[target=block](args = (%x,), kwargs = {})
    return g
)");
  ASSERT_OK(m.status());
  cuda::CudaOptions options;
  options.precision = "bf16";
  ASSERT_OK_AND_ASSIGN(StepProgram program,
                       cuda::BuildCudaProgram(*m, {TensorType{DType::kF32, {2, 8}}}, options));
  int products = 0;
  for (const Step& step : program.steps) {
    if (!step.node->is_call("linear")) continue;
    ++products;
    for (const Node* in : step.node->inputs()) EXPECT_EQ(in->type()->dtype, DType::kBF16);
  }
  EXPECT_EQ(products, 1);
}

// `inputs` with each f32 value rounded to `dtype` (bf16 or f16) and back.
std::vector<Tensor> RoundedTo(const std::vector<Tensor>& inputs, DType dtype) {
  std::vector<Tensor> rounded;
  for (const Tensor& t : inputs) {
    rounded.push_back(t.dtype() == DType::kF32 ? RoundedThrough(t, dtype) : t);
  }
  return rounded;
}

TEST(CudaModels, EveryModelMatchesTheInterpreter) {
  SKIP_WITHOUT_GPU();
  backend_test::FindSourceDir();
  const std::vector<std::string> files = ModelFiles(HaveOnnx());
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  const uint32_t seed = interp_test::FreshSeed();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  int narrowed_outputs = 0;  // bf16/f16 float outputs not bit-equal to f32's.
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    ASSERT_OK_AND_ASSIGN(Module module, LoadModel(path));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(module, {}));
    const std::vector<Tensor> inputs = RandomInputs(reference->input_signature(), seed, 3);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(inputs));
    // A quantized model compiles in f32 and tf32 only (its scales are f32).
    const bool quantized = backend_test::HoldsQuantizedOps(module);
    for (const char* precision : {"f32", "tf32", "bf16", "f16"}) {
      const std::string p = precision;
      if (quantized && (p == "bf16" || p == "f16")) continue;
      SCOPED_TRACE(precision);
      CompileOptions options;
      options.options["precision"] = precision;
      CompileReport report;
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                           CompileWithFallback(Cuda(), module, options, &report));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run(inputs));
      if (p == "f32") {
        ExpectAllClose(got, want, kReduceTol, e->output_signature());
      } else {
        // tf32 rounds every product operand to 10 mantissa bits, so an
        // output that is a small difference of large products (a
        // quantized model's, after ReLU) can be off by more than 1e-3 of
        // the largest output: the model is held to 1e-3 of its outputs'
        // norm instead, and to 1e-2 in bf16 and f16. There a fused kernel
        // keeps its intermediates in f32, as torch.compile's do, where the
        // interpreter rounds each op's result to bf16 as PyTorch's eager
        // ops do: a floor or a round of such an intermediate may land one
        // apart from either. An output passes within 1e-2 of the
        // interpreter running the model cast by CastFloatModule, else
        // of the f32 model on inputs rounded to the narrow type (a chain of
        // ops in one kernel computes just that), else of the f32 model
        // (CastFloatModels holds the cast model to the f32 one).
        const double tol = p == "tf32" ? kTf32Tol : kHalfTol;
        const bool half = p == "bf16" || p == "f16";
        std::vector<std::vector<Tensor>> references;
        if (half) {
          const DType narrow = p == "bf16" ? DType::kBF16 : DType::kF16;
          Module cast = module.Clone();
          ASSERT_OK(passes::CastFloatModule(cast, narrow).status());
          ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp_half,
                               Interp().Compile(cast, {}));
          ASSERT_OK_AND_ASSIGN(references.emplace_back(), interp_half->Run(inputs));
          ASSERT_OK_AND_ASSIGN(references.emplace_back(),
                               reference->Run(RoundedTo(inputs, narrow)));
        }
        references.push_back(want);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i].type(), want[i].type()) << "output " << i;
          // Indices of a narrowed model may differ; tf32's are held to
          // the norm as its floats are (the test models' index outputs do
          // not depend on products).
          if (half && !IsFloatingPoint(want[i].dtype())) continue;
          // The backend ran the narrow type: not the f32 model's bits.
          if (half && IsFloatingPoint(want[i].dtype())) {
            narrowed_outputs += !got[i].BitwiseEqual(want[i]);
          }
          L2Comparison c;
          for (const std::vector<Tensor>& r : references) {
            ASSERT_EQ(r.size(), want.size());
            c = CompareL2(got[i], r[i]);
            if (c.diff <= tol * std::max(c.norm, 1e-3)) break;
          }
          EXPECT_EQ(c.nonfinite_mismatches, 0) << "output " << i;
          EXPECT_LE(c.diff, tol * std::max(c.norm, 1e-3)) << "output " << i;
        }
      }
      std::printf("%s %s: %d partitions, %d on cuda, %zu graph breaks\n", NameOf(path).c_str(),
                  precision, report.partitions, report.backend_partitions,
                  report.breaks.size());
    }
  }
  EXPECT_GT(narrowed_outputs, 0) << "bf16/f16 runs gave f32's bits everywhere";
}

// A second process finds the CUBIN and the GEMM choices on disk: the same
// results without NVRTC.
TEST(CudaModels, DiskCacheRoundTrip) {
  SKIP_WITHOUT_GPU();
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  ASSERT_OK_AND_ASSIGN(Module module,
                       LoadModel(backend_test::SourceDir() + "/examples/models/mlp.graft"));
  CompileOptions options;  // Fixed shapes: the batch is 3.
  for (const ValueSignature& s : PlaceholderSignature(module.graph())) {
    TensorType t = *s.type;
    for (Dim& d : t.shape) {
      if (d.is_symbolic()) d = Dim(3);
    }
    options.input_types.push_back(t);
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> first, Cuda().Compile(module, options));
  ASSERT_OK_AND_ASSIGN(std::string bytes, Cuda().SerializeExecutable(*first));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> second,
                       Cuda().DeserializeExecutable(bytes, module, options));
  const std::vector<Tensor> inputs = RandomInputs(first->input_signature(), 7, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> a, first->Run(inputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> b, second->Run(inputs));
  ExpectAllClose(b, a, kExact);
  // A damaged entry is refused, never run.
  bytes.resize(bytes.size() / 2);
  EXPECT_FALSE(Cuda().DeserializeExecutable(bytes, module, options).ok());
}

}  // namespace
}  // namespace graft::cuda_test
