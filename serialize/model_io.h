#ifndef GRAFT_SERIALIZE_MODEL_IO_H_
#define GRAFT_SERIALIZE_MODEL_IO_H_

// Loading and saving a Module in any of graft's model formats, chosen by the
// file's extension (docs/serialization.md):
//   .graft  the text IR (graph/parser.h, graph/printer.h)
//   .gpb    the binary format, with large tensors in MODEL.gpb.data
//           (serialize/gpb_reader.h, serialize/gpb_writer.h)
//   .json   the JSON view of the binary format (serialize/json_format.h)
// and, read only, the formats that other libraries register here when they
// are linked into the program:
//   .onnx   ONNX models, by graft_onnx (onnx/onnx_import.h)
// Any other extension is an error that lists the known ones.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "serialize/gpb_reader.h"
#include "serialize/gpb_writer.h"

namespace graft {

enum class ModelFormat {
  kText,
  kGpb,
  kJson,
  // Read only, by a reader another library registered (RegisterModelReader).
  kRegistered,
};

// The format of `path` by its extension; an error naming the path and the
// known extensions otherwise ("cannot read 'x.onnx2': unknown model format
// ...").
absl::StatusOr<ModelFormat> ModelFormatForPath(absl::string_view path);

// The format to write `path` in: as ModelFormatForPath, worded for writing,
// and refusing the registered formats (read only). Commands check it before
// doing work.
absl::StatusOr<ModelFormat> OutputModelFormatForPath(absl::string_view path);

// The known extensions, for messages and help texts: graft's own, then the
// registered ones, sorted (".graft, .gpb, .json, .onnx").
std::string KnownModelExtensions();

// Sizes a model file may leave open (an ONNX input's symbolic dims), given
// by whoever loads it: shapes by input name (the file's name or graft's
// placeholder name for it), sizes by the name of a symbolic dim. Formats
// whose files fix their shapes (graft's own) ignore them.
struct InputShapeHints {
  std::map<std::string, std::vector<int64_t>> input_shapes;
  std::map<std::string, int64_t> dim_values;
};

struct ModelLoadOptions {
  // For .gpb and .json: run the verifier on the loaded module (see
  // GpbReadOptions). Text files are not verified: the parser checks what
  // the text decides, and a hand-written file may use ops registered later.
  GpbReadOptions binary;
  ParseOptions text;
  // For a registered format (.onnx): what its reader takes besides its
  // defaults. Its own entry point takes all its options (ImportOnnxFile
  // and OnnxImportOptions in onnx/onnx_import.h).
  InputShapeHints shapes;
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
// producer, metadata); for other formats that info is empty.
absl::StatusOr<LoadedModel> LoadModelWithInfo(
    const std::string& path, const ModelLoadOptions& options = {});

// Writes through temporary files and renames: a failed save leaves any old
// file as it was.
absl::Status SaveModel(const Module& module, const std::string& path);
absl::Status SaveModel(const Module& module, const std::string& path,
                       const ModelSaveOptions& options);

// A read-only model format of another graft library.
//
// serialize/ sits below the libraries that read other formats (onnx/ needs
// libonnx and is optional) and must not depend on them, yet every program
// that links such a library should read its files through LoadModel, as
// `graft` and the tests do with .onnx. So the dependency is turned around:
// the library registers its reader here from a static initializer, and its
// CMake target makes every program that links it keep that initializer (a
// link anchor, as graft_interp has for its backend; onnx/CMakeLists.txt).
// A program that does not link the library is told which one it lacks.
struct ModelReader {
  // With its dot: ".onnx".
  std::string extension;
  // For messages: "ONNX".
  std::string format_name;
  std::function<absl::StatusOr<Module>(const std::string& path,
                                       const InputShapeHints& shapes)>
      read;
};

// Fails if `reader` has no read function, if its extension does not start
// with a dot, or if the extension is taken (by graft's own formats or an
// earlier registration). Thread-safe.
absl::Status RegisterModelReader(ModelReader reader);

}  // namespace graft

#endif  // GRAFT_SERIALIZE_MODEL_IO_H_
