#ifndef GRAFT_PASSES_OUTLINE_H_
#define GRAFT_PASSES_OUTLINE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/module.h"
#include "passes/pass_context.h"

namespace graft::passes {

// Moves a group of call_function nodes into a new submodule `name` and puts
// one call_module in their place, as fuse-elementwise and partition do. The
// group's inputs (values it reads from outside, in first-use order) become
// the submodule's placeholders and the call's arguments; the values of the
// group used outside it become its outputs: one is the call's value, several
// are returned as a tuple that getitem nodes read. The call sits where the
// group's last node was, so every outside user of a group value must come
// after that node, and every input before it; a group that breaks this, or
// reads a tuple-valued input, is refused with an error and nothing changes.
// `nodes` must be in graph order. Returns the call_module node.
absl::StatusOr<Node*> OutlineNodes(Module& module,
                                   absl::Span<Node* const> nodes,
                                   const std::string& name,
                                   const PassContext* ctx = nullptr);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_OUTLINE_H_
