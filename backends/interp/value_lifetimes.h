#ifndef GRAFT_BACKENDS_INTERP_VALUE_LIFETIMES_H_
#define GRAFT_BACKENDS_INTERP_VALUE_LIFETIMES_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/node.h"

namespace graft::interp {

// For each node of `order` (a graph's nodes in run order, `position` their
// indices), the index of the last node that reads its value; a value nobody
// reads dies right after its own node. Fails, naming the node, when a node
// reads a value not defined before it.
absl::StatusOr<std::vector<int64_t>> LastUses(
    absl::Span<const Node* const> order,
    const absl::flat_hash_map<const Node*, int64_t>& position);

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_VALUE_LIFETIMES_H_
