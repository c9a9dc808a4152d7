#include "backends/interp/value_lifetimes.h"

#include "absl/strings/str_cat.h"
#include "backends/interp/node_status.h"

namespace graft::interp {

absl::StatusOr<std::vector<int64_t>> LastUses(
    absl::Span<const Node* const> order,
    const absl::flat_hash_map<const Node*, int64_t>& position) {
  const int64_t n = static_cast<int64_t>(order.size());
  std::vector<int64_t> last_use(n);
  for (int64_t i = 0; i < n; ++i) {
    last_use[i] = i;
    for (const Node* input : order[i]->inputs()) {
      auto it = position.find(input);
      if (it == position.end() || it->second >= i) {
        return AnnotateNode(*order[i], absl::InvalidArgumentError(absl::StrCat(
                                           "input ", input->Ref(),
                                           " is not defined before it in the "
                                           "graph")));
      }
      last_use[it->second] = i;
    }
  }
  return last_use;
}

}  // namespace graft::interp
