// graft's own product for few rows (backends/cuda/skinny_gemm.h) against
// the interpreter, in every precision, at the shapes around its edges:
// rows of x not a multiple of 8, weight rows not a multiple of 16 or 64,
// K not a multiple of the unrolled step, K split over many blocks. The
// kernels of every mode compile by NVRTC on any machine; the runs need a
// GPU.

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "backends/cuda/skinny_gemm.h"
#include "gtest/gtest.h"
#include "passes/shape_prop.h"
#include "support/status_matchers.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

struct Shape {
  int64_t m, n, k;
};

// `t` with every element rounded to `dtype` (still stored as f32), so a
// model cast to bf16 or f16 multiplies exactly the values the
// interpreter does in f32: only the order of the sums and the rounding
// of the result differ, however much the products cancel.
// tf32 is f32 with 10 mantissa bits, rounded to nearest, ties away from
// zero (cvt.rna.tf32.f32).
float RoundedToTf32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&v, &bits, 4);
  return v;
}

Tensor RoundedTo(const Tensor& t, DType dtype, bool tf32 = false) {
  if (tf32) {
    Tensor out = t.Clone();
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      out.data<float>()[i] = RoundedToTf32(t.data<float>()[i]);
    }
    return out;
  }
  return dtype == DType::kF32 ? t : RoundedThrough(t, dtype);
}

// Each activation the kernel fuses, with and without a bias, one weight
// given as an input rather than a module tensor, and one computed by a
// kernel of the run just before the product (which must wait for it).
ModuleBuilder Products(std::mt19937_64& rng, const Shape& s, DType round = DType::kF32,
                       bool tf32 = false) {
  ModuleBuilder b(rng);
  auto data = [&](std::vector<int64_t> dims, double lo, double hi) {
    return RoundedTo(RandomData(DType::kF32, dims, rng, lo, hi), round, tf32);
  };
  Node* x = b.In(data({s.m, s.k}, -1, 1));
  Node* w = b.Const(data({s.n, s.k}, -0.5, 0.5));
  Node* bias = b.Const(data({s.n}, -1, 1));
  Node* w_in = b.In(data({s.n, s.k}, -0.5, 0.5));
  std::vector<Node*> out{b.Call("linear", {x, w}), b.Call("linear", {x, w_in, bias}),
                         b.Call("linear", {x, b.Call("neg", {w_in})})};
  for (const char* activation : {"relu", "gelu", "gelu_tanh"}) {
    out.push_back(b.Call("graft::linear_activation", {x, w},
                         {{"bias", bias}, {"activation", activation}}));
  }
  b.Out(out);
  return b;
}

// The last has more tiles than the GPU has room for blocks: one chunk of
// all of K, whose rows of x (f32, tf32) are too many for shared memory.
// tf32's x of more than 8192 values a row is read twice by the kernel
// that scales it (16400).
constexpr Shape kShapes[] = {{1, 1, 8},      {3, 17, 24},     {8, 64, 128},
                             {31, 65, 1000}, {64, 300, 4104}, {5, 2048, 512},
                             {33, 40, 8192}, {4, 64, 16400},  {64, 34000, 256}};

double ToleranceOf(const std::string& precision) {
  if (precision == "f32") return kReduceTol;
  return precision == "tf32" ? kTf32Tol : kHalfTol;
}

