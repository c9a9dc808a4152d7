// Convolutions as cuBLASLt products over channels-last values
// (backends/cuda/conv_gemm.h): which convolutions run so, the column
// kernel before each product, the layouts of the steps around them, and
// on a GPU the results against the interpreter.

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/implicit_conv.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "gmock/gmock.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "passes/shape_prop.h"
#include "support/status_matchers.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

using ::testing::HasSubstr;

// A small network of the kinds of layers a CNN export has: a strided 3x3
// convolution with bias and ReLU, max pooling, a 1x1 convolution (no
// patches needed), a strided 1x1 shortcut (patches needed), a residual
// add, a dilated convolution of unequal strides, batch norm, average
// pooling, a grouped convolution (the direct kernel, NCHW), a softmax
// over channels (which reads NCHW), a head of global pooling and a
// linear layer, a convolution by a weight the caller gives, and a rank-5
// product of a convolution's output.
// Convolution outputs are program outputs too.
ModuleBuilder Network(std::mt19937_64& rng, DType dtype) {
  ModuleBuilder b(rng);
  auto weight = [&](std::vector<int64_t> dims, double bound) {
    return b.Const(RandomData(dtype, dims, rng, -bound, bound));
  };
  Node* x = b.In(dtype, {2, 5, 23, 19}, -1, 1);
  Node* h = b.Call("relu", {b.Call("conv2d", {x, weight({16, 5, 3, 3}, 0.3), weight({16}, 0.5)},
                                   {{"stride", Ints({2, 2})}, {"padding", Ints({1, 1})}})});
  Node* pooled = b.Call("max_pool2d", {h, Ints({3, 3})},
                        {{"stride", Ints({2, 2})}, {"padding", Ints({1, 1})}});
  Node* mixed = b.Call("conv2d", {pooled, weight({24, 16, 1, 1}, 0.3)});
  Node* shortcut = b.Call("conv2d", {h, weight({24, 16, 1, 1}, 0.3), weight({24}, 0.5)},
                          {{"stride", Ints({2, 2})}});
  // h is 12 x 10, pooled and the shortcut 6 x 5.
  Node* sum = b.Call("relu", {b.Call("add", {mixed, shortcut})});
  Node* dilated = b.Call("conv2d", {sum, weight({8, 24, 3, 2}, 0.2)},
                         {{"stride", Ints({1, 2})},
                          {"padding", Ints({2, 1})},
                          {"dilation", Ints({2, 1})}});
  Node* normed = b.Call("batch_norm",
                        {dilated, weight({8}, 0.5), b.Const(RandomData(dtype, {8}, rng, 0.5, 2)),
                         weight({8}, 1), weight({8}, 1)},
                        {{"eps", 1e-5}});
  Node* averaged = b.Call("avg_pool2d", {normed, Ints({2, 2})}, {{"stride", Ints({1, 1})}});
  Node* grouped = b.Call("conv2d", {averaged, weight({8, 4, 1, 1}, 0.3)}, {{"groups", int64_t{2}}});
  Node* channels = b.Call("softmax", {grouped, int64_t{1}});
  Node* head = b.Call("linear", {b.Call("flatten", {b.Call("adaptive_avg_pool2d", {sum, Ints({1, 1})}), int64_t{1}}),
                                 weight({10, 24}, 0.3), weight({10}, 0.5)});
  // A weight the caller gives: the product takes it in its own order.
  Node* given = b.Call("conv2d", {pooled, b.In(dtype, {4, 16, 3, 3}, -0.3, 0.3)},
                       {{"padding", Ints({1, 1})}});
  // A channels-last value broadcast into a rank-5 product.
  Node* five = b.Call("mul", {dilated, b.In(dtype, {2, 2, 8, 6, 3}, -1, 1)});
  b.Out({h, dilated, channels, head, given, five});
  return b;
}

