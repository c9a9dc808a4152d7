#ifndef GRAFT_SERIALIZE_MODEL_IO_H_
#define GRAFT_SERIALIZE_MODEL_IO_H_

// Loading and saving a Module in any of graft's model formats, chosen by the
// file's extension (docs/serialization.md):
//   .graft  the text IR (graph/parser.h, graph/printer.h)
//   .gpb    the binary format, with large tensors in MODEL.gpb.data
//           (serialize/gpb_reader.h, serialize/gpb_writer.h)
//   .json   the JSON view of the binary format (serialize/json_format.h)
//   .onnx   ONNX models, read only (serialize/onnx_import.h)
// Any other extension is an error that lists the known ones.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "serialize/gpb_reader.h"
#include "serialize/gpb_writer.h"
#include "serialize/onnx_import.h"

namespace graft {

enum class ModelFormat { kText, kGpb, kJson, kOnnx };

// The format of `path` by its extension; an error naming the path and the
// known extensions otherwise ("cannot read 'x.onnx2': unknown model format
// ...").
absl::StatusOr<ModelFormat> ModelFormatForPath(absl::string_view path);

// The format to write `path` in: as ModelFormatForPath, worded for writing,
// and refusing .onnx (import only). Commands check it before doing work.
absl::StatusOr<ModelFormat> OutputModelFormatForPath(absl::string_view path);

// The known extensions, for messages and help texts: ".graft, .gpb, .json,
// .onnx".
std::string KnownModelExtensions();

struct ModelLoadOptions {
  // For .gpb and .json: run the verifier on the loaded module (see
  // GpbReadOptions). Text files are not verified: the parser checks what
  // the text decides, and a hand-written file may use ops registered later.
  GpbReadOptions binary;
  ParseOptions text;
  // For .onnx: input shapes and symbolic dim sizes (serialize/onnx_import.h).
  OnnxImportOptions onnx;
};

struct ModelSaveOptions {
  // For .gpb and .json (inline limit, producer, metadata).
  GpbWriteOptions binary;
  // For .graft. Every tensor's data by default, so the file reads back.
  PrintOptions text = {.max_inline_elements = -1};
};

absl::StatusOr<Module> LoadModel(const std::string& path);
absl::StatusOr<Module> LoadModel(const std::string& path,
                                 const ModelLoadOptions& options);
// With what a .gpb or .json records besides the module (format version,
// producer, metadata); for a text file that info is empty.
absl::StatusOr<LoadedModel> LoadModelWithInfo(
    const std::string& path, const ModelLoadOptions& options = {});

// Writes through temporary files and renames: a failed save leaves any old
// file as it was.
absl::Status SaveModel(const Module& module, const std::string& path);
absl::Status SaveModel(const Module& module, const std::string& path,
                       const ModelSaveOptions& options);

}  // namespace graft

#endif  // GRAFT_SERIALIZE_MODEL_IO_H_
