#ifndef GRAFT_GRAPH_PARSER_H_
#define GRAFT_GRAPH_PARSER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"

namespace graft {

// Limits that keep hostile input from exhausting the machine. Nesting
// limits are fixed (64 levels of lists, 64 levels of submodules).
struct ParseOptions {
  // A tensor declaration needing more bytes than this is an error.
  int64_t max_tensor_bytes = int64_t{1} << 36;
};

// Reads the text form of a module (docs/ir.md). Errors name the place:
// "model.graft:3:17: expected ')', got ','"; `filename` is only used for
// those messages and for the nodes' meta().location. Every node gets its
// location. The module is not verified: unregistered ops and ill-typed
// calls are the verifier's business; the parser checks what the text
// itself decides (syntax, names defined before use and not twice, tensors
// and submodules that exist, tensor data that fits its type).
absl::StatusOr<Module> ParseModule(absl::string_view text,
                                   absl::string_view filename = "<input>",
                                   const ParseOptions& options = {});

// Reads and parses a text module file; errors name `path`.
absl::StatusOr<Module> LoadTextModule(absl::string_view path,
                                      const ParseOptions& options = {});

}  // namespace graft

#endif  // GRAFT_GRAPH_PARSER_H_