TEST(CudaSkinnyGemm, EveryModeCompilesWithNvrtc) {
  std::mt19937_64 rng(1);
  for (const Shape& s : {Shape{3, 17, 24}, Shape{64, 300, 4104}, Shape{4, 64, 16400}}) {
    ModuleBuilder b = Products(rng, s);
    for (const char* precision : {"f32", "tf32", "bf16", "f16"}) {
      SCOPED_TRACE(absl::StrCat(precision, " m=", s.m, " n=", s.n, " k=", s.k));
      cuda::CudaOptions options;
      options.precision = precision;
      options.gemm = "graft";
      options.l2_cache_bytes = int64_t{50} << 20;  // An H100's: the kernels prefetch.
      std::vector<TensorType> types;
      for (const Tensor& t : b.inputs()) types.push_back(t.type());
      ASSERT_OK_AND_ASSIGN(StepProgram program,
                           cuda::BuildCudaProgram(b.module(), types, options));
      int skinny = 0, ready = 0, prefetching = 0, before_ampere = 0;
      for (const Step& step : program.steps) {
        const std::optional<cuda::SkinnyGemm> plan = cuda::SkinnyGemmFor(step, options, 132);
        skinny += plan ? 1 : 0;
        ready += plan && plan->weights_ready ? 1 : 0;
        prefetching += plan && plan->prefetch_weights ? 1 : 0;
        before_ampere += cuda::SkinnyGemmFor(step, options, 132, 75) ? 1 : 0;
      }
      EXPECT_EQ(skinny, 6);  // Every product.
      EXPECT_EQ(ready, 4);   // Those of the module tensor w, not w_in or -w_in.
      EXPECT_EQ(prefetching, 4);
      EXPECT_EQ(before_ampere, 0);  // No bf16/tf32 tensor-core products there.
      ASSERT_OK_AND_ASSIGN(cuda::KernelSource source,
                           cuda::GenerateKernels(program, options, 132));
      ASSERT_OK_AND_ASSIGN(std::vector<std::string> cubins,
                           cuda::CompileUnitsToCubins(source.units, "sm_90"));
      EXPECT_EQ(cubins.size(), source.units.size());
      // An A100 (8.0, 108 SMs): the same kernels without Hopper's
      // dependent launch.
      ASSERT_OK_AND_ASSIGN(cuda::KernelSource ampere,
                           cuda::GenerateKernels(program, options, 108, 80));
      EXPECT_OK(cuda::CompileUnitsToCubins(ampere.units, "sm_80").status());
      for (const auto& step : ampere.launches) {
        for (const cuda::KernelLaunch& launch : step) EXPECT_FALSE(launch.programmatic);
      }
    }
  }
}

TEST(CudaSkinnyGemm, SplitsLongProductsAndLeavesWideOnesToCublasLt) {
  std::mt19937_64 rng(2);
  cuda::CudaOptions options;
  for (const auto& [shape, want_skinny, want_split] :
       std::vector<std::tuple<Shape, bool, bool>>{{{32, 4096, 4096}, true, true},
                                                  {{64, 1024, 4096}, true, true},
                                                  {{65, 1024, 4096}, false, false},
                                                  {{32, 64, 64}, true, false}}) {
    SCOPED_TRACE(absl::StrCat("m=", shape.m, " n=", shape.n, " k=", shape.k));
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {shape.m, shape.k});
    b.Out({b.Call("linear", {x, b.Const(DType::kF32, {shape.n, shape.k})})});
    ASSERT_OK_AND_ASSIGN(StepProgram program,
                         cuda::BuildCudaProgram(b.module(), {b.inputs()[0].type()}, options));
    ASSERT_EQ(program.steps.size(), 1u);
    const std::optional<cuda::SkinnyGemm> plan =
        cuda::SkinnyGemmFor(program.steps[0], options, 132);
    ASSERT_EQ(plan.has_value(), want_skinny);
    if (!plan) continue;
    EXPECT_EQ(plan->splits > 1, want_split);
    EXPECT_GE(plan->splits * plan->chunk, shape.k);
    EXPECT_LT((plan->splits - 1) * plan->chunk, shape.k);  // No empty chunk.
    EXPECT_LE(plan->ScratchBytes(), cuda::kGemmWorkspaceBytes);
    // Where K is split, a block's rows of x over its chunk fit the kernel's
    // 40 KB of shared memory (f32: 4 bytes, rows padded by 16 elements).
    if (plan->splits > 1) {
      EXPECT_LE(plan->tile_rows * (plan->chunk + 16) * 4, 40 * 1024);
    }
    options.gemm = "cublaslt";
    EXPECT_FALSE(cuda::SkinnyGemmFor(program.steps[0], options, 132).has_value());
    options.gemm = "auto";
    options.precision = "tf32";  // Not tf32 by default.
    EXPECT_FALSE(cuda::SkinnyGemmFor(program.steps[0], options, 132).has_value());
    options.gemm = "graft";
    EXPECT_TRUE(cuda::SkinnyGemmFor(program.steps[0], options, 132).has_value());
    options = {};
  }
}

