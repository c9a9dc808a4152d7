#ifndef GRAFT_TESTS_CUDA_CUDA_TEST_UTIL_H_
#define GRAFT_TESTS_CUDA_CUDA_TEST_UTIL_H_

// The CUDA backend's differential tests: tests/backends/
// differential_test_util.h with the backend fixed to cuda. Tests that need
// a GPU skip with the reason where there is none.

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "tests/backends/differential_test_util.h"
#include "tests/backends/interp_test_util.h"
#include "tests/backends/l2_comparison.h"

namespace graft::cuda_test {

using namespace ::graft::differential;  // NOLINT: the helpers, unqualified.

inline Backend& Cuda() {
  static Backend* const backend = [] {
    absl::StatusOr<std::unique_ptr<Backend>> b = CreateBackend("cuda");
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? b->release() : nullptr;
  }();
  return *backend;
}

inline Argument Ints(std::vector<int64_t> v) { return Argument::IntList(v); }

inline Argument List(std::vector<Node*> nodes) {
  ArgumentList l;
  for (Node* n : nodes) l.push_back(n);
  return Argument(std::move(l));
}

// `t` (f32) with every element rounded to `dtype` (bf16 or f16) and
// stored as f32 again: the values a model cast to `dtype` sees.
inline Tensor RoundedThrough(const Tensor& t, DType dtype) {
  Tensor narrow(dtype, t.dims());
  Tensor out = t.Clone();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    narrow.SetFromDouble(i, t.GetAsDouble(i));
    out.SetFromDouble(i, narrow.GetAsDouble(i));
  }
  return out;
}

// DESIGN section 5: tf32 1e-3, bf16 and f16 1e-2.
inline constexpr double kTf32Tol = 1e-3;
inline constexpr double kHalfTol = 1e-2;

// The types of the builder's inputs, for BuildCudaProgram.
inline std::vector<TensorType> TypesOf(const ModuleBuilder& b) {
  std::vector<TensorType> types;
  for (const Tensor& t : b.inputs()) types.push_back(t.type());
  return types;
}

inline void ExpectCudaMatchesInterp(const ModuleBuilder& b, double tol,
                                    const CompileOptions& options = {}) {
  ExpectMatchesInterp(Cuda(), b.module(), b.inputs(), tol, options);
}

}  // namespace graft::cuda_test

// Skips the test, printing why, on a machine without a usable GPU.
#define SKIP_WITHOUT_GPU()                                                  \
  do {                                                                      \
    absl::StatusOr<::graft::cuda::GpuInfo> gpu = ::graft::cuda::ProbeGpu(); \
    if (!gpu.ok()) GTEST_SKIP() << gpu.status().message();                  \
  } while (0)

// A fresh seed per test, printed with every failure of the test.
#define CUDA_TEST_SEED(rng)                                      \
  const uint32_t seed_##rng = ::graft::interp_test::FreshSeed(); \
  SCOPED_TRACE(absl::StrCat("seed ", seed_##rng));               \
  std::mt19937_64 rng(seed_##rng)

#endif  // GRAFT_TESTS_CUDA_CUDA_TEST_UTIL_H_
