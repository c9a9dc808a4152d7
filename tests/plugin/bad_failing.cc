// A plugin whose register function reports an error, after staging a pass:
// the loader must report the error and register nothing it staged.

#include <memory>

#include "passes/plugin_api.h"

namespace {

absl::Status Register(graft::passes::PluginRegistrar& registrar) {
  graft::passes::PassInfo info;
  info.name = "bad-failing-pass";
  info.description = "Never registered: the plugin fails afterwards.";
  info.factory = [](const graft::passes::PassOptions&)
      -> absl::StatusOr<std::unique_ptr<graft::passes::Pass>> {
    return absl::UnimplementedError("never created");
  };
  if (absl::Status s = registrar.RegisterPass(std::move(info)); !s.ok()) {
    return s;
  }
  return absl::FailedPreconditionError("bad_failing: no licence key found");
}

}  // namespace

GRAFT_PLUGIN("bad_failing", "Fails while registering", Register)