// gemm=auto in bf16: weights up to 16 MB on graft's kernel, larger on
// cuBLASLt; gemm=graft takes both.
TEST(CudaSkinnyGemm, AutoLeavesLargeHalfWeightsToCublasLt) {
  std::mt19937_64 rng(3);
  for (const auto& [n, want_auto] : std::vector<std::pair<int64_t, bool>>{{1024, true},
                                                                          {4096, false}}) {
    SCOPED_TRACE(absl::StrCat("n=", n));
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {32, 4096});
    b.Out({b.Call("linear", {x, b.Const(DType::kF32, {n, 4096})})});
    cuda::CudaOptions options;
    options.precision = "bf16";
    ASSERT_OK_AND_ASSIGN(StepProgram program,
                         cuda::BuildCudaProgram(b.module(), {b.inputs()[0].type()}, options));
    int skinny = 0, graft = 0;
    for (const Step& step : program.steps) {
      skinny += cuda::SkinnyGemmFor(step, options, 132) ? 1 : 0;
      options.gemm = "graft";
      graft += cuda::SkinnyGemmFor(step, options, 132) ? 1 : 0;
      options.gemm = "auto";
    }
    EXPECT_EQ(skinny, want_auto ? 1 : 0);
    EXPECT_EQ(graft, 1);
  }
}

// A block prefetches its weights into L2 only where they are module
// tensors (nothing in the run writes them, so they may be read before the
// wait for the kernel before) that fill at most 60% of the GPU's L2, on
// Hopper (the bulk prefetch is sm_90's).
TEST(CudaSkinnyGemm, PrefetchesModuleWeightsThatFitInL2) {
  std::mt19937_64 rng(4);
  constexpr int64_t kL2 = int64_t{60} << 20;  // An H200's.
  struct Case {
    const char* precision;
    int64_t n;
    int64_t l2;
    int compute_capability;
    bool want;
  };
  for (const Case& c : std::vector<Case>{{"bf16", 4096, kL2, 90, true},   // 32 MB.
                                         {"f32", 1024, kL2, 90, true},    // 16 MB.
                                         {"f32", 4096, kL2, 90, false},   // 64 MB.
                                         {"bf16", 4096, int64_t{50} << 20, 90, false},
                                         {"bf16", 1024, 0, 90, false},    // L2 unknown.
                                         {"bf16", 1024, kL2, 80, false}}) {
    SCOPED_TRACE(absl::StrCat(c.precision, " n=", c.n, " l2=", c.l2, " sm_", c.compute_capability));
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {32, 4096});
    Node* w_in = b.In(DType::kF32, {c.n, 4096});
    b.Out({b.Call("linear", {x, b.Const(DType::kF32, {c.n, 4096})}), b.Call("linear", {x, w_in})});
    cuda::CudaOptions options;
    options.precision = c.precision;
    options.gemm = "graft";
    options.l2_cache_bytes = c.l2;
    ASSERT_OK_AND_ASSIGN(StepProgram program,
                         cuda::BuildCudaProgram(b.module(), {b.inputs()[0].type(), b.inputs()[1].type()},
                                                options));
    int module_weights = 0, inputs = 0;
    for (const Step& step : program.steps) {
      const std::optional<cuda::SkinnyGemm> plan =
          cuda::SkinnyGemmFor(step, options, 132, c.compute_capability);
      if (!plan) continue;
      (plan->weights_ready ? module_weights : inputs) += 1;
      EXPECT_EQ(plan->prefetch_weights, plan->weights_ready && c.want);
      EXPECT_EQ(cuda::SkinnyGemmKernel("k", *plan).find(plan->prefetch_weights ? ", true>(" : ", false>(") !=
                    std::string::npos,
                true);
    }
    EXPECT_EQ(module_weights, 1);
    EXPECT_EQ(inputs, 1);  // The weight given as an input is never prefetched.
  }
}

