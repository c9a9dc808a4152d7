#ifndef GRAFT_BACKENDS_INTERP_INTERP_BACKEND_H_
#define GRAFT_BACKENDS_INTERP_INTERP_BACKEND_H_

#include <memory>

#include "backends/backend.h"

namespace graft::interp {

// The reference interpreter as a Backend, registered as "interp". Compile
// copies the module and checks that every node can run (known op, a
// kernel, arguments matching the schema); Run interprets it. It takes no
// options and runs on the CPU only (device_index 0).
class InterpBackend : public Backend {
 public:
  absl::string_view name() const override { return "interp"; }
  // Every opcode; call_function nodes whose op has a kernel.
  bool Supports(const Node& node) const override;
  absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const Module& module, const CompileOptions& options) override;
};

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_INTERP_BACKEND_H_
