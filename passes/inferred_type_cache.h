#ifndef GRAFT_PASSES_INFERRED_TYPE_CACHE_H_
#define GRAFT_PASSES_INFERRED_TYPE_CACHE_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/node.h"

namespace graft::passes {

// Types for the copies a rewrite makes of one template node (a replacement
// graph's node, copied once per match). A type rule sees its node's
// literals, which every copy shares, and its operands' types; so copies
// whose operands have the same types get the same types, and the rule need
// not run again. Results that name a fresh symbolic dimension after their
// node ("add_7_d0"), operands without a single tensor type, and extension
// ops (whose rules may read more of the node) are not remembered: those
// copies run the rule themselves.
class InferredTypeCache {
 public:
  // Sets `copy`'s type (or tuple types) as InferNodeTypes gives them; `copy`
  // is a call_function node copied from `template_node`. Leaves the copy
  // untyped where inference gives nothing or fails.
  void Apply(const Node* template_node, Node* copy);

 private:
  struct Entry {
    std::vector<TensorType> operand_types;
    std::vector<TensorType> types;  // Empty: inference gave nothing.
  };
  // Distinct operand types remembered per template node; beyond this the
  // rule runs for every copy (a cache miss costs a scan of the entries).
  static constexpr size_t kMaxEntries = 8;

  // The operands' types in slot order; false if one has no tensor type.
  bool OperandTypes(const Node& copy);

  absl::flat_hash_map<const Node*, std::vector<Entry>> entries_;
  std::vector<TensorType> operand_types_;  // Scratch, reused.
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_INFERRED_TYPE_CACHE_H_
