// LoadModel (serialize/model_io.h) reads .onnx files through the reader
// that graft_onnx registers, like graft's own formats. Without ONNX import,
// it says what to install.

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "graph/module_fingerprint.h"
#include "graph/printer.h"
#include "gtest/gtest.h"
#include "onnx/onnx_import.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/serialize/gpb_test_util.h"

namespace graft {
namespace {

using ::graft::testing::StatusIs;
using ::testing::HasSubstr;

TEST(OnnxModelIoTest, OnnxIsAKnownReadOnlyFormat) {
  EXPECT_EQ(KnownModelExtensions(), ".graft, .gpb, .json, .onnx");
  absl::StatusOr<ModelFormat> format = ModelFormatForPath("dir/model.onnx");
  ASSERT_OK(format.status());
  EXPECT_EQ(*format, ModelFormat::kRegistered);
  EXPECT_THAT(OutputModelFormatForPath("dir/out.onnx"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot write 'dir/out.onnx': graft imports ONNX but "
                       "does not export it; write .graft, .gpb or .json"));
  EXPECT_FALSE(SaveModel(Module(), "out.onnx").ok());
}

#ifdef GRAFT_HAVE_ONNX

// The test models of tests/onnx_models, or "" without GRAFT_SOURCE_DIR.
std::string OnnxModelsDir() {
  const char* root = std::getenv("GRAFT_SOURCE_DIR");
  return root == nullptr ? "" : std::string(root) + "/tests/onnx_models";
}

TEST(OnnxModelIoTest, LoadModelImports) {
  if (OnnxModelsDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  const std::string path = OnnxModelsDir() + "/mlp/model.onnx";
  ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(path));
  ASSERT_OK_AND_ASSIGN(Module imported, ImportOnnxFile(path));
  EXPECT_EQ(PrintModule(loaded), PrintModule(imported));
  EXPECT_EQ(ModuleFingerprint(loaded).ToHex(),
            ModuleFingerprint(imported).ToHex());
}

// The same model read from .onnx and from graft's formats has one
// fingerprint, so compiled code cached for one is found for the others.
TEST(OnnxModelIoTest, SameFingerprintInEveryFormat) {
  if (OnnxModelsDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  const std::string dir = testing_util::MakeTempDir("onnx_fingerprint");
  for (const char* model : {"mlp", "cnn", "gpt2_block_opset17"}) {
    SCOPED_TRACE(model);
    ASSERT_OK_AND_ASSIGN(
        Module original,
        LoadModel(OnnxModelsDir() + "/" + model + "/model.onnx"));
    const Fingerprint want = ModuleFingerprint(original);
    for (const char* ext : {".graft", ".gpb", ".json"}) {
      const std::string copy = dir + "/" + model + ext;
      ASSERT_OK(SaveModel(original, copy));
      ASSERT_OK_AND_ASSIGN(Module loaded, LoadModel(copy));
      EXPECT_EQ(ModuleFingerprint(loaded).ToHex(), want.ToHex()) << ext;
    }
  }
}

#else  // !GRAFT_HAVE_ONNX

TEST(OnnxModelIoTest, WithoutOnnxSaysHowToGetIt) {
  EXPECT_FALSE(HaveOnnx());
  absl::StatusOr<Module> m = LoadModel("dir/model.onnx");
  EXPECT_THAT(m, StatusIs(absl::StatusCode::kFailedPrecondition,
                          HasSubstr("apt-get install libonnx-dev")));
  EXPECT_THAT(m.status().message(), HasSubstr("dir/model.onnx"));
}

#endif  // GRAFT_HAVE_ONNX

}  // namespace
}  // namespace graft
