#ifndef GRAFT_PASSES_PASS_REGISTRY_H_
#define GRAFT_PASSES_PASS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/pass.h"

namespace graft::passes {

using PassFactory =
    std::function<absl::StatusOr<std::unique_ptr<Pass>>(const PassOptions&)>;

// What `graft passes` lists about a pass.
struct PassInfo {
  std::string name;
  std::string description;  // One paragraph.
  std::string options;      // "max-size=N (default 1024)", or empty.
  PassFactory factory;
};

// Every pass that pipeline strings can name: the built-in ones (registered
// on first use) and those plugins add.
class PassRegistry {
 public:
  static PassRegistry& Global();

  absl::Status Register(PassInfo info);
  // Creates pass `name` with `options`; unknown names and unused options are
  // errors that list what exists.
  absl::StatusOr<std::unique_ptr<Pass>> Create(absl::string_view name,
                                               const PassOptions& options) const;
  const PassInfo* Find(absl::string_view name) const;
  std::vector<const PassInfo*> All() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<PassInfo>, std::less<>> passes_;
};

// Registers graft's built-in passes (passes/builtin_passes.cc).
void RegisterBuiltinPasses(PassRegistry& registry);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_PASS_REGISTRY_H_
