#ifndef GRAFT_BACKENDS_INTERP_EXECUTION_PLAN_H_
#define GRAFT_BACKENDS_INTERP_EXECUTION_PLAN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/backend.h"
#include "backends/interp/kernel.h"
#include "backends/interp/value.h"
#include "graph/module.h"

namespace graft::interp {

// What the interpreter's Executable runs: built once by Compile, then only
// read, so any number of threads may Run one plan at once. Each step is one
// node with everything that does not depend on input values resolved ahead:
// its kernel, its arguments bound to the op's schema, the tensor a get_attr
// reads, the plan of a called submodule, and the values that die after it
// (freed at their last use, so a run holds only live values).
class ExecutionPlan {
 public:
  // `module` must outlive the plan and not change while it exists. Fails,
  // naming the node, if a node cannot run (unknown op, no kernel, arguments
  // that do not match the op's schema, missing tensor or submodule).
  // `communicator` serves the collectives of a sharded module.
  static absl::StatusOr<std::unique_ptr<ExecutionPlan>> Build(
      const Module& module, std::shared_ptr<Communicator> communicator = nullptr);

  // Runs on `inputs`, already checked against the placeholders' types.
  // Returns the output node's value.
  absl::StatusOr<Value> Run(absl::Span<const Tensor> inputs) const;

  // The memory plan of the intermediates whose types are static: what an
  // arena would take, beside their sum.
  ExecutableInfo info() const { return info_; }

 private:
  struct Step {
    const Node* node = nullptr;
    const Kernel* kernel = nullptr;        // call_function.
    std::optional<OpCall> call;            // call_function.
    const Tensor* attr = nullptr;          // get_attr.
    const ExecutionPlan* submodule = nullptr;  // call_module.
    const Module* sub_module = nullptr;        // call_module.
    int64_t input_index = -1;              // placeholder.
    std::vector<int64_t> frees;            // Steps whose values die here.
  };

  ExecutionPlan() = default;
  absl::Status AddStep(const Module& module, const Node& node,
                       int64_t& placeholders);
  absl::Status PlanLifetimes();
  absl::StatusOr<Value> RunStep(const Step& step,
                                absl::Span<const Tensor> inputs,
                                std::vector<Value>& env) const;

  std::vector<ValueSignature> signature_;  // The placeholders'.
  std::vector<Step> steps_;
  absl::flat_hash_map<const Node*, int64_t> slot_;  // Node -> step.
  // Plans of called submodules, built once each.
  absl::flat_hash_map<const Module*, std::unique_ptr<ExecutionPlan>> nested_;
  ExecutableInfo info_;
  std::shared_ptr<Communicator> communicator_;
};

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_EXECUTION_PLAN_H_
