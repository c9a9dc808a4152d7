#ifndef GRAFT_SERIALIZE_JSON_FORMAT_H_
#define GRAFT_SERIALIZE_JSON_FORMAT_H_

// The JSON view of graft's model format: protobuf's JSON mapping of the same
// proto::Model message (serialize/graft.proto) that .gpb files hold, with
// the proto's field names (snake_case). It is self-contained: every tensor's
// bytes are inline (base64, as the mapping writes `bytes`), never in a side
// file, so it suits small models, diffs and hand edits, not 1 GB of
// weights. Reading runs every check the .gpb reader does (gpb_reader.h).
//
// JSON readers skip unknown fields (a newer minor version's), since JSON has
// nowhere to keep them. protobuf's JSON code nests at most 64 messages,
// less than the binary format allows: lists nested more than 30 deep (fewer
// inside submodules), or submodules more than 60, fit in .gpb but not in
// JSON (writing says so).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "serialize/gpb_reader.h"
#include "serialize/gpb_writer.h"

namespace graft {

// The JSON text of `module`. options.inline_limit is ignored: all data is
// inline.
absl::StatusOr<std::string> ModuleToJson(const Module& module,
                                         const GpbWriteOptions& options = {});

// Reads JSON text; `name` stands for the file in messages.
absl::StatusOr<LoadedModel> ModuleFromJson(absl::string_view json,
                                           absl::string_view name,
                                           const GpbReadOptions& options = {});

// Files, written through a temporary file and a rename.
absl::Status WriteJsonFile(const Module& module, const std::string& path,
                           const GpbWriteOptions& options = {});
absl::StatusOr<LoadedModel> ReadJsonFile(const std::string& path,
                                         const GpbReadOptions& options = {});

}  // namespace graft

#endif  // GRAFT_SERIALIZE_JSON_FORMAT_H_
