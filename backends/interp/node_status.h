#ifndef GRAFT_BACKENDS_INTERP_NODE_STATUS_H_
#define GRAFT_BACKENDS_INTERP_NODE_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "graph/node.h"

namespace graft::interp {

// "node %add_1 (add)", "node %sub (call_module block)".
std::string DescribeNode(const Node& node);
// `status` with DescribeNode(node) in front of its message.
absl::Status AnnotateNode(const Node& node, const absl::Status& status);

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_NODE_STATUS_H_
