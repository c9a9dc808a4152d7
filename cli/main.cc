// The `graft` command: parses the command line with CLI11 and runs the
// chosen subcommand. Exit codes: cli/exit_codes.h.

#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "backends/backend.h"
#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/version.h"
#include "graph/fused_ops.h"
#include "onnx/onnx_import.h"
#include "viz/graphviz_render.h"

namespace graft::cli {
namespace {

// Every subcommand, in the order `graft --help` lists them.
using AddCommandFn = Command (*)(CLI::App&);
constexpr AddCommandFn kCommands[] = {
    &AddDemoCommand,
    &AddPrintCommand,
    &AddRunCommand,
    &AddOptCommand,
    &AddPassesCommand,
    &AddDotCommand,
    &AddConvertCommand,
    &AddQuantizeCommand,
    &AddCacheCommand,
    &AddCompileCommand,
};

std::string UsageFailureMessage(const CLI::App* app, const CLI::Error& e) {
  std::string message = std::string("graft: error: ") + e.what() + "\n";
  message += "Run with --help for more information.\n";
  return message;
}

// The optional parts this binary has, for --version (and for tests that
// need one): "with: graphviz onnx".
std::string BuiltInParts() {
  std::string parts = "with:";
  if (HaveGraphviz()) parts += " graphviz";
  if (HaveOnnx()) parts += " onnx";
  // Compiled backends register themselves when linked.
  for (const std::string& name : BackendRegistry::Global().Names()) {
    if (name != "interp") parts += " " + name;
  }
  if (parts == "with:") parts += " (no optional parts)";
  return parts;
}

int Main(int argc, char** argv) {
  CLI::App app("graft: capture, rewrite and compile tensor graphs", "graft");
  app.set_version_flag("--version", std::string("graft ") + GRAFT_VERSION +
                                        " (" + GRAFT_BUILD_TAG + ")\n" +
                                        BuiltInParts());
  app.require_subcommand(1);
  app.failure_message(UsageFailureMessage);
  std::vector<Command> commands;
  for (AddCommandFn add : kCommands) commands.push_back(add(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    return app.exit(e) == 0 ? kExitSuccess : kExitUsage;
  }
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    absl::Status status;
    try {
      status = command.run();
    } catch (const std::bad_alloc&) {
      // The one exception graft's own code lets through: allocation.
      status = absl::ResourceExhaustedError(
          "out of memory (a tensor or model larger than this machine's "
          "memory?)");
    }
    if (!status.ok()) {
      std::fprintf(stderr, "graft: error: %.*s\n",
                   static_cast<int>(status.message().size()),
                   status.message().data());
      return kExitUserError;
    }
    return kExitSuccess;
  }
  return kExitUsage;  // Unreachable: CLI11 requires one subcommand.
}

}  // namespace
}  // namespace graft::cli

int main(int argc, char** argv) { return graft::cli::Main(argc, argv); }
