#ifndef GRAFT_RUNTIME_COMPILED_MODEL_H_
#define GRAFT_RUNTIME_COMPILED_MODEL_H_

// graft::runtime: loads a compiled model file (.gcx, written by
// `graft compile`) and runs it, with no compiler, no graph and no passes:
//
//   ASSIGN_OR_RETURN(auto model, graft::runtime::CompiledModel::Load("mlp.gcx"));
//   ASSIGN_OR_RETURN(std::vector<graft::Tensor> out, model->Run({x}));

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/tensor.h"
#include "runtime/artifact.h"

namespace graft::runtime {

struct LoadOptions {
  // Library threads for runs: -1 as the model was compiled with, 0 all
  // cores, N exactly N.
  int threads = -1;
  // Checksums of code, metadata and weights; fuzzing turns them off.
  bool verify_checksums = true;
  // The CPU features to check the file's against; null: this machine's.
  const std::set<std::string>* host_features = nullptr;
};

class CompiledModel {
 public:
  // Maps `path`, checks it (format version, checksums, the CPU features
  // the code needs) and links its code. Errors name the file.
  static absl::StatusOr<std::unique_ptr<CompiledModel>> Load(const std::string& path,
                                                             const LoadOptions& options = {});
  ~CompiledModel();

  const std::vector<ValueSpec>& inputs() const { return metadata_.inputs; }
  const std::vector<ValueSpec>& outputs() const { return metadata_.outputs; }
  const ArtifactMetadata& metadata() const { return metadata_; }
  size_t file_bytes() const { return mapped_bytes_; }

  // Runs on host tensors of exactly the input types; concurrent runs are
  // safe.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) const;

 private:
  CompiledModel() = default;
  absl::Status Link(const ArtifactView& view, const LoadOptions& options);

  std::string path_;
  void* mapped_ = nullptr;
  size_t mapped_bytes_ = 0;
  ArtifactMetadata metadata_;
  int threads_ = 0;
  struct Code;
  std::unique_ptr<Code> code_;
};

// Why the CPU described by `host` cannot run code that needs `needed`, or
// OK. Names every missing feature.
absl::Status CheckCpuFeatures(const std::vector<std::string>& needed,
                              const std::set<std::string>& host);

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_COMPILED_MODEL_H_
