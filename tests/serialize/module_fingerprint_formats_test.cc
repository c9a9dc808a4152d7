// The same model read from .graft, .gpb and .json has one fingerprint, so
// compiled code cached for one is found for the others. (The same for
// models read from .onnx: tests/onnx/onnx_model_io_test.cc.)

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "graph/module_fingerprint.h"
#include "gtest/gtest.h"
#include "serialize/model_io.h"
#include "support/file_hash_memo.h"
#include "serialize/gpb_format.h"
#include "support/status_matchers.h"
#include "tests/serialize/gpb_test_util.h"

namespace graft {
namespace {

void ExpectSameInEveryFormat(const std::string& path) {
  SCOPED_TRACE(path);
  ASSERT_OK_AND_ASSIGN(Module original, LoadModel(path));
  const Fingerprint want = ModuleFingerprint(original);
  const std::string dir = testing_util::MakeTempDir("fingerprint");
  for (const char* ext : {".graft", ".gpb", ".json"}) {
    const std::string copy = dir + "/model" + ext;
    ASSERT_OK(SaveModel(original, copy));
    ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(copy));
    EXPECT_EQ(ModuleFingerprint(loaded).ToHex(), want.ToHex()) << ext;
  }
}

TEST(ModuleFingerprintFormats, SameModelSameFingerprint) {
  const char* root = std::getenv("GRAFT_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  const std::string src = root;
  ExpectSameInEveryFormat(src + "/examples/models/mlp.graft");
  ExpectSameInEveryFormat(src + "/examples/models/quantized_linear.graft");
}

// One 1 MiB weight: large enough that the fingerprint hashes it on its own,
// the .gpb keeps it in the side file, and the file-hash memo remembers it.
constexpr absl::string_view kLargeWeightModel = R"(
tensor w : f32[512,512] = random(seed=7)

graph():
    %x : f32[4,512] = placeholder[target=x]
    %w : f32[512,512] = get_attr[target=w]
    %y : f32[4,512] = call_function[target=matmul](args = (%x, %w), kwargs = {})
    return y
)";

// Saves `module` as model.gpb in a fresh directory; returns its path.
std::string SaveInFreshDir(const Module& module) {
  const std::string path =
      testing_util::MakeTempDir("fingerprint") + "/model.gpb";
  EXPECT_OK(SaveModel(module, path));
  return path;
}

FileIdentity IdentityOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return FileIdentity::Of(st);
}

// Rewrites a few bytes of the side file's first tensor in place; with
// `keep_mtime`, sets its modification time back to what it was (which
// moves its change time all the same).
void ChangeSideFileInPlace(const std::string& side, bool keep_mtime) {
  struct stat before;
  ASSERT_EQ(::stat(side.c_str(), &before), 0);
  const int fd = ::open(side.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const char bytes[4] = {0x12, 0x34, 0x56, 0x78};
  ASSERT_EQ(::pwrite(fd, bytes, sizeof(bytes), kSideFileHeaderSize), 4);
  if (keep_mtime) {
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::futimens(fd, times), 0);
  }
  ASSERT_EQ(::close(fd), 0);
}

// The first fingerprint of a loaded .gpb hashes its weights and leaves the
// hash in the memo; the next load of the same file takes it from there.
TEST(ModuleFingerprintFormats, TheMemoRemembersTheWeightsOfAnUnchangedFile) {
  const Module original = testing_util::ParseOrDie(kLargeWeightModel);
  const std::string path = SaveInFreshDir(original);
  const std::string side = SideFilePath(path);
  const uint64_t offset = kSideFileHeaderSize, length = 512 * 512 * 4;
  const FileHashMemo& memo = FileHashMemo::Default();
  EXPECT_FALSE(memo.Find(IdentityOf(side), offset, length).has_value());
  ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(path));
  const Fingerprint want = ModuleFingerprint(original);
  EXPECT_EQ(ModuleFingerprint(loaded), want);
  std::optional<Fingerprint> remembered = memo.Find(IdentityOf(side), offset, length);
  ASSERT_TRUE(remembered.has_value()) << "memo at " << memo.dir();
  EXPECT_EQ(*remembered, original.tensors().at("w").value.storage()->ContentFingerprint());
  ASSERT_OK_AND_ASSIGN(Module again, LoadModel(path));
  EXPECT_EQ(ModuleFingerprint(again), want);
}

// Bytes changed behind the file's back are seen, even with its
// modification time set back: the change time moved.
TEST(ModuleFingerprintFormats, ASideFileChangedAfterItWasHashedIsHashedAgain) {
  for (bool keep_mtime : {false, true}) {
    SCOPED_TRACE(keep_mtime ? "modification time set back" : "plain rewrite");
    const Module original = testing_util::ParseOrDie(kLargeWeightModel);
    const std::string path = SaveInFreshDir(original);
    ASSERT_OK_AND_ASSIGN(Module first, LoadModel(path));
    const Fingerprint before = ModuleFingerprint(first);
    ChangeSideFileInPlace(SideFilePath(path), keep_mtime);
    ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(path));
    const Fingerprint got = ModuleFingerprint(loaded);
    EXPECT_NE(got, before);
    // ... and the fingerprint is that of the changed bytes.
    Module copy = testing_util::ParseOrDie(kLargeWeightModel);
    copy.SetTensor("w", loaded.tensors().at("w").value.Clone());
    EXPECT_EQ(got, ModuleFingerprint(copy));
  }
}

// The memo itself: what it finds is what was recorded for that very file,
// region and identity; a damaged record is not trusted.
TEST(FileHashMemo, FindsOnlyWhatWasRecordedForTheSameIdentity) {
  const std::string dir = testing_util::MakeTempDir("memo");
  const FileHashMemo memo(dir + "/hashes");
  FileIdentity file{1, 2, 3 << 20, 100, 200};
  const uint64_t mib = FileHashMemo::kMinRegionBytes;
  const Fingerprint hash{0x1234, 0x5678};
  memo.Record(file, 64, mib, hash);
  ASSERT_TRUE(memo.Find(file, 64, mib).has_value());
  EXPECT_EQ(*memo.Find(file, 64, mib), hash);
  EXPECT_FALSE(memo.Find(file, 128, mib).has_value());
  FileIdentity touched = file;
  touched.ctime_ns += 1;
  EXPECT_FALSE(memo.Find(touched, 64, mib).has_value());
  // Small regions are not remembered: hashing them is cheap.
  memo.Record(file, 64, 1000, hash);
  EXPECT_FALSE(memo.Find(file, 64, 1000).has_value());
  // A damaged record is ignored.
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/hashes")) {
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(60);
    f.put('\x7f');
  }
  EXPECT_FALSE(memo.Find(file, 64, mib).has_value());
}

}  // namespace
}  // namespace graft
