#include "passes/partition.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "passes/outline.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

bool MayJoin(const Node& n, const std::function<bool(const Node&)>& supported) {
  if (n.op() != OpCode::kCallFunction || n.is_call("getitem")) return false;
  if (n.schema() != nullptr && n.schema()->returns_tuple) return false;
  // Submodules hold pure ops only (see IsPureNode).
  if (!IsPureNode(n)) return false;
  return supported(n);
}

// Nodes that read nothing and so can sit inside a run without belonging.
bool IsSource(const Node& n) {
  return n.op() == OpCode::kPlaceholder || n.op() == OpCode::kGetAttr;
}

}  // namespace

absl::StatusOr<int64_t> Partition(Module& module,
                                  std::function<bool(const Node&)> supported,
                                  std::string prefix, const PassContext* ctx) {
  if (!IsValidName(prefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("partition prefix '", prefix, "' is not a valid name"));
  }
  std::vector<std::vector<Node*>> runs(1);
  for (Node* n : module.graph().nodes()) {
    if (MayJoin(*n, supported)) {
      runs.back().push_back(n);
    } else if (!IsSource(*n) && !runs.back().empty()) {
      runs.emplace_back();
    }
  }
  int64_t made = 0;
  int64_t next_name = 0;
  for (const std::vector<Node*>& run : runs) {
    if (run.empty()) continue;
    std::string name;
    do {
      name = absl::StrCat(prefix, "_", next_name++);
    } while (module.FindSubmodule(name) != nullptr);
    RETURN_IF_ERROR(OutlineNodes(module, run, name, ctx).status());
    ++made;
  }
  return made;
}

absl::StatusOr<std::unique_ptr<PartitionPass>> PartitionPass::FromOptions(
    const PassOptions& options) {
  std::string list = options.GetString("ops", "");
  std::string prefix = options.GetString("prefix", "partition");
  std::vector<std::string> ops = absl::StrSplit(list, ';', absl::SkipEmpty());
  if (ops.empty()) {
    return absl::InvalidArgumentError(
        "needs the ops to put in submodules, e.g. partition{ops=relu;add}");
  }
  for (const std::string& op : ops) {
    if (OpRegistry::Global().Find(op) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown op '", op, "' in ops"));
    }
  }
  if (!IsValidName(prefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefix '", prefix, "' is not a valid name"));
  }
  return std::make_unique<PartitionPass>(std::move(ops), std::move(prefix));
}

absl::StatusOr<bool> PartitionPass::Run(Module& module, PassContext& ctx) {
  absl::flat_hash_set<std::string> ops(ops_.begin(), ops_.end());
  ASSIGN_OR_RETURN(
      int64_t made,
      Partition(
          module, [&](const Node& n) { return ops.contains(n.target()); },
          prefix_, &ctx));
  return made > 0;
}

}  // namespace graft::passes
