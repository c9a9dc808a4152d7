// A plugin whose register function throws: the loader must catch it at the
// boundary and report it, naming the plugin.

#include <stdexcept>

#include "passes/plugin_api.h"

namespace {

absl::Status Register(graft::passes::PluginRegistrar&) {
  throw std::runtime_error("bad_throwing: out of cheese");
}

}  // namespace

GRAFT_PLUGIN("bad_throwing", "Throws while registering", Register)
