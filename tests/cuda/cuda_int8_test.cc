// Quantized models on the CUDA backend: the reference graph's quantize and
// dequantize (generated kernels), graft::quantized_linear (graft's own
// int8 kernel, backends/cuda/skinny_gemm.h) and graft::quantized_conv2d (a
// direct kernel) against the interpreter. Both
// sides sum the products exactly in int32 and scale them in double, so
// the results agree bit for bit. The kernels compile by NVRTC on any
// machine; the runs need a GPU.

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "backends/cuda/skinny_gemm.h"
#include "graph/module_fingerprint.h"
#include "graph/parser.h"
#include "graph/quant_ops.h"
#include "gtest/gtest.h"
#include "onnx/onnx_import.h"
#include "passes/quantize/lower.h"
#include "quantize/accuracy.h"
#include "quantize/quantize_model.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/float8_quantize_case.h"
#include "tests/backends/int8_models.h"
#include "tests/backends/model_files.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

struct Shape {
  int64_t m, n, k;
};

// The int8 products of an [m, k] input by an [n, k] weight, every variant
// the kernel has: i8 and u8 inputs, with zero point 0 and not, f32 results with and without bias and ReLU, results
// quantized again to i8 and u8; beside them per-tensor and per-channel
// quantize/dequantize. `in_dims` puts leading dims on the input.
ModuleBuilder Int8Products(std::mt19937_64& rng, const Shape& s,
                           std::vector<int64_t> in_dims = {}) {
  ModuleBuilder b(rng);
  if (in_dims.empty()) in_dims = {s.m};
  in_dims.push_back(s.k);
  Tensor x_data = RandomData(DType::kF32, in_dims, rng, -1, 1);
  // Non-finite inputs: NaN quantizes to the zero point, infinities clamp.
  if (x_data.NumElements() >= 4) {
    x_data.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    x_data.data<float>()[1] = std::numeric_limits<float>::infinity();
    x_data.data<float>()[3] = -std::numeric_limits<float>::infinity();
  }
  Node* x = b.In(x_data);
  auto quantize = [&](double scale, int64_t zero_point, DType dtype) {
    return b.Call("quantize_per_tensor", {x, scale, zero_point, Argument(dtype)});
  };
  Node* q = quantize(1.0 / 127, 0, DType::kI8);
  Node* q_zp = quantize(1.0 / 120, -5, DType::kI8);
  Node* u = quantize(2.0 / 255, 121, DType::kU8);
  Node* u0 = quantize(1.0 / 255, 0, DType::kU8);
  Node* w = b.Const(DType::kI8, {s.n, s.k}, -128, 127);
  Node* scales = b.Const(DType::kF32, {s.n}, 1e-3, 1e-2);
  // A bias with infinities and NaN where there is room: results quantized
  // again clamp (NaN to the zero point), as the interpreter's do.
  Tensor bias_data = RandomData(DType::kF32, {s.n}, rng, -1, 1);
  if (s.n >= 3) {
    bias_data.data<float>()[0] = std::numeric_limits<float>::infinity();
    bias_data.data<float>()[1] = -std::numeric_limits<float>::infinity();
    bias_data.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  }
  Node* bias = b.Const(bias_data);
  auto product = [&](Node* input, double scale, int64_t zero_point, Kwargs kwargs) {
    return b.Call(std::string(kQuantizedLinearOp), {input, scale, zero_point, w, scales},
                  std::move(kwargs));
  };
  std::vector<Node*> out{
      product(q, 1.0 / 127, 0, {}),
      product(q_zp, 1.0 / 120, -5, {{"bias", bias}, {"activation", "relu"}}),
      product(u, 2.0 / 255, 121, {{"bias", bias}}),
      product(u0, 1.0 / 255, 0, {{"activation", "relu"}}),
      product(q, 1.0 / 127, 0,
              {{"bias", bias}, {"output_scale", 0.05}, {"output_zero_point", int64_t{3}},
               {"output_dtype", Argument(DType::kI8)}}),
      product(u, 2.0 / 255, 121,
              {{"activation", "relu"}, {"output_scale", 0.03}, {"output_zero_point", int64_t{7}},
               {"output_dtype", Argument(DType::kU8)}}),
      b.Call("dequantize", {u, 2.0 / 255, int64_t{121}})};
  // Per channel of the last dim: scales and zero points as tensors.
  const int64_t axis = static_cast<int64_t>(in_dims.size()) - 1;
  Node* channel_scales = b.Const(DType::kF32, {s.k}, 1e-3, 2e-2);
  Node* zero_points = b.Const(DType::kI32, {s.k}, 0, 255);
  Node* per_channel = b.Call("quantize_per_channel",
                             {x, channel_scales, zero_points, axis, Argument(DType::kU8)});
  out.push_back(per_channel);
  out.push_back(b.Call("dequantize", {per_channel, channel_scales, zero_points},
                       {{"axis", axis}}));
  // Per channel of the first dim, named by a negative axis, to bf16.
  const int64_t rows = in_dims[0];
  Node* row_scales = b.Const(DType::kF32, {rows}, 1e-3, 2e-2);
  Node* row_zero_points = b.Const(DType::kI64, {rows}, -20, 20);
  const int64_t first = -static_cast<int64_t>(in_dims.size());
  Node* per_row = b.Call("quantize_per_channel",
                         {x, row_scales, row_zero_points, first, Argument(DType::kI8)});
  out.push_back(b.Call("dequantize", {per_row, row_scales, row_zero_points},
                       {{"axis", first}, {"dtype", Argument(DType::kBF16)}}));
  b.Out(out);
  return b;
}

