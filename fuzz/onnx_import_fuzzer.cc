// libFuzzer target for the ONNX importer (onnx/onnx_import_model.h).
//
// Any bytes that protobuf accepts as an onnx::ModelProto must import or
// fail with one error, never crash. External data points into a folder
// that does not exist, so it must fail cleanly too.
#include <cstddef>
#include <cstdint>

#include "onnx/onnx_import_model.h"
#include "onnx/onnx_pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<graft::Module> module =
      graft::ImportOnnxModel(model, "/nonexistent/graft-fuzz");
  (void)module;
  return 0;
}
