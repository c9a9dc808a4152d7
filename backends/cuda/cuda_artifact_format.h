#ifndef GRAFT_BACKENDS_CUDA_CUDA_ARTIFACT_FORMAT_H_
#define GRAFT_BACKENDS_CUDA_CUDA_ARTIFACT_FORMAT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft::cuda {

// What the disk cache keeps of a compiled program: the CUBINs (one per
// translation unit) and the GEMM algorithms chosen (by step), so a new
// process runs neither NVRTC nor the autotuner.
struct CudaArtifact {
  std::vector<std::string> cubins;
  std::map<int, std::string> gemm_algos;
};

// A disk cache entry's bytes: a magic line with the format's version, the
// hash of the step program the code was compiled from, the algorithms
// (with one hash over them: they are used unchecked), then each CUBIN with
// its own hash (the driver reads a CUBIN by the sizes in its header, so a
// damaged one must be refused before it is loaded).
std::string WriteCudaArtifact(absl::string_view program_hash, const CudaArtifact& artifact);

struct ReadArtifact {
  std::string program_hash;
  CudaArtifact artifact;
};
// The entry written by WriteCudaArtifact, or DataLoss naming what is
// damaged: any truncation, a changed byte, trailing bytes.
absl::StatusOr<ReadArtifact> ReadCudaArtifact(absl::string_view bytes);

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_CUDA_ARTIFACT_FORMAT_H_
