#include "serialize/onnx_import.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "graph/file_io.h"

#ifdef GRAFT_HAVE_ONNX
#include "serialize/onnx_import_model.h"
#include "serialize/onnx_importer.h"
#endif

namespace graft {

bool HaveOnnx() {
#ifdef GRAFT_HAVE_ONNX
  return true;
#else
  return false;
#endif
}

std::string OnnxMissingMessage() {
  return "graft was built without ONNX support: install libonnx-dev and "
         "libprotobuf-dev (apt-get install libonnx-dev libprotobuf-dev, or "
         "scripts/install-deps.sh) and rebuild to import .onnx files";
}

#ifdef GRAFT_HAVE_ONNX

absl::StatusOr<Module> ImportOnnxModel(const onnx::ModelProto& model,
                                       absl::string_view base_dir,
                                       absl::string_view source,
                                       const OnnxImportOptions& options) {
  onnx_import::OnnxImporter importer(model, std::string(source),
                                     std::string(base_dir), options);
  return importer.Import();
}

absl::StatusOr<Module> ImportOnnxModel(const onnx::ModelProto& model,
                                       absl::string_view base_dir,
                                       const OnnxImportOptions& options) {
  return ImportOnnxModel(model, base_dir, "ONNX model", options);
}

absl::StatusOr<Module> ImportOnnxFile(const std::string& path,
                                      const OnnxImportOptions& options) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a valid ONNX model (the protobuf does not parse)"));
  }
  const std::string base_dir =
      std::filesystem::path(path).parent_path().string();
  return ImportOnnxModel(model, base_dir, path, options);
}

#else  // !GRAFT_HAVE_ONNX

absl::StatusOr<Module> ImportOnnxFile(const std::string& path,
                                      const OnnxImportOptions& options) {
  return absl::FailedPreconditionError(
      absl::StrCat("cannot import ", path, ": ", OnnxMissingMessage()));
}

#endif  // GRAFT_HAVE_ONNX

}  // namespace graft
