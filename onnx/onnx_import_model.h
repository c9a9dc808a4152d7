#ifndef GRAFT_ONNX_ONNX_IMPORT_MODEL_H_
#define GRAFT_ONNX_ONNX_IMPORT_MODEL_H_

// ONNX import from an in-memory onnx::ModelProto (Debian's libonnx). Only in
// builds with ONNX (GRAFT_WITH_ONNX); code that must build either way uses
// onnx/onnx_import.h. Users of this header define ONNX_ML=1 and
// ONNX_NAMESPACE=onnx, as libonnx was built (linking the build's
// graft_onnx_proto target does).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_pb.h"

namespace graft {

// As ImportOnnxFile, for a model already parsed. Tensors stored as
// external data are read relative to `base_dir` (the directory the model
// file was in; empty means the current directory). Errors name the model
// as "ONNX model".
absl::StatusOr<Module> ImportOnnxModel(const onnx::ModelProto& model,
                                       absl::string_view base_dir,
                                       const OnnxImportOptions& options = {});

// The same, naming the model `source` in error messages.
absl::StatusOr<Module> ImportOnnxModel(const onnx::ModelProto& model,
                                       absl::string_view base_dir,
                                       absl::string_view source,
                                       const OnnxImportOptions& options);

}  // namespace graft

#endif  // GRAFT_ONNX_ONNX_IMPORT_MODEL_H_
