#include "passes/pass_context.h"

namespace graft::passes {

void PassContext::RecordProvenance(Node* created,
                                   absl::Span<Node* const> from) const {
  Provenance p;
  p.pass = current_pass_;
  p.from.reserve(from.size());
  for (Node* n : from) p.from.push_back(n->name());
  created->meta().provenance = std::move(p);
}

}  // namespace graft::passes
