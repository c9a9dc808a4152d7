#ifndef GRAFT_ONNX_ONNX_IMPORT_H_
#define GRAFT_ONNX_ONNX_IMPORT_H_

// ONNX import (docs/onnx.md): an .onnx file becomes a graft Module. Graph
// inputs become placeholders, initializers module tensors read by get_attr
// nodes, and every ONNX node one or more core-op nodes (docs/ops.md) that
// remember the ONNX node they came from. Shape arithmetic on static shapes
// (Shape, Gather, Concat, ... feeding Reshape or Expand) is evaluated while
// importing, so the result has static reshapes.
//
// This header does not need ONNX: in a build without libonnx the functions
// exist and return an error that says how to get ONNX support. The entry
// point that takes an onnx::ModelProto is in onnx/onnx_import_model.h.
//
// A program that links graft_onnx also reads .onnx files through LoadModel
// (serialize/model_io.h), with the default options: this library registers
// ImportOnnxFile there as the reader of ".onnx".

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"

namespace graft {

// Choices for ImportOnnxFile and ImportOnnxModel.
struct OnnxImportOptions {
  // Shapes of graph inputs by ONNX input name. They replace the declared
  // shape, which may have symbolic (dim_param) or unknown dims; a dim the
  // model fixes must agree.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Sizes of named symbolic dims (ONNX dim_param), for every input that
  // uses them: {"batch_size", 1}.
  std::map<std::string, int64_t> dim_values;
  // Values known at import time (initializers, Constant nodes, shape
  // arithmetic) are evaluated while importing when each input and the
  // result have at most this many elements; larger ones become graft nodes.
  int64_t max_folded_elements = 65536;
};

// True if this build imports ONNX (it was built with libonnx).
bool HaveOnnx();

// The error text for importing ONNX without it: what to install.
std::string OnnxMissingMessage();

// Reads an .onnx file (opsets 13 to 22 of the default domain). External
// tensor data is read from files next to it. Errors name the file and,
// where there is one, the ONNX node: "model.onnx: node 'Conv_3' (Conv): ...".
// The result passes graft's verifier.
absl::StatusOr<Module> ImportOnnxFile(const std::string& path,
                                      const OnnxImportOptions& options = {});

}  // namespace graft

#endif  // GRAFT_ONNX_ONNX_IMPORT_H_
