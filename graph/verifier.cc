#include "graph/verifier.h"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/op_registry.h"

namespace graft {
namespace {

// Submodules nest through unique_ptr so they cannot form a cycle, but a
// corrupt or hostile file could still nest absurdly deep.
constexpr int kMaxSubmoduleDepth = 64;

// Visits the node references of `arg` depth first, in the slot order Node
// uses for its use-lists. Recursion only follows literal list nesting.
template <typename Fn>
void ForEachNodeRef(const Argument& arg, Fn& fn) {
  if (arg.is_node()) {
    fn(arg.node());
  } else if (arg.is_list()) {
    for (const Argument& a : arg.list()) ForEachNodeRef(a, fn);
  }
}

template <typename Fn>
void ForEachOperand(const Node& node, Fn&& fn) {
  for (const Argument& a : node.args()) ForEachNodeRef(a, fn);
  for (const auto& [key, value] : node.kwargs()) ForEachNodeRef(value, fn);
}

std::string TypesToString(const std::vector<TensorType>& types) {
  return absl::StrCat("(",
                      absl::StrJoin(types, ", ",
                                    [](std::string* out, const TensorType& t) {
                                      out->append(t.ToString());
                                    }),
                      ")");
}

// Checks one graph (and, given its module, the module references of its
// nodes). Two passes over the node list: the first numbers the nodes and
// flattens every node's operands into one array, so the second can check
// "defined before use" with a position lookup and each use-list entry in
// O(1) against the operand it names. `claimed_` marks the operand slots
// that some use-list entry accounts for, which catches both missing and
// duplicated entries without per-node hash sets.
class GraphVerifier {
 public:
  GraphVerifier(const Graph& graph, const Module* module)
      : graph_(graph), module_(module) {}

  // The first problem, or an empty string.
  std::string Run() {
    if (Index() && CheckAllNodes()) CheckOutputPlacement();
    return error_;
  }

 private:
  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  bool Index() {
    const size_t expected = graph_.num_nodes();
    position_.reserve(expected);
    nodes_.reserve(expected);
    operand_begin_.reserve(expected + 1);
    for (const Node* n : graph_.nodes()) {
      if (nodes_.size() == expected) {
        return Fail(absl::StrCat("the node list is longer than the ", expected,
                                 " nodes the graph counts"));
      }
      if (!position_.emplace(n, nodes_.size()).second) {
        return Fail(absl::StrCat(n->Ref(), " appears twice in the node list"));
      }
      nodes_.push_back(n);
      operand_begin_.push_back(operands_.size());
      ForEachOperand(*n,
                     [&](const Node* input) { operands_.push_back(input); });
    }
    operand_begin_.push_back(operands_.size());
    if (nodes_.size() != expected) {
      return Fail(absl::StrCat("the graph counts ", expected,
                               " nodes but its node list has ", nodes_.size()));
    }
    claimed_.assign(operands_.size(), false);
    return true;
  }

  bool CheckAllNodes() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = *nodes_[i];
      if (!CheckIdentity(n) || !CheckOperands(n, i) || !CheckUses(n) ||
          !CheckOpCode(n)) {
        return false;
      }
    }
    return true;
  }

  bool CheckIdentity(const Node& n) {
    if (n.graph() != &graph_) {
      return Fail(absl::StrCat(n.Ref(),
                               " belongs to another graph but is linked into "
                               "this one"));
    }
    if (n.erased()) {
      return Fail(
          absl::StrCat(n.Ref(), " is erased but still in the node list"));
    }
    if (!IsValidName(n.name())) {
      return Fail(
          absl::StrCat("node name '", n.name(),
                       "' is not valid (want [A-Za-z_][A-Za-z0-9_.]*)"));
    }
    const Node* named = graph_.FindNode(n.name());
    if (named == nullptr) {
      return Fail(
          absl::StrCat(n.Ref(), " is missing from the graph's name table"));
    }
    if (named != &n) {
      return Fail(absl::StrCat("two nodes are named ", n.Ref()));
    }
    return true;
  }

