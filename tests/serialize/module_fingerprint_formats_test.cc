// The same model read from .graft, .gpb and .json has one fingerprint, so
// compiled code cached for one is found for the others. (The same for
// models read from .onnx: tests/onnx/onnx_model_io_test.cc.)

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>
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

// Points the cache directory (and so the memo) at a fresh folder for one
// test, so that the developer's own cache is left alone.
class ScopedCacheDir {
 public:
  ScopedCacheDir() : dir_(testing_util::MakeTempDir("cache")) {
    const char* before = std::getenv("GRAFT_CACHE_DIR");
    if (before != nullptr) before_ = before;
    setenv("GRAFT_CACHE_DIR", dir_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (before_.has_value()) {
      setenv("GRAFT_CACHE_DIR", before_->c_str(), 1);
    } else {
      unsetenv("GRAFT_CACHE_DIR");
    }
  }

 private:
  std::string dir_;
  std::optional<std::string> before_;
};

// The memo records only files whose change time is two seconds old.
void WaitUntilSettled() { std::this_thread::sleep_for(std::chrono::milliseconds(2100)); }

// The first fingerprint of a loaded .gpb hashes its weights and leaves the
// hash in the memo; the next load of the same file takes it from there.
TEST(ModuleFingerprintFormats, TheMemoRemembersTheWeightsOfAnUnchangedFile) {
  ScopedCacheDir cache;
  const Module original = testing_util::ParseOrDie(kLargeWeightModel);
  const std::string path = SaveInFreshDir(original);
  const std::string side = SideFilePath(path);
  const uint64_t offset = kSideFileHeaderSize, length = 512 * 512 * 4;
  const FileHashMemo memo = FileHashMemo::Default();
  const Fingerprint want = ModuleFingerprint(original);
  {
    // Just written: not recorded yet (it could still be changing).
    ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(path));
    EXPECT_EQ(ModuleFingerprint(loaded), want);
    const void* data = loaded.tensors().at("w").value.raw_data();
    EXPECT_FALSE(memo.Find(IdentityOf(side), offset, length, data).has_value());
  }
  WaitUntilSettled();
  ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(path));
  EXPECT_EQ(ModuleFingerprint(loaded), want);
  const void* data = loaded.tensors().at("w").value.raw_data();
  std::optional<Fingerprint> remembered = memo.Find(IdentityOf(side), offset, length, data);
  ASSERT_TRUE(remembered.has_value()) << "memo at " << memo.dir();
  EXPECT_EQ(*remembered, original.tensors().at("w").value.storage()->ContentFingerprint());
  ASSERT_OK_AND_ASSIGN(Module again, LoadModel(path));
  EXPECT_EQ(ModuleFingerprint(again), want);
  // Bytes a process wrote into its own copy before hashing are not
  // recorded for the file.
  std::filesystem::remove_all(memo.dir());
  ASSERT_OK_AND_ASSIGN(Module written, LoadModel(path));
  written.tensors().at("w").value.data<float>()[0] += 1.0f;
  EXPECT_NE(ModuleFingerprint(written), want);
  EXPECT_FALSE(memo.Find(IdentityOf(side), offset, length,
                         written.tensors().at("w").value.raw_data())
                   .has_value());
}

// Bytes changed behind the file's back are seen, even with its
// modification time set back: the change time moved.
TEST(ModuleFingerprintFormats, ASideFileChangedAfterItWasHashedIsHashedAgain) {
  ScopedCacheDir cache;
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
// region and identity, with the sampled pages unchanged; a damaged record
// is not trusted.
TEST(FileHashMemo, FindsOnlyWhatWasRecordedForTheSameFileAndBytes) {
  const std::string dir = testing_util::MakeTempDir("memo");
  const std::string file = dir + "/data";
  const uint64_t mib = FileHashMemo::kMinRegionBytes;
  std::string bytes(3 * mib, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31 + 7);
  std::ofstream(file, std::ios::binary) << bytes;
  const FileHashMemo memo(dir + "/hashes");
  const Fingerprint hash{0x1234, 0x5678};
  memo.Record(file, IdentityOf(file), 64, mib, hash, bytes.data() + 64);
  EXPECT_FALSE(memo.Find(IdentityOf(file), 64, mib, bytes.data() + 64).has_value())
      << "a file changed less than two seconds ago is not recorded";
  WaitUntilSettled();
  const FileIdentity id = IdentityOf(file);
  memo.Record(file, id, 64, mib, hash, bytes.data() + 64);
  ASSERT_TRUE(memo.Find(id, 64, mib, bytes.data() + 64).has_value());
  EXPECT_EQ(*memo.Find(id, 64, mib, bytes.data() + 64), hash);
  EXPECT_FALSE(memo.Find(id, 128, mib, bytes.data() + 128).has_value());
  FileIdentity touched = id;
  touched.ctime_ns += 1;
  EXPECT_FALSE(memo.Find(touched, 64, mib, bytes.data() + 64).has_value());
  // The same times but other bytes in a sampled page (a write through a
  // shared mapping moves no time): not found.
  std::string other = bytes;
  other[64] ^= 1;
  EXPECT_FALSE(memo.Find(id, 64, mib, other.data() + 64).has_value());
  // Memory that differs from the file is not recorded for it.
  std::string written = bytes;
  written[1024] ^= 1;
  memo.Record(file, id, 1024, mib, hash, written.data() + 1024);
  EXPECT_FALSE(memo.Find(id, 1024, mib, bytes.data() + 1024).has_value());
  // Small regions are not remembered: hashing them is cheap.
  memo.Record(file, id, 64, 1000, hash, bytes.data() + 64);
  EXPECT_FALSE(memo.Find(id, 64, 1000, bytes.data() + 64).has_value());
  // A damaged record is ignored.
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/hashes")) {
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(60);
    f.put('\x7f');
  }
  EXPECT_FALSE(memo.Find(id, 64, mib, bytes.data() + 64).has_value());
}

}  // namespace
}  // namespace graft
