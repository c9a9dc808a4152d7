#ifndef GRAFT_CLI_INPUT_BINDING_H_
#define GRAFT_CLI_INPUT_BINDING_H_

// How `graft run` turns its --input and --random-inputs options into one
// tensor per placeholder of the model.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "backends/backend.h"
#include "graph/tensor.h"

namespace graft::cli {

// One --input option: "NAME=FILE.npy".
struct InputSpec {
  std::string name;
  std::string path;
};

// Splits "NAME=FILE" at the first '='; both parts must be non-empty.
absl::StatusOr<InputSpec> ParseInputSpec(absl::string_view text);

// A tensor the user gave for the placeholder `name`. `source` says where it
// came from ("in.npy") in messages.
struct GivenInput {
  std::string name;
  std::string source;
  Tensor tensor;
};

// Parses each spec and reads its .npy file. Errors name the input and file;
// giving the same name twice is an error.
absl::StatusOr<std::vector<GivenInput>> ReadGivenInputs(
    absl::Span<const std::string> specs);

// The inputs of one run, in placeholder order.
struct BoundInputs {
  std::vector<Tensor> tensors;
  // Per placeholder: the file it came from, or "random(seed=N)".
  std::vector<std::string> sources;
};

// Matches given inputs to placeholders by name and, when `random_seed` is
// set, fills every other placeholder with RandomTensor(dtype, dims,
// *random_seed + placeholder index). Errors (each names the placeholder):
//  - a given name that is no placeholder (the message lists them);
//  - a given tensor whose dtype, rank or constant dims differ from the
//    placeholder's type, or whose size for a symbolic dim differs from the
//    size another input bound that symbol to;
//  - a placeholder without an input when random inputs are off;
//  - a random input whose type is unknown, or has a symbolic dim that
//    neither `dims` nor a given input binds (the message suggests --dim);
//  - a symbol in `dims` that no placeholder's type mentions, or a given
//    input whose size for a symbol differs from `dims`.
// `dims` are the --dim SYMBOL=SIZE options: sizes of symbolic dims.
absl::StatusOr<BoundInputs> BindInputs(
    absl::Span<const ValueSignature> placeholders,
    absl::Span<const GivenInput> given, std::optional<uint64_t> random_seed,
    const SymbolBindings& dims = {});

// Parses --dim options, "SYMBOL=SIZE" with SIZE >= 0; a symbol given twice
// is an error.
absl::StatusOr<SymbolBindings> ParseDims(absl::Span<const std::string> specs);

}  // namespace graft::cli

#endif  // GRAFT_CLI_INPUT_BINDING_H_
