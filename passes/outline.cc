#include "passes/outline.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"

namespace graft::passes {
namespace {

using NodeMap = absl::flat_hash_map<const Node*, Node*>;

}  // namespace

absl::StatusOr<Node*> OutlineNodes(Module& module,
                                   absl::Span<Node* const> nodes,
                                   const std::string& name,
                                   const PassContext* ctx) {
  if (nodes.empty()) return absl::InvalidArgumentError("nothing to outline");
  if (module.FindSubmodule(name) != nullptr) {
    return absl::AlreadyExistsError(
        absl::StrCat("the module already has a submodule named '", name, "'"));
  }
  Graph& graph = module.graph();
  Node* last = nodes.back();
  absl::flat_hash_set<const Node*> in_group(nodes.begin(), nodes.end());
  auto outside = [&](Node* user) { return !in_group.contains(user); };

  // Check everything before changing anything.
  std::vector<Node*> inputs;
  absl::flat_hash_set<const Node*> seen_inputs;
  std::vector<Node*> outputs;
  for (Node* n : nodes) {
    if (n->op() != OpCode::kCallFunction) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot outline ", n->Ref(), ": not a call_function"));
    }
    // A call_module counts as pure (IsPureNode), so what it calls must be.
    if (!IsPureNode(*n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot outline ", n->Ref(), ": op '", n->target(),
                       "' is not pure (or not registered)"));
    }
    for (Node* in : n->unique_inputs()) {
      if (in_group.contains(in) || !seen_inputs.insert(in).second) continue;
      if (!in->type().has_value() && !in->meta().tuple_types.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot outline ", n->Ref(), ": its input ", in->Ref(),
                         " is a tuple, and submodule inputs are tensors"));
      }
      if (!in->IsBefore(last)) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot outline: input ", in->Ref(),
                         " is defined after ", last->Ref()));
      }
      inputs.push_back(in);
    }
    bool used_outside = false;
    for (Node* user : n->users()) {
      if (!outside(user)) continue;
      used_outside = true;
      if (!last->IsBefore(user)) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot outline: ", user->Ref(), " uses ", n->Ref(),
                         " but comes before ", last->Ref()));
      }
    }
    if (used_outside) outputs.push_back(n);
  }
  if (outputs.empty()) outputs.push_back(last);

  // The submodule: placeholders, copies, output.
  Module sub;
  Graph& sg = sub.graph();
  NodeMap map;
  for (Node* in : inputs) map[in] = sg.Placeholder(in->name(), in->type());
  for (Node* n : nodes) {
    Node* copy = sg.CopyNode(*n, map);
    if (ctx != nullptr) ctx->RecordProvenance(copy, {n});
    map[n] = copy;
  }
  if (outputs.size() == 1) {
    sg.Output(map.at(outputs[0]));
  } else {
    ArgumentList values;
    for (Node* o : outputs) values.push_back(map.at(o));
    sg.Output(std::move(values));
  }
  module.AddSubmodule(name, std::move(sub));

  // The call and, for several outputs, the getitems reading them.
  Node* call;
  {
    auto guard = graph.InsertingBefore(last);
    std::vector<Argument> args(inputs.begin(), inputs.end());
    call = graph.CallModule(name, std::move(args));
    if (ctx != nullptr) ctx->RecordProvenance(call, nodes);
    if (outputs.size() == 1) {
      call->meta().type = outputs[0]->type();
      outputs[0]->ReplaceUsesWithIf(call, outside);
    } else {
      std::vector<TensorType> types;
      for (Node* o : outputs) {
        if (o->type().has_value()) types.push_back(*o->type());
      }
      if (types.size() == outputs.size()) call->meta().tuple_types = types;
      for (size_t i = 0; i < outputs.size(); ++i) {
        Node* item =
            graph.CallFunction("getitem", {call, static_cast<int64_t>(i)});
        item->meta().type = outputs[i]->type();
        if (ctx != nullptr) ctx->RecordProvenance(item, {outputs[i]});
        outputs[i]->ReplaceUsesWithIf(item, outside);
      }
    }
  }
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (absl::Status s = graph.EraseNode(*it); !s.ok()) {
      return absl::InternalError(
          absl::StrCat("outlining ", (*it)->Ref(), ": ", s.message()));
    }
  }
  return call;
}

}  // namespace graft::passes
