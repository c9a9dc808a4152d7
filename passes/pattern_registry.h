#ifndef GRAFT_PASSES_PATTERN_REGISTRY_H_
#define GRAFT_PASSES_PATTERN_REGISTRY_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "passes/replace_pattern.h"

namespace graft::passes {

// A named replace_pattern rewrite: every match of `pattern` is replaced by
// `replacement` under the rules of ReplacePattern (replace_pattern.h). The
// `apply-patterns` pass runs registered patterns by name.
struct PatternInfo {
  // Letters, digits and '_', '.', '-', ':'; by convention
  // "<plugin>.<what>", e.g. "example.tanh_times_two".
  std::string name;
  std::string description;  // One line, shown by `graft passes`.
  Module pattern;
  Module replacement;
  ReplaceOptions options;  // ignore_literals, match filters.
  // Who registered it ("" for graft itself; the library's path for a
  // plugin), for `graft passes` and error messages.
  std::string origin;
};

// Every named pattern that `apply-patterns` can apply: those that C++ code
// and plugins register. Patterns are never removed, so pointers returned by
// Find and All stay valid for the life of the process.
class PatternRegistry {
 public:
  static PatternRegistry& Global();

  // Fails if the name is taken or malformed, or if the two graphs do not
  // take the same number of inputs and return the same number of values.
  absl::Status Register(PatternInfo info);
  // Null if unknown.
  const PatternInfo* Find(absl::string_view name) const;
  // All patterns, sorted by name.
  std::vector<const PatternInfo*> All() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<PatternInfo>, std::less<>> patterns_;
};

// Checks a pattern before registration: a valid name, and a pattern and
// replacement that take the same number of inputs and return the same
// number of values. The registry calls it; the plugin loader calls it early
// so that a bad pattern fails the plugin's register function.
absl::Status CheckPatternInfo(const PatternInfo& info);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_PATTERN_REGISTRY_H_