TEST(CudaConv, UngroupedFloatConvolutionsRunAsProducts) {
  CUDA_TEST_SEED(rng);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    ModuleBuilder b = Network(rng, dtype);
    ASSERT_OK_AND_ASSIGN(StepProgram program, cuda::BuildCudaProgram(b.module(), TypesOf(b), {}));
    // gemm=graft: graft's implicit-GEMM kernel wherever it can run.
    cuda::CudaOptions graft_gemm;
    graft_gemm.gemm = "graft";
    ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(program, graft_gemm, 132));
    int products = 0, with_columns = 0, direct = 0, copies_to_nchw = 0, taps_outer = 0;
    int implicit = 0;
    for (size_t i = 0; i < program.steps.size(); ++i) {
      const Step& step = program.steps[i];
      const std::vector<cuda::KernelLaunch>& launches = source.launches[i];
      int column_kernels = 0;
      for (const cuda::KernelLaunch& launch : launches) column_kernels += launch.writes_columns;
      if (step.kind == StepKind::kCopy && !step.channels_last) ++copies_to_nchw;
      if (step.node->is_call("max_pool2d")) {
        // Over channels-last values: 16 bytes of a pixel's channels a load.
        EXPECT_TRUE(step.channels_last);
        ASSERT_EQ(launches.size(), 1u);
        EXPECT_THAT(source.units[launches[0].unit],
                    HasSubstr(absl::StrCat("g_ldv(a, p1 + ((rest * 12 + y) * 10 + x) * 16 + cp * ",
                                           16 / DTypeSize(dtype), ");")));
      }
      if (step.kind != StepKind::kLibrary || !step.node->is_call("conv2d")) {
        EXPECT_EQ(column_kernels, 0) << step.node->name();
        continue;
      }
      if (!cuda::IsConvGemmStep(step)) {
        // The grouped one: the direct kernel, over NCHW.
        ++direct;
        EXPECT_FALSE(step.channels_last);
        EXPECT_FALSE(cuda::IsGemmStep(step));
        continue;
      }
      ++products;
      EXPECT_TRUE(step.channels_last);
      EXPECT_TRUE(step.operand_channels_last[0]);
      EXPECT_TRUE(cuda::IsGemmStep(step));
      ASSERT_OK_AND_ASSIGN(const cuda::ConvGemm c, cuda::ConvGemmFor(step, program));
      EXPECT_EQ(c.taps_k, DimsOf(*step.node->inputs()[1])[1] * c.kernel_h * c.kernel_w);
      // By taps, K is padded to rows of 16 bytes (5 x 3 x 3 = 45 to 48).
      if (cuda::ConvTapsOuter(step, program)) {
        EXPECT_EQ(c.gemm.k * static_cast<int64_t>(DTypeSize(dtype)) % 16, 0);
        EXPECT_LT(c.gemm.k - c.taps_k, 16 / static_cast<int64_t>(DTypeSize(dtype)));
      } else {
        EXPECT_EQ(c.gemm.k, c.taps_k);
      }
      // In bf16 and f16, graft's implicit-GEMM kernel gathers the patches
      // itself, one launch, where the weight is a module tensor (K by
      // taps): the first convolution (5 channels, each element of a patch
      // read apart), the dilated one and the strided 1x1 shortcut, with
      // the residual and ReLU.
      if (std::optional<cuda::ImplicitConv> plan =
              cuda::ImplicitConvFor(step, program, graft_gemm, 132, 90)) {
        ++implicit;
        EXPECT_EQ(column_kernels, 0) << step.node->name();
        ASSERT_EQ(launches.size(), 1u);
        EXPECT_THAT(source.units[launches[0].unit],
                    HasSubstr(absl::StrCat("g_iconv::conv<tile, ", dtype == DType::kBF16 ? "g_bfloat" : "g_half")));
        EXPECT_EQ(plan->residual, step.residual >= 0);
        // K by 64 through 3 stages (72 KB of dynamic shared memory); a
        // block of 64 pixels by 32 through 4 where elements are read apart.
        EXPECT_EQ(plan->depth, c.in_channels % 8 == 0 ? 64 : 32);
        EXPECT_EQ(launches[0].shared_bytes, c.in_channels % 8 == 0 ? 73728 : 32768);
        EXPECT_EQ(launches[0].block, 128);
        EXPECT_EQ(plan->activation, step.activation);
        // Too few tiles to be the faster (gemm=auto), or on cuBLASLt
        // (gemm=cublaslt): a column kernel writes the patches.
        for (const char* gemm : {"auto", "cublaslt"}) {
          cuda::CudaOptions other;
          other.gemm = gemm;
          EXPECT_FALSE(cuda::ImplicitConvFor(step, program, other, 132, 90).has_value()) << gemm;
        }
        continue;
      }
      // Only the 1x1 convolution of stride 1 reads its input as it is.
      EXPECT_EQ(column_kernels, c.needs_columns ? 1 : 0) << step.node->name();
      with_columns += column_kernels;
      // Module weights of kernels larger than 1x1, and 1x1 kernels: K by
      // taps, the patches copied 16 bytes at a time where a pixel's
      // channels are a multiple of 16 bytes; else one element at a time.
      const bool by_taps = c.taps_outer;
      EXPECT_EQ(by_taps, cuda::ConvTapsOuter(step, program) || c.kernel_h * c.kernel_w == 1);
      taps_outer += by_taps;
      for (const cuda::KernelLaunch& launch : launches) {
        if (!launch.writes_columns) continue;
        const std::string& unit = source.units[launch.unit];
        const size_t at = unit.find(absl::StrCat(" ", launch.name, "("));
        ASSERT_NE(at, std::string::npos);
        const std::string kernel = unit.substr(at, unit.find("\n}", at) - at);
        const bool wide = c.in_channels * static_cast<int64_t>(DTypeSize(dtype)) % 16 == 0;
        EXPECT_EQ(kernel.find("const uint4* __restrict__ p1") != std::string::npos, by_taps && wide)
            << kernel;
        // An odd channel count by taps (the first convolution's 5): a
        // thread per 16 bytes of a patch row, stored at once.
        EXPECT_EQ(kernel.find("*(uint4*)(columns + i * ") != std::string::npos,
                  by_taps && c.in_channels % 2 == 1 && c.kernel_h * c.kernel_w > 1)
            << kernel;
      }
    }
    const bool half = dtype != DType::kF32;
    EXPECT_EQ(products, 5);
    EXPECT_EQ(implicit, half ? 3 : 0);
    EXPECT_EQ(with_columns, half ? 1 : 4);
    // The first convolution, the dilated one and the two 1x1 ones (the
    // implicit ones aside).
    EXPECT_EQ(taps_outer, half ? 1 : 4);
    // The state slots of the first two, and only theirs, are uploaded
    // permuted.
    EXPECT_EQ(cuda::TapsOuterWeightSlots(program).size(), 2u);
    EXPECT_EQ(direct, 1);
    // NCHW for the grouped convolution's input, the softmax's and the
    // program's outputs.
    EXPECT_GE(copies_to_nchw, 2);
    // The ReLU after the first convolution is cuBLASLt's epilogue; so are
    // the residual add of the two 1x1 convolutions (in the later one, the
    // shortcut) and the ReLU after it.
    int relus = 0, residuals = 0;
    for (const Step& step : program.steps) {
      relus += step.activation == "relu";
      if (step.residual < 0) continue;
      ++residuals;
      EXPECT_TRUE(cuda::IsConvGemmStep(step));
      EXPECT_EQ(step.activation, "relu");
      EXPECT_TRUE(step.operand_channels_last[step.residual]);
    }
    EXPECT_EQ(relus, 2);
    EXPECT_EQ(residuals, 1);
    // No kernel of its own for the sum (the network's only add, which
    // with its ReLU would otherwise be a fused group).
    for (const Step& step : program.steps) {
      EXPECT_FALSE(step.node->is_call("add") || step.node->op() == OpCode::kCallModule)
          << step.node->name();
    }
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> cubins,
                         cuda::CompileUnitsToCubins(source.units, "sm_90"));
    EXPECT_EQ(cubins.size(), source.units.size());
  }
}

