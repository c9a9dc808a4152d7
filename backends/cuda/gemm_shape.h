#ifndef GRAFT_BACKENDS_CUDA_GEMM_SHAPE_H_
#define GRAFT_BACKENDS_CUDA_GEMM_SHAPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

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
  // A matrix of C's type and layout added to the product (Step::residual).
  bool residual = false;

  std::string ToString() const;
};

// Whether `node` (matmul, linear, graft::linear_activation) is a product
// cuBLASLt runs, and its shape; an error says why not ("matmul whose
// batch dims broadcast").
absl::StatusOr<GemmShape> GemmShapeOf(const Node& node);
// The activation the step's product applies (absorbed or its own).
std::string GemmActivation(const Step& step);

inline constexpr size_t kGemmWorkspaceBytes = 32u << 20;

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_GEMM_SHAPE_H_
