#ifndef GRAFT_BACKENDS_ORC_COMPILED_MODEL_WRITER_H_
#define GRAFT_BACKENDS_ORC_COMPILED_MODEL_WRITER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/orc/llvm_jit.h"
#include "backends/orc/orc_executable.h"

namespace graft::orc {

// Writes an executable compiled for fixed input shapes as a compiled model
// file (runtime/artifact.h): its object code, library call specs, the
// module tensors it reads, its signature and the CPU features the code
// may use (those of this machine that graft::runtime can check).
absl::Status WriteOrcCompiledModel(const OrcExecutable& executable, const std::string& path);

// The features of `cpu` that generated code may use and graft::runtime can
// check on a loading machine (LLVM's names without the "+"): the vector and
// arithmetic extensions, not system features (pku, sgx, rdrnd) that no
// generated code uses.
std::vector<std::string> CheckableCpuFeatures(const HostCpu& cpu);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_COMPILED_MODEL_WRITER_H_
