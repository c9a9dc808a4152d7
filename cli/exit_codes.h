#ifndef GRAFT_CLI_EXIT_CODES_H_
#define GRAFT_CLI_EXIT_CODES_H_

namespace graft::cli {

// Exit statuses of the `graft` command; scripts rely on them.
inline constexpr int kExitSuccess = 0;
// The command could not do its work: bad input file, failed pass, ...
// One message on stderr, "graft: error: ...".
inline constexpr int kExitUserError = 1;
// The command line itself is wrong (unknown option, missing argument).
inline constexpr int kExitUsage = 2;

}  // namespace graft::cli

#endif  // GRAFT_CLI_EXIT_CODES_H_
