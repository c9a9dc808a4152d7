#ifndef GRAFT_PASSES_CANONICALIZE_H_
#define GRAFT_PASSES_CANONICALIZE_H_

#include <memory>
#include <vector>

#include "passes/pass.h"
#include "passes/rewrite_driver.h"

namespace graft::passes {

// Canonicalization: removes computations that are algebraic identities, so
// later passes and backends see the simplest equivalent graph. It applies a
// fixed set of local rewrite patterns to a fixed point with the greedy
// driver: x+0, 0+x, x-0, x*1, 1*x and x/1 become x when the literal changes
// neither the dtype nor the shape (both types must be known); a transpose of
// a transpose of the same two dims, and permute after permute whose
// composition is the identity, become x, and any other pair of permutes
// becomes one; reshape of reshape becomes one reshape, and a reshape to the
// input's own type disappears; unsqueeze followed by squeeze of the same dim
// (and squeeze followed by unsqueeze that restores the input's type) become
// x; identity, dropout with training=False, cast to the input's own dtype
// and neg(neg(x)) become x. Only literal scalars count as 0 or 1: a tensor
// of zeros is left alone. A run that hits the driver's cap leaves a note in
// the PassContext.
class CanonicalizePass : public Pass {
 public:
  absl::string_view name() const override { return "canonicalize"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

// The patterns the pass applies, each named ("add-zero", "double-transpose",
// ...), for callers that combine them with their own.
std::vector<std::unique_ptr<RewritePattern>> CanonicalizationPatterns();

}  // namespace graft::passes

#endif  // GRAFT_PASSES_CANONICALIZE_H_
