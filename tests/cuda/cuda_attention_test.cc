// Written-out attention on the CUDA backend: in bf16 and f16 the program
// runs it as one graft::attention kernel (passes/fuse_attention.h,
// attention_source.h), whose generated source compiles anywhere; on a GPU
// it matches the interpreter's written-out f32 attention, causal, masked
// either way, and with tiles that the sequence lengths leave partial.

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tests/backends/attention_models.h"
#include "tests/backends/l2_comparison.h"
#include "tests/backends/mask_models.h"
#include "tests/backends/model_files.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

using ::graft::testing::StatusIs;
using ::testing::HasSubstr;
using Mask = AttentionSpec::Mask;

int StepsOf(const StepProgram& program, StepKind kind) {
  int n = 0;
  for (const Step& step : program.steps) n += step.kind == kind && !step.elided;
  return n;
}

// q, k and v split from one product and permuted per head, as GPT-2 has
// them: in bf16 and f16 one attention kernel reads them where they are (no
// view runs); in f32 attention stays written out.
TEST(CudaCodegen, WrittenOutAttentionIsOneKernelInHalfPrecision) {
  CUDA_TEST_SEED(rng);
  ModuleBuilder b(rng);
  AttentionSpec spec{.lead = {2, 12},
                     .t = 256,
                     .s = 256,
                     .d = 64,
                     .dv = 64,
                     .scale = 0.125,
                     .packed_qkv = true,
                     .merge_heads = true};
  b.Out({WrittenOutAttention(b, spec, rng)});
  const std::vector<TensorType> types = TypesOf(b);
  for (const char* precision : {"bf16", "f16", "f32"}) {
    SCOPED_TRACE(precision);
    cuda::CudaOptions options;
    options.precision = precision;
    ASSERT_OK_AND_ASSIGN(StepProgram program,
                         cuda::BuildCudaProgram(b.module(), types, options));
    const bool half = std::string(precision) != "f32";
    EXPECT_EQ(StepsOf(program, StepKind::kAttention), half ? 1 : 0);
    EXPECT_EQ(StepsOf(program, StepKind::kSoftmax), half ? 0 : 1);
    // In half precision neither the views of q, k and v nor the permute
    // merging the heads back run.
    EXPECT_EQ(StepsOf(program, StepKind::kView), half ? 0 : 4);
    ASSERT_OK_AND_ASSIGN(cuda::KernelSource source,
                         cuda::GenerateKernels(program, options, 132));
    ASSERT_OK(cuda::CompileUnitsToCubins(source.units, "sm_90").status());
  }
  // A GPU before compute capability 8.0 (no cp.async, no bf16 mma) keeps
  // attention written out.
  cuda::CudaOptions turing;
  turing.precision = "f16";
  turing.compute_capability = 75;
  ASSERT_OK_AND_ASSIGN(StepProgram program,
                       cuda::BuildCudaProgram(b.module(), types, turing));
  EXPECT_EQ(StepsOf(program, StepKind::kAttention), 0);
  EXPECT_EQ(StepsOf(program, StepKind::kSoftmax), 1);
  // A graph that already holds the fused op: refused there, with the reason.
  cuda::CudaOptions hopper;
  hopper.precision = "f16";
  ASSERT_OK_AND_ASSIGN(StepProgram fused,
                       cuda::BuildCudaProgram(b.module(), types, hopper));
  const Node* attention = nullptr;
  for (const Step& step : fused.steps) {
    if (step.kind == StepKind::kAttention) attention = step.node;
  }
  ASSERT_NE(attention, nullptr);
  EXPECT_OK(cuda::CanLower(*attention, 90));
  EXPECT_THAT(cuda::CanLower(*attention, 75),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("compute capability 8.0")));
}

