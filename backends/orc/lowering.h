#ifndef GRAFT_BACKENDS_ORC_LOWERING_H_
#define GRAFT_BACKENDS_ORC_LOWERING_H_

#include <string>

#include "absl/status/statusor.h"
#include "backends/orc/program.h"
#include "runtime/library_call.h"
#include "runtime/program_runner.h"

namespace graft::orc {

// The generated entry point:
//   int32_t graft_entry(void** io, char* arena, void** state);
// io holds the inputs' then the outputs' data pointers; it returns 0, or
// 1 + the index of the step that failed (a library call's error).
inline constexpr const char* kEntryName = runtime::kEntrySymbol;
using EntryFunction = runtime::EntryFunction;

// What generated code calls for a library step: `call` is the state slot's
// pointer, `buffers` the result's then the operands' data pointers.
inline constexpr const char* kLibraryCallName = runtime::kRunLibrarySymbol;

// Lowers every step of `program` to LLVM IR (one function per step and the
// entry function that calls them in order), optimizes it for the host CPU
// and returns the object file. For a program of several threads, large
// steps whose outermost loop has independent iterations (pointwise groups,
// copies, quantize, softmax, layer and batch norm) are called through
// runtime::kParallelForSymbol, which runs their loop in parts on the run's
// threads (runtime/parallel_steps.h).
absl::StatusOr<std::string> CompileToObject(const Program& program);

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_LOWERING_H_
