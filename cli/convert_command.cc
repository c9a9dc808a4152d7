// graft convert IN -o OUT: a model from one format to another, each chosen
// by the file's extension (.graft text IR, .gpb binary with its .gpb.data
// side file, .json, and .onnx as input).

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/load_module.h"
#include "serialize/model_io.h"
#include "support/status_macros.h"

namespace graft::cli {
namespace {

// The command line of `graft convert`.
struct ConvertArgs {
  std::string input;
  std::string output;
  std::optional<int64_t> inline_limit;  // Unset: the writer's default.
};

absl::Status RunConvert(const ConvertArgs& args) {
  // A bad output name fails before the model is read.
  RETURN_IF_ERROR(OutputModelFormatForPath(args.output).status());
  ASSIGN_OR_RETURN(Module module, LoadModule(args.input));
  ModelSaveOptions options;
  if (args.inline_limit.has_value()) options.binary.inline_limit = *args.inline_limit;
  return SaveModel(module, args.output, options);
}

}  // namespace

Command AddConvertCommand(CLI::App& graft) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* app = graft.add_subcommand(
      "convert",
      "Convert a model between formats (by extension: .graft, .gpb, .json; "
      ".onnx as input)");
  app->add_option("input", args->input,
                  "Model to read (" + KnownModelExtensions() + ")")
      ->required();
  app->add_option("-o,--output", args->output,
                  "Model to write: .graft, .gpb (large tensors go to OUT.gpb.data) "
                  "or .json; written atomically")
      ->required();
  app->add_option("--inline-limit", args->inline_limit,
                  "For .gpb: tensors of at most this many bytes are stored in the "
                  "model file itself, larger ones in the side file (-1: all inline)");
  return Command{app, [args] { return RunConvert(*args); }};
}

}  // namespace graft::cli
