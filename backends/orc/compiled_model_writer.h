#ifndef GRAFT_BACKENDS_ORC_COMPILED_MODEL_WRITER_H_
#define GRAFT_BACKENDS_ORC_COMPILED_MODEL_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "backends/orc/orc_executable.h"

namespace graft::orc {

// Writes an executable compiled for fixed input shapes as a compiled model
// file (runtime/artifact.h): its object code, library call specs, the
// module tensors it reads, its signature and the CPU features the code
// may use (those of this machine that graft::runtime can check).
absl::Status WriteOrcCompiledModel(const OrcExecutable& executable, const std::string& path);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_COMPILED_MODEL_WRITER_H_
