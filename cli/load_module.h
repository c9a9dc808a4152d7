#ifndef GRAFT_CLI_LOAD_MODULE_H_
#define GRAFT_CLI_LOAD_MODULE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "serialize/model_io.h"

namespace graft::cli {

// Reads a model in any format graft knows, chosen by the file's extension
// (.graft, .gpb, .json, .onnx: serialize/model_io.h). Unknown extensions are
// an error that lists the known ones. `shapes`: sizes the file leaves open
// (an ONNX model's symbolic input dims).
absl::StatusOr<Module> LoadModule(absl::string_view path, const InputShapeHints& shapes = {});

// The known input extensions, for help texts: ".graft, .gpb, .json, .onnx".
std::string KnownModelExtensions();

}  // namespace graft::cli

#endif  // GRAFT_CLI_LOAD_MODULE_H_