// A residual that the convolution also reads, as its weight, through an
// NCHW copy of a channels-last value: the sum is not the product's C (C
// must be the residual's own NHWC bytes), and the results stay right.
TEST(CudaConv, AResidualIsAddedInItsOwnLayout) {
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* z = b.In(DType::kF32, {4, 4, 3, 3}, -1, 1);
  Node* w = b.Call("relu", {b.Call("conv2d", {z, b.Const(DType::kF32, {4, 4, 1, 1}, -1, 1)})});
  Node* x = b.In(DType::kF32, {4, 4, 3, 3}, -1, 1);
  Node* y = b.Call("conv2d", {x, w}, {{"padding", Ints({1, 1})}});
  b.Out({b.Call("softmax", {b.Call("add", {y, w}), int64_t{1}})});
  ASSERT_OK_AND_ASSIGN(StepProgram program, cuda::BuildCudaProgram(b.module(), TypesOf(b), {}));
  int products = 0;
  for (const Step& step : program.steps) {
    if (!cuda::IsConvGemmStep(step)) continue;
    ++products;
    EXPECT_LT(step.residual, 0) << step.node->name();
  }
  EXPECT_EQ(products, 2);
  SKIP_WITHOUT_GPU();
  ExpectCudaMatchesInterp(b, kReduceTol);
}

