#include "support/atomic_file.h"

#include <dirent.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/serialize/gpb_test_util.h"

namespace graft {
namespace {

using ::graft::testing_util::Exists;
using ::graft::testing_util::MakeTempDir;
using ::graft::testing_util::ReadBytes;
using ::graft::testing_util::WriteBytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFileTest, WritesPadsPatchesAndPublishes) {
  const std::string dir = MakeTempDir("atomic");
  const std::string path = dir + "/out.bin";
  WriteBytes(path, "old");
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->Write("abc").ok());
  ASSERT_TRUE(file->PadTo(6).ok());
  ASSERT_TRUE(file->Write("xyz").ok());
  ASSERT_TRUE(file->WriteAt(1, "B").ok());
  EXPECT_EQ(file->size(), 9u);
  EXPECT_FALSE(file->WriteAt(8, "too long").ok());
  ASSERT_TRUE(file->Finish().ok());
  // Until published, the destination is the old file.
  EXPECT_EQ(ReadBytes(path), "old");
  ASSERT_TRUE(file->Publish().ok());
  EXPECT_EQ(ReadBytes(path), std::string("aBc\0\0\0xyz", 9));
  EXPECT_THAT(List(dir), ElementsAre("out.bin"));
}

TEST(AtomicFileTest, AbandonedFileLeavesNothing) {
  const std::string dir = MakeTempDir("atomic_abandon");
  const std::string path = dir + "/out.bin";
  WriteBytes(path, "old");
  {
    absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(file->Write("new").ok());
    EXPECT_FALSE(file->Publish().ok());  // Not finished.
  }
  {
    absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(file->Finish().ok());  // Finished but never published.
  }
  EXPECT_EQ(ReadBytes(path), "old");
  EXPECT_THAT(List(dir), ElementsAre("out.bin"));
}

TEST(AtomicFileTest, MissingDirectoryIsAnError) {
  absl::StatusOr<AtomicFile> file =
      AtomicFile::Create(MakeTempDir("atomic_missing") + "/no/such/out.bin");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr("cannot write"));
  EXPECT_THAT(file.status().message(), HasSubstr("No such file or directory"));
}

}  // namespace
}  // namespace graft
