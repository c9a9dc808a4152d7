#ifndef GRAFT_ONNX_ONNX_EXTERNAL_DATA_H_
#define GRAFT_ONNX_ONNX_EXTERNAL_DATA_H_

// Tensor bytes that an ONNX model keeps in files beside it (TensorProto
// data_location EXTERNAL: location, offset, length). A location must be a
// relative path that stays inside the model's directory (after following
// symbolic links), and the byte range must lie inside the file. Files are
// mapped once and tensors view the mapping without a copy when their data
// is 64-byte aligned in it (else they get an aligned copy).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/tensor.h"

namespace graft::onnx_import {

// Reads external tensor data relative to one directory. Not thread-safe.
class ExternalDataReader {
 public:
  // `base_dir` empty means the current directory.
  explicit ExternalDataReader(std::string base_dir);
  ~ExternalDataReader();
  ExternalDataReader(const ExternalDataReader&) = delete;
  ExternalDataReader& operator=(const ExternalDataReader&) = delete;

  // A tensor of `dtype` and `dims` from `location` at `offset` (default 0),
  // `length` bytes (default: what the tensor needs; if given it must be
  // exactly that). `tensor_name` is for messages.
  absl::StatusOr<Tensor> Read(absl::string_view tensor_name,
                              const std::string& location,
                              std::optional<uint64_t> offset,
                              std::optional<uint64_t> length, DType dtype,
                              const std::vector<int64_t>& dims);

 private:
  struct MappedFile;
  // The mapping of the file at `path` (resolved), mapped on first use.
  absl::StatusOr<std::shared_ptr<MappedFile>> Map(const std::string& path);
  // Resolves `location` inside the base directory or says why not.
  absl::StatusOr<std::string> Resolve(absl::string_view tensor_name,
                                      const std::string& location) const;

  std::string base_dir_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_EXTERNAL_DATA_H_
