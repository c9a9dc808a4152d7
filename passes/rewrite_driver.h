#ifndef GRAFT_PASSES_REWRITE_DRIVER_H_
#define GRAFT_PASSES_REWRITE_DRIVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/pass_context.h"

namespace graft::passes {

class Rewriter;

// A local rewrite rooted at one node, MLIR style: MatchAndRewrite looks at
// `root` and, if it applies, changes the graph through `rewriter` and
// returns true. Higher benefit is tried first.
class RewritePattern {
 public:
  RewritePattern(std::string name, int benefit = 1)
      : name_(std::move(name)), benefit_(benefit) {}
  virtual ~RewritePattern() = default;

  const std::string& name() const { return name_; }
  int benefit() const { return benefit_; }
  virtual absl::StatusOr<bool> MatchAndRewrite(Node* root, Rewriter& rewriter) const = 0;

 private:
  std::string name_;
  int benefit_;
};

// The only way patterns change the graph under the greedy driver, so that
// the driver sees every change: new nodes and the users of replaced values
// go back on the worklist, and every new node records provenance.
class Rewriter {
 public:
  Rewriter(Module& module, const PassContext* ctx) : module_(module), ctx_(ctx) {}

  Module& module() { return module_; }
  Graph& graph() { return module_.graph(); }

  // Creates a call before the root being rewritten.
  Node* Call(absl::string_view op, std::vector<Argument> args, Kwargs kwargs = {});
  // Makes users of `old_value` read `new_value`, and erases `old_value` and
  // whatever of its pure inputs became dead.
  void ReplaceNode(Node* old_value, Node* new_value);
  // Adds a tensor to the module and returns a get_attr of it.
  Node* Constant(absl::string_view base_name, Tensor value);

  // Internal, for the driver.
  void BeginRewrite(Node* root);
  std::vector<Node*> TakeChanged();

 private:
  void EraseIfDead(Node* node);

  Module& module_;
  const PassContext* ctx_;
  Node* root_ = nullptr;
  std::vector<Node*> created_;
  std::vector<Node*> changed_;
};

struct GreedyConfig {
  // Cap on successful rewrites, as a multiple of the graph's size, so a
  // pattern set that cycles (a -> b -> a) stops.
  int64_t max_rewrites_per_node = 8;
};

// What the driver did.
struct GreedyReport {
  int64_t rewrites = 0;
  bool converged = true;
  std::vector<std::pair<std::string, int64_t>> per_pattern;  // name, count
};

// Applies `patterns` to the module's graph until none applies (a fixed
// point), highest benefit first, with a worklist seeded with every node in
// order. Each node is examined when first seen and again only when a
// rewrite touched it or its inputs, so the cost is linear in the graph size
// for a bounded pattern set. A run that hits the cap reports
// converged=false (and notes it in `ctx`).
absl::StatusOr<GreedyReport> ApplyPatternsGreedily(
    Module& module, const std::vector<std::unique_ptr<RewritePattern>>& patterns,
    PassContext* ctx = nullptr, const GreedyConfig& config = {});

}  // namespace graft::passes

#endif  // GRAFT_PASSES_REWRITE_DRIVER_H_
