#include "passes/pass_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"

namespace graft::passes {

PassRegistry& PassRegistry::Global() {
  static PassRegistry* registry = [] {
    auto* r = new PassRegistry();
    RegisterBuiltinPasses(*r);
    return r;
  }();
  return *registry;
}

absl::Status PassRegistry::Register(PassInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  if (info.name.empty() || info.factory == nullptr) {
    return absl::InvalidArgumentError("a pass needs a name and a factory");
  }
  if (passes_.contains(info.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("pass '", info.name, "' is already registered"));
  }
  std::string name = info.name;
  passes_.emplace(std::move(name), std::make_unique<PassInfo>(std::move(info)));
  return absl::OkStatus();
}

const PassInfo* PassRegistry::Find(absl::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = passes_.find(name);
  return it == passes_.end() ? nullptr : it->second.get();
}

std::vector<const PassInfo*> PassRegistry::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const PassInfo*> out;
  for (const auto& [name, info] : passes_) out.push_back(info.get());
  return out;
}

absl::StatusOr<std::unique_ptr<Pass>> PassRegistry::Create(
    absl::string_view name, const PassOptions& options) const {
  const PassInfo* info = Find(name);
  if (info == nullptr) {
    std::vector<std::string> names;
    for (const PassInfo* p : All()) names.push_back(p->name);
    return absl::NotFoundError(absl::StrCat("unknown pass '", name,
                                            "'; known passes: ",
                                            absl::StrJoin(names, ", ")));
  }
  absl::StatusOr<std::unique_ptr<Pass>> pass = info->factory(options);
  if (!pass.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pass '", name, "': ", pass.status().message()));
  }
  RETURN_IF_ERROR(options.CheckAllUsed(name));
  return pass;
}

}  // namespace graft::passes
