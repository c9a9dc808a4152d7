#ifndef GRAFT_BACKENDS_CUDA_CUDA_BACKEND_H_
#define GRAFT_BACKENDS_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/backend.h"

namespace graft::cuda {

// The CUDA backend ("cuda"): generated kernels compiled by NVRTC for the
// GPU's own architecture, cuBLASLt for matrix products, one device arena
// and one CUDA graph per run. Options:
//   precision=f32|tf32|bf16|f16  f32 (default); tf32 lets f32 products use
//                                the tensor cores (torch's "high"); bf16
//                                and f16 cast the float model to that type
//                                (inputs and outputs stay f32)
//   autotune=0|1                 time cuBLASLt's candidate algorithms at
//                                compile time and keep the fastest
//   gemm=auto|graft|cublaslt     auto (default): f32 linear layers of at
//                                most 64 rows (3xTF32), and bf16/f16 ones
//                                with weights up to 16 MB, run as graft's
//                                own split-K kernel on the tensor cores,
//                                other products on cuBLASLt; graft: such
//                                layers in every precision; bf16/f16
//                                convolutions gather their patches in
//                                graft's implicit-GEMM kernel where it is
//                                the faster (auto) or wherever it can
//                                (graft; implicit_conv.h); cublaslt:
//                                every product on cuBLASLt, convolutions
//                                over a column buffer
// CompileOptions::device_index picks the GPU.
class CudaBackend : public Backend {
 public:
  absl::string_view name() const override { return "cuda"; }
  absl::Status CanRun(const Node& node, const CompileOptions& options) const override;
  absl::StatusOr<std::unique_ptr<Executable>> Compile(const Module& module,
                                                      const CompileOptions& options) override;
  // NCCL over GPUs 0..world_size-1.
  absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> CreateWorld(
      int world_size) const override;
  absl::Status Available(const CompileOptions& options) const override;
  Device device(const CompileOptions& options) const override;
  std::shared_ptr<DeviceAllocator> allocator(const CompileOptions& options) const override;
  std::string CacheIdentity(const CompileOptions& options) const override;
  absl::StatusOr<std::string> SerializeExecutable(const Executable& executable) const override;
  absl::StatusOr<std::unique_ptr<Executable>> DeserializeExecutable(
      absl::string_view bytes, const Module& module, const CompileOptions& options) const override;
};

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_CUDA_BACKEND_H_