// An f32 weight as tf32's f16 form: each row's power-of-two scale puts its
// largest finite value in [2^14, 2^15), so every value within 2^14 of it
// keeps 11 significant bits (as tf32), whatever the row's magnitude.
TEST(CudaSkinnyGemm, ScaledHalfWeightsKeepTf32sMantissa) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> rows = {
      {3.0f, -1.5f, 0.1f, 2.9999f},
      {1e30f, -7e29f, 3e27f, 1e29f},
      {1e-30f, -2e-31f, 5e-32f, 1e-31f},
      {0.0f, 0.0f, -0.0f, 0.0f},
      {inf, 2.0f, std::nanf(""), -1.0f},
      // Largest below 2^-112: the scale stops at 2^-126.
      {1e-39f, -3e-40f, 2e-41f, 5e-40f},
  };
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  const int64_t n = static_cast<int64_t>(rows.size());
  const Tensor w = Tensor::FromVector<float>(DType::kF32, {n, 4}, flat);
  const Tensor converted = cuda::ScaledHalfWeights(w);
  ASSERT_EQ(converted.NumBytes(), static_cast<size_t>(n * 4 * 2 + n * 4));
  const uint16_t* halves = reinterpret_cast<const uint16_t*>(converted.raw_data());
  const float* scales = reinterpret_cast<const float*>(halves + n * 4);
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE(absl::StrCat("row ", r));
    int e = 0;
    EXPECT_EQ(std::frexp(scales[r], &e), 0.5f) << "a power of two: " << scales[r];
    float largest = 0;
    for (float v : rows[r]) largest = std::isfinite(v) ? std::max(largest, std::fabs(v)) : largest;
    if (largest == 0) {
      EXPECT_EQ(scales[r], 1.0f);
    } else if (largest < 0x1p-112f) {
      EXPECT_EQ(scales[r], 0x1p-126f);
    } else {
      EXPECT_GE(largest / scales[r], 16384.0f);
      EXPECT_LT(largest / scales[r], 32768.0f);
    }
    for (int c = 0; c < 4; ++c) {
      const float want = rows[r][c];
      const float got = HalfToFloat(halves[r * 4 + c]) * scales[r];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got));
      } else if (std::isinf(want)) {
        EXPECT_EQ(got, want);
      } else {
        EXPECT_NEAR(got, want, std::fabs(want) * 0x1p-11f) << "column " << c;
      }
    }
  }
}

// tf32 products of few rows whose weights only such products read run as
// f16 products of scaled operands (mode 5): a kernel writes x's row scales,
// then the product reads them. A weight anything else reads stays f32, on
// cuBLASLt by default; so does every tf32 weight without the program.
TEST(CudaSkinnyGemm, Tf32RunsAsScaledHalfProductsWhereItOwnsTheWeights) {
  std::mt19937_64 rng(5);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {32, 256});
  Node* w1 = b.Const(DType::kF32, {512, 256});
  Node* w2 = b.Const(DType::kF32, {256, 512});
  Node* h = b.Call("relu", {b.Call("linear", {x, w1})});
  Node* y = b.Call("linear", {h, w2});
  // w3 is also an output: its slot must stay f32.
  Node* w3 = b.Const(DType::kF32, {64, 256});
  // w4 reaches its product through a reshape (its slot holds the flat
  // tensor), and g is a product's x as well as its weight.
  Node* w4 = b.Call("reshape", {b.Const(DType::kF32, {64 * 256}), Argument::IntList({64, 256})});
  Node* g = b.Const(DType::kF32, {32, 256});
  b.Out({y, b.Call("linear", {y, w3}), w3, b.Call("linear", {y, w4}), b.Call("linear", {g, g})});
  cuda::CudaOptions options;
  options.precision = "tf32";
  ASSERT_OK_AND_ASSIGN(StepProgram program,
                       cuda::BuildCudaProgram(b.module(), {b.inputs()[0].type()}, options));
  int half = 0, cublas = 0;
  for (const Step& step : program.steps) {
    if (!cuda::IsGemmStep(step)) continue;
    const std::optional<cuda::SkinnyGemm> plan =
        cuda::SkinnyGemmFor(step, options, 132, 90, &program);
    half += plan && plan->mode == 5 ? 1 : 0;
    cublas += plan ? 0 : 1;
    EXPECT_FALSE(cuda::SkinnyGemmFor(step, options, 132).has_value());
  }
  EXPECT_EQ(half, 2);
  EXPECT_EQ(cublas, 3);
  EXPECT_EQ(cuda::HalfWeightSlots(program, options, 90).size(), 2u);
  ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(program, options, 132));
  int with_scales = 0;
  for (const auto& launches : source.launches) {
    if (launches.size() == 2 && launches[0].grid == 32 && launches[1].split_k_scratch) {
      ++with_scales;
    }
  }
  EXPECT_EQ(with_scales, 2);
  EXPECT_OK(cuda::CompileUnitsToCubins(source.units, "sm_90").status());
  // cuBLASLt only: no kernel of graft's.
  options.gemm = "cublaslt";
  EXPECT_TRUE(cuda::HalfWeightSlots(program, options, 90).empty());
}

