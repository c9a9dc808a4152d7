#include "passes/plugin_loader.h"

#include <dlfcn.h>

#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/op_registry.h"
#include "passes/pass_registry.h"
#include "passes/pattern_registry.h"
#include "passes/plugin_api.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

// The message of whatever a plugin threw; call only inside a catch block.
std::string CurrentExceptionMessage() {
  try {
    throw;
  } catch (const std::exception& e) {
    return absl::StrCat("threw an exception: ", e.what());
  } catch (...) {
    return "threw an exception that is not a std::exception";
  }
}

// A pass made by a plugin's factory. Plugin code runs behind this guard, so
// an exception from it becomes an error that the pipeline reports with the
// pass's name, instead of ending the program.
class PluginPass : public Pass {
 public:
  PluginPass(std::unique_ptr<Pass> inner, std::string name, std::string plugin)
      : inner_(std::move(inner)),
        name_(std::move(name)),
        plugin_(std::move(plugin)) {}

  absl::string_view name() const override { return name_; }

  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override {
    try {
      return inner_->Run(module, ctx);
    } catch (...) {
      return absl::InternalError(
          absl::StrCat(CurrentExceptionMessage(), " (plugin ", plugin_, ")"));
    }
  }

 private:
  std::unique_ptr<Pass> inner_;
  std::string name_;
  std::string plugin_;
};

PassFactory GuardFactory(PassFactory inner, std::string name,
                         std::string plugin) {
  return
      [inner = std::move(inner), name = std::move(name),
       plugin = std::move(plugin)](
          const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
        absl::StatusOr<std::unique_ptr<Pass>> pass =
            absl::InternalError("not created");
        try {
          pass = inner(options);
        } catch (...) {
          return absl::InternalError(absl::StrCat("creating the pass ",
                                                  CurrentExceptionMessage(),
                                                  " (plugin ", plugin, ")"));
        }
        if (!pass.ok()) return pass.status();
        if (*pass == nullptr) {
          return absl::InternalError(absl::StrCat(
              "the factory returned no pass (plugin ", plugin, ")"));
        }
        return std::unique_ptr<Pass>(
            std::make_unique<PluginPass>(*std::move(pass), name, plugin));
      };
}

InferFn GuardInfer(InferFn inner, std::string plugin) {
  return
      [inner = std::move(inner), plugin = std::move(plugin)](
          const InferContext& ctx) -> absl::StatusOr<std::vector<TensorType>> {
        try {
          return inner(ctx);
        } catch (...) {
          return ctx.Error(absl::StrCat("type rule ", CurrentExceptionMessage(),
                                        " (plugin ", plugin, ")"));
        }
      };
}

// A name a pipeline string can hold (see ParsePipeline).
bool IsPipelineWord(absl::string_view name) {
  if (name.empty() || !absl::ascii_isalpha(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.' &&
        c != ':') {
      return false;
    }
  }
  return true;
}

// The registrar one plugin's register function gets. See plugin_api.h for
// what is staged and what is registered at once.
class Registrar final : public GraftPluginRegistrar {
 public:
  explicit Registrar(std::string path) : path_(std::move(path)) {}

  absl::Status RegisterPass(PassInfo info) override {
    if (!IsPipelineWord(info.name)) {
      return Record(absl::InvalidArgumentError(absl::StrCat(
          "invalid pass name '", info.name,
          "': use letters, digits, '-', '_', '.' and ':', starting with a "
          "letter")));
    }
    if (info.factory == nullptr) {
      return Record(absl::InvalidArgumentError(
          absl::StrCat("pass '", info.name, "' has no factory")));
    }
    if (PassRegistry::Global().Find(info.name) != nullptr ||
        Staged(passes_, info.name)) {
      return Record(absl::AlreadyExistsError(
          absl::StrCat("pass '", info.name, "' is already registered")));
    }
    info.factory = GuardFactory(std::move(info.factory), info.name, path_);
    passes_.push_back(std::move(info));
    return absl::OkStatus();
  }