// The products of many rows whose x rows do not fit shared memory (read
// from global memory instead): 24 row tiles of 64 by 22 weight tiles fill
// the GPU without splitting K, so each block multiplies all 1024 of K.
ModuleBuilder WideInt8Products(std::mt19937_64& rng) {
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {1536, 1024}, -1, 1);
  Node* q = b.Call("quantize_per_tensor", {x, 1.0 / 120, int64_t{-5}, Argument(DType::kI8)});
  Node* u = b.Call("quantize_per_tensor", {x, 2.0 / 255, int64_t{121}, Argument(DType::kU8)});
  Node* w = b.Const(DType::kI8, {1408, 1024}, -128, 127);
  Node* scales = b.Const(DType::kF32, {1408}, 1e-3, 1e-2);
  b.Out({b.Call(std::string(kQuantizedLinearOp), {q, 1.0 / 120, int64_t{-5}, w, scales}),
         b.Call(std::string(kQuantizedLinearOp), {u, 2.0 / 255, int64_t{121}, w, scales},
                {{"output_scale", 0.3}, {"output_dtype", Argument(DType::kI8)}})});
  return b;
}

// Int8 convolutions (direct kernels): padding (which counts as the zero
// point), strides, dilation, groups and depthwise, an i8 and a u8 input
// with zero points, f32 results with bias and ReLU, results quantized
// again.
ModuleBuilder Int8Convolutions(std::mt19937_64& rng) {
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {2, 8, 9, 11}, -1, 1);
  Node* q = b.Call("quantize_per_tensor", {x, 1.0 / 120, int64_t{-3}, Argument(DType::kI8)});
  Node* u = b.Call("quantize_per_tensor", {x, 2.0 / 255, int64_t{130}, Argument(DType::kU8)});
  auto conv = [&](Node* input, double scale, int64_t zero_point, std::vector<int64_t> weight,
                  Kwargs kwargs) {
    Node* w = b.Const(DType::kI8, weight, -127, 127);
    Node* scales = b.Const(DType::kF32, {weight[0]}, 1e-3, 1e-2);
    return b.Call(std::string(kQuantizedConv2dOp), {input, scale, zero_point, w, scales},
                  std::move(kwargs));
  };
  Node* bias = b.Const(DType::kF32, {6}, -1, 1);
  b.Out({conv(q, 1.0 / 120, -3, {6, 8, 3, 3}, {{"padding", Argument::IntList({1})}}),
         conv(u, 2.0 / 255, 130, {6, 8, 3, 3},
              {{"bias", bias}, {"activation", "relu"}, {"stride", Argument::IntList({2})},
               {"padding", Argument::IntList({2, 1})}, {"dilation", Argument::IntList({2})}}),
         conv(q, 1.0 / 120, -3, {8, 2, 3, 1},
              {{"groups", int64_t{4}}, {"output_scale", 0.04},
               {"output_zero_point", int64_t{-2}}, {"output_dtype", Argument(DType::kI8)}}),
         conv(u, 2.0 / 255, 130, {8, 1, 3, 3},
              {{"groups", int64_t{8}}, {"padding", Argument::IntList({1})},
               {"output_scale", 0.02}, {"output_zero_point", int64_t{9}},
               {"output_dtype", Argument(DType::kU8)}})});
  return b;
}

