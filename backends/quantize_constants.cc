#include "backends/quantize_constants.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft {
namespace {

// The module tensor behind argument `name` of `call`, if it is one.
const Tensor* ConstantArg(const Module& module, const OpCall& call, absl::string_view name) {
  const Argument& a = call.Get(name);
  if (!a.is_node() || a.node()->op() != OpCode::kGetAttr) return nullptr;
  auto it = module.tensors().find(a.node()->target());
  return it == module.tensors().end() ? nullptr : &it->second.value;
}

absl::Status Bad(const Node& node, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("%", node.name(), " (", node.target(), "): ", what));
}

absl::Status CheckPerChannel(const Module& module, const Node& node) {
  absl::StatusOr<OpCall> call = OpCall::Bind(node);
  if (!call.ok()) return absl::OkStatus();  // Type inference reports it.
  if (const Tensor* scales = ConstantArg(module, *call, "scales"); scales != nullptr) {
    for (int64_t c = 0; c < scales->NumElements(); ++c) {
      const double v = scales->GetAsDouble(c);
      if (!(v > 0) || !std::isfinite(v)) {
        return Bad(node, absl::StrCat("scales[", c, "] must be positive and finite, got ", v));
      }
    }
  }
  const DType dtype = call->GetDType("dtype");
  const double lo = dtype == DType::kI8 ? -128 : 0;
  const double hi = dtype == DType::kI8 ? 127 : dtype == DType::kU8 ? 255 : 0;
  if (const Tensor* zero_points = ConstantArg(module, *call, "zero_points");
      zero_points != nullptr) {
    for (int64_t c = 0; c < zero_points->NumElements(); ++c) {
      const double v = zero_points->GetAsDouble(c);
      if (!(v >= lo && v <= hi)) {
        return Bad(node, absl::StrCat("zero_points[", c, "] ", v, " is out of range for ",
                                      DTypeName(dtype), " [", lo, ", ", hi, "]"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckQuantizeConstants(const Module& module) {
  for (const Node* node : module.graph().nodes()) {
    if (node->is_call("quantize_per_channel")) RETURN_IF_ERROR(CheckPerChannel(module, *node));
  }
  return absl::OkStatus();
}

}  // namespace graft
