// Every model of the repository (the ONNX exports of PyTorch models
// included) cast to bf16 and f16 by passes::CastFloatModule, as the CUDA
// backend's --precision bf16/f16 casts it: the cast model type-checks,
// runs on the interpreter, and agrees with the f32 model within half
// precision's tolerance (DESIGN section 5).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "graph/dtype.h"
#include "graph/parser.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"
#include "absl/strings/match.h"
#include "onnx/onnx_import.h"
#include "passes/cast_float.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/differential_test_util.h"
#include "tests/backends/l2_comparison.h"
#include "tests/backends/mask_models.h"
#include "tests/backends/model_files.h"

namespace graft {
namespace {

using backend_test::ModelFiles;
using backend_test::RandomInputs;
using differential::Interp;

// Relative to an output's norm: bf16 keeps 8 bits of mantissa, f16 11.
constexpr double kHalfTol = 1e-2;

TEST(CastFloatModels, EveryModelRunsInHalfPrecision) {
  backend_test::FindSourceDir();
  const std::vector<std::string> files = ModelFiles(HaveOnnx());
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  int cast_models = 0, float_models = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    ASSERT_OK_AND_ASSIGN(Module module, LoadModel(path));
    if (backend_test::HoldsQuantizedOps(module)) continue;  // f32 by contract.
    // Thresholds and one-hots of random inputs (Shrink, ThresholdedRelu,
    // Hardmax): a value within a half-precision step of the threshold (or of
    // a tie) flips by the output's whole size. The CUDA models test runs it
    // in bf16 and f16 against the cast model instead.
    if (absl::StrContains(path, "/defined_by_others/")) continue;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(module, {}));
    const std::vector<Tensor> inputs = RandomInputs(reference->input_signature(), 11, 3);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(inputs));
    for (DType dtype : {DType::kBF16, DType::kF16}) {
      SCOPED_TRACE(DTypeName(dtype));
      Module cast = module.Clone();
      ASSERT_OK_AND_ASSIGN(const bool changed, passes::CastFloatModule(cast, dtype));
      ASSERT_OK(Verify(cast));
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Interp().Compile(cast, {}));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run(inputs));
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        // Callers keep their dtypes: f32 outputs come back f32.
        ASSERT_EQ(got[i].type(), want[i].type()) << "output " << i;
        if (want[i].dtype() != DType::kF32) continue;  // Indices, masks: may differ.
        const L2Comparison c = CompareL2(got[i], want[i]);
        EXPECT_EQ(c.nonfinite_mismatches, 0) << "output " << i;
        EXPECT_LE(c.diff, kHalfTol * std::max(c.norm, 1e-3)) << "output " << i;
      }
      cast_models += changed;
    }
    ++float_models;
  }
  std::printf("%d float models of %zu ran in bf16 and f16 (%d had something to cast)\n",
              float_models, files.size(), cast_models / 2);
  EXPECT_GT(cast_models, 0);
}

// A rotary embedding computed in the graph: positions (an f32 cast of
// arange) times inv_freq (a module tensor, through a view), then cos, then
// times the model's values. In bf16 the angles stay what the f32 model
// computes, bit for bit: bf16 positions past 256 would not even be
// integers, and a bf16 inv_freq would turn the last positions by a tenth
// of a radian and more.
TEST(CastFloatModels, RotaryAnglesStayF32) {
  absl::StatusOr<Module> parsed = ParseModule(R"(
tensor inv_freq : f32[4] = [1.0, 0.1, 0.01, 0.001]
graph():
    %x : f32[2048,4] = placeholder[target=x]
    %i = call_function[target=arange](args = (0, 2048), kwargs = {})
    %p = call_function[target=cast](args = (%i, f32), kwargs = {})
    %u = call_function[target=unsqueeze](args = (%p, 1), kwargs = {})
    %inv_freq = get_attr[target=inv_freq]
    %row = call_function[target=unsqueeze](args = (%inv_freq, 0), kwargs = {})
    %angles = call_function[target=mul](args = (%u, %row), kwargs = {})
    %c = call_function[target=cos](args = (%angles,), kwargs = {})
    %y = call_function[target=mul](args = (%x, %c), kwargs = {})
    return (angles, y)
)");
  ASSERT_OK(parsed);
  Module cast = parsed->Clone();
  ASSERT_OK(passes::CastFloatModule(cast, DType::kBF16).status());
  ASSERT_OK(Verify(cast));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Interp().Compile(cast, {}));
  const Tensor x = RandomInputs(e->input_signature(), 5, 1)[0];
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({x}));
  const float inv_freq[4] = {1.0f, 0.1f, 0.01f, 0.001f};
  for (int64_t p = 0; p < 2048; ++p) {
    for (int64_t j = 0; j < 4; ++j) {
      ASSERT_EQ(got[0].GetAsDouble(p * 4 + j), static_cast<float>(p) * inv_freq[j])
          << "position " << p << ", frequency " << j;
    }
  }
  // And the model's output within bf16's tolerance of the f32 model's.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> f32, Interp().Compile(*parsed, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, f32->Run({x}));
  const L2Comparison c = CompareL2(got[1], want[1]);
  EXPECT_LE(c.diff, kHalfTol * std::max(c.norm, 1e-3));
  EXPECT_EQ(got[0].dtype(), DType::kF32);
}