TEST(CudaInt8, KernelsCompileWithNvrtc) {
  std::mt19937_64 rng(1);
  // One of few rows, one split over K, one of row tiles.
  for (const Shape& s : {Shape{3, 17, 32}, Shape{64, 300, 4112}, Shape{200, 70, 1040}}) {
    SCOPED_TRACE(absl::StrCat("m=", s.m, " n=", s.n, " k=", s.k));
    ModuleBuilder b = Int8Products(rng, s);
    for (const Node* n : b.module().graph().nodes()) {
      EXPECT_OK(cuda::CanLower(*n)) << n->Ref();
    }
    const cuda::CudaOptions options;
    ASSERT_OK_AND_ASSIGN(StepProgram program, cuda::BuildCudaProgram(b.module(), TypesOf(b), options));
    int products = 0;
    for (const Step& step : program.steps) {
      if (!step.node->is_call(kQuantizedLinearOp)) continue;
      ++products;
      const std::optional<cuda::SkinnyGemm> plan = cuda::SkinnyGemmFor(step, options, 132);
      ASSERT_TRUE(plan.has_value());
      EXPECT_EQ(plan->mode, 4);
      EXPECT_EQ(plan->row_tiles, (s.m + 63) / 64);
      EXPECT_TRUE(plan->weights_ready);
      // Before Ampere there is no s8 mma.sync: no plan, and the emitter says so.
      EXPECT_FALSE(cuda::SkinnyGemmFor(step, options, 132, 75).has_value());
    }
    EXPECT_EQ(products, 6);
    ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(program, options, 132));
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> cubins,
                           cuda::CompileUnitsToCubins(source.units, "sm_90"));
    EXPECT_EQ(cubins.size(), source.units.size());
    ASSERT_OK_AND_ASSIGN(cuda::KernelSource ampere,
                         cuda::GenerateKernels(program, options, 108, 80));
    EXPECT_OK(cuda::CompileUnitsToCubins(ampere.units, "sm_80").status());
    absl::StatusOr<cuda::KernelSource> turing = cuda::GenerateKernels(program, options, 40, 75);
    EXPECT_FALSE(turing.ok());
    EXPECT_NE(turing.status().message().find("compute capability 8.0"), std::string::npos)
        << turing.status();
  }
}

// What graft's kernel does not take is left to the interpreter, with the
// reason; a quantized model does not compile in bf16.
TEST(CudaInt8, SaysWhatItCannotRun) {
  std::mt19937_64 rng(2);
  ModuleBuilder b = Int8Products(rng, {4, 8, 24});  // K not a multiple of 16.
  int refused = 0;
  for (const Node* n : b.module().graph().nodes()) {
    if (!n->is_call(kQuantizedLinearOp)) continue;
    const absl::Status s = cuda::CanLower(*n);
    EXPECT_TRUE(absl::IsUnimplemented(s)) << s;
    EXPECT_NE(s.message().find("multiple of 16"), std::string::npos) << s;
    ++refused;
  }
  EXPECT_EQ(refused, 6);
  // No rows at all, and more inputs than int32 sums hold: to the interpreter.
  for (const Shape& s : {Shape{0, 8, 32}, Shape{2, 4, 65808}}) {
    ModuleBuilder edge = Int8Products(rng, s);
    for (const Node* n : edge.module().graph().nodes()) {
      if (n->is_call(kQuantizedLinearOp)) {
        EXPECT_TRUE(absl::IsUnimplemented(cuda::CanLower(*n)));
      }
    }
  }
  ModuleBuilder ok = Int8Products(rng, {4, 8, 32});
  cuda::CudaOptions bf16;
  bf16.precision = "bf16";
  const absl::Status s = cuda::BuildCudaProgram(ok.module(), TypesOf(ok), bf16).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("precision f32 or tf32"), std::string::npos) << s;
  // Dynamic quantization's products too: their input is f32 by contract.
  absl::StatusOr<Module> dynamic = ParseModule(R"(
tensor w : i8[4,16] = zeros
tensor s : f32[4] = zeros
graph():
    %x : f32[2,16] = placeholder[target=x]
    %w = get_attr[target=w]
    %s = get_attr[target=s]
    %y = call_function[target=graft::dynamic_quantized_linear](args = (%x, %w, %s), kwargs = {})
    return y
)");
  ASSERT_OK(dynamic.status());
  const absl::Status d =
      cuda::BuildCudaProgram(*dynamic, {TensorType{DType::kF32, {2, 16}}}, bf16).status();
  EXPECT_TRUE(absl::IsInvalidArgument(d)) << d;
  EXPECT_NE(d.message().find("%y (graft::dynamic_quantized_linear): a quantized model compiles "
                             "with precision f32 or tf32"),
            std::string::npos)
      << d;
}

