#ifndef GRAFT_PASSES_PASS_H_
#define GRAFT_PASSES_PASS_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "passes/pass_context.h"

namespace graft::passes {

// A transformation of a module, XLA style: Run returns whether it changed
// anything, or an error. A pass may leave erased nodes behind (the pipeline
// calls Graph::Cleanup) but must leave a graph that verifies.
class Pass {
 public:
  virtual ~Pass() = default;
  virtual absl::string_view name() const = 0;
  virtual absl::StatusOr<bool> Run(Module& module, PassContext& ctx) = 0;
};

// Options written in a pipeline string: `fold-constants{max-size=1024}`.
// Every option a pass reads is marked used; the registry refuses options
// nobody read, so a typo is an error, not a silent no-op.
class PassOptions {
 public:
  PassOptions() = default;
  explicit PassOptions(std::map<std::string, std::string> values)
      : values_(std::move(values)) {}

  absl::StatusOr<int64_t> GetInt(absl::string_view key, int64_t default_value) const;
  absl::StatusOr<double> GetDouble(absl::string_view key, double default_value) const;
  absl::StatusOr<bool> GetBool(absl::string_view key, bool default_value) const;
  std::string GetString(absl::string_view key, absl::string_view default_value) const;
  // Error naming the first option that no Get* call asked for.
  absl::Status CheckAllUsed(absl::string_view pass_name) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  const std::string* Find(absl::string_view key) const;
  std::map<std::string, std::string> values_;
  mutable std::map<std::string, bool> used_;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_PASS_H_
