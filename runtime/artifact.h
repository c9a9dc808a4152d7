#ifndef GRAFT_RUNTIME_ARTIFACT_H_
#define GRAFT_RUNTIME_ARTIFACT_H_

// The compiled model file (.gcx) that `graft compile` writes and
// graft::runtime loads: a 128-byte header, the metadata (what the code was
// compiled for, the input and output signature, the library calls), the
// machine code as an ELF object, then the weights, each 64-byte aligned so
// that they are used where the file is mapped. docs/jit.md describes it.
//
//   header: "GRAFTGCX", u32 format major, u32 minor,
//           u64 metadata offset, size, checksum,
//           u64 object offset, size, checksum,
//           u64 data offset, size; zeros up to byte 128.
//
// Every part is checksummed (XXH3-64; each weight tensor on its own), so a
// damaged file is reported, never run.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/dtype.h"
#include "runtime/library_call.h"
#include "runtime/program_runner.h"

namespace graft::runtime {

inline constexpr char kArtifactMagic[] = "GRAFTGCX";  // 8 bytes, no NUL.
inline constexpr size_t kArtifactHeaderBytes = 128;
// A reader refuses another major version; minor versions only add. Minor
// 1: the code may call graft_orc_parallel_for (runtime/parallel_steps.h).
inline constexpr uint32_t kArtifactFormatMajor = 1;
inline constexpr uint32_t kArtifactFormatMinor = 1;

// One input or output: its name and fixed type.
struct ValueSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
};

// A module tensor in the data part.
struct TensorRange {
  uint64_t offset = 0;  // From the data part's start; a multiple of 64.
  uint64_t bytes = 0;
  uint64_t checksum = 0;
};

// Constant weights in the library's own layout (runtime/library_call.h).
struct PackedRange {
  uint64_t offset = 0;  // From the data part's start; a multiple of 64.
  uint64_t bytes = 0;
  uint64_t checksum = 0;
  std::string layout;
};

struct ArtifactMetadata {
  std::string graft_version;
  std::string backend;       // "orc".
  std::string compiled_for;  // The code generator and CPU, for people.
  std::string target_arch;   // "x86_64": the loader's own must match.
  // CPU features the code may use (LLVM's names): the loading CPU must have
  // them all.
  std::vector<std::string> cpu_features;
  int32_t threads = 0;  // Library threads the calls were planned for; 0: all.
  uint64_t arena_bytes = 0;
  std::vector<ValueSpec> inputs, outputs;
  std::vector<TensorRange> tensors;  // State slots [0, tensors.size()).
  std::vector<LibraryCallSpec> library_calls;  // The slots after them.
  // Weights the library calls use in place (LibraryCallSpec::packed_index),
  // and the library build that packed them.
  std::string packing_identity;
  std::vector<PackedRange> packed;
  std::map<int, StepFailure> failures;  // By step index.
};

// A parsed file: its metadata, and views of its code and data.
struct ArtifactView {
  uint32_t format_major = 0, format_minor = 0;
  ArtifactMetadata metadata;
  absl::string_view object;
  absl::string_view data;
};

// A weight to write: its bytes.
struct ArtifactTensor {
  const void* data = nullptr;
  uint64_t bytes = 0;
};

// Writes `metadata` (its tensor and packed ranges filled in here), `object`,
// `tensors` and `packed` (the layouts in metadata.packed, in order) to
// `path`, atomically: a failed write leaves no file.
absl::Status WriteArtifact(const std::string& path, ArtifactMetadata metadata,
                           absl::string_view object, absl::Span<const ArtifactTensor> tensors,
                           absl::Span<const ArtifactTensor> packed = {});

// Parses and checks a whole file's bytes. Errors name the part that is
// damaged. Checksums may be skipped (fuzzing, which cannot forge them).
absl::StatusOr<ArtifactView> ParseArtifact(absl::string_view file, bool verify_checksums = true);

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_ARTIFACT_H_
