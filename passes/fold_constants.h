#ifndef GRAFT_PASSES_FOLD_CONSTANTS_H_
#define GRAFT_PASSES_FOLD_CONSTANTS_H_

#include <cstdint>

#include "passes/pass.h"

namespace graft::passes {

// Constant folding: a pure call whose inputs are all constant (module
// tensors read by get_attr, creation ops such as full, zeros and arange, or
// other constant calls) is computed once, now, and its users read a new
// module tensor through a get_attr instead. Values are computed by the
// installed ConstantEvaluator (passes/constant_evaluator.h; the interpreter
// provides it), since passes cannot depend on a backend; running the pass
// without one is an error. Only the constants something else still needs
// become tensors: a chain of constant ops turns into one tensor, and a bare
// creation op (zeros(...) feeding a non-constant op) is kept as it is,
// being smaller than its data. Results with more than `max_size` elements
// are neither stored nor folded further. A node the evaluator refuses is
// left alone, with a note in the PassContext. Tensors that nothing reads
// any more stay in the module for `dce` to drop.
class FoldConstantsPass : public Pass {
 public:
  static constexpr int64_t kDefaultMaxSize = int64_t{1} << 16;

  explicit FoldConstantsPass(int64_t max_size = kDefaultMaxSize)
      : max_size_(max_size) {}

  absl::string_view name() const override { return "fold-constants"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  int64_t max_size_;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_FOLD_CONSTANTS_H_
