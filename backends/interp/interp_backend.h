#ifndef GRAFT_BACKENDS_INTERP_INTERP_BACKEND_H_
#define GRAFT_BACKENDS_INTERP_INTERP_BACKEND_H_

#include <memory>

#include "backends/backend.h"

namespace graft::interp {

// The reference interpreter as a Backend, registered as "interp". Compile
// copies the module and builds an ExecutionPlan of it (every node bound to
// its kernel, value lifetimes planned), failing if any node cannot run; Run
// only runs the plan, from any number of threads at once. It takes no
// options and runs on the CPU only (device_index 0). Device inputs are
// copied to the host first.
class InterpBackend : public Backend {
 public:
  absl::string_view name() const override { return "interp"; }
  // Every opcode; call_function nodes whose op has a kernel.
  absl::Status CanRun(const Node& node,
                      const CompileOptions& options) const override;
  absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const Module& module, const CompileOptions& options) override;
};

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_INTERP_BACKEND_H_
