#ifndef GRAFT_ONNX_ONNX_NAMES_H_
#define GRAFT_ONNX_ONNX_NAMES_H_

// ONNX names are arbitrary strings ("/encoder/layer.0/Add_output_0",
// "onnx::MatMul_123", "input.1"); graft names are identifiers
// ([A-Za-z_][A-Za-z0-9_.]*). The importer keeps the ONNX names readable.

#include <string>

#include "absl/strings/string_view.h"

namespace graft::onnx_import {

// `name` as a valid graft name: each run of other characters becomes one
// '_', leading and trailing '_' are dropped, and a leading digit gets a '_'
// in front. `fallback` when nothing is left.
//   "/layer1/conv/Conv_output_0" -> "layer1_conv_Conv_output_0"
//   "onnx::MatMul_12" -> "onnx_MatMul_12", "input.1" -> "input.1", "0" -> "_0"
std::string SanitizeName(absl::string_view name, absl::string_view fallback);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_NAMES_H_