  absl::Status RegisterPattern(PatternInfo info) override {
    if (absl::Status s = CheckPatternInfo(info); !s.ok()) return Record(s);
    if (PatternRegistry::Global().Find(info.name) != nullptr ||
        Staged(patterns_, info.name)) {
      return Record(absl::AlreadyExistsError(
          absl::StrCat("pattern '", info.name, "' is already registered")));
    }
    info.origin = path_;
    patterns_.push_back(std::move(info));
    return absl::OkStatus();
  }

  absl::Status RegisterOp(OpSchema schema) override {
    size_t sep = schema.name.find("::");
    if (sep == std::string::npos || sep == 0) {
      return Record(absl::InvalidArgumentError(absl::StrCat(
          "op '", schema.name,
          "': a plugin's ops need a namespace, as in 'myplugin::", schema.name,
          "'")));
    }
    if (schema.infer) schema.infer = GuardInfer(std::move(schema.infer), path_);
    std::string name = schema.name;
    if (absl::Status s = OpRegistry::Global().Register(std::move(schema));
        !s.ok()) {
      return Record(s);
    }
    ops_.push_back(std::move(name));
    return absl::OkStatus();
  }

  void Fail(absl::Status error) override {
    if (error.ok()) {
      error =
          absl::UnknownError("the plugin reported a failure without a reason");
    }
    (void)Record(std::move(error));
  }

  const std::string& plugin_path() const override { return path_; }

  const absl::Status& error() const { return error_; }

  // Registers the staged passes and patterns, and describes the plugin.
  absl::StatusOr<LoadedPlugin> Commit(const GraftPluginInfo& info) {
    LoadedPlugin loaded;
    loaded.path = path_;
    loaded.name = info.name;
    if (info.description != nullptr) loaded.description = info.description;
    loaded.ops = ops_;
    for (PassInfo& p : passes_) {
      loaded.passes.push_back(p.name);
      RETURN_IF_ERROR(PassRegistry::Global().Register(std::move(p)));
    }
    for (PatternInfo& p : patterns_) {
      loaded.patterns.push_back(p.name);
      RETURN_IF_ERROR(PatternRegistry::Global().Register(std::move(p)));
    }
    return loaded;
  }

 private:
  // Remembers the first error, so a plugin that ignores a failed call still
  // fails as a whole.
  absl::Status Record(absl::Status s) {
    if (!s.ok() && error_.ok()) error_ = s;
    return s;
  }

  template <typename Info>
  static bool Staged(const std::vector<Info>& staged, absl::string_view name) {
    for (const Info& i : staged) {
      if (i.name == name) return true;
    }
    return false;
  }

  std::string path_;
  absl::Status error_;
  std::vector<PassInfo> passes_;
  std::vector<PatternInfo> patterns_;
  std::vector<std::string> ops_;
};

// What the loader remembers between calls.
struct LoaderState {
  std::mutex mu;
  std::set<void*> handles;  // Libraries loaded successfully.
  std::vector<LoadedPlugin> plugins;
};

LoaderState& State() {
  static auto* state = new LoaderState();
  return *state;
}

absl::Status PluginError(absl::StatusCode code, absl::string_view path,
                         absl::string_view message) {
  return absl::Status(code,
                      absl::StrCat("pass plugin '", path, "': ", message));
}

