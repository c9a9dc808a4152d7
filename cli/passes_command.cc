// graft passes: lists what pipelines can use: passes with their options,
// named patterns, ops with their signatures, and the plugins that added
// some of them.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/output.h"
#include "graph/op_registry.h"
#include "passes/pass_registry.h"
#include "passes/pattern_registry.h"
#include "passes/plugin_loader.h"
#include "support/status_macros.h"

namespace graft::cli {
namespace {

// The command line of `graft passes`.
struct PassesArgs {
  std::vector<std::string> plugins;
};

void AppendPasses(std::string* out) {
  absl::StrAppend(out, "passes:\n");
  for (const passes::PassInfo* p : passes::PassRegistry::Global().All()) {
    absl::StrAppend(out, "  ", p->name, "\n      ", p->description, "\n");
    if (!p->options.empty()) {
      absl::StrAppend(out, "      options: ", p->options, "\n");
    }
  }
}

void AppendPatterns(std::string* out) {
  absl::StrAppend(out, "\npatterns (for apply-patterns{names=...}):\n");
  std::vector<const passes::PatternInfo*> all =
      passes::PatternRegistry::Global().All();
  if (all.empty()) absl::StrAppend(out, "  (none; plugins add them)\n");
  for (const passes::PatternInfo* p : all) {
    absl::StrAppend(out, "  ", p->name);
    if (!p->origin.empty()) absl::StrAppend(out, " (from ", p->origin, ")");
    absl::StrAppend(out, "\n");
    if (!p->description.empty()) {
      absl::StrAppend(out, "      ", p->description, "\n");
    }
  }
}

void AppendOps(std::string* out) {
  absl::StrAppend(out, "\nops:\n");
  for (const OpSchema* op : OpRegistry::Global().All()) {
    absl::StrAppend(out, "  ", op->Signature());
    if (!op->summary.empty()) absl::StrAppend(out, "\n      ", op->summary);
    absl::StrAppend(out, "\n");
  }
}

void AppendPlugins(std::string* out) {
  absl::StrAppend(out, "\nplugins:\n");
  std::vector<passes::LoadedPlugin> plugins = passes::LoadedPassPlugins();
  if (plugins.empty()) {
    absl::StrAppend(out, "  (none loaded; use --load-pass-plugin LIB)\n");
  }
  auto list = [](const std::vector<std::string>& names) {
    return names.empty() ? std::string("-") : absl::StrJoin(names, ", ");
  };
  for (const passes::LoadedPlugin& p : plugins) {
    absl::StrAppend(out, "  ", p.name, " (", p.path, ")\n");
    if (!p.description.empty()) {
      absl::StrAppend(out, "      ", p.description, "\n");
    }
    absl::StrAppend(out, "      passes: ", list(p.passes), "\n");
    absl::StrAppend(out, "      patterns: ", list(p.patterns), "\n");
    absl::StrAppend(out, "      ops: ", list(p.ops), "\n");
  }
}

absl::Status RunPasses(const PassesArgs& args) {
  for (const std::string& path : args.plugins) {
    RETURN_IF_ERROR(passes::LoadPassPlugin(path));
  }
  std::string out;
  AppendPasses(&out);
  AppendPatterns(&out);
  AppendOps(&out);
  AppendPlugins(&out);
  return WriteStdout(out);
}

}  // namespace

Command AddPassesCommand(CLI::App& graft) {
  auto args = std::make_shared<PassesArgs>();
  CLI::App* app = graft.add_subcommand(
      "passes",
      "List the passes (with their options), patterns and ops that "
      "pipelines can use, including those of loaded plugins");
  app->add_option(
      "--load-pass-plugin", args->plugins,
      "Load a pass plugin (a shared library) first; may be repeated");
  return Command{app, [args] { return RunPasses(*args); }};
}

}  // namespace graft::cli
