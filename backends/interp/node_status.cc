#include "backends/interp/node_status.h"

#include "absl/strings/str_cat.h"

namespace graft::interp {

std::string DescribeNode(const Node& node) {
  if (node.op() == OpCode::kCallFunction) {
    return absl::StrCat("node ", node.Ref(), " (", node.target(), ")");
  }
  return absl::StrCat("node ", node.Ref(), " (", OpCodeName(node.op()), " ",
                      node.target(), ")");
}

absl::Status AnnotateNode(const Node& node, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(DescribeNode(node), ": ", status.message()));
}

}  // namespace graft::interp
