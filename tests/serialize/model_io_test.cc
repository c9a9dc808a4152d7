#include "serialize/model_io.h"

#include <dirent.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "graph/random_tensor.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tests/serialize/gpb_test_util.h"

namespace graft {
namespace {

using ::graft::testing_util::Hidden;
using ::graft::testing_util::MakeTempDir;
using ::graft::testing_util::ParseOrDie;
using ::graft::testing_util::PrintAll;
using ::graft::testing_util::ReadBytes;
using ::graft::testing::StatusIs;
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

TEST(ModelIoTest, FormatByExtension) {
  const std::pair<absl::string_view, ModelFormat> formats[] = {
      {"a/b.graft", ModelFormat::kText},
      {"b.gpb", ModelFormat::kGpb},
      {"x.y/b.json", ModelFormat::kJson}};
  for (const auto& [path, format] : formats) {
    absl::StatusOr<ModelFormat> f = ModelFormatForPath(path);
    ASSERT_TRUE(f.ok()) << path << ": " << f.status();
    EXPECT_EQ(*f, format) << path;
  }
  // Other formats (ONNX import) may follow these three.
  const std::string known = KnownModelExtensions();
  EXPECT_THAT(known, ::testing::StartsWith(".graft, .gpb, .json"));
  absl::StatusOr<ModelFormat> f = ModelFormatForPath("dir/model.xyz");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(
      f.status().message(),
      "cannot read 'dir/model.xyz': unknown model format '.xyz' (known: " +
          known + ")");
  f = ModelFormatForPath("dir.d/model");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(),
            "cannot tell the format of 'dir.d/model': it has no extension "
            "(known: " +
                known + ")");
  // The side file is not a model.
  EXPECT_FALSE(ModelFormatForPath("m.gpb.data").ok());
  f = OutputModelFormatForPath("out.xyz");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(),
            "cannot write 'out.xyz': unknown model format '.xyz' (known: " +
                known + ")");
  absl::Status s = SaveModel(Module(), "out.graft2");
  EXPECT_EQ(
      s.message(),
      "cannot write 'out.graft2': unknown model format '.graft2' (known: " +
          known + ")");
}

TEST(ModelIoTest, EveryFormatRoundTrips) {
  Module module = ParseOrDie(
      "tensor w : f32[100] = zeros\n"
      "graph():\n  %x : f32[batch,3] = placeholder[target=x]\n"
      "  %w : f32[100] = get_attr[target=w]\n"
      "  %r : f32[batch,3] = call_function[target=relu](args = (%x,), kwargs = "
      "{})\n"
      "  return (r, w)\n");
  // Data without an init and too long for `graft print`'s default view.
  module.SetTensor("w", RandomTensor(DType::kF32, {100}, 5));
  const std::string dir = MakeTempDir("model_io");
  for (const char* name : {"/m.graft", "/m.gpb", "/m.json"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(SaveModel(module, dir + name).ok());
    absl::StatusOr<Module> loaded = LoadModel(dir + name);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(PrintAll(*loaded), PrintAll(module));
    EXPECT_TRUE(loaded->FindTensor("w")->BitwiseEqual(*module.FindTensor("w")));
  }
  // The text file holds every element, so it reads back (not `elided`).
  EXPECT_THAT(ReadBytes(dir + "/m.graft"), ::testing::Not(HasSubstr("elided")));
}

TEST(ModelIoTest, BinaryFormatsVerifyTextDoesNot) {
  const std::string text =
      "graph():\n  %x = placeholder[target=x]\n"
      "  %y = call_function[target=plugin::op](args = (%x,), kwargs = {})\n"
      "  return y\n";
  const std::string dir = MakeTempDir("model_io_verify");
  WriteBytes(dir + "/m.graft", text);
  absl::StatusOr<Module> module = LoadModel(dir + "/m.graft");
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(SaveModel(*module, dir + "/m.gpb").ok());
  absl::StatusOr<Module> gpb = LoadModel(dir + "/m.gpb");
  ASSERT_FALSE(gpb.ok());
  EXPECT_EQ(gpb.status().message(),
            dir + "/m.gpb: verify: %y calls unknown op 'plugin::op'");
  ModelLoadOptions options;
  options.binary.verify = false;
  EXPECT_TRUE(LoadModel(dir + "/m.gpb", options).ok());
}

TEST(ModelIoTest, FailedSaveLeavesTheOldFilesAndNoTemporaries) {
  const std::string dir = MakeTempDir("model_io_fail");
  Module good;
  good.SetTensor("w", RandomTensor(DType::kF32, {1000}, 1));
  good.graph().Output(ArgumentList{});
  ASSERT_TRUE(SaveModel(good, dir + "/m.gpb").ok());
  const std::string gpb = ReadBytes(dir + "/m.gpb");
  const std::string side = ReadBytes(dir + "/m.gpb.data");
  // A module the format cannot hold: a tensor without data.
  Module bad;
  bad.SetTensor("big", RandomTensor(DType::kF32, {1000}, 2));
  bad.SetTensor("hollow", Tensor());
  bad.graph().Output(ArgumentList{});
  for (const char* name : {"/m.gpb", "/m.json"}) {
    absl::Status s = SaveModel(bad, dir + name);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), absl::StrCat("cannot write ", dir, name,
                                        ": tensor 'hollow': it has no data"));
  }
  EXPECT_EQ(ReadBytes(dir + "/m.gpb"), gpb);
  EXPECT_EQ(ReadBytes(dir + "/m.gpb.data"), side);
  EXPECT_THAT(List(dir), ElementsAre("m.gpb", "m.gpb.data"));
  // A directory that does not exist.
  absl::Status s = SaveModel(good, dir + "/no/m.gpb");
  ASSERT_FALSE(s.ok());
  // Named as the user named it, not by its temporary name.
  EXPECT_THAT(s.message(), HasSubstr("cannot write " + dir + "/no/m.gpb.data:"));
  EXPECT_THAT(s.message(), HasSubstr("No such file or directory"));
}

