#ifndef GRAFT_BACKENDS_ORC_LIBRARY_CALLS_H_
#define GRAFT_BACKENDS_ORC_LIBRARY_CALLS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/orc/program.h"

namespace graft::orc {

// A step that generated code hands to a library (oneDNN): prepared once at
// load time (primitive chosen, constant weights reordered into the
// library's preferred layout), then run with the step's buffers. Run may
// be called from several threads at once.
class LibraryCall {
 public:
  virtual ~LibraryCall() = default;
  // buffers[0] is the result's data, buffers[1 + i] that of step.inputs[i].
  virtual absl::Status Run(void* const* buffers) const = 0;
};

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareLibraryCall(
    const Program& program, const Step& step);

// What generated code calls (lowering.h's kLibraryCallName): runs `call`
// and returns 0, or 1 after keeping the error for TakeLibraryError.
extern "C" int graft_orc_run_library(void* call, void* const* buffers);
// The last error of a library call on this thread.
absl::Status TakeLibraryError();

// Limits the library's threads on the calling thread (0: all cores).
void SetLibraryThreads(int threads);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_LIBRARY_CALLS_H_
