#include "cli/load_module.h"

#include "serialize/model_io.h"

namespace graft::cli {

// The formats and their extensions live in serialize/model_io.cc, so every
// command that reads a MODEL takes what LoadModel takes.
std::string KnownModelExtensions() { return graft::KnownModelExtensions(); }

absl::StatusOr<Module> LoadModule(absl::string_view path, const InputShapeHints& shapes) {
  ModelLoadOptions options;
  options.shapes = shapes;
  return LoadModel(std::string(path), options);
}

}  // namespace graft::cli
