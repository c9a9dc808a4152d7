#ifndef GRAFT_BACKENDS_CUDA_GEMM_H_
#define GRAFT_BACKENDS_CUDA_GEMM_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/step_program.h"
#include "graph/dtype.h"

namespace graft::cuda {

// A row-major matrix product C[M, N] = A[M, K] B, B given as [K, N] or as
// [N, K] (a linear layer's weight), `batch` times with element strides
// between the batch's matrices (0: the same matrix for every batch).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  bool b_is_nk = false;
  DType dtype = DType::kF32;
  DType bias_dtype = DType::kF32;
  bool has_bias = false;
  // "", "relu" or "gelu_tanh": cuBLASLt's epilogues. (Exact GELU has no
  // epilogue; the kernel emitter applies it after the product.)
  std::string activation;
  // f32 products on the tensor cores in tf32.
  bool tf32 = false;

  std::string ToString() const;
};

// Whether `node` (matmul, linear, graft::linear_activation) is a product
// cuBLASLt runs, and its shape; an error says why not ("matmul whose
// batch dims broadcast").
absl::StatusOr<GemmShape> GemmShapeOf(const Node& node);
// The activation the step's product applies (absorbed or its own).
std::string GemmActivation(const Step& step);

inline constexpr size_t kGemmWorkspaceBytes = 32u << 20;

// One product with its cuBLASLt descriptors and chosen algorithm, made at
// compile time. Run only enqueues work on a stream (it is captured into
// the run's CUDA graph); the bias pointer is set per call, so calls are
// serialized by the caller (captures happen under a lock).
class GemmPlan {
 public:
  // Picks the algorithm by cuBLASLt's heuristic, or by timing its best
  // candidates on the device when `autotune`, or takes `algo_bytes` (a
  // choice read from the compile cache) when it is not empty.
  static absl::StatusOr<std::unique_ptr<GemmPlan>> Create(
      cublasLtHandle_t handle, const GemmShape& shape, bool autotune,
      const std::string& algo_bytes);
  ~GemmPlan();

  absl::Status Run(cudaStream_t stream, const void* a, const void* b,
                   const void* bias, void* c, void* workspace);
  const GemmShape& shape() const { return shape_; }
  // The chosen algorithm as bytes, for the compile cache.
  std::string AlgoBytes() const;

 private:
  GemmPlan() = default;
  absl::Status Describe();
  absl::Status Choose(bool autotune);
  absl::Status TimeCandidates(const std::vector<cublasLtMatmulAlgo_t>& candidates);

  cublasLtHandle_t handle_ = nullptr;
  GemmShape shape_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_GEMM_H_
