#ifndef GRAFT_BACKENDS_INLINE_SUBMODULES_H_
#define GRAFT_BACKENDS_INLINE_SUBMODULES_H_

#include "absl/status/status.h"
#include "graph/module.h"

namespace graft {

// Replaces each call_module whose submodule is not a group of pointwise
// ops (partition's or a user's outlined code) by the submodule's nodes,
// its tensors copied into `module` under new names, so that the program
// sees every op. Pointwise groups stay: each compiles to one loop. Fails on
// a submodule that returns a tuple or calls submodules of its own.
absl::Status InlineSubmodules(Module& module);

}  // namespace graft

#endif  // GRAFT_BACKENDS_INLINE_SUBMODULES_H_