  // Each operand: a live node of this graph, defined earlier, with a
  // use-list entry (claimed when the earlier node was checked).
  bool CheckOperands(const Node& n, size_t pos) {
    for (size_t k = operand_begin_[pos]; k < operand_begin_[pos + 1]; ++k) {
      const Node* input = operands_[k];
      const size_t slot = k - operand_begin_[pos];
      if (input == &n) return Fail(absl::StrCat(n.Ref(), " uses itself"));
      auto it = position_.find(input);
      if (it == position_.end()) {
        // Not in the list: erased (but not yet freed) or foreign.
        if (input->graph() != &graph_) {
          return Fail(absl::StrCat(n.Ref(), " uses ", input->Ref(),
                                   ", which belongs to another graph"));
        }
        return Fail(absl::StrCat(n.Ref(), " uses ", input->Ref(),
                                 ", which was erased"));
      }
      if (it->second > pos) {
        return Fail(absl::StrCat(n.Ref(), " uses ", input->Ref(),
                                 ", which is defined after it"));
      }
      if (input->op() == OpCode::kOutput) {
        return Fail(absl::StrCat(n.Ref(), " uses the output node ",
                                 input->Ref(), ", which has no value"));
      }
      if (!claimed_[k]) {
        return Fail(absl::StrCat(n.Ref(), " reads ", input->Ref(),
                                 " in operand slot ", slot, ", but ",
                                 input->Ref(), " has no matching use"));
      }
    }
    return true;
  }

  // Each use-list entry names a live node whose operand at that slot is `n`,
  // and no two entries name the same slot.
  bool CheckUses(const Node& n) {
    for (const Use& use : n.uses()) {
      auto it = position_.find(use.user);
      if (it == position_.end()) {
        // The user may have been freed: do not dereference it.
        return Fail(absl::StrCat(n.Ref(),
                                 " has a use by a node that is not a live node "
                                 "of this graph"));
      }
      const Node& user = *use.user;
      const size_t begin = operand_begin_[it->second];
      const size_t count = operand_begin_[it->second + 1] - begin;
      if (use.slot >= count) {
        return Fail(absl::StrCat(n.Ref(), " lists a use by ", user.Ref(),
                                 " in operand slot ", use.slot, ", but ",
                                 user.Ref(), " has only ", count,
                                 " operand(s)"));
      }
      const Node* operand = operands_[begin + use.slot];
      if (operand != &n) {
        return Fail(absl::StrCat(n.Ref(), " lists a use by ", user.Ref(),
                                 " in operand slot ", use.slot,
                                 ", but that operand is ", operand->Ref()));
      }
      if (claimed_[begin + use.slot]) {
        return Fail(absl::StrCat(n.Ref(), " lists its use by ", user.Ref(),
                                 " in operand slot ", use.slot, " twice"));
      }
      claimed_[begin + use.slot] = true;
    }
    return true;
  }

  bool CheckOpCode(const Node& n) {
    switch (n.op()) {
      case OpCode::kPlaceholder:
      case OpCode::kGetAttr:
        if (n.num_args() != 0 || !n.kwargs().empty()) {
          return Fail(absl::StrCat(OpCodeName(n.op()), " ", n.Ref(),
                                   " takes no arguments"));
        }
        if (n.target().empty()) {
          return Fail(
              absl::StrCat(OpCodeName(n.op()), " ", n.Ref(), " has no target"));
        }
        return n.op() == OpCode::kPlaceholder || CheckTensorRef(n);
      case OpCode::kOutput:
        return CheckOutput(n);
      case OpCode::kCallFunction:
        return CheckCall(n);
      case OpCode::kCallModule:
        return CheckSubmoduleRef(n);
    }
    return true;
  }

  bool CheckOutput(const Node& n) {
    if (output_ != nullptr) {
      return Fail(absl::StrCat("the graph has more than one output node: ",
                               output_->Ref(), " and ", n.Ref()));
    }
    output_ = &n;
    if (n.num_args() != 1 || !n.kwargs().empty()) {
      return Fail(absl::StrCat("output node ", n.Ref(),
                               " must have exactly one argument, got ",
                               n.num_args() + n.kwargs().size()));
    }
    const Argument& value = n.arg(0);
    bool ok = value.is_node();
    if (value.is_list()) {
      ok = true;
      for (const Argument& e : value.list()) ok = ok && e.is_node();
    }
    if (!ok) {
      return Fail(absl::StrCat("output node ", n.Ref(),
                               " must return a node or a list of nodes"));
    }
    return true;
  }

  bool CheckCall(const Node& n) {
    const OpSchema* schema = n.schema();
    if (schema == nullptr) schema = OpRegistry::Global().Find(n.target());
    if (schema == nullptr) {
      return Fail(
          absl::StrCat(n.Ref(), " calls unknown op '", n.target(), "'"));
    }
    // A tuple has no tensor type: only getitem may read it. Checked here
    // because type rules assume every tensor input has a type.
    if (!n.is_call("getitem")) {
      const Node* tuple = nullptr;
      ForEachOperand(n, [&](const Node* input) {
        if (tuple == nullptr && !input->type().has_value() &&
            !input->meta().tuple_types.empty()) {
          tuple = input;
        }
      });
      if (tuple != nullptr) {
        return Fail(absl::StrCat(n.Ref(), " uses ", tuple->Ref(),
                                 ", which returns a tuple; read its elements "
                                 "with getitem"));
      }
    }
    return CheckInferredTypes(n, *schema);
  }

