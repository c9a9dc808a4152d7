// A plugin that registers a pass under a built-in pass's name, and ignores
// the error it gets: the loader must still refuse the plugin.

#include <memory>

#include "passes/plugin_api.h"

namespace {

absl::Status Register(graft::passes::PluginRegistrar& registrar) {
  graft::passes::PassInfo info;
  info.name = "dce";
  info.description = "A second dce.";
  info.factory = [](const graft::passes::PassOptions&)
      -> absl::StatusOr<std::unique_ptr<graft::passes::Pass>> {
    return absl::UnimplementedError("never created");
  };
  (void)registrar.RegisterPass(std::move(info));
  return absl::OkStatus();
}

}  // namespace

GRAFT_PLUGIN("bad_duplicate", "Reuses the name of a built-in pass", Register)