TEST(CudaConv, TapsOuterWeightsPutEachTapsChannelsTogether) {
  Tensor w(DType::kF32, {2, 3, 2, 2});
  for (int64_t i = 0; i < w.NumElements(); ++i) w.data<float>()[i] = static_cast<float>(i + 1);
  const Tensor t = cuda::TapsOuterWeights(w, 16);  // 12 taps' channels, then 4 zeros.
  ASSERT_EQ(t.dims(), (std::vector<int64_t>{2, 16}));
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t tap = 0; tap < 4; ++tap) {
        EXPECT_EQ(t.data<float>()[o * 16 + tap * 3 + c], w.data<float>()[(o * 3 + c) * 4 + tap]);
      }
    }
    for (int64_t k = 12; k < 16; ++k) EXPECT_EQ(t.data<float>()[o * 16 + k], 0.0f);
  }
}

TEST(CudaConv, WhatStaysOnTheDirectKernel) {
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF64, {1, 4, 6, 6}, -1, 1);
  Node* f64 = b.Call("conv2d", {x, b.Const(DType::kF64, {2, 4, 3, 3}, -1, 1)});
  Node* grouped = b.Call("conv2d", {b.In(DType::kF32, {1, 4, 6, 6}, -1, 1),
                                    b.Const(DType::kF32, {4, 2, 3, 3}, -1, 1)},
                         {{"groups", int64_t{2}}});
  // One value as input and weight: the product would need it in two layouts.
  Node* square = b.In(DType::kF32, {4, 4, 3, 3}, -1, 1);
  Node* self = b.Call("conv2d", {square, square});
  b.Out({f64, grouped, self});
  EXPECT_THAT(cuda::ConvGemmOf(*f64).status().message(), HasSubstr("f64"));
  EXPECT_THAT(cuda::ConvGemmOf(*grouped).status().message(), HasSubstr("grouped"));
  EXPECT_THAT(cuda::ConvGemmOf(*self).status().message(), HasSubstr("weight is its input"));
  // The stem of ResNet-18 in f32 at batch 145: 1.0695e9 bytes of patches
  // at K = 147, past 2^30 only at the padded 148 that running by taps
  // needs. Refused here, so that no program plans it as a product.
  absl::StatusOr<Module> stem = ParseModule(R"(
tensor w : f32[64,3,7,7] = zeros
graph():
    %x : f32[145,3,224,224] = placeholder[target=x]
    %w = get_attr[target=w]
    %y = call_function[target=conv2d](args = (%x, %w), kwargs = {stride: [2, 2], padding: [3, 3]})
    return y
)");
  ASSERT_OK(stem.status());
  ASSERT_OK(passes::PropagateShapes(*stem).status());
  EXPECT_THAT(cuda::ConvGemmOf(*stem->graph().output()->inputs()[0]).status().message(),
              HasSubstr("columns take"));
  // Columns past kMaxConvColumnBytes: 4 x 1024 x 1024 rows of 9 x 64 f32.
  absl::StatusOr<Module> big = ParseModule(R"(
tensor w : f32[8,64,3,3] = zeros
graph():
    %x : f32[4,64,1024,1024] = placeholder[target=x]
    %w = get_attr[target=w]
    %y = call_function[target=conv2d](args = (%x, %w), kwargs = {padding: [1, 1]})
    return y
)");
  ASSERT_OK(big.status());
  ASSERT_OK(passes::PropagateShapes(*big).status());
  const Node* wide = big->graph().output()->inputs()[0];
  EXPECT_THAT(cuda::ConvGemmOf(*wide).status().message(), HasSubstr("columns take"));
  SKIP_WITHOUT_GPU();
  ExpectCudaMatchesInterp(b, kReduceTol);
}

