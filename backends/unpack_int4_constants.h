#ifndef GRAFT_BACKENDS_UNPACK_INT4_CONSTANTS_H_
#define GRAFT_BACKENDS_UNPACK_INT4_CONSTANTS_H_

#include "absl/status/statusor.h"
#include "graph/int4_ops.h"
#include "graph/module.h"

namespace graft {

// Replaces each graft::unpack_int4 of a module tensor (the packed weights
// of weight-only int4 quantization) by a module tensor holding its result,
// so that compiled backends read i8 values as they do for int8 weights and
// never unpack at run time: the file keeps half the bytes, the compiled
// program what it runs fastest. Returns whether it changed anything.
absl::StatusOr<bool> UnpackInt4Constants(Module& module);

// Compiled backends claim the unpacks it folds (IsInt4ConstantUnpack,
// graph/int4_ops.h) and leave the others to the interpreter.

}  // namespace graft

#endif  // GRAFT_BACKENDS_UNPACK_INT4_CONSTANTS_H_
