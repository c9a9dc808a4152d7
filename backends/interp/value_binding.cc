#include "backends/interp/value_binding.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "backends/backend.h"
#include "support/status_macros.h"

namespace graft::interp {

absl::StatusOr<std::vector<Tensor>> SubmoduleInputs(
    const Node& node, const Module& submodule,
    const std::function<const Value*(const Node*)>& value_of) {
  std::vector<ValueSignature> params = PlaceholderSignature(submodule.graph());
  std::vector<Tensor> inputs(params.size());
  std::vector<bool> given(params.size(), false);
  if (node.num_args() > params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("submodule '", node.target(), "' takes ", params.size(),
                     " inputs, got ", node.num_args()));
  }
  auto bind = [&](size_t i, const Argument& arg) -> absl::Status {
    if (!arg.is_node()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", params[i].name, "' of submodule '",
                       node.target(), "' must be a tensor"));
    }
    const Value* v = value_of(arg.node());
    if (v == nullptr || v->empty()) {
      return absl::InternalError(
          absl::StrCat(arg.node()->Ref(), " has no value"));
    }
    if (!v->is_tensor()) {
      return absl::InvalidArgumentError(absl::StrCat(
          arg.node()->Ref(), " is a tuple; read one element with getitem"));
    }
    inputs[i] = v->tensor();
    given[i] = true;
    return absl::OkStatus();
  };
  for (size_t i = 0; i < node.num_args(); ++i) {
    RETURN_IF_ERROR(bind(i, node.arg(i)));
  }
  for (const auto& [key, arg] : node.kwargs()) {
    size_t i = 0;
    while (i < params.size() && params[i].name != key) ++i;
    if (i == params.size() || given[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("submodule '", node.target(), "' has no input '", key,
                       "' or it was given twice"));
    }
    RETURN_IF_ERROR(bind(i, arg));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!given[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", params[i].name, "' of submodule '",
                       node.target(), "' is not given"));
    }
  }
  return inputs;
}

// Lists nest as deep as the literal, not the graph, so recursion is fine.
absl::Status CollectOutputTensors(
    const Argument& arg,
    const std::function<const Value*(const Node*)>& value_of,
    std::vector<Tensor>& out) {
  if (arg.is_list()) {
    for (const Argument& e : arg.list()) {
      absl::Status s = CollectOutputTensors(e, value_of, out);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  if (!arg.is_node()) {
    return absl::InvalidArgumentError(
        "outputs must be nodes or lists of nodes, not literals");
  }
  const Value* v = value_of(arg.node());
  if (v == nullptr || v->empty()) {
    return absl::InternalError(
        absl::StrCat("output ", arg.node()->Ref(), " has no value"));
  }
  if (v->is_tensor()) {
    out.push_back(v->tensor());
  } else {
    for (const Tensor& t : v->tuple()) out.push_back(t);
  }
  return absl::OkStatus();
}

}  // namespace graft::interp