// The module compiled at `precision` (tf32, bf16 or f16; the gemm option
// `gemm`) against the
// interpreter in f32: the norm of each output's error within DESIGN
// section 5's tolerance of the output's norm.
void ExpectNormsClose(const ModuleBuilder& b, const std::string& precision,
                      const std::string& gemm = "auto") {
  CompileOptions options;
  options.options["precision"] = precision;
  options.options["gemm"] = gemm;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(b.inputs()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> compiled, Cuda().Compile(b.module(), options));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, compiled->Run(b.inputs()));
  ASSERT_EQ(got.size(), want.size());
  const double tol = precision == "tf32" ? kTf32Tol : kHalfTol;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].type(), want[i].type()) << "output " << i;
    const L2Comparison c = CompareL2(got[i], want[i]);
    EXPECT_EQ(c.nonfinite_mismatches, 0) << "output " << i;
    EXPECT_LE(c.diff, tol * c.norm) << "output " << i;
  }
}

TEST(CudaConv, ProductsMatchTheInterpreter) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  ModuleBuilder b = Network(rng, DType::kF32);
  ExpectCudaMatchesInterp(b, kReduceTol);
  // tf32, and the network cast to bf16 and f16 by the precision option:
  // the norm of each output's error.
  for (const char* precision : {"tf32", "bf16", "f16"}) {
    SCOPED_TRACE(precision);
    ExpectNormsClose(b, precision);
  }
  // Every convolution that can, on graft's implicit-GEMM kernel.
  for (const char* precision : {"bf16", "f16"}) {
    SCOPED_TRACE(absl::StrCat(precision, ", gemm=graft"));
    ExpectNormsClose(b, precision, "graft");
  }
}

