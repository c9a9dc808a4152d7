#ifndef GRAFT_PASSES_CSE_H_
#define GRAFT_PASSES_CSE_H_

#include "passes/pass.h"

namespace graft::passes {

// Common-subexpression elimination. Two pure calls of the same op on the
// same arguments (node identity for node operands, equality for literals)
// compute the same value; the later one is replaced by the earlier. So are
// two get_attr of the same tensor. One forward walk with a hash table:
// linear in the graph size.
class CsePass : public Pass {
 public:
  absl::string_view name() const override { return "cse"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_CSE_H_