// Rows of x not a multiple of 8, weight rows not a multiple of 16 or 64,
// K split over many blocks, more than 64 rows (row tiles, also split),
// rows given as leading dims, many weight tiles.
TEST(CudaInt8, ProductsMatchTheInterpreterExactly) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  const Shape shapes[] = {{1, 1, 16},     {3, 17, 32},     {37, 65, 1008},  {64, 300, 4112},
                          {5, 2048, 512}, {33, 40, 8192},  {130, 96, 256},  {300, 24, 2064},
                          {64, 9000, 64}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(absl::StrCat("m=", s.m, " n=", s.n, " k=", s.k));
    ExpectCudaMatchesInterp(Int8Products(rng, s), 0);
  }
  SCOPED_TRACE("rows as [2, 3, 7]");
  ExpectCudaMatchesInterp(Int8Products(rng, {42, 50, 96}, {2, 3, 7}), 0);
  SCOPED_TRACE("x rows read from global memory");
  ModuleBuilder wide = WideInt8Products(rng);
  ASSERT_OK_AND_ASSIGN(StepProgram program,
                       cuda::BuildCudaProgram(wide.module(), TypesOf(wide), {}));
  for (const Step& step : program.steps) {
    if (!step.node->is_call(kQuantizedLinearOp)) continue;
    const std::optional<cuda::SkinnyGemm> plan = cuda::SkinnyGemmFor(step, {}, 132);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->splits, 1);
    EXPECT_GT(plan->tile_rows * (plan->chunk + 64), 40 * 1024);  // No shared copy of x.
  }
  ExpectCudaMatchesInterp(wide, 0);
}

TEST(CudaInt8, ConvolutionsMatchTheInterpreterExactly) {
  std::mt19937_64 compile_rng(3);
  ModuleBuilder compiled = Int8Convolutions(compile_rng);
  for (const Node* n : compiled.module().graph().nodes()) {
    EXPECT_OK(cuda::CanLower(*n)) << n->Ref();
  }
  ASSERT_OK_AND_ASSIGN(StepProgram program,
                       cuda::BuildCudaProgram(compiled.module(), TypesOf(compiled), {}));
  ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(program, {}, 132));
  EXPECT_OK(cuda::CompileUnitsToCubins(source.units, "sm_90").status());
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ExpectCudaMatchesInterp(Int8Convolutions(rng), 0);
}

// Runs of one compiled product repeat exactly (the split's counters are
// reset by the kernel for the next run).
TEST(CudaInt8, RepeatedRunsOfASplitProduct) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b = Int8Products(rng, {16, 128, 8192});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Cuda().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> first, e->Run(b.inputs()));
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> again, e->Run(b.inputs()));
    for (size_t j = 0; j < first.size(); ++j) EXPECT_TRUE(again[j].BitwiseEqual(first[j])) << j;
  }
}

// Copies of test models (tests/onnx_models) as .gpb, which a GPU machine
// without ONNX reads too.
constexpr const char* kModelCopies[] = {"mlp", "cnn", "gpt2_block_opset17"};

std::string ModelCopy(const std::string& name) {
  return absl::StrCat(backend_test::SourceDir(), "/tests/cuda/models/", name, ".gpb");
}

// The copies are what the ONNX files import to (regenerate with `graft
// convert tests/onnx_models/NAME/model.onnx -o tests/cuda/models/NAME.gpb`).
TEST(CudaInt8, ModelCopiesMatchTheirOnnx) {
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  if (!HaveOnnx()) GTEST_SKIP() << "graft was built without ONNX support";
  for (const char* name : kModelCopies) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(Module copy, LoadModel(ModelCopy(name)));
    ASSERT_OK_AND_ASSIGN(Module onnx, LoadModel(absl::StrCat(backend_test::SourceDir(),
                                                             "/tests/onnx_models/", name,
                                                             "/model.onnx")));
    EXPECT_EQ(ModuleFingerprint(copy).ToHex(), ModuleFingerprint(onnx).ToHex());
  }
}

