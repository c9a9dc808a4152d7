// The same model read from .graft, .gpb and .json has one fingerprint, so
// compiled code cached for one is found for the others. (The same for
// models read from .onnx: tests/onnx/onnx_model_io_test.cc.)

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "graph/module_fingerprint.h"
#include "gtest/gtest.h"
#include "serialize/model_io.h"
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

// One 256 KiB weight: large enough that the fingerprint hashes it on its
// own and the .gpb keeps it in the side file.
constexpr absl::string_view kLargeWeightModel = R"(
tensor w : f32[256,256] = random(seed=7)

graph():
    %x : f32[4,256] = placeholder[target=x]
    %w : f32[256,256] = get_attr[target=w]
    %y : f32[4,256] = call_function[target=matmul](args = (%x, %w), kwargs = {})
    return y
)";

// Rewrites a few bytes of the side file's first tensor in place; with
// `keep_mtime`, sets its modification time back to what it was.
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

// Saves `module` as model.gpb in a fresh directory; returns its path.
std::string SaveInFreshDir(const Module& module) {
  const std::string path =
      testing_util::MakeTempDir("fingerprint") + "/model.gpb";
  EXPECT_OK(SaveModel(module, path));
  return path;
}

TEST(ModuleFingerprintFormats, GpbRecordsLargeTensorHashes) {
  const Module original = testing_util::ParseOrDie(kLargeWeightModel);
  const std::string path = SaveInFreshDir(original);
  // The recorded hash is the storage's own: a module loaded from the file
  // has the fingerprint of the module that was saved.
  ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(path));
  EXPECT_EQ(ModuleFingerprint(loaded), ModuleFingerprint(original));
}

TEST(ModuleFingerprintFormats, GpbUsesRecordedHashesWithoutReadingWeights) {
  const Module original = testing_util::ParseOrDie(kLargeWeightModel);
  const std::string path = SaveInFreshDir(original);
  // Bytes changed behind the file's back, its time restored: the recorded
  // hash still stands, which shows the weights were not hashed again.
  ChangeSideFileInPlace(SideFilePath(path), /*keep_mtime=*/true);
  ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(path));
  EXPECT_EQ(ModuleFingerprint(loaded), ModuleFingerprint(original));
}

TEST(ModuleFingerprintFormats, GpbHashesAgainASideFileChangedAfterTheSave) {
  const Module original = testing_util::ParseOrDie(kLargeWeightModel);
  const std::string path = SaveInFreshDir(original);
  ChangeSideFileInPlace(SideFilePath(path), /*keep_mtime=*/false);
  ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(path));
  const Fingerprint got = ModuleFingerprint(loaded);
  EXPECT_NE(got, ModuleFingerprint(original));
  // ... and the fingerprint is that of the changed bytes.
  Module copy = testing_util::ParseOrDie(kLargeWeightModel);
  copy.SetTensor("w", loaded.tensors().at("w").value.Clone());
  EXPECT_EQ(got, ModuleFingerprint(copy));
}

}  // namespace
}  // namespace graft