// Rows of x and of the weights at 1e-20 to 1e20: f16 alone would lose
// them (its range is 6e-8 to 65504); scaled per row, each product keeps
// tf32's precision.
TEST(CudaSkinnyGemm, Tf32AsHalfKeepsRowsOfAnyMagnitude) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  const int64_t m = 6, n = 96, k = 1024;
  // x's rows, the weight's rows (by row % 3), and the product alone (a
  // direct run) or doubled by a step of its own (a CUDA graph's run).
  struct Case {
    std::vector<float> x_rows, w_rows;
    bool two;
  };
  const std::vector<Case> cases = {
      {{1e20f, 1e-20f, 1.0f, 0.0f, 3e4f, 1e-5f}, {1.0f, 1.0f, 1.0f}, false},
      {{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, {1e15f, 1e-15f, 1.0f}, false},
      {{1e20f, 1e-20f, 1.0f, 0.0f, 3e4f, 1e-5f}, {1e15f, 1e-15f, 1.0f}, false},
      {{1e20f, 1e-20f, 1.0f, 0.0f, 3e4f, 1e-5f}, {1e15f, 1e-15f, 1.0f}, true},
      // Scales of 2^98 and 2^-126 whose product is about 2^-28: the sum
      // times x's scale alone would overflow.
      {{1e34f, 1.0f, 1e-30f, 0.0f, 1e34f, 1.0f}, {1e-34f, 1.0f, 1e-20f}, false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("case ", i));
    const Case& c = cases[i];
    Tensor xs = RoundedTo(RandomData(DType::kF32, {m, k}, rng, -1, 1), DType::kF32, true);
    Tensor ws = RoundedTo(RandomData(DType::kF32, {n, k}, rng, -1, 1), DType::kF32, true);
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t j = 0; j < k; ++j) xs.data<float>()[r * k + j] *= c.x_rows[r];
    }
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = 0; j < k; ++j) ws.data<float>()[r * k + j] *= c.w_rows[r % 3];
    }
    ModuleBuilder b(rng);
    Node* y = b.Call("linear", {b.In(xs), b.Const(ws)});
    if (c.two) y = b.Call("mul", {y, 2.0});
    b.Out({y});
    CompileOptions options;
    options.options = {{"precision", "tf32"}};
    {
      // The product runs as mode 5 (else cuBLASLt's tf32 would pass too).
      cuda::CudaOptions cuda_options;
      cuda_options.precision = "tf32";
      ASSERT_OK_AND_ASSIGN(StepProgram program,
                           cuda::BuildCudaProgram(b.module(), TypesOf(b), cuda_options));
      ASSERT_EQ(cuda::HalfWeightSlots(program, cuda_options, 90).size(), 1u);
    }
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(b.module(), options));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(b.inputs()));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exe->Run(b.inputs()));
    // Each output against the sum of its terms' magnitudes: the operands
    // keep 11 significant bits, so each term's error is at most 2^-11 of
    // it (and f16 subnormals lose the values 2^14 below their row's
    // largest), and the sums differ in order and f32 rounding.
    for (int64_t r = 0; r < m; ++r) {
      int wrong = 0;
      std::string first;
      for (int64_t j = 0; j < n; ++j) {
        double bound = 0;
        for (int64_t q = 0; q < k; ++q) {
          bound += std::fabs(double{xs.data<float>()[r * k + q]}) *
                   std::fabs(ws.data<float>()[j * k + q]);
        }
        if (c.two) bound *= 2;
        const double w = want[0].data<float>()[r * n + j], g = got[0].data<float>()[r * n + j];
        if (!(std::fabs(g - w) <= 1e-3 * bound)) {
          if (wrong++ < 3) absl::StrAppend(&first, " [col ", j, ": got ", g, ", want ", w, "]");
        }
      }
      EXPECT_EQ(wrong, 0) << "row " << r << ":" << first;
    }
  }
}

