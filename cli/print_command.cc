// graft print MODEL: the text IR of a model in any supported format.

#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/load_module.h"
#include "cli/output.h"
#include "graph/printer.h"
#include "support/status_macros.h"

namespace graft::cli {
namespace {

// The command line of `graft print`.
struct PrintArgs {
  std::string model;
  int64_t max_inline_elements = PrintOptions().max_inline_elements;
};

absl::Status RunPrint(const PrintArgs& args) {
  ASSIGN_OR_RETURN(Module module, LoadModule(args.model));
  PrintOptions options;
  options.max_inline_elements = args.max_inline_elements;
  return WriteStdout(PrintModule(module, options));
}

}  // namespace

Command AddPrintCommand(CLI::App& graft) {
  auto args = std::make_shared<PrintArgs>();
  CLI::App* app = graft.add_subcommand(
      "print", "Print the text IR of a model (formats by extension: " +
                   KnownModelExtensions() + ")");
  app->add_option("model", args->model, "Model file")->required();
  app->add_option("--max-inline-elements", args->max_inline_elements,
                  "Tensors without a recorded init and with more elements "
                  "print as zeros, full(V) or elided; -1: print all data")
      ->capture_default_str();
  return Command{app, [args] { return RunPrint(*args); }};
}

}  // namespace graft::cli