// The same angles as Hugging Face's Llama computes them, a product of
// inv_freq[None, :, None] and position_ids[:, None, :] (a matmul, of a
// constant and values cast from integers): f32, the f32 model's bits.
TEST(CastFloatModels, RotaryAnglesOfAProductStayF32) {
  absl::StatusOr<Module> parsed = ParseModule(R"(
tensor inv_freq : f32[4] = [1.0, 0.1, 0.01, 0.001]
graph():
    %ids : i64[1,2048] = placeholder[target=ids]
    %inv_freq = get_attr[target=inv_freq]
    %column = call_function[target=reshape](args = (%inv_freq, [1, 4, 1]), kwargs = {})
    %row = call_function[target=unsqueeze](args = (%ids, 1), kwargs = {})
    %positions = call_function[target=cast](args = (%row, f32), kwargs = {})
    %angles = call_function[target=matmul](args = (%column, %positions), kwargs = {})
    return angles
)");
  ASSERT_OK(parsed);
  Module cast = parsed->Clone();
  ASSERT_OK(passes::CastFloatModule(cast, DType::kBF16).status());
  ASSERT_OK(Verify(cast));
  Tensor ids(DType::kI64, {1, 2048});
  for (int64_t p = 0; p < 2048; ++p) ids.data<int64_t>()[p] = p;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Interp().Compile(cast, {}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> f32, Interp().Compile(*parsed, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({ids}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, f32->Run({ids}));
  EXPECT_TRUE(got[0].BitwiseEqual(want[0]));
}

// Attention masks of f32's lowest (tests/backends/mask_models.h). Cast to
// bf16 or f16, f32's lowest would round to -inf, and a row that masks
// every key would be NaN where the f32 model averages the values. The
// casts the pass inserts saturate, and so does a literal that where
// selects: the cast model gives the f32 model's finite rows.
TEST(CastFloatModels, MasksOfF32sLowestStayFinite) {
  absl::StatusOr<Module> parsed = backend_test::AttentionMasksOfF32sLowest();
  ASSERT_OK(parsed);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> f32, Interp().Compile(*parsed, {}));
  std::vector<Tensor> inputs = RandomInputs(f32->input_signature(), 7, 1);
  backend_test::MaskEveryKeyOfBatchOne(inputs);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, f32->Run(inputs));
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    Module cast = parsed->Clone();
    ASSERT_OK(passes::CastFloatModule(cast, dtype).status());
    ASSERT_OK(Verify(cast));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Interp().Compile(cast, {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run(inputs));
    for (size_t i = 0; i < got.size(); ++i) {
      for (int64_t j = 0; j < want[i].NumElements(); ++j) {
        ASSERT_TRUE(std::isfinite(want[i].GetAsDouble(j)));
        ASSERT_TRUE(std::isfinite(got[i].GetAsDouble(j))) << "output " << i << " element " << j;
      }
      const L2Comparison c = CompareL2(got[i], want[i]);
      EXPECT_LE(c.diff, kHalfTol * std::max(c.norm, 1e-3)) << "output " << i;
    }
  }
}

}  // namespace
}  // namespace graft
