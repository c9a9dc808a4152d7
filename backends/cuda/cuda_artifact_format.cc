#include "backends/cuda/cuda_artifact_format.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "support/fingerprint.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

constexpr char kMagic[] = "graft-cuda-executable 2\n";

std::string HashOf(absl::string_view bytes) {
  return FingerprintBuilder().AddBytes(bytes.data(), bytes.size()).Finish().ToHex();
}

absl::Status Damaged(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("a damaged cuda executable", what));
}

// Reads "<text>\n" at `at`.
absl::StatusOr<absl::string_view> ReadLine(absl::string_view bytes, size_t& at) {
  const size_t end = bytes.find('\n', at);
  if (end == absl::string_view::npos) return Damaged(" (cut short)");
  const absl::string_view line = bytes.substr(at, end - at);
  at = end + 1;
  return line;
}

// Reads "<decimal>\n" at `at`.
absl::StatusOr<size_t> ReadNumber(absl::string_view bytes, size_t& at) {
  ASSIGN_OR_RETURN(absl::string_view line, ReadLine(bytes, at));
  size_t value = 0;
  if (!absl::SimpleAtoi(line, &value)) return Damaged("");
  return value;
}

// Reads `size` bytes at `at`.
absl::StatusOr<absl::string_view> ReadBytes(absl::string_view bytes, size_t& at, size_t size) {
  if (size > bytes.size() - at) return Damaged(" (cut short)");
  const absl::string_view out = bytes.substr(at, size);
  at += size;
  return out;
}

}  // namespace

std::string WriteCudaArtifact(absl::string_view program_hash, const CudaArtifact& artifact) {
  std::string bytes = absl::StrCat(kMagic, program_hash, "\n", artifact.gemm_algos.size(), "\n");
  const size_t algos_begin = bytes.size();
  for (const auto& [step, algo] : artifact.gemm_algos) {
    absl::StrAppend(&bytes, step, "\n", algo.size(), "\n", algo);
  }
  absl::StrAppend(&bytes, HashOf(absl::string_view(bytes).substr(algos_begin)), "\n",
                  artifact.cubins.size(), "\n");
  for (const std::string& cubin : artifact.cubins) {
    absl::StrAppend(&bytes, HashOf(cubin), "\n", cubin.size(), "\n", cubin);
  }
  return bytes;
}

absl::StatusOr<ReadArtifact> ReadCudaArtifact(absl::string_view bytes) {
  if (!absl::StartsWith(bytes, kMagic)) return absl::DataLossError("not a cuda executable");
  size_t at = sizeof(kMagic) - 1;
  ReadArtifact out;
  ASSIGN_OR_RETURN(absl::string_view program_hash, ReadLine(bytes, at));
  out.program_hash = std::string(program_hash);
  ASSIGN_OR_RETURN(size_t algos, ReadNumber(bytes, at));
  const size_t algos_begin = at;
  for (size_t i = 0; i < algos; ++i) {
    ASSIGN_OR_RETURN(size_t step, ReadNumber(bytes, at));
    ASSIGN_OR_RETURN(size_t size, ReadNumber(bytes, at));
    ASSIGN_OR_RETURN(absl::string_view algo, ReadBytes(bytes, at, size));
    out.artifact.gemm_algos[static_cast<int>(step)] = std::string(algo);
  }
  const absl::string_view algos_bytes = bytes.substr(algos_begin, at - algos_begin);
  ASSIGN_OR_RETURN(absl::string_view algos_hash, ReadLine(bytes, at));
  if (algos_hash != HashOf(algos_bytes)) {
    return Damaged(" (its GEMM algorithms do not match their hash)");
  }
  ASSIGN_OR_RETURN(size_t cubins, ReadNumber(bytes, at));
  for (size_t i = 0; i < cubins; ++i) {
    ASSIGN_OR_RETURN(absl::string_view hash, ReadLine(bytes, at));
    ASSIGN_OR_RETURN(size_t size, ReadNumber(bytes, at));
    ASSIGN_OR_RETURN(absl::string_view cubin, ReadBytes(bytes, at, size));
    if (HashOf(cubin) != hash) {
      return Damaged(absl::StrCat(" (CUBIN ", i + 1, " of ", cubins, " does not match its hash)"));
    }
    out.artifact.cubins.emplace_back(cubin);
  }
  if (at != bytes.size()) return Damaged(" (trailing bytes)");
  return out;
}

}  // namespace graft::cuda
