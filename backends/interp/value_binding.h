#ifndef GRAFT_BACKENDS_INTERP_VALUE_BINDING_H_
#define GRAFT_BACKENDS_INTERP_VALUE_BINDING_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/interp/value.h"
#include "graph/module.h"
#include "graph/node.h"

namespace graft::interp {

// The inputs of a call_module node for its submodule's placeholders, in
// order: positional arguments first, then keyword arguments by placeholder
// name. Every placeholder must be given exactly once, as a tensor.
// `value_of` gives a node's value in the current run (null if it has none).
absl::StatusOr<std::vector<Tensor>> SubmoduleInputs(
    const Node& node, const Module& submodule,
    const std::function<const Value*(const Node*)>& value_of);

// Appends the tensors of an output node's argument to `out`: a node (a
// tuple-valued one gives each element) or nested lists of nodes.
absl::Status CollectOutputTensors(
    const Argument& arg,
    const std::function<const Value*(const Node*)>& value_of,
    std::vector<Tensor>& out);

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_VALUE_BINDING_H_