// f32 runs as three tf32 products (hi*hi + hi*lo + lo*hi): operands whose
// bits past tf32's 10 explicit mantissa bits matter must keep them (a tf32
// product alone would lose up to 2^-11 of each term), random full-mantissa
// operands, all positive so that a bias in the split would add up, must
// stay within 4e-6 of the terms' magnitudes, and a NaN in the weights must
// reach the outputs it touches (one whose payload lies in the
// low bits that tf32 drops included). An infinite weight gives a
// non-finite output: NaN, as 3xTF32 products give (docs/backends.md).
TEST(CudaSkinnyGemm, F32KeepsItsBitsAndItsNonFinites) {
  SKIP_WITHOUT_GPU();
  const int64_t m = 4, n = 8, k = 64;
  Tensor x = UninitializedTensor(DType::kF32, {m, k});
  Tensor w = UninitializedTensor(DType::kF32, {n, k});
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      x.data<float>()[r * k + j] = (1.0f + std::ldexp(1.0f, -20) * (j + 1)) * ((r + j) % 3 == 0 ? -1 : 1);
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      w.data<float>()[r * k + j] = 1.0f + std::ldexp(1.0f, -19) * ((r * 7 + j) % 13 + 1);
    }
  }
  uint32_t low_nan = 0x7f800001u;  // A NaN with its payload in tf32's dropped bits.
  std::memcpy(&w.data<float>()[6 * k + 3], &low_nan, 4);
  w.data<float>()[7 * k + 5] = std::numeric_limits<float>::infinity();
  std::mt19937_64 rng(5);
  ModuleBuilder b(rng);
  b.Out({b.Call("linear", {b.In(x), b.Const(w)})});
  CompileOptions options;
  options.options = {{"precision", "f32"}, {"gemm", "graft"}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(b.module(), options));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exe->Run(b.inputs()));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      SCOPED_TRACE(absl::StrCat("row ", r, ", output ", j));
      const float g = got[0].data<float>()[r * n + j];
      if (j == 6) {
        EXPECT_TRUE(std::isnan(g)) << g;
        continue;
      }
      double want = 0, bound = 0;
      for (int64_t q = 0; q < k; ++q) {
        const double term = double{x.data<float>()[r * k + q]} * w.data<float>()[j * k + q];
        want += term;
        bound += std::fabs(term);
      }
      if (j == 7) {
        EXPECT_FALSE(std::isfinite(g)) << g;
        continue;
      }
      // 22 of f32's 24 bits a term, summed in f32: inside 2e-6 of the
      // terms' magnitudes, where tf32 alone misses by about 3e-5.
      EXPECT_LE(std::fabs(g - want), 2e-6 * bound) << "got " << g << ", want " << want;
    }
  }
  // Full mantissas, every term positive, K split over blocks.
  const int64_t long_k = 2048;
  ModuleBuilder full(rng);
  Tensor fx = RandomData(DType::kF32, {m, long_k}, rng, 0.5, 2);
  Tensor fw = RandomData(DType::kF32, {n, long_k}, rng, 0.5, 2);
  full.Out({full.Call("linear", {full.In(fx), full.Const(fw)})});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> full_exe, Cuda().Compile(full.module(), options));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> full_got, full_exe->Run(full.inputs()));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t q = 0; q < long_k; ++q) {
        want += double{fx.data<float>()[r * long_k + q]} * fw.data<float>()[j * long_k + q];
      }
      const double g = full_got[0].data<float>()[r * n + j];
      // A split that lost lo's terms would be about 1e-4 off; the bound
      // leaves room for the tensor cores' f32 accumulation, which may
      // truncate, over each block's 128 of K.
      EXPECT_LE(std::fabs(g - want), 4e-6 * want) << "row " << r << ", output " << j;
    }
  }
}

TEST(CudaSkinnyGemm, MatchesTheInterpreterInEveryPrecision) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  for (const Shape& s : kShapes) {
    for (const char* precision : {"f32", "tf32", "bf16", "f16"}) {
      SCOPED_TRACE(absl::StrCat(precision, " m=", s.m, " n=", s.n, " k=", s.k));
      const std::string p = precision;
      ModuleBuilder b = Products(
          rng, s, p == "bf16" ? DType::kBF16 : p == "f16" ? DType::kF16 : DType::kF32,
          p == "tf32");
      CompileOptions options;
      options.options = {{"precision", precision}, {"gemm", "graft"}};
      ExpectCudaMatchesInterp(b, ToleranceOf(precision), options);
    }
  }
}

