#ifndef GRAFT_BACKENDS_CUDA_CUDA_PROGRAM_H_
#define GRAFT_BACKENDS_CUDA_CUDA_PROGRAM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/step_program.h"
#include "graph/dtype.h"
#include "graph/module.h"

namespace graft::cuda {

class NcclCommunicator;  // backends/cuda/nccl_world.h

// How to compile, from CompileOptions (cuda_backend.h lists the keys).
struct CudaOptions {
  // f32, tf32 (f32 products on the tensor cores), f16 or bf16 (the float
  // model cast to it; inputs and outputs stay f32).
  std::string precision = "f32";
  // Time cuBLASLt's candidate algorithms at compile time.
  bool autotune = false;
  // "auto": f32 products of few rows, and bf16/f16 ones with weights up
  // to 16 MB, run as graft's own kernel (skinny_gemm.h), the rest on
  // cuBLASLt; "graft": products of few rows
  // in every precision run as graft's; "cublaslt": every product.
  std::string gemm = "auto";
  // The rank's link to the other GPUs, for a module with collectives
  // (compiled code does not depend on it, so Key() leaves it out).
  std::shared_ptr<NcclCommunicator> communicator;
  // The GPU's compute capability (major * 10 + minor), which decides the
  // kernels the program may use (attention's needs 80); set from the GPU
  // the program is compiled for. The device is part of every cache key,
  // so Key() leaves it out.
  int compute_capability = 90;
  // The GPU's L2 size in bytes (0: unknown), which decides whether graft's
  // product kernel prefetches a layer's weights (SkinnyGemm::
  // prefetch_weights); set with compute_capability, from the same GPU.
  int64_t l2_cache_bytes = 0;

  std::string Key() const;
};

// linear, matmul and graft::linear_activation: the products cuBLASLt or
// graft's own kernel runs.
bool IsGemmCall(const Node& node);

// Why the CUDA backend cannot run `node`, or OK.
absl::Status CanLower(const Node& node);
// The same on a GPU of compute capability `compute_capability` (major * 10
// + minor): graft::attention needs 80.
absl::Status CanLower(const Node& node, int compute_capability);

// The module as steps for the CUDA backend, cast to the precision first.
absl::StatusOr<StepProgram> BuildCudaProgram(const Module& module,
                                             const std::vector<TensorType>& input_types,
                                             const CudaOptions& options);

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_CUDA_PROGRAM_H_
