#ifndef GRAFT_BACKENDS_ORC_LOWERING_H_
#define GRAFT_BACKENDS_ORC_LOWERING_H_

#include <string>

#include "absl/status/statusor.h"
#include "backends/orc/program.h"

namespace graft::orc {

// The generated entry point:
//   int32_t graft_entry(void** io, char* arena, void** state);
// io holds the inputs' then the outputs' data pointers; it returns 0, or
// 1 + the index of the step that failed (a library call's error).
inline constexpr char kEntryName[] = "graft_entry";
using EntryFunction = int (*)(void* const* io, char* arena, void* const* state);

// What generated code calls for a library step: `call` is the state slot's
// pointer, `buffers` the result's then the operands' data pointers.
inline constexpr char kLibraryCallName[] = "graft_orc_run_library";

// Lowers every step of `program` to LLVM IR (one function per step and the
// entry function that calls them in order), optimizes it for the host CPU
// and returns the object file.
absl::StatusOr<std::string> CompileToObject(const Program& program);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_LOWERING_H_
