// The same model read from .graft, .gpb and .json has one fingerprint, so
// compiled code cached for one is found for the others. (The same for
// models read from .onnx: tests/onnx/onnx_model_io_test.cc.)

#include <cstdlib>
#include <string>

#include "graph/module_fingerprint.h"
#include "gtest/gtest.h"
#include "serialize/model_io.h"
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

}  // namespace
}  // namespace graft
