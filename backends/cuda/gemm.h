#ifndef GRAFT_BACKENDS_CUDA_GEMM_H_
#define GRAFT_BACKENDS_CUDA_GEMM_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/gemm_shape.h"

namespace graft::cuda {

// The process's cuBLASLt handle for GPU `device`, created on first use
// (a few milliseconds: it loads cuBLASLt's kernels), never destroyed.
// cuBLASLt calls may share it from any thread: it holds no stream,
// workspace or setting of its own.
absl::StatusOr<cublasLtHandle_t> SharedCublasLt(int device);
// SharedCublasLt(device) made on another thread, so that a compile can
// do its other work meanwhile; the future is ready once it is made (or
// invalid if no thread could start: the first use then makes it).
std::future<void> PrepareCublasLt(int device);

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

  // `residual` (shape().residual only): added to the product, C's layout.
  absl::Status Run(cudaStream_t stream, const void* a, const void* b,
                   const void* bias, const void* residual, void* c, void* workspace);
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