// Reads the plugin's GraftPluginInfo and checks that this graft can use it.
absl::StatusOr<const GraftPluginInfo*> ReadInfo(void* handle,
                                                const std::string& path) {
  dlerror();
  void* symbol = dlsym(handle, GRAFT_PLUGIN_ENTRY_POINT);
  if (symbol == nullptr) {
    return PluginError(
        absl::StatusCode::kInvalidArgument, path,
        absl::StrCat("the library does not export the entry point '",
                     GRAFT_PLUGIN_ENTRY_POINT,
                     "', so it is not a graft plugin (define the entry point "
                     "with GRAFT_PLUGIN from passes/plugin_api.h)"));
  }
  using EntryPoint = const GraftPluginInfo* (*)();
  const GraftPluginInfo* info = nullptr;
  try {
    info = reinterpret_cast<EntryPoint>(symbol)();
  } catch (...) {
    return PluginError(absl::StatusCode::kInternal, path,
                       absl::StrCat(GRAFT_PLUGIN_ENTRY_POINT, "() ",
                                    CurrentExceptionMessage()));
  }
  if (info == nullptr) {
    return PluginError(
        absl::StatusCode::kInvalidArgument, path,
        absl::StrCat(GRAFT_PLUGIN_ENTRY_POINT, "() returned null"));
  }
  // The version first: it is the one field every version agrees on.
  if (info->api_version != GRAFT_PLUGIN_API_VERSION) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "plugin '%s' was built for graft plugin API v%u, this graft has v%u; "
        "rebuild the plugin against this graft",
        path, info->api_version, GRAFT_PLUGIN_API_VERSION));
  }
  if (info->build_tag == nullptr ||
      std::strcmp(info->build_tag, GRAFT_PLUGIN_BUILD_TAG) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "plugin '%s' was built against graft build '%s', but this graft is "
        "'%s'; rebuild the plugin against this graft (its CMake package sets "
        "GRAFT_BUILD_TAG)",
        path, info->build_tag == nullptr ? "(none)" : info->build_tag,
        GRAFT_PLUGIN_BUILD_TAG));
  }
  if (info->name == nullptr || info->name[0] == '\0') {
    return PluginError(absl::StatusCode::kInvalidArgument, path,
                       "its GraftPluginInfo has no name");
  }
  if (info->register_fn == nullptr) {
    return PluginError(absl::StatusCode::kInvalidArgument, path,
                       "its GraftPluginInfo has no register function");
  }
  return info;
}

// dlopen searches the library path for a bare file name; a user who names a
// file in the current directory means that file.
std::string OpenPath(const std::string& path) {
  std::error_code ec;
  if (path.find('/') == std::string::npos &&
      std::filesystem::exists(path, ec)) {
    return "./" + path;
  }
  return path;
}

}  // namespace

absl::Status LoadPassPlugin(const std::string& path) {
  // Built-in passes and core ops first, so that a plugin reusing one of
  // their names is refused here rather than breaking their registration.
  PassRegistry::Global();
  OpRegistry::Global();

  LoaderState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  dlerror();
  // Never dlclose'd: registries hold the plugin's code (factories, type
  // rules) for the rest of the process.
  void* handle = dlopen(OpenPath(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return PluginError(
        absl::StatusCode::kInvalidArgument, path,
        absl::StrCat("cannot load it: ",
                     reason != nullptr ? reason : "unknown reason"));
  }
  if (state.handles.contains(handle)) return absl::OkStatus();

  ASSIGN_OR_RETURN(const GraftPluginInfo* info, ReadInfo(handle, path));
  const std::string label =
      absl::StrCat("plugin '", info->name, "' (", path, ")");

  Registrar registrar(path);
  int result = 0;
  try {
    result = info->register_fn(&registrar);
  } catch (...) {
    return absl::InternalError(
        absl::StrCat(label, " failed to register: its register function ",
                     CurrentExceptionMessage()));
  }
  if (result != 0 || !registrar.error().ok()) {
    std::string reason =
        registrar.error().ok()
            ? absl::StrCat("its register function returned ", result)
            : std::string(registrar.error().message());
    return absl::Status(registrar.error().ok() ? absl::StatusCode::kInternal
                                               : registrar.error().code(),
                        absl::StrCat(label, " failed to register: ", reason));
  }
  absl::StatusOr<LoadedPlugin> loaded = registrar.Commit(*info);
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat(label, " failed to register: ",
                                     loaded.status().message()));
  }
  state.handles.insert(handle);
  state.plugins.push_back(*std::move(loaded));
  return absl::OkStatus();
}

std::vector<LoadedPlugin> LoadedPassPlugins() {
  LoaderState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  return state.plugins;
}

}  // namespace graft::passes
