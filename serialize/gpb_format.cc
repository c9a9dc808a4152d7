#include "serialize/gpb_format.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

#ifndef GRAFT_SERIALIZE_VERSION
#define GRAFT_SERIALIZE_VERSION "unknown"
#endif

namespace graft {

using google::protobuf::internal::WireFormatLite;

// The proto's dtype numbers are graft's plus one (graft.proto).
static_assert(proto::DTYPE_F32 == static_cast<int>(DType::kF32) + 1);
static_assert(proto::DTYPE_BF16 == static_cast<int>(DType::kBF16) + 1);
static_assert(proto::DTYPE_BOOL == static_cast<int>(DType::kBool) + 1);
static_assert(proto::DType_MAX == kNumDTypes,
              "a dtype was added to graph/dtype.h or graft.proto, not both");

std::string SideFilePath(absl::string_view gpb_path) {
  return absl::StrCat(gpb_path, ".data");
}

std::string DefaultProducer() {
  return absl::StrCat("graft ", GRAFT_SERIALIZE_VERSION);
}

absl::Status CheckFormatVersion(absl::string_view file, uint32_t major,
                                uint32_t minor) {
  if (major == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": not a graft model: it has no format version (graft writes ",
        kGpbFormatMajor, ".", kGpbFormatMinor, ")"));
  }
  if (major != kGpbFormatMajor) {
    return absl::FailedPreconditionError(absl::StrCat(
        file, ": the file has format version ", major, ".", minor,
        ", but this graft reads format ", kGpbFormatMajor, ".x (up to ",
        kGpbFormatMajor, ".", kGpbFormatMinor, ")",
        major > kGpbFormatMajor ? ": use a newer graft to read it" : ""));
  }
  // A newer minor version only adds fields, which protobuf keeps unread.
  return absl::OkStatus();
}

std::optional<FormatVersion> PeekFormatVersion(absl::string_view bytes) {
  google::protobuf::io::CodedInputStream input(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(std::min<size_t>(bytes.size(), kMaxProtoBytes)));
  FormatVersion version;
  bool seen_major = false;
  while (true) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) break;  // The end, or an error.
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const bool varint =
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT;
    if ((field == proto::Model::kFormatMajorFieldNumber ||
         field == proto::Model::kFormatMinorFieldNumber) &&
        varint) {
      uint32_t value;
      if (!input.ReadVarint32(&value)) break;
      if (field == proto::Model::kFormatMajorFieldNumber) {
        version.major = value;
        seen_major = true;
      } else {
        version.minor = value;
      }
      continue;
    }
    if (!WireFormatLite::SkipField(&input, tag)) break;
  }
  if (!seen_major) return std::nullopt;
  return version;
}

proto::DType DTypeToProto(DType dtype) {
  return static_cast<proto::DType>(static_cast<int>(dtype) + 1);
}

std::optional<DType> DTypeFromProto(int value) {
  if (value < 1 || value > kNumDTypes) return std::nullopt;
  return static_cast<DType>(value - 1);
}

proto::OpCode OpCodeToProto(OpCode op) {
  switch (op) {
    case OpCode::kPlaceholder:
      return proto::OPCODE_PLACEHOLDER;
    case OpCode::kGetAttr:
      return proto::OPCODE_GET_ATTR;
    case OpCode::kCallFunction:
      return proto::OPCODE_CALL_FUNCTION;
    case OpCode::kCallModule:
      return proto::OPCODE_CALL_MODULE;
    case OpCode::kOutput:
      return proto::OPCODE_OUTPUT;
  }
  return proto::OPCODE_UNSPECIFIED;
}

std::optional<OpCode> OpCodeFromProto(int value) {
  switch (value) {
    case proto::OPCODE_PLACEHOLDER:
      return OpCode::kPlaceholder;
    case proto::OPCODE_GET_ATTR:
      return OpCode::kGetAttr;
    case proto::OPCODE_CALL_FUNCTION:
      return OpCode::kCallFunction;
    case proto::OPCODE_CALL_MODULE:
      return OpCode::kCallModule;
    case proto::OPCODE_OUTPUT:
      return OpCode::kOutput;
    default:
      return std::nullopt;
  }
}

}  // namespace graft
