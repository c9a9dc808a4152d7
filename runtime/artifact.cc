#include "runtime/artifact.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/byte_stream.h"
#include "support/atomic_file.h"
#include "support/fingerprint.h"
#include "support/status_macros.h"

namespace graft::runtime {
namespace {

constexpr size_t kMagicBytes = 8;
constexpr uint64_t kAlign = 64;
// More than any real model has; beyond it a count is damage.
constexpr uint64_t kMaxRank = 16;

uint64_t AlignUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Header {
  uint32_t major = kArtifactFormatMajor, minor = kArtifactFormatMinor;
  uint64_t metadata_offset = 0, metadata_size = 0, metadata_checksum = 0;
  uint64_t object_offset = 0, object_size = 0, object_checksum = 0;
  uint64_t data_offset = 0, data_size = 0;
};

std::string EncodeHeader(const Header& h) {
  ByteWriter out;
  for (size_t i = 0; i < kMagicBytes; ++i) out.Put<char>(kArtifactMagic[i]);
  out.Put(h.major);
  out.Put(h.minor);
  for (uint64_t v : {h.metadata_offset, h.metadata_size, h.metadata_checksum, h.object_offset,
                     h.object_size, h.object_checksum, h.data_offset, h.data_size}) {
    out.Put(v);
  }
  std::string bytes = out.Take();
  bytes.resize(kArtifactHeaderBytes, '\0');
  return bytes;
}

void EncodeValues(const std::vector<ValueSpec>& values, ByteWriter& out) {
  out.Put<uint64_t>(values.size());
  for (const ValueSpec& v : values) {
    out.PutString(v.name);
    out.Put(v.dtype);
    out.PutVector(v.dims);
  }
}

std::string EncodeMetadata(const ArtifactMetadata& m) {
  ByteWriter out;
  for (const std::string* s : {&m.graft_version, &m.backend, &m.compiled_for, &m.target_arch}) {
    out.PutString(*s);
  }
  out.Put<uint64_t>(m.cpu_features.size());
  for (const std::string& f : m.cpu_features) out.PutString(f);
  out.Put(m.threads);
  out.Put(m.arena_bytes);
  EncodeValues(m.inputs, out);
  EncodeValues(m.outputs, out);
  out.Put<uint64_t>(m.tensors.size());
  for (const TensorRange& t : m.tensors) {
    out.Put(t.offset);
    out.Put(t.bytes);
    out.Put(t.checksum);
  }
  out.Put<uint64_t>(m.library_calls.size());
  for (const LibraryCallSpec& spec : m.library_calls) EncodeLibraryCallSpec(spec, out);
  out.PutString(m.packing_identity);
  out.Put<uint64_t>(m.packed.size());
  for (const PackedRange& p : m.packed) {
    out.Put(p.offset);
    out.Put(p.bytes);
    out.Put(p.checksum);
    out.PutString(p.layout);
  }
  out.Put<uint64_t>(m.failures.size());
  for (const auto& [step, failure] : m.failures) {
    out.Put<int32_t>(step);
    out.Put<uint8_t>(failure.library);
    out.PutString(failure.label);
  }
  return out.Take();
}

absl::StatusOr<std::vector<ValueSpec>> DecodeValues(ByteReader& in) {
  ASSIGN_OR_RETURN(uint64_t n, in.GetCount(8 + 1 + 8));
  std::vector<ValueSpec> values(n);
  for (ValueSpec& v : values) {
    ASSIGN_OR_RETURN(v.name, in.GetString());
    ASSIGN_OR_RETURN(v.dtype, in.Get<DType>());
    if (static_cast<int>(v.dtype) >= kNumDTypes) return in.Error("an unknown dtype");
    ASSIGN_OR_RETURN(v.dims, in.GetVector<int64_t>());
    if (v.dims.size() > kMaxRank) return in.Error("a value of too many dims");
    if (CheckedElementCount(v.dims) < 0) {
      return in.Error(absl::StrCat("value '", v.name, "' has more than 2^40 elements or a bad dim"));
    }
  }
  return values;
}

absl::StatusOr<ArtifactMetadata> DecodeMetadata(absl::string_view bytes) {
  ByteReader in(bytes, "metadata");
  ArtifactMetadata m;
  for (std::string* s : {&m.graft_version, &m.backend, &m.compiled_for, &m.target_arch}) {
    ASSIGN_OR_RETURN(*s, in.GetString());
  }
  ASSIGN_OR_RETURN(uint64_t features, in.GetCount(8));
  m.cpu_features.resize(features);
  for (std::string& f : m.cpu_features) {
    ASSIGN_OR_RETURN(f, in.GetString());
  }
  ASSIGN_OR_RETURN(m.threads, in.Get<int32_t>());
  ASSIGN_OR_RETURN(m.arena_bytes, in.Get<uint64_t>());
  ASSIGN_OR_RETURN(m.inputs, DecodeValues(in));
  ASSIGN_OR_RETURN(m.outputs, DecodeValues(in));
  ASSIGN_OR_RETURN(uint64_t tensors, in.GetCount(24));
  m.tensors.resize(tensors);
  for (TensorRange& t : m.tensors) {
    ASSIGN_OR_RETURN(t.offset, in.Get<uint64_t>());
    ASSIGN_OR_RETURN(t.bytes, in.Get<uint64_t>());
    ASSIGN_OR_RETURN(t.checksum, in.Get<uint64_t>());
  }
  ASSIGN_OR_RETURN(uint64_t calls, in.GetCount(64));
  for (uint64_t i = 0; i < calls; ++i) {
    ASSIGN_OR_RETURN(LibraryCallSpec spec, DecodeLibraryCallSpec(in));
    m.library_calls.push_back(std::move(spec));
  }
  ASSIGN_OR_RETURN(m.packing_identity, in.GetString());
  ASSIGN_OR_RETURN(uint64_t packed, in.GetCount(32));
  m.packed.resize(packed);
  for (PackedRange& p : m.packed) {
    ASSIGN_OR_RETURN(p.offset, in.Get<uint64_t>());
    ASSIGN_OR_RETURN(p.bytes, in.Get<uint64_t>());
    ASSIGN_OR_RETURN(p.checksum, in.Get<uint64_t>());
    ASSIGN_OR_RETURN(p.layout, in.GetString());
  }
  ASSIGN_OR_RETURN(uint64_t failures, in.GetCount(13));
  for (uint64_t i = 0; i < failures; ++i) {
    ASSIGN_OR_RETURN(int32_t step, in.Get<int32_t>());
    ASSIGN_OR_RETURN(uint8_t library, in.Get<uint8_t>());
    ASSIGN_OR_RETURN(std::string label, in.GetString());
    if (step < 0) return in.Error("a negative step index");
    m.failures[step] = {library != 0, std::move(label)};
  }
  if (!in.AtEnd()) return in.Error("bytes left after the metadata");
  return m;
}

// [offset, offset + size) lies within a file of `file_size` bytes.
absl::Status CheckRange(uint64_t offset, uint64_t size, uint64_t file_size,
                        absl::string_view what) {
  if (offset > file_size || size > file_size - offset) {
    return absl::DataLossError(absl::StrCat("the ", what, " (bytes ", offset, " to ",
                                            offset + size, ") lies past the end of the ",
                                            file_size, "-byte file"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Header> DecodeHeader(absl::string_view file) {
  if (file.size() < kArtifactHeaderBytes ||
      std::memcmp(file.data(), kArtifactMagic, kMagicBytes) != 0) {
    return absl::InvalidArgumentError("not a graft compiled model (.gcx) file");
  }
  ByteReader in(file.substr(kMagicBytes, kArtifactHeaderBytes - kMagicBytes), "header");
  Header h;
  ASSIGN_OR_RETURN(h.major, in.Get<uint32_t>());
  ASSIGN_OR_RETURN(h.minor, in.Get<uint32_t>());
  if (h.major != kArtifactFormatMajor) {
    return absl::FailedPreconditionError(absl::StrCat(
        "compiled model format ", h.major, ".", h.minor, "; this graft runtime reads format ",
        kArtifactFormatMajor, ".x: compile the model again with this graft"));
  }
  for (uint64_t* v : {&h.metadata_offset, &h.metadata_size, &h.metadata_checksum,
                      &h.object_offset, &h.object_size, &h.object_checksum, &h.data_offset,
                      &h.data_size}) {
    ASSIGN_OR_RETURN(*v, in.Get<uint64_t>());
  }
  RETURN_IF_ERROR(CheckRange(h.metadata_offset, h.metadata_size, file.size(), "metadata"));
  RETURN_IF_ERROR(CheckRange(h.object_offset, h.object_size, file.size(), "machine code"));
  RETURN_IF_ERROR(CheckRange(h.data_offset, h.data_size, file.size(), "weights"));
  if (h.data_offset % kAlign != 0) {
    return absl::DataLossError("the weights do not start on a 64-byte boundary");
  }
  return h;
}

absl::Status VerifyChecksum(absl::string_view bytes, uint64_t expected, absl::string_view what) {
  if (Checksum64(bytes.data(), bytes.size()) != expected) {
    return absl::DataLossError(absl::StrCat("the ", what, " is damaged (checksum mismatch)"));
  }
  return absl::OkStatus();
}

// One weight in the data part: in range, aligned, and (when verifying)
// its checksum.
absl::Status CheckData(absl::string_view data, uint64_t offset, uint64_t bytes,
                       uint64_t checksum, const std::string& what, bool verify_checksums) {
  RETURN_IF_ERROR(CheckRange(offset, bytes, data.size(), what));
  if (offset % kAlign != 0) {
    return absl::DataLossError(absl::StrCat("the ", what, " is not 64-byte aligned"));
  }
  if (!verify_checksums) return absl::OkStatus();
  return VerifyChecksum(data.substr(offset, bytes), checksum, what);
}

}  // namespace

absl::Status WriteArtifact(const std::string& path, ArtifactMetadata metadata,
                           absl::string_view object, absl::Span<const ArtifactTensor> tensors,
                           absl::Span<const ArtifactTensor> packed) {
  if (packed.size() != metadata.packed.size()) {
    return absl::InternalError("packed weights without their layouts");
  }
  metadata.tensors.clear();
  uint64_t data_size = 0;
  for (const ArtifactTensor& t : tensors) {
    metadata.tensors.push_back({data_size, t.bytes, Checksum64(t.data, t.bytes)});
    data_size = AlignUp(data_size + t.bytes);
  }
  for (size_t i = 0; i < packed.size(); ++i) {
    PackedRange& p = metadata.packed[i];
    p.offset = data_size;
    p.bytes = packed[i].bytes;
    p.checksum = Checksum64(packed[i].data, packed[i].bytes);
    data_size = AlignUp(data_size + p.bytes);
  }
  const std::string encoded = EncodeMetadata(metadata);
  Header h;
  h.metadata_offset = kArtifactHeaderBytes;
  h.metadata_size = encoded.size();
  h.metadata_checksum = Checksum64(encoded.data(), encoded.size());
  h.object_offset = AlignUp(h.metadata_offset + h.metadata_size);
  h.object_size = object.size();
  h.object_checksum = Checksum64(object.data(), object.size());
  h.data_offset = AlignUp(h.object_offset + h.object_size);
  h.data_size = data_size;

  ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  RETURN_IF_ERROR(file.Write(EncodeHeader(h)));
  RETURN_IF_ERROR(file.Write(encoded));
  RETURN_IF_ERROR(file.PadTo(h.object_offset));
  RETURN_IF_ERROR(file.Write(object));
  for (size_t i = 0; i < tensors.size(); ++i) {
    RETURN_IF_ERROR(file.PadTo(h.data_offset + metadata.tensors[i].offset));
    RETURN_IF_ERROR(file.Write(tensors[i].data, tensors[i].bytes));
  }
  for (size_t i = 0; i < packed.size(); ++i) {
    RETURN_IF_ERROR(file.PadTo(h.data_offset + metadata.packed[i].offset));
    RETURN_IF_ERROR(file.Write(packed[i].data, packed[i].bytes));
  }
  RETURN_IF_ERROR(file.PadTo(h.data_offset + h.data_size));
  RETURN_IF_ERROR(file.Finish());
  return file.Publish();
}

absl::StatusOr<ArtifactView> ParseArtifact(absl::string_view file, bool verify_checksums) {
  ASSIGN_OR_RETURN(Header h, DecodeHeader(file));
  ArtifactView view;
  view.format_major = h.major;
  view.format_minor = h.minor;
  const absl::string_view metadata = file.substr(h.metadata_offset, h.metadata_size);
  view.object = file.substr(h.object_offset, h.object_size);
  view.data = file.substr(h.data_offset, h.data_size);
  if (verify_checksums) {
    RETURN_IF_ERROR(VerifyChecksum(metadata, h.metadata_checksum, "metadata"));
    RETURN_IF_ERROR(VerifyChecksum(view.object, h.object_checksum, "machine code"));
  }
  ASSIGN_OR_RETURN(view.metadata, DecodeMetadata(metadata));
  for (size_t i = 0; i < view.metadata.tensors.size(); ++i) {
    const TensorRange& t = view.metadata.tensors[i];
    RETURN_IF_ERROR(CheckData(view.data, t.offset, t.bytes, t.checksum,
                              absl::StrCat("weight tensor ", i), verify_checksums));
  }
  for (size_t i = 0; i < view.metadata.packed.size(); ++i) {
    const PackedRange& p = view.metadata.packed[i];
    RETURN_IF_ERROR(CheckData(view.data, p.offset, p.bytes, p.checksum,
                              absl::StrCat("packed weight tensor ", i), verify_checksums));
  }
  return view;
}

}  // namespace graft::runtime
