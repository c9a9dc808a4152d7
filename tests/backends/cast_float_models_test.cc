// Every model of the repository (the ONNX exports of PyTorch models
// included) cast to bf16 and f16 by passes::CastFloatModule, as the CUDA
// backend's --precision bf16/f16 casts it: the cast model type-checks,
// runs on the interpreter, and agrees with the f32 model within half
// precision's tolerance (DESIGN section 5).

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "graph/dtype.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"
#include "onnx/onnx_import.h"
#include "passes/cast_float.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/differential_test_util.h"
#include "tests/backends/l2_comparison.h"
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

}  // namespace
}  // namespace graft
