#ifndef GRAFT_ONNX_ONNX_CONTROL_FLOW_H_
#define GRAFT_ONNX_ONNX_CONTROL_FLOW_H_

// ONNX's If where its condition is known at import (shape arithmetic that
// folds, a flag an exporter wrote as a constant): the branch it takes,
// inlined. graft's graphs have no control flow, so an If whose condition
// is computed at run time is refused by name.

#include <vector>

#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// The nodes of the branch `condition` (one element, any type: nonzero is
// true) picks: its initializers as Constant nodes, its nodes, and an
// Identity from each branch output to the If's.
absl::StatusOr<std::vector<onnx::NodeProto>> ExpandIf(const onnx::NodeProto& node, const Tensor& condition);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_CONTROL_FLOW_H_
