#ifndef GRAFT_SERIALIZE_GPB_READER_H_
#define GRAFT_SERIALIZE_GPB_READER_H_

// Reading graft's binary model format (MODEL.gpb and its side file
// MODEL.gpb.data; docs/serialization.md), and turning a proto::Model from
// any source (the JSON view too) into a Module.
//
// Nothing in a file is trusted. Before anything is allocated or mapped the
// reader checks, and otherwise refuses with one message that names the file
// and the place (submodule, tensor, node):
// - the format version (a newer major version is refused, naming both);
// - protobuf's own parse (a truncated or corrupted file), with nesting
//   bounded so that a hostile file cannot exhaust the stack;
// - tensors: a name, unique; a known dtype; at most kMaxRank dims, none
//   negative, whose byte size does not overflow and equals the inline data's
//   length or the external region's; external regions 64-byte aligned, past
//   the side file's header and inside it (overflow-safe), in a side file
//   that exists, is a graft side file and has the id and size the model
//   records;
// - nodes: identifier names, unique; a known opcode; node references that
//   name an earlier node of the same graph (a later or unknown one is an
//   error that says which); keyword names unique; lists at most
//   kMaxListDepth deep; types with known dtypes, at most kMaxRank dims,
//   sizes >= 0, each dim a size or a symbol; meta keys unique;
// - submodules: names unique, at most kMaxModuleDepth deep;
// and finally runs the verifier (graph/verifier.h) on the whole module.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "serialize/graft.pb.h"
#include "serialize/mapped_file.h"

namespace graft {

struct GpbReadOptions {
  // Run Verify(module) on the result. Turn off to read a model whose ops
  // are not registered in this process (a plugin's, not loaded).
  bool verify = true;
  // Read the whole side file and check its bytes against the id the model
  // records (a hash of them). Off by default: it reads every byte, which is
  // what mapping avoids; the id itself is always compared, so a side file
  // of another save is refused either way, but a flipped bit inside tensor
  // data is found only with this.
  bool check_data = false;
};

// What a model file records besides the module.
struct ModelInfo {
  uint32_t format_major = 0;
  uint32_t format_minor = 0;
  std::string producer;
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct LoadedModel {
  Module module;
  ModelInfo info;
};

// Reads `path` and, if the model has one, its side file SideFilePath(path),
// which is mapped: its tensors are views of the mapping (no copy), and the
// mapping lives as long as any of them.
absl::StatusOr<LoadedModel> ReadGpbFile(const std::string& path,
                                        const GpbReadOptions& options = {});

// The same from bytes in memory; `name` stands for the file in messages and
// for the side file's name in them. `side_file` is the mapped side file, or
// null: a model that refers to one then fails.
absl::StatusOr<LoadedModel> ParseGpb(absl::string_view bytes,
                                     absl::string_view name,
                                     std::shared_ptr<MappedFile> side_file,
                                     const GpbReadOptions& options = {});

// Checks `model` and builds its module (everything listed at the top of this
// file). `name` names the file in messages; `side_file` as for ParseGpb.
absl::StatusOr<LoadedModel> ModelFromProto(
    const proto::Model& model, absl::string_view name,
    std::shared_ptr<MappedFile> side_file, const GpbReadOptions& options = {});

}  // namespace graft

#endif  // GRAFT_SERIALIZE_GPB_READER_H_