// Convolutions of random shapes, as a model a user brings may have: any
// channel counts (odd ones need padded rows; up to 160 outputs, so up to
// three column tiles), kernels of 1 to 7 by 1 to 7, strides, padding and
// dilation of either axis, with and without bias (a module tensor or the
// caller's, which a graph run binds in place), a second convolution added
// as the residual of some, a ReLU after some, a weight the caller gives
// for some, and outputs read both from inside the program (channels last)
// and as its own outputs. In `dtype` (f32, or bf16 and f16 values stored
// as such), on fresh random data.
ModuleBuilder RandomConvolutions(std::mt19937_64& rng, DType dtype, std::string& shapes) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  ModuleBuilder b(rng);
  std::vector<Node*> outputs;
  for (int i = 0; i < 8; ++i) {
    // Half the channel counts multiples of 8, as the implicit kernel's
    // 16-byte copies need (implicit_conv.h).
    const int64_t n = pick(1, 3), cin = pick(0, 1) == 1 ? 8 * pick(1, 4) : pick(1, 21);
    const int64_t cout = pick(0, 3) == 0 ? pick(65, 160) : pick(1, 33);
    const int64_t kh = pick(1, 7), kw = pick(1, 7), sh = pick(1, 3), sw = pick(1, 3);
    const int64_t dh = pick(1, 2), dw = pick(1, 2), ph = pick(0, 3), pw = pick(0, 3);
    // At least one output pixel each way.
    const int64_t h = std::max(pick(1, 17), dh * (kh - 1) + 1 - 2 * ph);
    const int64_t w = std::max(pick(1, 17), dw * (kw - 1) + 1 - 2 * pw);
    absl::StrAppend(&shapes, " [", n, ",", cin, ",", h, ",", w, "]*[", cout, ",", cin, ",", kh,
                    ",", kw, "] s", sh, ",", sw, " p", ph, ",", pw, " d", dh, ",", dw, ";");
    Node* x = b.In(dtype, {n, cin, h, w}, -1, 1);
    Node* weight = pick(0, 3) == 0 ? b.In(dtype, {cout, cin, kh, kw}, -0.3, 0.3)
                                   : b.Const(dtype, {cout, cin, kh, kw}, -0.3, 0.3);
    std::vector<Argument> args = {x, weight};
    const int64_t bias = pick(0, 2);
    if (bias == 1) args.push_back(b.Const(dtype, {cout}, -0.5, 0.5));
    if (bias == 2) args.push_back(b.In(dtype, {cout}, -0.5, 0.5));
    const Kwargs geometry{{"stride", Ints({sh, sw})},
                          {"padding", Ints({ph, pw})},
                          {"dilation", Ints({dh, dw})}};
    Node* y = b.Call("conv2d", args, geometry);
    // A second convolution of the same geometry added: the later of the
    // two takes the earlier as its residual.
    if (pick(0, 2) == 0) {
      y = b.Call("add", {y, b.Call("conv2d", {x, b.Const(dtype, {cout, cin, kh, kw}, -0.3, 0.3)},
                                   geometry)});
    }
    if (pick(0, 1) == 1) y = b.Call("relu", {y});
    // Read inside the program (a pointwise kernel over channels-last
    // values), or returned as it is. The pointwise op keeps the values'
    // scale: a squashing one (tanh) would leave a residual sum's bf16
    // rounding, taken at the operands' larger scale, beyond a tolerance
    // relative to the squashed result.
    outputs.push_back(pick(0, 1) == 1 ? b.Call("mul", {y, -0.5}) : y);
  }
  b.Out(outputs);
  return b;
}

// How many convolutions of `b` graft's implicit kernel runs with `options`
// on an H100's 132 multiprocessors.
int ImplicitConvolutions(const ModuleBuilder& b, const cuda::CudaOptions& options) {
  absl::StatusOr<StepProgram> program = cuda::BuildCudaProgram(b.module(), TypesOf(b), options);
  if (!program.ok()) return -1;
  int n = 0;
  for (const Step& step : program->steps) {
    n += cuda::ImplicitConvFor(step, *program, options, 132, 90).has_value();
  }
  return n;
}