TEST(CudaAttention, MatchesTheInterpreter) {
  SKIP_WITHOUT_GPU();
  CUDA_TEST_SEED(rng);
  struct Case {
    const char* precision;
    AttentionSpec spec;
  };
  const std::vector<Case> cases = {
      {"bf16",
       {.lead = {2, 12},
        .t = 256,
        .s = 256,
        .d = 64,
        .dv = 64,
        .scale = 0.125}},
      {"bf16",
       {.lead = {2, 3},
        .t = 70,
        .s = 70,
        .d = 64,
        .dv = 64,
        .mask = Mask::kFillWhereTrue}},
      // A fill near float32's lowest that bf16 keeps finite: rows masked
      // whole average v, and the kernel's scores in units of log2 must not
      // turn it into -inf. (float32's lowest itself saturates to bf16's.)
      {"bf16",
       {.lead = {2, 3},
        .t = 70,
        .s = 70,
        .d = 64,
        .dv = 64,
        .mask = Mask::kCausalAndWholeRows,
        .fill = -3e38}},
      // A causal mask tensor filled with float32's lowest (torch.finfo's
      // min): in bf16 the fill saturates to bf16's lowest, and the kernel
      // runs it as causal.
      {"bf16",
       {.lead = {2, 3},
        .t = 70,
        .s = 70,
        .d = 64,
        .dv = 64,
        .mask = Mask::kCausalTensor,
        .fill = -3.4028234663852886e38}},
      // Causal with fewer queries than keys and with more, and head dims
      // whose last 16 take k's two-matrix load (48, 80).
      {"f16",
       {.lead = {2, 2},
        .t = 40,
        .s = 100,
        .d = 48,
        .dv = 48}},
      {"bf16",
       {.lead = {1, 3},
        .t = 130,
        .s = 70,
        .d = 80,
        .dv = 80}},
      {"f16",
       {.lead = {3},
        .t = 5,
        .s = 130,
        .d = 128,
        .dv = 128,
        .mask = Mask::kNone,
        .keys_by_permute = false}},
      {"f16",
       {.lead = {2, 2},
        .t = 100,
        .s = 100,
        .d = 32,
        .dv = 32,
        .mask = Mask::kKeepWhereTrue,
        .fill = -1e4,
        .divide = true}},
      {"bf16",
       {.lead = {1, 4},
        .t = 129,
        .s = 129,
        .d = 16,
        .dv = 48,
        .scale = 0.25,
        .merge_heads = true}},
      {"bf16",
       {.lead = {3, 4},
        .t = 100,
        .s = 100,
        .d = 32,
        .dv = 32,
        .packed_qkv = true,
        .merge_heads = true}},
      {"f16",
       {.lead = {2, 2},
        .t = 64,
        .s = 64,
        .d = 128,
        .dv = 128,
        .mask = Mask::kFillWhereTrue,
        .packed_qkv = true}},
  };
  for (Case c : cases) {
    SCOPED_TRACE(absl::StrCat(c.precision, " t ", c.spec.t, " s ", c.spec.s,
                              " d ", c.spec.d, " mask ",
                              static_cast<int>(c.spec.mask)));
    c.spec.lo = -1;
    c.spec.hi = 1;
    ModuleBuilder b(rng);
    b.Out({WrittenOutAttention(b, c.spec, rng)});
    CompileOptions options;
    options.options["precision"] = c.precision;
    ExpectCudaMatchesInterp(b, kHalfTol, options);
  }
}

// Masks of f32's lowest (tests/backends/mask_models.h) in a float model
// run in bf16 and f16: the masked rows stay finite, the f32 model's.
TEST(CudaAttention, MasksOfF32sLowestStayFiniteInHalfPrecision) {
  SKIP_WITHOUT_GPU();
  ASSERT_OK_AND_ASSIGN(Module module, backend_test::AttentionMasksOfF32sLowest());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> f32, Interp().Compile(module, {}));
  std::vector<Tensor> inputs = backend_test::RandomInputs(f32->input_signature(), 7, 1);
  backend_test::MaskEveryKeyOfBatchOne(inputs);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, f32->Run(inputs));
  for (const char* precision : {"bf16", "f16"}) {
    SCOPED_TRACE(precision);
    CompileOptions options;
    options.options["precision"] = precision;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Cuda().Compile(module, options));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run(inputs));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const Tensor& host = got[i];
      for (int64_t j = 0; j < host.NumElements(); ++j) {
        ASSERT_TRUE(std::isfinite(host.GetAsDouble(j))) << "output " << i << " element " << j;
      }
      const L2Comparison c = CompareL2(host, want[i]);
      EXPECT_LE(c.diff, kHalfTol * std::max(c.norm, 1e-3)) << "output " << i;
    }
  }
}

}  // namespace
}  // namespace graft::cuda_test
