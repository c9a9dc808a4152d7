#ifndef GRAFT_PASSES_PARTITION_H_
#define GRAFT_PASSES_PARTITION_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/pass.h"

namespace graft::passes {

// Splits a module's graph into submodules by a predicate, e.g. "the backend
// has a kernel for this op": every maximal run of consecutive supported
// call_function nodes, in the graph's current order, becomes one
// call_module named PREFIX_0, PREFIX_1, ... Placeholders and get_attr nodes
// read nothing, so they do not interrupt a run (they become the submodule's
// inputs); any other node ends it. Because a run is contiguous, everything
// it reads comes before it and everything reading it comes after it, so no
// cycle can appear. Values of a run used outside it are the submodule's
// outputs (several are returned as a tuple and read with getitem). Ops
// returning tuples and getitem never join a run, since submodule inputs and
// outputs are single tensors. Returns the number of submodules made.
absl::StatusOr<int64_t> Partition(Module& module,
                                  std::function<bool(const Node&)> supported,
                                  std::string prefix = "partition",
                                  const PassContext* ctx = nullptr);

// The pass form: `partition{ops=relu;add}` puts the listed ops in
// submodules; `prefix=NAME` (default "partition") names them.
class PartitionPass : public Pass {
 public:
  PartitionPass(std::vector<std::string> ops, std::string prefix)
      : ops_(std::move(ops)), prefix_(std::move(prefix)) {}
  // Needs option `ops`.
  static absl::StatusOr<std::unique_ptr<PartitionPass>> FromOptions(
      const PassOptions& options);

  absl::string_view name() const override { return "partition"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  std::vector<std::string> ops_;
  std::string prefix_;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_PARTITION_H_