TEST(CudaConv, RandomShapesMatchTheInterpreter) {
  CUDA_TEST_SEED(rng);
  // Three rounds: f32 (auto) beside bf16, bf16, f16 with gemm=graft, where
  // every convolution that can runs implicit (auto keeps these small ones
  // on cuBLASLt), compared each element with the interpreter's, which
  // computes bf16 and f16 values in f32 too.
  struct Round {
    std::string shapes, half_shapes;
    ModuleBuilder f32, half;
  };
  std::vector<Round> rounds;
  cuda::CudaOptions graft_gemm;
  graft_gemm.gemm = "graft";
  for (int round = 0; round < 3; ++round) {
    std::string shapes, half_shapes;
    ModuleBuilder f32 = RandomConvolutions(rng, DType::kF32, shapes);
    ModuleBuilder half =
        RandomConvolutions(rng, round == 2 ? DType::kF16 : DType::kBF16, half_shapes);
    EXPECT_GT(ImplicitConvolutions(half, graft_gemm), 0) << half_shapes;
    rounds.push_back({shapes, half_shapes, std::move(f32), std::move(half)});
  }
  SKIP_WITHOUT_GPU();
  CompileOptions options;
  options.options["gemm"] = "graft";
  for (const Round& r : rounds) {
    {
      SCOPED_TRACE(r.shapes);
      ExpectCudaMatchesInterp(r.f32, kReduceTol);
    }
    SCOPED_TRACE(r.half_shapes);
    ExpectCudaMatchesInterp(r.half, kHalfTol, options);
  }
}

// The caller's bias, which a graph run reads in place (its kernel node
// re-pointed every run, dynamic shared memory and all), under an implicit
// convolution between other kernels, in bf16; run twice, with new data.
TEST(CudaConv, AnImplicitConvolutionReadsTheCallersBiasInAGraph) {
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.Call("tanh", {b.In(DType::kBF16, {2, 16, 12, 12}, -1, 1)});
  Node* y = b.Call("conv2d", {x, b.Const(DType::kBF16, {24, 16, 3, 3}, -0.2, 0.2),
                              b.In(DType::kBF16, {24}, -0.5, 0.5)},
                   {{"padding", Ints({1, 1})}});
  b.Out({b.Call("softmax", {b.Call("relu", {y}), int64_t{1}})});
  cuda::CudaOptions graft_gemm;
  graft_gemm.gemm = "graft";
  EXPECT_EQ(ImplicitConvolutions(b, graft_gemm), 1);
  SKIP_WITHOUT_GPU();
  CompileOptions options;
  options.options["gemm"] = "graft";
  ExpectCudaMatchesInterp(b, kHalfTol, options);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> compiled, Cuda().Compile(b.module(), options));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> inputs = {RandomData(DType::kBF16, {2, 16, 12, 12}, rng, -1, 1),
                                  RandomData(DType::kBF16, {24}, rng, -0.5, 0.5)};
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, compiled->Run(inputs));
    ExpectAllClose(got, want, kHalfTol, compiled->output_signature());
  }
}

// A K past kImplicitConvMaxK (864) runs implicit only over tiles that fill
// the multiprocessors twice: 69 x 4 blocks do on 132, not on 140.
TEST(CudaConv, ALongKIsImplicitOverEnoughTiles) {
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {2, 96, 66, 66}, -1, 1);
  Node* y = b.Call("conv2d", {x, b.Const(DType::kF32, {256, 96, 3, 3}, -0.05, 0.05),
                              b.Const(DType::kF32, {256}, -0.5, 0.5)},
                   {{"padding", Ints({1, 1})}});
  b.Out({b.Call("softmax", {b.Call("relu", {y}), int64_t{1}})});  // The ReLU: the kernel's.
  cuda::CudaOptions options;
  options.precision = "bf16";
  ASSERT_OK_AND_ASSIGN(StepProgram program, cuda::BuildCudaProgram(b.module(), TypesOf(b), options));
  int convolutions = 0;
  for (const Step& step : program.steps) {
    if (!step.node->is_call("conv2d")) continue;
    ++convolutions;
    std::optional<cuda::ImplicitConv> plan = cuda::ImplicitConvFor(step, program, options, 132, 90);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->grid, 69 * 4);
    EXPECT_EQ(plan->activation, "relu");
    EXPECT_FALSE(cuda::ImplicitConvFor(step, program, options, 140, 90).has_value());
    EXPECT_FALSE(cuda::ImplicitConvFor(step, program, options, 132, 75).has_value());
  }
  EXPECT_EQ(convolutions, 1);
  SKIP_WITHOUT_GPU();
  ExpectNormsClose(b, "bf16");
}

}  // namespace
}  // namespace graft::cuda_test
