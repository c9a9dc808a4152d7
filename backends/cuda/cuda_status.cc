#include "backends/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace graft::cuda {

absl::Status CheckCuda(cudaError_t error, absl::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  // Clear the sticky last error of a non-fatal failure, so that the next
  // check sees its own.
  cudaGetLastError();
  const std::string message =
      absl::StrCat(call, ": ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")");
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status CheckNvrtc(nvrtcResult result, absl::string_view call) {
  if (result == NVRTC_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", nvrtcGetErrorString(result)));
}

absl::Status CheckCublas(cublasStatus_t status, absl::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string message = absl::StrCat(call, ": ", cublasLtGetStatusName(status),
                                           " (", cublasLtGetStatusString(status), ")");
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return absl::UnimplementedError(message);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

}  // namespace graft::cuda
