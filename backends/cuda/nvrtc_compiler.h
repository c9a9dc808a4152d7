#ifndef GRAFT_BACKENDS_CUDA_NVRTC_COMPILER_H_
#define GRAFT_BACKENDS_CUDA_NVRTC_COMPILER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft::cuda {

// Compiles CUDA C++ `source` with NVRTC to a CUBIN for `arch` ("sm_90").
// A compile error quotes NVRTC's log with each line it names from the
// source, so a generator bug shows the generated code.
// GRAFT_CUDA_DUMP_SOURCE=DIR writes each source there before compiling.
absl::StatusOr<std::string> CompileToCubin(const std::string& source,
                                           absl::string_view arch);

// The same for a virtual architecture ("compute_90"): the PTX, to look at
// the instructions the kernels use.
absl::StatusOr<std::string> CompileToPtx(const std::string& source, absl::string_view arch);

// Each unit compiled as by CompileToCubin, on as many threads as the
// machine has cores (NVRTC compiles separate programs concurrently); the
// first unit's error that fails.
absl::StatusOr<std::vector<std::string>> CompileUnitsToCubins(
    const std::vector<std::string>& units, absl::string_view arch);

// "12.9" for cache keys.
std::string NvrtcVersion();

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_NVRTC_COMPILER_H_
