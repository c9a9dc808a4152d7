#ifndef GRAFT_PASSES_PLUGIN_API_H_
#define GRAFT_PASSES_PLUGIN_API_H_

// The pass plugin interface (docs/plugins.md). A plugin is a shared library
// that exports one C function,
//
//   extern "C" const GraftPluginInfo* graft_plugin_info(void);
//
// which returns a GraftPluginInfo that lives as long as the library (a
// static). graft's plugin loader (passes/plugin_loader.h) opens the library,
// calls graft_plugin_info, checks api_version and then build_tag, and only
// then calls register_fn, which adds the plugin's passes, patterns and ops
// through the registrar. A C++ plugin writes
//
//   absl::Status Register(graft::passes::PluginRegistrar& r) { ... }
//   GRAFT_PLUGIN("example", "What it adds", Register)
//
// and the macro defines the entry point.
//
// Why a C entry point with a C++ register function: the symbol name and the
// first field (api_version) must be readable by any graft, however the
// plugin was built, so that a mismatch gives a clear message instead of a
// crash. Once version and build tag match, plugin and graft are the same
// C++ (same headers, same compiler), so the registrar hands over C++
// objects (PassInfo, PatternInfo, OpSchema) directly.
//
// A plugin does not link graft's libraries: it uses the graft already in
// the process (the `graft` program exports its symbols), so there is one
// op registry and one pass registry. Link it to the CMake target
// graft::plugin_api, or use graft_add_plugin() from graft's CMake package.

#include <stdint.h>

#include "passes/plugin_build_tag.h"

// Version of GraftPluginInfo and of the registrar below. Raised whenever
// either changes incompatibly; the loader refuses any other version.
#define GRAFT_PLUGIN_API_VERSION 1

// The name of the entry point, for dlsym.
#define GRAFT_PLUGIN_ENTRY_POINT "graft_plugin_info"

#define GRAFT_PLUGIN_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

// Opaque to C; a C++ class below.
typedef struct GraftPluginRegistrar GraftPluginRegistrar;

// What a plugin says about itself. The field order is fixed: api_version
// must stay first in every future version, so the loader can read it from
// any plugin before trusting the rest.
typedef struct GraftPluginInfo {
  // GRAFT_PLUGIN_API_VERSION of the headers the plugin was built with.
  uint32_t api_version;
  // GRAFT_PLUGIN_BUILD_TAG of the headers the plugin was built with.
  const char* build_tag;
  // Short name for messages and `graft passes`, e.g. "example".
  const char* name;
  // One line; may be null.
  const char* description;
  // Adds the plugin's passes, patterns and ops; returns 0 on success. Called
  // once, after the version and build tag were found to match.
  int (*register_fn)(GraftPluginRegistrar* registrar);
} GraftPluginInfo;

// Defined by the plugin (GRAFT_PLUGIN does it). Graft only looks it up.
GRAFT_PLUGIN_EXPORT const GraftPluginInfo* graft_plugin_info(void);

#ifdef __cplusplus
}  // extern "C"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/op_registry.h"
#include "passes/pass_registry.h"
#include "passes/pattern_registry.h"

// What a plugin's register function receives: the one way a plugin adds
// things to graft, so that the loader knows what came from which library,
// guards plugin code against exceptions, and can refuse the whole plugin.
//
// Passes and patterns are staged and reach their registries only when the
// register function returned 0 and no call failed: a plugin that fails
// leaves no pass or pattern behind. Ops are registered at once, because the
// plugin's own patterns, traced or parsed later in the same function, need
// them; an op stays registered even if the plugin then fails (ops cannot be
// removed), which is also why a plugin is never unloaded.
//
// Every Register* call fails (and marks the whole plugin as failed, even if
// the plugin ignores the status) when the name is already taken.
struct GraftPluginRegistrar {
 public:
  virtual ~GraftPluginRegistrar() = default;

  // A pass that pipelines can name. Its factory, and Run of the passes it
  // makes, are wrapped so that an exception becomes an error naming the
  // pass and the plugin.
  virtual absl::Status RegisterPass(graft::passes::PassInfo info) = 0;
  // A named pattern for the `apply-patterns` pass. `origin` is set to the
  // plugin's path.
  virtual absl::Status RegisterPattern(graft::passes::PatternInfo info) = 0;
  // An extension op; its name must be "ns::name". The type rule is wrapped
  // so that an exception becomes a type error naming the op.
  virtual absl::Status RegisterOp(graft::OpSchema schema) = 0;

  // Records why registration failed; the loader reports the first error
  // when the register function returns non-zero.
  virtual void Fail(absl::Status error) = 0;

  // The library being loaded, as given to the loader.
  virtual const std::string& plugin_path() const = 0;
};

namespace graft::passes {

using PluginRegistrar = ::GraftPluginRegistrar;

namespace internal {

// The body of the register function GRAFT_PLUGIN defines.
inline int RunPluginRegister(absl::Status (*fn)(PluginRegistrar&),
                             GraftPluginRegistrar* registrar) {
  absl::Status status = fn(*registrar);
  if (status.ok()) return 0;
  registrar->Fail(std::move(status));
  return 1;
}

}  // namespace internal
}  // namespace graft::passes

// Defines the entry point of a C++ plugin. NAME and DESCRIPTION are string
// literals; REGISTER is a function
//   absl::Status REGISTER(graft::passes::PluginRegistrar& registrar);
// whose error, if any, the loader reports. Use once per library, at
// namespace scope.
#define GRAFT_PLUGIN(NAME, DESCRIPTION, REGISTER)                            \
  extern "C" GRAFT_PLUGIN_EXPORT const GraftPluginInfo* graft_plugin_info(   \
      void) {                                                                \
    static const GraftPluginInfo info = {                                    \
        GRAFT_PLUGIN_API_VERSION, GRAFT_PLUGIN_BUILD_TAG, NAME, DESCRIPTION, \
        [](GraftPluginRegistrar* registrar) -> int {                         \
          return ::graft::passes::internal::RunPluginRegister(&REGISTER,     \
                                                              registrar);    \
        }};                                                                  \
    return &info;                                                            \
  }

#endif  // __cplusplus

#endif  // GRAFT_PASSES_PLUGIN_API_H_
