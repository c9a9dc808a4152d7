#ifndef GRAFT_PASSES_PLUGIN_LOADER_H_
#define GRAFT_PASSES_PLUGIN_LOADER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace graft::passes {

// What one loaded plugin added, for `graft passes`.
struct LoadedPlugin {
  std::string path;  // As given to LoadPassPlugin.
  std::string name;
  std::string description;
  std::vector<std::string> passes;
  std::vector<std::string> patterns;
  std::vector<std::string> ops;
};

// Loads a pass plugin (passes/plugin_api.h, docs/plugins.md): opens the
// shared library with dlopen(RTLD_NOW | RTLD_LOCAL), reads its
// graft_plugin_info, checks the API version and then the build tag, and runs
// its register function. Errors name the path and say what is wrong: the
// library cannot be opened (with the system's reason), the entry point is
// missing, the version or build tag differs, registration failed or threw,
// or a name the plugin registers is already taken.
//
// A library is never unloaded, even when loading fails: ops it registered
// stay, and their type rules are its code. Loading the same library again
// does nothing. Call from one thread at a time, before pipelines run.
absl::Status LoadPassPlugin(const std::string& path);

// The plugins loaded so far, in load order.
std::vector<LoadedPlugin> LoadedPassPlugins();

}  // namespace graft::passes

#endif  // GRAFT_PASSES_PLUGIN_LOADER_H_
