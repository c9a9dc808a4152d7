#ifndef GRAFT_CLI_COMMAND_H_
#define GRAFT_CLI_COMMAND_H_

#include <functional>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"

namespace graft::cli {

// One subcommand of `graft`: the CLI11 app that holds its options, and the
// action to run when the user picked it. An error status becomes exit code
// 1 with its message on stderr.
struct Command {
  CLI::App* app = nullptr;
  std::function<absl::Status()> run;
};

// Each subcommand lives in cli/<name>_command.cc and adds itself to the
// top-level app; main.cc lists them. A new subcommand is one new file, one
// declaration here and one line in main.cc.
Command AddPrintCommand(CLI::App& graft);
Command AddRunCommand(CLI::App& graft);
Command AddDemoCommand(CLI::App& graft);
Command AddOptCommand(CLI::App& graft);
Command AddPassesCommand(CLI::App& graft);
Command AddDotCommand(CLI::App& graft);
Command AddConvertCommand(CLI::App& graft);
Command AddCacheCommand(CLI::App& graft);
Command AddQuantizeCommand(CLI::App& graft);
Command AddCompileCommand(CLI::App& graft);

}  // namespace graft::cli

#endif  // GRAFT_CLI_COMMAND_H_