  bool CheckInferredTypes(const Node& n, const OpSchema& schema) {
    absl::StatusOr<std::optional<std::vector<TensorType>>> inferred =
        InferNodeTypes(n);
    if (!inferred.ok()) {
      return Fail(absl::StrCat(n.Ref(), ": ", inferred.status().message()));
    }
    if (!inferred->has_value()) {
      // Some input type is unknown. Inference binds the arguments first, so
      // when it produced types they matched the schema; here make sure.
      absl::StatusOr<OpCall> call = OpCall::Bind(schema, n.args(), n.kwargs());
      if (!call.ok()) {
        return Fail(absl::StrCat(n.Ref(), ": ", call.status().message()));
      }
      return true;
    }
    const std::vector<TensorType>& types = **inferred;
    if (schema.returns_tuple) {
      const std::vector<TensorType>& recorded = n.meta().tuple_types;
      if (!recorded.empty() && recorded != types) {
        return Fail(absl::StrCat(
            n.Ref(), " has types ", TypesToString(recorded), ", but ",
            schema.name, " infers ", TypesToString(types), " from its inputs"));
      }
      return true;
    }
    if (types.size() == 1 && n.type().has_value() && *n.type() != types[0]) {
      return Fail(absl::StrCat(n.Ref(), " has type ", n.type()->ToString(),
                               ", but ", schema.name, " infers ",
                               types[0].ToString(), " from its inputs"));
    }
    return true;
  }

  bool CheckTensorRef(const Node& n) {
    if (module_ == nullptr) return true;
    const Tensor* tensor = module_->FindTensor(n.target());
    if (tensor == nullptr) {
      return Fail(absl::StrCat(n.Ref(), " reads tensor '", n.target(),
                               "', which the module does not have"));
    }
    if (tensor->defined() && n.type().has_value() &&
        *n.type() != tensor->type()) {
      return Fail(absl::StrCat(n.Ref(), " has type ", n.type()->ToString(),
                               ", but tensor '", n.target(), "' is ",
                               tensor->TypeString()));
    }
    return true;
  }

  bool CheckSubmoduleRef(const Node& n) {
    if (n.target().empty()) {
      return Fail(absl::StrCat("call_module ", n.Ref(), " has no target"));
    }
    if (module_ != nullptr && module_->FindSubmodule(n.target()) == nullptr) {
      return Fail(absl::StrCat(n.Ref(), " calls submodule '", n.target(),
                               "', which the module does not have"));
    }
    return true;
  }

  bool CheckOutputPlacement() {
    if (output_ == nullptr) return Fail("the graph has no output node");
    if (output_ != nodes_.back()) {
      return Fail(absl::StrCat("output node ", output_->Ref(),
                               " is not the last node (",
                               output_->next()->Ref(), " follows it)"));
    }
    return true;
  }

  const Graph& graph_;
  const Module* module_;
  absl::flat_hash_map<const Node*, size_t> position_;
  std::vector<const Node*> nodes_;
  std::vector<size_t> operand_begin_;  // Per position, plus one past the end.
  std::vector<const Node*> operands_;  // Every node's operands, by slot.
  std::vector<bool> claimed_;          // Parallel to operands_.
  const Node* output_ = nullptr;
  std::string error_;
};

absl::Status VerifyError(absl::string_view where, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("verify: ", where, message));
}

}  // namespace

absl::Status Verify(const Graph& graph) {
  std::string error = GraphVerifier(graph, nullptr).Run();
  if (!error.empty()) return VerifyError("", error);
  return absl::OkStatus();
}

absl::Status Verify(const Module& module) {
  struct Item {
    const Module* module;
    std::string path;  // Dotted submodule path; empty for the top.
    int depth;
  };
  std::deque<Item> work;
  work.push_back({&module, "", 0});
  while (!work.empty()) {
    Item item = std::move(work.front());
    work.pop_front();
    const std::string where =
        item.path.empty() ? ""
                          : absl::StrCat("in submodule '", item.path, "': ");
    if (item.depth > kMaxSubmoduleDepth) {
      return VerifyError(where, absl::StrCat("submodules nest deeper than ",
                                             kMaxSubmoduleDepth, " levels"));
    }
    std::string error = GraphVerifier(item.module->graph(), item.module).Run();
    if (!error.empty()) return VerifyError(where, error);
    for (const auto& [name, sub] : item.module->submodules()) {
      std::string path =
          item.path.empty() ? name : absl::StrCat(item.path, ".", name);
      work.push_back({sub.get(), std::move(path), item.depth + 1});
    }
  }
  return absl::OkStatus();
}

}  // namespace graft
