// Linking graft_onnx is enough for LoadModel to read .onnx files. This
// program calls nothing of the ONNX library itself, so without graft_onnx's
// link anchor (onnx/CMakeLists.txt) the linker would leave out the
// registration of the .onnx reader and LoadModel would not know the format.
//
//   load_model_check MODEL.onnx
//
// Exits with 0 when LoadModel reads the model or, in a build without ONNX
// import, says what to install; with 1 otherwise.

#include <iostream>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "graph/module.h"
#include "serialize/model_io.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " MODEL.onnx\n";
    return 2;
  }
  absl::StatusOr<graft::Module> module = graft::LoadModel(argv[1]);
  if (module.ok()) {
    std::cout << argv[1] << ": " << module->graph().num_nodes() << " nodes\n";
    return 0;
  }
  std::cerr << module.status() << "\n";
  return absl::StrContains(module.status().message(), "libonnx-dev") ? 0 : 1;
}
