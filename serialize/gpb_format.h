#ifndef GRAFT_SERIALIZE_GPB_FORMAT_H_
#define GRAFT_SERIALIZE_GPB_FORMAT_H_

// The constants and small rules of graft's model format (serialize/graft.proto,
// docs/serialization.md) that its writer and reader share: the format
// version and what may be read, the side file's name and alignment, the
// limits that keep hostile files from exhausting the machine, and the
// mapping between graft's enums and the proto's.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/dtype.h"
#include "graph/node.h"
#include "serialize/graft.pb.h"

namespace graft {

// The version this graft writes. A reader takes any minor version of its
// own major version (newer minors only add fields it can ignore) and
// refuses another major version.
inline constexpr uint32_t kGpbFormatMajor = 1;
inline constexpr uint32_t kGpbFormatMinor = 0;

// Tensors of at most this many bytes are stored inline in the .gpb by
// default; larger ones go to the side file, where they are mapped, not
// copied, at load time.
inline constexpr int64_t kDefaultInlineLimit = 1024;

// Every tensor in the side file starts at a multiple of this (and the file
// itself starts with a header of this size), so mapped tensors are as
// aligned as Storage::Allocate's.
inline constexpr uint64_t kSideFileAlignment = 64;
inline constexpr uint64_t kSideFileHeaderSize = 64;

// Limits on what a file may hold. List and submodule nesting match the text
// parser's, so any module the text format reads also fits here.
inline constexpr int kMaxRank = 64;
inline constexpr int kMaxListDepth = 64;
inline constexpr int kMaxModuleDepth = 64;
// protobuf's own limit on one message.
inline constexpr uint64_t kMaxProtoBytes = (uint64_t{1} << 31) - 1;

// "model.gpb" -> "model.gpb.data".
std::string SideFilePath(absl::string_view gpb_path);

// "graft 0.1.0": what the writer records as the producer.
std::string DefaultProducer();

// Ok if this graft reads a file of format `major`.`minor`; otherwise an
// error for `file` that names both versions.
absl::Status CheckFormatVersion(absl::string_view file, uint32_t major,
                                uint32_t minor);

// The format version of an encoded Model, read from its first fields without
// parsing the rest (so a file of a newer major version, whose other fields
// this graft may not understand, is still refused with the right message).
// nullopt if the bytes do not start like a Model.
struct FormatVersion {
  uint32_t major = 0;
  uint32_t minor = 0;
};
std::optional<FormatVersion> PeekFormatVersion(absl::string_view bytes);

proto::DType DTypeToProto(DType dtype);
// nullopt for DTYPE_UNSPECIFIED and values this graft does not know.
std::optional<DType> DTypeFromProto(int value);
proto::OpCode OpCodeToProto(OpCode op);
std::optional<OpCode> OpCodeFromProto(int value);

}  // namespace graft

#endif  // GRAFT_SERIALIZE_GPB_FORMAT_H_
