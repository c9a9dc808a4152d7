#ifndef GRAFT_PASSES_APPLY_PATTERNS_H_
#define GRAFT_PASSES_APPLY_PATTERNS_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/pass.h"
#include "passes/pattern_registry.h"

namespace graft::passes {

// Applies named patterns of the PatternRegistry (those that plugins and C++
// code registered) with ReplacePattern, one after the other in the order
// given, each once over the whole graph, as `substitute` does with a table
// read from a file. `apply-patterns{names=a;b}` picks patterns by name;
// plain `apply-patterns` applies every registered pattern in name order,
// and notes for the user when there is none. An exception thrown by a
// pattern's match filter (plugin code) becomes an error naming the pattern
// and where it came from.
class ApplyPatternsPass : public Pass {
 public:
  explicit ApplyPatternsPass(std::vector<const PatternInfo*> patterns)
      : patterns_(std::move(patterns)) {}

  // Reads option `names` (';'-separated); unknown names are an error that
  // lists the registered patterns.
  static absl::StatusOr<std::unique_ptr<ApplyPatternsPass>> FromOptions(
      const PassOptions& options);

  absl::string_view name() const override { return "apply-patterns"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  std::vector<const PatternInfo*> patterns_;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_APPLY_PATTERNS_H_