// f8e4m3 quantize (per tensor and per channel) and dequantize run as
// generated kernels, nothing falling back, and give the interpreter's
// values (tests/backends/float8_quantize_case.h). Their kernels compile by
// NVRTC on any machine; the run needs a GPU.
TEST(CudaInt8, Float8QuantizeOpsMatchTheInterpreterBitForBit) {
  backend_test::Float8QuantizeCase c = backend_test::MakeFloat8QuantizeCase();
  for (const Node* n : c.module.graph().nodes()) {
    if (n->is_call("quantize_per_tensor") || n->is_call("quantize_per_channel") ||
        n->is_call("dequantize")) {
      EXPECT_OK(cuda::CanLower(*n));
    }
  }
  const cuda::CudaOptions options;
  ASSERT_OK_AND_ASSIGN(StepProgram program,
                       cuda::BuildCudaProgram(c.module, c.options.input_types, options));
  ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(program, options, 132));
  EXPECT_OK(cuda::CompileUnitsToCubins(source.units, "sm_90").status());
  SKIP_WITHOUT_GPU();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> gpu, Cuda().Compile(c.module, c.options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(c.module, c.options));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, gpu->Run(c.inputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(c.inputs));
  backend_test::ExpectFloat8ResultsMatch(got, want);
}

// The test models quantized and lowered run wholly on the GPU. An int8
// result one product writes for the next can land one step apart where
// its value sits within rounding of a step boundary (the float parts
// between differ in their last bits), so the models are compared as
// quantized graphs are (DESIGN section 5), by SQNR.
TEST(CudaInt8, QuantizedModelsRunWhollyOnTheGpu) {
  SKIP_WITHOUT_GPU();
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  for (const std::string name : {"mlp", "mlp+affine", "gpt2_block_opset17",
                                 "gpt2_block_opset17+affine", "cnn", "cnn+affine"}) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(Module m, LoadModel(ModelCopy(name.substr(0, name.find('+')))));
    const Module lowered =
        backend_test::Int8Lowered(m, /*affine=*/name.find("affine") != std::string::npos);
    int products = 0;
    for (const Node* n : lowered.graph().nodes()) {
      EXPECT_OK(Cuda().CanRun(*n, {})) << n->Ref();
      products += n->is_call(kQuantizedLinearOp) || n->is_call(kQuantizedConv2dOp) ? 1 : 0;
    }
    EXPECT_GT(products, 0);
    const std::vector<Tensor> inputs =
        backend_test::RandomInputs(PlaceholderSignature(lowered.graph()), std::random_device{}());
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> cuda, Cuda().Compile(lowered, {}));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(lowered, {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, cuda->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(inputs));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_GE(quantize::Sqnr(want[i], got[i]), 50);
  }
}

// fp8 models (f8e4m3 activations and weights, float products) run wholly
// on the GPU and agree with the interpreter; a code may land one e4m3 step
// apart where the float sums before it round differently.
TEST(CudaInt8, Float8ModelsRunWhollyOnTheGpu) {
  SKIP_WITHOUT_GPU();
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  for (const std::string name : {"mlp", "gpt2_block_opset17", "cnn"}) {
    // Calibration and inputs from one seed, printed with any failure.
    const uint64_t seed = std::random_device{}();
    SCOPED_TRACE(absl::StrCat(name, ", seed ", seed));
    ASSERT_OK_AND_ASSIGN(Module m, LoadModel(ModelCopy(name)));
    const Module fp8 = backend_test::Float8Quantized(m, seed);
    int f8_steps = 0;
    for (const Node* n : fp8.graph().nodes()) {
      EXPECT_OK(Cuda().CanRun(*n, {})) << n->Ref();
      f8_steps += n->type().has_value() && n->type()->dtype == DType::kF8E4M3 ? 1 : 0;
    }
    EXPECT_GT(f8_steps, 0);
    const std::vector<Tensor> inputs =
        backend_test::RandomInputs(PlaceholderSignature(fp8.graph()), seed + 1);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> cuda, Cuda().Compile(fp8, {}));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(fp8, {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, cuda->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(inputs));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_GE(quantize::Sqnr(want[i], got[i]), 35);
  }
}

}  // namespace
}  // namespace graft::cuda_test
