#include "onnx/onnx_import.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "graph/file_io.h"
#include "serialize/model_io.h"

#ifdef GRAFT_HAVE_ONNX
#include "onnx/onnx_import_model.h"
#include "onnx/onnx_importer.h"
#include "support/status_macros.h"
#endif

// Referenced by the link options of graft_onnx (onnx/CMakeLists.txt) so that
// this file, and the registration of the .onnx reader below, is linked into
// every program that links the library, even one that calls none of its
// functions and reads .onnx files only through LoadModel.
extern "C" {
int graft_link_onnx_reader = 0;
}

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
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
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

namespace {

// LoadModel reads .onnx files with ImportOnnxFile; in a build without ONNX
// that says what to install.
[[maybe_unused]] const bool registered = [] {
  absl::Status s = RegisterModelReader(
      {.extension = ".onnx",
       .format_name = "ONNX",
       .read = [](const std::string& path, const InputShapeHints& shapes) {
         OnnxImportOptions options;
         options.input_shapes = shapes.input_shapes;
         options.dim_values = shapes.dim_values;
         return ImportOnnxFile(path, options);
       }});
  return s.ok();
}();

}  // namespace
}  // namespace graft
