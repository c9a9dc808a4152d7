// graft opt MODEL -p PIPELINE: runs a pipeline of passes over a model and
// prints or writes the result as text IR.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/interp/constant_evaluator.h"
#include "cli/command.h"
#include "cli/load_module.h"
#include "cli/output.h"
#include "cli/timing.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "passes/pass_context.h"
#include "passes/pipeline.h"
#include "passes/plugin_loader.h"
#include "serialize/model_io.h"
#include "support/status_macros.h"
#include "viz/dot_dump_writer.h"

namespace graft::cli {
namespace {

// The command line of `graft opt`.
struct OptArgs {
  std::string model;
  std::string pipeline;
  std::string output;  // Empty: stdout.
  std::vector<std::string> plugins;
  bool verify_each = true;
  bool time_passes = false;
  std::string dump_dir;
  std::string dump = "text";
};

// Loads every --load-pass-plugin library, before anything reads a pass
// name or an op the plugins may define.
absl::Status LoadPlugins(const std::vector<std::string>& plugins) {
  for (const std::string& path : plugins) {
    RETURN_IF_ERROR(passes::LoadPassPlugin(path));
  }
  return absl::OkStatus();
}

// "--time-passes": one line per pass, in pipeline order. The time comes
// last so that the columns line up whatever its width.
std::string TimingTable(const passes::PassContext& ctx) {
  double total = 0;
  size_t width = 5;  // "total"
  for (const passes::PassTiming& t : ctx.timings()) {
    total += t.seconds;
    width = std::max(width, t.pass.size());
  }
  const int w = static_cast<int>(width);
  std::string out = "graft: pass timings (wall clock)\n";
  absl::StrAppendFormat(&out, "  %-*s  %-7s  %s\n", w, "pass", "changed",
                        "time");
  for (const passes::PassTiming& t : ctx.timings()) {
    absl::StrAppendFormat(&out, "  %-*s  %-7s  %s\n", w, t.pass,
                          t.changed ? "yes" : "no", FormatDuration(t.seconds));
  }
  absl::StrAppendFormat(&out, "  %-*s  %-7s  %s\n", w, "total", "",
                        FormatDuration(total));
  return out;
}

absl::StatusOr<passes::DumpFormat> ParseDumpFormat(absl::string_view name) {
  if (name == "text") return passes::DumpFormat::kText;
  if (name == "dot") return passes::DumpFormat::kDot;
  if (name == "svg") return passes::DumpFormat::kSvg;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dump format '", name, "' (known: text, dot, svg)"));
}

absl::Status RunOpt(const OptArgs& args) {
  RETURN_IF_ERROR(LoadPlugins(args.plugins));
  // A bad output name fails before any work is done.
  if (!args.output.empty()) {
    RETURN_IF_ERROR(OutputModelFormatForPath(args.output).status());
  }
  ASSIGN_OR_RETURN(passes::Pipeline pipeline,
                   passes::Pipeline::FromString(args.pipeline));
  ASSIGN_OR_RETURN(Module module, LoadModule(args.model));
  if (absl::Status s = Verify(module); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(args.model, " is not a valid model: ", s.message()));
  }

  passes::PassContext ctx;
  ctx.constant_evaluator = interp::EvaluateNode;  // For fold-constants.
  ctx.dump_writer = WriteDotDump;                 // For --dump dot|svg.
  ctx.verify_each = args.verify_each;
  ctx.time_passes = args.time_passes;
  if (!args.dump_dir.empty()) {
    ASSIGN_OR_RETURN(passes::DumpFormat format, ParseDumpFormat(args.dump));
    ctx.dump_dir = args.dump_dir;
    ctx.dump_format = format;
  }
  absl::StatusOr<bool> changed = pipeline.Run(module, ctx);
  // Notes and timings help most when a pass failed, so print them first.
  for (const std::string& note : ctx.notes()) {
    std::fprintf(stderr, "graft: warning: %s\n", note.c_str());
  }
  if (args.time_passes) std::fputs(TimingTable(ctx).c_str(), stderr);
  if (!changed.ok()) return changed.status();
  if (args.output.empty()) return WriteStdout(PrintModule(module));
  // In the format the extension names; a text file holds every tensor's
  // data, so it reads back (stdout, a view, elides large tensors as
  // `graft print` does).
  return SaveModel(module, args.output);
}

}  // namespace

Command AddOptCommand(CLI::App& graft) {
  auto args = std::make_shared<OptArgs>();
  CLI::App* app = graft.add_subcommand(
      "opt",
      "Run a pipeline of passes over a model and print the result as "
      "text IR (formats by extension: " +
          KnownModelExtensions() + ")");
  app->add_option("model", args->model, "Model file")->required();
  app->add_option("-p,--passes", args->pipeline,
                  "Pipeline: comma-separated pass names with options, e.g. "
                  "\"shape-prop,dce,fold-constants{max-size=1024}\" (see "
                  "`graft passes`)")
      ->required();
  app->add_option("-o,--output", args->output,
                  "Write the result to this file (" + KnownModelExtensions() +
                      ", by extension; atomically) instead of stdout");
  app->add_option("--load-pass-plugin", args->plugins,
                  "Load a pass plugin (a shared library) before the pipeline "
                  "is read; may be repeated");
  app->add_flag("--verify-each,!--no-verify-each", args->verify_each,
                "Verify the graph after every pass (default on)");
  app->add_flag("--time-passes", args->time_passes,
                "Print how long each pass took to stderr");
  CLI::Option* dump_dir = app->add_option(
      "--dump-dir", args->dump_dir,
      "Write the module before and after each pass into this directory, as "
      "NN-PASS-before.EXT and NN-PASS-after.EXT");
  app->add_option("--dump", args->dump, "Dump format: text, dot or svg")
      ->check(CLI::IsMember({"text", "dot", "svg"}))
      ->capture_default_str()
      ->needs(dump_dir);
  return Command{app, [args] { return RunOpt(*args); }};
}

}  // namespace graft::cli