// Formats of other libraries come in through RegisterModelReader; this
// program links none of them. The registry keeps its readers for the life
// of the process, so what they count lives as long.
int test_model_reads = 0;

TEST(ModelIoTest, RegisteredReader) {
  // Once per process, also under --gtest_repeat.
  static const absl::Status registered = RegisterModelReader(
      {.extension = ".testmodel",
       .format_name = "Test",
       .read = [](const std::string& path,
                  const InputShapeHints&) -> absl::StatusOr<Module> {
         ++test_model_reads;
         if (absl::EndsWith(path, "bad.testmodel")) {
           return absl::InvalidArgumentError(path + ": bad test model");
         }
         return ParseOrDie(
             "graph():\n  %x : f32[2] = placeholder[target=x]\n  return x\n");
       }});
  ASSERT_OK(registered);
  const int before = test_model_reads;
  EXPECT_THAT(KnownModelExtensions(), HasSubstr(", .testmodel"));
  absl::StatusOr<ModelFormat> f = ModelFormatForPath("dir/m.testmodel");
  ASSERT_OK(f.status());
  EXPECT_EQ(*f, ModelFormat::kRegistered);

  ASSERT_OK_AND_ASSIGN(Module m, LoadModel("dir/m.testmodel"));
  EXPECT_EQ(m.graph().num_nodes(), 2u);
  ASSERT_OK_AND_ASSIGN(LoadedModel loaded, LoadModelWithInfo("m.testmodel"));
  EXPECT_EQ(loaded.module.graph().num_nodes(), 2u);
  EXPECT_EQ(test_model_reads - before, 2);
  EXPECT_THAT(LoadModel("dir/bad.testmodel"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "dir/bad.testmodel: bad test model"));

  // Read only.
  EXPECT_THAT(OutputModelFormatForPath("out.testmodel"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot write 'out.testmodel': graft imports Test but "
                       "does not export it; write .graft, .gpb or .json"));
  EXPECT_FALSE(SaveModel(m, "out.testmodel").ok());

  // One reader per extension, graft's own formats are taken, and an
  // extension is a dot and a name.
  auto read = [](const std::string&, const InputShapeHints&) -> absl::StatusOr<Module> {
    return Module();
  };
  EXPECT_THAT(RegisterModelReader({".testmodel", "Again", read}),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(RegisterModelReader({".gpb", "Mine", read}),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(RegisterModelReader({"testmodel2", "Test", read}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(RegisterModelReader({".testmodel3", "Test", nullptr}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(test_model_reads - before, 3);
}

// graft_onnx reads .onnx (tests/onnx); a program without it says so.
TEST(ModelIoTest, OnnxNeedsTheOnnxLibrary) {
  EXPECT_THAT(
      LoadModel("dir/m.onnx"),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               "cannot read 'dir/m.onnx': .onnx files are read by graft_onnx "
               "(CMake target graft::onnx), which this program does not link"));
  EXPECT_THAT(KnownModelExtensions(), ::testing::Not(HasSubstr(".onnx")));
}

TEST(ModelIoTest, LoadErrorsNameTheFile) {
  const std::string dir = MakeTempDir("model_io_errors");
  WriteBytes(dir + "/junk.gpb", "\xff\xff\xff\xff");
  absl::StatusOr<Module> m = LoadModel(dir + "/junk.gpb");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr(dir + "/junk.gpb: not a valid graft model"));
  WriteBytes(dir + "/junk.json", "{ not json");
  m = LoadModel(dir + "/junk.json");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr(dir + "/junk.json: not a valid graft JSON model"));
  m = LoadModel(dir + "/none.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "cannot open " + dir + "/none.json: No such file or directory");
}

}  // namespace
}  // namespace graft
