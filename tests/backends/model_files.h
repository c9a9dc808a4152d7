#ifndef GRAFT_TESTS_BACKENDS_MODEL_FILES_H_
#define GRAFT_TESTS_BACKENDS_MODEL_FILES_H_

// The repository's models (examples/models/*.graft, tests/onnx_models/*)
// and random inputs for them, for tests that run every model.

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "backends/backend.h"
#include "graph/module.h"
#include "graph/random_tensor.h"

namespace graft::backend_test {

// The source tree (ctest sets GRAFT_SOURCE_DIR), or "" when unknown.
inline std::string SourceDir() {
  const char* root = std::getenv("GRAFT_SOURCE_DIR");
  return root == nullptr ? "" : root;
}

// ctest sets GRAFT_SOURCE_DIR; run by hand, the binary finds the source
// tree above its build directory (build/tests/orc_tests).
inline void FindSourceDir() {
  namespace fs = std::filesystem;
  if (!SourceDir().empty()) return;
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (int up = 0; up < 4 && !ec && !dir.empty(); ++up, dir = dir.parent_path()) {
    if (fs::exists(dir / "examples/models", ec) &&
        fs::exists(dir / "tests/onnx_models", ec)) {
      setenv("GRAFT_SOURCE_DIR", dir.c_str(), 0);
      return;
    }
  }
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
    for (const std::string dir : {"/tests/onnx_models", "/tests/onnx_models/zoo", "/tests/onnx_models/contrib",
                                  "/tests/onnx_models/functions", "/tests/onnx_models/ort_optimized",
                                  "/tests/onnx_models/newer_opsets"}) {
      for (const auto& e : fs::directory_iterator(root + dir)) {
        const fs::path model = e.path() / "model.onnx";
        // unsupported_* hold an op the importer refuses, on purpose.
        if (fs::exists(model) &&
            !absl::StartsWith(e.path().filename().string(), "unsupported_")) {
          files.push_back(model.string());
        }
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Whether `module` quantizes or dequantizes (ops named *quantize*, the
// quantized products included): such models run in f32 only, their
// scales being f32 by contract.
inline bool HoldsQuantizedOps(const Module& module) {
  for (const Node* n : module.graph().nodes()) {
    if (n->op() == OpCode::kCallFunction && absl::StrContains(n->target(), "quantize")) {
      return true;
    }
  }
  return false;
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