// A model cast to bf16 or f16 casts its f32 input before the first product
// and the last product's result back to f32: graft's kernel reads and
// writes the f32 values itself, and neither cast runs. Not where a cast's
// value is read by anything else, nor on cuBLASLt.
TEST(CudaSkinnyGemm, TheCastsAroundAHalfProductRunInsideIt) {
  std::mt19937_64 rng(4);
  for (const char* precision : {"bf16", "f16"}) {
    SCOPED_TRACE(precision);
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {32, 256});
    Node* h = b.Call("relu", {b.Call("linear", {x, b.Const(DType::kF32, {512, 256}),
                                                b.Const(DType::kF32, {512})})});
    b.Out({b.Call("linear", {h, b.Const(DType::kF32, {128, 512})})});
    cuda::CudaOptions options;
    options.precision = precision;
    ASSERT_OK_AND_ASSIGN(StepProgram program,
                         cuda::BuildCudaProgram(b.module(), TypesOf(b), options));
    int casts_running = 0;
    std::vector<const Step*> products;
    for (const Step& step : program.steps) {
      casts_running += step.node->is_call("cast") && !step.elided;
      if (step.kind == StepKind::kLibrary) products.push_back(&step);
    }
    EXPECT_EQ(casts_running, 0) << program.Describe();
    ASSERT_EQ(products.size(), 2u);
    EXPECT_TRUE(products[0]->casts_input);
    EXPECT_EQ(products[0]->operands[0].where, BufferRef::Where::kInput);
    EXPECT_FALSE(products[0]->result_dtype.has_value());
    EXPECT_FALSE(products[1]->casts_input);
    EXPECT_EQ(products[1]->result_dtype, DType::kF32);
    EXPECT_EQ(products[1]->result.where, BufferRef::Where::kOutput);
    for (const Step* product : products) {
      const std::optional<cuda::SkinnyGemm> plan = cuda::SkinnyGemmFor(*product, options, 132);
      ASSERT_TRUE(plan.has_value());
      EXPECT_EQ(plan->input_dtype, product->casts_input ? DType::kF32 : plan->shape.dtype);
      EXPECT_EQ(plan->result_dtype, product->result_dtype.value_or(plan->shape.dtype));
    }
    ASSERT_OK_AND_ASSIGN(cuda::KernelSource source, cuda::GenerateKernels(program, options, 132));
    EXPECT_OK(cuda::CompileUnitsToCubins(source.units, "sm_90").status());

    options.gemm = "cublaslt";  // cuBLASLt reads and writes the product's dtype.
    ASSERT_OK_AND_ASSIGN(StepProgram library,
                         cuda::BuildCudaProgram(b.module(), TypesOf(b), options));
    casts_running = 0;
    for (const Step& step : library.steps) {
      casts_running += step.node->is_call("cast") && !step.elided;
      EXPECT_FALSE(step.casts_input || step.result_dtype.has_value());
    }
    EXPECT_EQ(casts_running, 2) << library.Describe();
  }
  // x read by two products, and a product's result read by a product and
  // returned: each cast's value is read twice, so each cast runs.
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {8, 64});
  Node* y = b.Call("linear", {x, b.Const(DType::kF32, {64, 64})});
  b.Out({y, b.Call("linear", {y, b.Const(DType::kF32, {32, 64})}),
         b.Call("linear", {x, b.Const(DType::kF32, {16, 64})})});
  cuda::CudaOptions options;
  options.precision = "bf16";
  ASSERT_OK_AND_ASSIGN(StepProgram program, cuda::BuildCudaProgram(b.module(), TypesOf(b), options));
  int casts_running = 0, absorbed = 0;
  for (const Step& step : program.steps) {
    casts_running += step.node->is_call("cast") && !step.elided;
    absorbed += step.casts_input + step.result_dtype.has_value();
  }
  EXPECT_EQ(casts_running, 2) << program.Describe();  // x's, and y's for the output.
  EXPECT_EQ(absorbed, 2) << program.Describe();       // The two other results.
}

