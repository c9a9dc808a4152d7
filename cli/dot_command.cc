// graft dot MODEL -o OUT: a picture of a model's graph, as Graphviz DOT
// text, SVG or PNG (by the output's extension).

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/load_module.h"
#include "passes/shard.h"
#include "support/status_macros.h"
#include "viz/dot_writer.h"
#include "viz/graphviz_render.h"

namespace graft::cli {
namespace {

// The command line of `graft dot`.
struct DotArgs {
  std::string model;
  std::string output;
  bool cluster_fused = false;
  size_t max_nodes = DotOptions().max_nodes;
  bool edge_labels = true;
  int gpus = 0;  // > 0: draw rank `rank` of the module sharded over gpus.
  int rank = 0;
};

absl::Status RunDot(const DotArgs& args) {
  // A bad output name fails before the model is read.
  ASSIGN_OR_RETURN(PictureFormat format, PictureFormatForPath(args.output));
  if (format != PictureFormat::kDot && !HaveGraphviz()) {
    return absl::FailedPreconditionError(GraphvizMissingMessage());
  }
  ASSIGN_OR_RETURN(Module module, LoadModule(args.model));
  DotOptions options;
  if (args.gpus > 0) {
    if (args.rank >= args.gpus) {
      return absl::InvalidArgumentError(
          absl::StrCat("--rank ", args.rank, " of ", args.gpus, " ranks"));
    }
    passes::ShardReport report;
    ASSIGN_OR_RETURN(module,
                     passes::ShardModule(module, {args.gpus, args.rank}, &report));
    options.title = absl::StrCat("rank ", args.rank, " of ", args.gpus, ": ",
                                 report.Summary());
  }
  options.cluster_fused = args.cluster_fused;
  options.max_nodes = args.max_nodes;
  options.edge_labels = args.edge_labels;
  std::string warning;
  absl::Status written =
      WriteModulePicture(module, args.output, options, &warning);
  // The picture is still made: the warning says what it leaves out.
  if (!warning.empty())
    std::fprintf(stderr, "graft: warning: %s\n", warning.c_str());
  return written;
}

}  // namespace

Command AddDotCommand(CLI::App& graft) {
  auto args = std::make_shared<DotArgs>();
  CLI::App* app = graft.add_subcommand(
      "dot",
      "Draw a model's graph: Graphviz DOT text, or SVG/PNG rendered in-process "
      "(by the output's extension)");
  app->add_option(
         "model", args->model,
         "Model file (formats by extension: " + KnownModelExtensions() + ")")
      ->required();
  app->add_option("-o,--output", args->output,
                  "Picture to write: .dot, .svg or .png")
      ->required();
  app->add_flag(
      "--cluster-fused,!--no-cluster-fused", args->cluster_fused,
      "Draw call_module nodes (fused groups, partitions) as clusters holding "
      "their submodule's nodes, instead of one box each");
  app->add_option(
         "--max-nodes", args->max_nodes,
         "Most boxes to draw (0: no limit); above it submodules are collapsed "
         "and then the graph is cut, with a note in the picture")
      ->capture_default_str();
  app->add_option("--gpus", args->gpus,
                  "Draw the module one rank runs when sharded over N ranks (the shard "
                  "pass): its weights' shares and its collectives")
      ->check(CLI::Range(1, 1024));
  app->add_option("--rank", args->rank, "With --gpus: which rank to draw (default 0)")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("!--no-edge-labels", args->edge_labels,
                "Leave the shapes off the edges");
  return Command{app, [args] { return RunDot(*args); }};
}

}  // namespace graft::cli
