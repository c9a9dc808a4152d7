#ifndef GRAFT_SERIALIZE_GPB_WRITER_H_
#define GRAFT_SERIALIZE_GPB_WRITER_H_

// Writing a Module in graft's binary model format: MODEL.gpb (the
// serialize/graft.proto message) plus, when some tensor is large,
// MODEL.gpb.data (serialize/side_file.h). docs/serialization.md.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/module.h"
#include "serialize/gpb_format.h"
#include "serialize/graft.pb.h"

namespace graft {

struct GpbWriteOptions {
  // A tensor of more bytes than this goes to the side file; smaller ones are
  // stored inline in the .gpb. Negative: everything inline, no side file
  // (what the JSON view does). The .gpb itself cannot exceed 2 GiB.
  int64_t inline_limit = kDefaultInlineLimit;
  // Recorded in the file; informational.
  std::string producer = DefaultProducer();
  // Free-form entries recorded in the file (keys unique, UTF-8).
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Where ModuleToProto placed the tensors it did not inline: what the side
// file must hold, and at which offsets.
struct SideFileLayout {
  struct Entry {
    Tensor tensor;  // Shares the module's storage.
    uint64_t offset = 0;
  };
  std::vector<Entry> entries;
  // The file's size: header, data and padding.
  uint64_t size = kSideFileHeaderSize;
};

// The proto form of `module`. Tensors over options.inline_limit get an
// ExternalData reference and an entry in `layout`; pass null to inline
// every tensor regardless of the limit. Fails, naming the place, for what
// the reader would refuse: an undefined tensor, a node name that is not an
// identifier, a string that is not UTF-8 (string arguments excepted: they
// are kept as bytes), lists or submodules nested deeper than the limits.
// Model.data_file is left unset (WriteGpbFile fills it in).
absl::StatusOr<proto::Model> ModuleToProto(const Module& module,
                                           const GpbWriteOptions& options,
                                           SideFileLayout* layout);
// The same into `model` (cleared first), which may live on a protobuf
// arena: a graph of a million nodes is millions of small messages.
absl::Status ModuleToProto(const Module& module, const GpbWriteOptions& options,
                           SideFileLayout* layout, proto::Model* model);

// Writes `module` to `path` (and, when some tensor is larger than the
// inline limit, to SideFilePath(path)). Both files are written to
// temporary names first and renamed into place, the side file first: a
// failed write leaves the old files as they were, and a crash between the
// two renames leaves a pair whose ids differ, which the reader refuses. A
// stale side file of an earlier save is removed when the new model needs
// none.
absl::Status WriteGpbFile(const Module& module, const std::string& path,
                          const GpbWriteOptions& options = {});

// The proto serialized, refusing a message over protobuf's 2 GiB limit.
absl::StatusOr<std::string> SerializeModelProto(const proto::Model& model,
                                                absl::string_view path);

}  // namespace graft

#endif  // GRAFT_SERIALIZE_GPB_WRITER_H_