// The absorbed casts round exactly as the cast kernels do: a bf16 and an
// f16 product with its casts absorbed gives the same bits as the same
// product whose casts run as kernels of their own (kept so by returning
// the cast values too).
TEST(CudaSkinnyGemm, AbsorbedCastsRoundAsTheCastKernels) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  for (DType half : {DType::kBF16, DType::kF16}) {
    for (const Shape& s : {Shape{32, 1024, 4096}, Shape{5, 300, 136}, Shape{64, 64, 8192}}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(half), " m=", s.m, " n=", s.n, " k=", s.k));
      const Tensor input = RandomData(DType::kF32, {s.m, s.k}, rng, -3, 3);
      Tensor w = RandomData(half, {s.n, s.k}, rng, -0.5, 0.5);
      Tensor bias = RandomData(half, {s.n}, rng, -1, 1);
      std::vector<Tensor> got[2];
      for (bool keep_casts : {false, true}) {
        ModuleBuilder b(rng);
        Node* x = b.In(input);
        Node* narrow = b.Call("cast", {x}, {{"dtype", half}});
        // The activation inside the call: a pointwise op after the product
        // would join the cast after it in one kernel, rounding once.
        Node* y = b.Call("graft::linear_activation", {narrow, b.Const(w)},
                         {{"bias", b.Const(bias)}, {"activation", "gelu_tanh"}});
        Node* wide = b.Call("cast", {y}, {{"dtype", DType::kF32}});
        b.Out(keep_casts ? std::vector<Node*>{wide, narrow, y} : std::vector<Node*>{wide});
        ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(b.module(), {}));
        ASSERT_OK_AND_ASSIGN(got[keep_casts], exe->Run({input}));
        ASSERT_OK_AND_ASSIGN(StepProgram program,
                             cuda::BuildCudaProgram(b.module(), TypesOf(b), cuda::CudaOptions{}));
        int absorbed = 0;
        for (const Step& step : program.steps) absorbed += step.casts_input + step.result_dtype.has_value();
        EXPECT_EQ(absorbed, keep_casts ? 0 : 2) << program.Describe();
      }
      ASSERT_EQ(got[0][0].type(), got[1][0].type());
      EXPECT_EQ(std::memcmp(got[0][0].raw_data(), got[1][0].raw_data(), got[0][0].NumBytes()), 0);
    }
  }
}

// The tile counters of a split product are left zero for the next run:
// runs with other data, one after another, each give their own result.
TEST(CudaSkinnyGemm, RepeatedRunsOfASplitProduct) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  const Shape s{32, 1024, 4096};
  ModuleBuilder b = Products(rng, s);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(b.module(), {}));
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE(absl::StrCat("run ", run));
    std::vector<Tensor> inputs;
    for (const Tensor& t : b.inputs()) {
      inputs.push_back(RandomData(t.dtype(), t.dims(), rng, -1, 1));
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exe->Run(inputs));
    ExpectAllClose(got, want, kReduceTol);
  }
}

// Each kernel of a run may be resident before the one it reads has
// written (programmatic dependent launch): a chain of products and
// generated kernels, run again and again with two inputs in turn, gives
// each input's own bits every time, never values left by the run before.
TEST(CudaSkinnyGemm, ChainedKernelsNeverReadTheRunBefore) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  for (const char* precision : {"f32", "tf32", "bf16"}) {
    SCOPED_TRACE(precision);
    ModuleBuilder b(rng);
    Node* x = b.In(DType::kF32, {32, 1024}, -1, 1);
    Node* h = b.Call("graft::linear_activation", {x, b.Const(DType::kF32, {4096, 1024}, -0.05, 0.05)},
                     {{"bias", b.Const(DType::kF32, {4096}, -0.1, 0.1)}, {"activation", "relu"}});
    h = b.Call("linear", {b.Call("tanh", {h}), b.Const(DType::kF32, {4096, 4096}, -0.02, 0.02)});
    h = b.Call("softmax", {b.Call("mul", {h, h}), int64_t{-1}});
    b.Out({b.Call("linear", {h, b.Const(DType::kF32, {1024, 4096}, -1, 1)})});
    CompileOptions options;
    options.options = {{"precision", precision}, {"gemm", "graft"}};
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                         Interp().Compile(b.module(), {}));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> exe, Cuda().Compile(b.module(), options));
    std::vector<Tensor> inputs[2], want[2];
    for (int i = 0; i < 2; ++i) {
      inputs[i] = {RandomData(DType::kF32, {32, 1024}, rng, -1, 1)};
      ASSERT_OK_AND_ASSIGN(want[i], exe->Run(inputs[i]));
      // Values left by an earlier run would also differ from run to run.
      if (std::string(precision) != "f32") continue;
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> interp, reference->Run(inputs[i]));
      ExpectAllClose(want[i], interp, kReduceTol);
    }
    for (int run = 0; run < 40; ++run) {
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exe->Run(inputs[run % 2]));
      ASSERT_EQ(std::memcmp(got[0].raw_data(), want[run % 2][0].raw_data(), got[0].NumBytes()), 0)
          << "run " << run << " differs from the first run with the same input";
    }
  }
}

}  // namespace
}  // namespace graft::cuda_test
