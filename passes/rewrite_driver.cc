#include "passes/rewrite_driver.h"

#include <algorithm>
#include <deque>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "passes/node_util.h"

namespace graft::passes {

Node* Rewriter::Call(absl::string_view op, std::vector<Argument> args, Kwargs kwargs) {
  auto guard = graph().InsertingBefore(root_);
  Node* n = graph().CallFunction(op, std::move(args), std::move(kwargs));
  InferAndSetType(n);
  created_.push_back(n);
  return n;
}

Node* Rewriter::Constant(absl::string_view base_name, Tensor value) {
  std::string name = module_.UniqueTensorName(base_name);
  TensorType type = value.type();
  module_.SetTensor(name, std::move(value));
  auto guard = graph().InsertingBefore(root_);
  Node* n = graph().GetAttr(name, type);
  created_.push_back(n);
  return n;
}

void Rewriter::ReplaceNode(Node* old_value, Node* new_value) {
  for (Node* user : old_value->users()) changed_.push_back(user);
  old_value->ReplaceAllUsesWith(new_value);
  EraseIfDead(old_value);
}

void Rewriter::EraseIfDead(Node* node) {
  std::vector<Node*> work = {node};
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    if (n->erased() || n->has_uses() || !IsPureNode(*n)) continue;
    std::vector<Node*> inputs = n->unique_inputs();
    (void)graph().EraseNode(n);
    for (Node* in : inputs) {
      changed_.push_back(in);
      work.push_back(in);
    }
  }
}

void Rewriter::BeginRewrite(Node* root) {
  root_ = root;
  created_.clear();
  changed_.clear();
}

std::vector<Node*> Rewriter::TakeChanged() {
  if (ctx_ != nullptr) {
    for (Node* n : created_) ctx_->RecordProvenance(n, {root_});
  }
  std::vector<Node*> out = std::move(created_);
  out.insert(out.end(), changed_.begin(), changed_.end());
  created_.clear();
  changed_.clear();
  return out;
}

absl::StatusOr<GreedyReport> ApplyPatternsGreedily(
    Module& module, const std::vector<std::unique_ptr<RewritePattern>>& patterns,
    PassContext* ctx, const GreedyConfig& config) {
  std::vector<const RewritePattern*> ordered;
  for (const auto& p : patterns) ordered.push_back(p.get());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const RewritePattern* a, const RewritePattern* b) {
                     return a->benefit() > b->benefit();
                   });
  GreedyReport report;
  std::vector<int64_t> counts(ordered.size(), 0);
  Graph& graph = module.graph();
  const int64_t cap =
      config.max_rewrites_per_node * static_cast<int64_t>(graph.num_nodes()) + 16;

  // A FIFO worklist with membership, seeded in graph order.
  std::deque<Node*> work;
  absl::flat_hash_set<Node*> queued;
  for (Node* n : graph.nodes()) {
    work.push_back(n);
    queued.insert(n);
  }
  Rewriter rewriter(module, ctx);
  while (!work.empty()) {
    Node* n = work.front();
    work.pop_front();
    queued.erase(n);
    if (n->erased() || n->op() != OpCode::kCallFunction) continue;
    for (size_t i = 0; i < ordered.size(); ++i) {
      rewriter.BeginRewrite(n);
      absl::StatusOr<bool> applied = ordered[i]->MatchAndRewrite(n, rewriter);
      if (!applied.ok()) {
        return absl::Status(applied.status().code(),
                            absl::StrCat("pattern '", ordered[i]->name(), "' at ",
                                         n->Ref(), ": ", applied.status().message()));
      }
      if (!*applied) continue;
      ++counts[i];
      ++report.rewrites;
      for (Node* touched : rewriter.TakeChanged()) {
        if (!touched->erased() && queued.insert(touched).second) work.push_back(touched);
      }
      if (!n->erased() && queued.insert(n).second) work.push_back(n);
      break;
    }
    if (report.rewrites >= cap) {
      report.converged = false;
      break;
    }
  }
  for (size_t i = 0; i < ordered.size(); ++i) {
    if (counts[i] > 0) report.per_pattern.emplace_back(ordered[i]->name(), counts[i]);
  }
  if (!report.converged && ctx != nullptr) {
    ctx->Note(absl::StrCat(ctx->current_pass().empty() ? "greedy driver"
                                                       : ctx->current_pass(),
                           ": stopped after ", report.rewrites,
                           " rewrites without reaching a fixed point"));
  }
  return report;
}

}  // namespace graft::passes
