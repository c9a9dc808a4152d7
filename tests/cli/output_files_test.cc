#include "cli/output_files.h"

#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serialize/npy.h"

namespace graft::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OutputFileNamesTest, OneOutputIsOutputNpy) {
  EXPECT_THAT(OutputFileNames({"relu"}), ElementsAre("output.npy"));
}

TEST(OutputFileNamesTest, SeveralOutputsAreNamedAfterTheirNodes) {
  EXPECT_THAT(OutputFileNames({"linear", "split.0", "getitem"}),
              ElementsAre("linear.npy", "split.0.npy", "getitem.npy"));
}

TEST(OutputFileNamesTest, RepeatsAndOddNamesGetTheirOwnFile) {
  EXPECT_THAT(OutputFileNames({"a", "a", "../x", "a_1"}),
              ElementsAre("a.npy", "a_1.npy", "output.npy", "a_1_3.npy"));
}

std::string TempDir() {
  std::string templ = ::testing::TempDir() + "output_files_test_XXXXXX";
  char* dir = ::mkdtemp(templ.data());
  return dir == nullptr ? "" : dir;
}

TEST(WriteOutputFilesTest, CreatesTheDirectoryAndWritesNpy) {
  const std::string dir = TempDir() + "/new/out";
  const Tensor a = Tensor::FromVector<float>(DType::kF32, {2}, {1.5f, -1});
  const Tensor b = Tensor::FromVector<int>(DType::kI64, {1}, {42});
  absl::StatusOr<std::vector<std::string>> written =
      WriteOutputFiles(dir, {"a.npy", "b.npy"}, {a, b});
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(*written, ElementsAre(dir + "/a.npy", dir + "/b.npy"));
  absl::StatusOr<Tensor> read_a = ReadNpy(dir + "/a.npy");
  absl::StatusOr<Tensor> read_b = ReadNpy(dir + "/b.npy");
  ASSERT_TRUE(read_a.ok() && read_b.ok());
  EXPECT_TRUE(read_a->BitwiseEqual(a));
  EXPECT_TRUE(read_b->BitwiseEqual(b));
}

TEST(WriteOutputFilesTest, AFileInTheWayIsAnError) {
  const std::string file = TempDir() + "/taken";
  std::ofstream(file) << "x";
  absl::StatusOr<std::vector<std::string>> written =
      WriteOutputFiles(file, {"output.npy"}, {Tensor(DType::kF32, {1})});
  ASSERT_FALSE(written.ok());
  EXPECT_THAT(written.status().message(),
              HasSubstr("cannot create the output directory"));
}

}  // namespace
}  // namespace graft::cli
