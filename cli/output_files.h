#ifndef GRAFT_CLI_OUTPUT_FILES_H_
#define GRAFT_CLI_OUTPUT_FILES_H_

// Where `graft run --output-dir` writes the outputs of a model.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/tensor.h"

namespace graft::cli {

// One file name per output name (the names of the returned nodes, in
// order): "output.npy" for a single output, else "<name>.npy". Names that
// are not identifiers, or that repeat (a node returned twice), become
// "<name or output>_<index>.npy" so that every output has its own file.
std::vector<std::string> OutputFileNames(absl::Span<const std::string> names);

// Creates `dir` (and its parents) if needed and writes each tensor to
// dir/files[i] (.npy; atomically, through a temporary file and a rename).
// Returns the paths written, in order.
absl::StatusOr<std::vector<std::string>> WriteOutputFiles(
    const std::string& dir, absl::Span<const std::string> files,
    absl::Span<const Tensor> tensors);

}  // namespace graft::cli

#endif  // GRAFT_CLI_OUTPUT_FILES_H_
