#ifndef GRAFT_BACKENDS_CUDA_CUDA_STATUS_H_
#define GRAFT_BACKENDS_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <nvrtc.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace graft::cuda {

// Every CUDA runtime, NVRTC and cuBLASLt call is checked; the error names
// the call ("cudaMalloc(&p, bytes): out of memory").
absl::Status CheckCuda(cudaError_t error, absl::string_view call);
absl::Status CheckNvrtc(nvrtcResult result, absl::string_view call);
absl::Status CheckCublas(cublasStatus_t status, absl::string_view call);

}  // namespace graft::cuda

#define GRAFT_CUDA(call) ::graft::cuda::CheckCuda((call), #call)
#define GRAFT_NVRTC(call) ::graft::cuda::CheckNvrtc((call), #call)
#define GRAFT_CUBLAS(call) ::graft::cuda::CheckCublas((call), #call)

#endif  // GRAFT_BACKENDS_CUDA_CUDA_STATUS_H_
