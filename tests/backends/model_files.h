#ifndef GRAFT_TESTS_BACKENDS_MODEL_FILES_H_
#define GRAFT_TESTS_BACKENDS_MODEL_FILES_H_

// The repository's models (examples/models/*.graft, tests/onnx_models/*)
// and random inputs for them, for tests that run every model.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "backends/backend.h"
#include "graph/random_tensor.h"

namespace graft::backend_test {

// The source tree (ctest sets GRAFT_SOURCE_DIR), or "" when unknown.
inline std::string SourceDir() {
  const char* root = std::getenv("GRAFT_SOURCE_DIR");
  return root == nullptr ? "" : root;
}

// Every model file of the repository that the interpreter can run.
inline std::vector<std::string> ModelFiles(bool with_onnx) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  const std::string root = SourceDir();
  if (root.empty()) return files;
  for (const auto& e : fs::directory_iterator(root + "/examples/models")) {
    if (e.path().extension() == ".graft") files.push_back(e.path().string());
  }
  if (with_onnx) {
    for (const auto& e : fs::directory_iterator(root + "/tests/onnx_models")) {
      const fs::path model = e.path() / "model.onnx";
      // cumsum holds an op the importer refuses, on purpose.
      if (fs::exists(model) && !absl::EndsWith(e.path().string(), "cumsum")) {
        files.push_back(model.string());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Random inputs for the placeholders of `signature`, symbolic dims set to
// `symbol_size`.
inline std::vector<Tensor> RandomInputs(
    absl::Span<const ValueSignature> signature, uint64_t seed,
    int64_t symbol_size = 3) {
  std::vector<Tensor> inputs;
  for (const ValueSignature& s : signature) {
    std::vector<int64_t> dims;
    for (const Dim& d : s.type->shape) {
      dims.push_back(d.is_constant() ? d.value() : symbol_size);
    }
    inputs.push_back(RandomTensor(s.type->dtype, dims, seed++));
  }
  return inputs;
}

}  // namespace graft::backend_test

#endif  // GRAFT_TESTS_BACKENDS_MODEL_FILES_H_
