// The CUDA backend's disk cache entry (cuda_artifact_format.h): read back
// as written, and every damage refused with DataLoss before a CUBIN or a
// cuBLASLt algorithm (used unchecked) reaches the driver. No GPU needed.

#include "backends/cuda/cuda_artifact_format.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace graft::cuda {
namespace {

CudaArtifact Sample() {
  CudaArtifact a;
  // Binary bytes, newlines and zeros among them, as real ones have.
  a.gemm_algos[3] = std::string("\x01\n\x00\xff" "algo", 8);
  a.gemm_algos[17] = std::string(64, '\n');
  a.cubins = {std::string("\x7f" "ELF\n\x00 one", 10), std::string(300, '\x00'), "three\n"};
  return a;
}

TEST(CudaArtifactFormat, ReadsBackWhatItWrote) {
  const CudaArtifact a = Sample();
  const std::string bytes = WriteCudaArtifact("0123abcd", a);
  absl::StatusOr<ReadArtifact> read = ReadCudaArtifact(bytes);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->program_hash, "0123abcd");
  EXPECT_EQ(read->artifact.gemm_algos, a.gemm_algos);
  EXPECT_EQ(read->artifact.cubins, a.cubins);
  // Empty parts too.
  read = ReadCudaArtifact(WriteCudaArtifact("h", CudaArtifact{}));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->artifact.cubins.empty());
}

TEST(CudaArtifactFormat, EveryTruncationIsRefused) {
  const std::string bytes = WriteCudaArtifact("0123abcd", Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    absl::StatusOr<ReadArtifact> read = ReadCudaArtifact(bytes.substr(0, n));
    ASSERT_FALSE(read.ok()) << "the first " << n << " bytes were read as an entry";
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << read.status();
  }
  EXPECT_EQ(ReadCudaArtifact(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
}

// A changed byte anywhere is refused, but in the program's hash: that entry
// reads, and the backend refuses it for naming another program.
TEST(CudaArtifactFormat, EveryChangedByteIsRefused) {
  const std::string bytes = WriteCudaArtifact("0123abcd", Sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x04);
    absl::StatusOr<ReadArtifact> read = ReadCudaArtifact(damaged);
    if (read.ok()) {
      EXPECT_NE(read->program_hash, "0123abcd") << "byte " << i << " changed unnoticed";
    } else {
      EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << read.status();
    }
  }
}

}  // namespace
}  // namespace graft::cuda
