#ifndef GRAFT_BACKENDS_ORC_LIBRARY_CALL_SPECS_H_
#define GRAFT_BACKENDS_ORC_LIBRARY_CALL_SPECS_H_

#include "absl/status/statusor.h"
#include "backends/orc/program.h"
#include "runtime/library_call.h"

namespace graft::orc {

// What the library step `step` of `program` (matmul, linear,
// linear_activation, conv2d, quantized_linear) asks of oneDNN, as the plain
// data that runtime::PrepareLibraryCall prepares and compiled model files
// carry. Constant weights are named by their state slot.
absl::StatusOr<runtime::LibraryCallSpec> LibraryCallSpecOf(const Program& program,
                                                           const Step& step);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_LIBRARY_CALL_SPECS_H_
