// Round trips through the binary (.gpb) and JSON model formats: everything
// the text format shows, and what it does not (meta, tensor bytes), comes
// back unchanged.

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/random_tensor.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"
#include "serialize/gpb_format.h"
#include "serialize/gpb_reader.h"
#include "serialize/gpb_writer.h"
#include "serialize/json_format.h"
#include "serialize/model_io.h"
#include "tests/serialize/gpb_test_util.h"

namespace graft {
namespace {

using ::graft::testing_util::Exists;
using ::graft::testing_util::Hidden;
using ::graft::testing_util::MakeTempDir;
using ::graft::testing_util::ParseOrDie;
using ::graft::testing_util::PrintAll;
using ::graft::testing_util::ReadBytes;
using ::testing::HasSubstr;

// Every kind of argument, literal, type and tensor the text format has.
// Unregistered ops (f, ns::op): the module does not verify, so it is read
// back with verification off.
constexpr absl::string_view kKitchenSink = R"(
tensor w : f32[4,3] = random(seed=1)
tensor big : f32[300] = random(seed=2)
tensor t_f16 : f16[2] = [0.1, 65504.0]
tensor t_bf16 : bf16[2] = [0.1, -2.0]
tensor t_f64 : f64[3] = [inf, -inf, nan]
tensor t_i8 : i8[2] = [-128, 127]
tensor t_u8 : u8[2] = [0, 255]
tensor t_i32 : i32[2] = [-2147483648, 2147483647]
tensor t_i64 : i64[2] = [9223372036854775807, -9223372036854775808]
tensor t_bool : bool[3] = [True, False, True]
tensor scalar : f32[] = [2.5]
tensor empty : f32[0,4] = []
tensor "odd name/1" : u8[1] = [7]
tensor z : i64[3] = zeros
tensor h : f16[2] = full(0.5)

submodule fused_0 {
  tensor k : f32[] = [0.5]
  submodule inner {
    graph():
      %a = placeholder[target=a]
      return a
  }
  graph():
    %a : f32[batch,"seq len"] = placeholder[target=a]
    %relu : f32[batch,"seq len"] = call_function[target=relu](args = (%a,), kwargs = {})
    %i = call_module[target=inner](args = (%relu,), kwargs = {})
    return i
}

graph():
    %x : i64[n] = placeholder[target=x]
    %v : f32[4] = placeholder[target=v]
    %w : f32[4,3] = get_attr[target=w]
    %odd = get_attr[target="odd name/1"]
    %ints = call_function[target=f](args = (3, -7, -9223372036854775808, 0), kwargs = {})
    %floats = call_function[target=f](args = (2.5, 1.0, 1e+20, 0.1, -0.0, 5e-324, inf, -inf, nan), kwargs = {})
    %words = call_function[target=f](args = (True, False, None, f32, f16, bf16, f64, i8, u8, i32, i64, bool, f8e4m3), kwargs = {})
    %strings = call_function[target=f](args = ("plain", "q\"b\\s\n\t\x01", "", "\xff\xfe", "caf\xc3\xa9"), kwargs = {})
    %lists = call_function[target=f](args = ([1, 2], [], [[%x, 1], [2.0]], [[[[]]]], [%x, %x]), kwargs = {})
    %kw = call_function[target=ns::op](args = (%x,), kwargs = {dim: -1, "odd key": [f16], keepdim: True, none: None})
    %split : (f32[2], f32[2]) = call_function[target=split](args = (%v, 2), kwargs = {})
    %getitem : f32[2] = call_function[target=getitem](args = (%split, 0), kwargs = {})
    %g = call_module[target=fused_0](args = (%v,), kwargs = {})
    %None = call_function[target=g](args = (), kwargs = {})
    %scalar_t : f32[] = call_function[target=f](args = (), kwargs = {})
    return (ints, floats, %None, None, [words, strings], lists, kw, 7, getitem, g, w, odd, scalar_t)
)";

// Adds the meta the text format does not write: provenance, free-form
// entries, a node with both a type and tuple types, a hand-set location.
void AddHiddenMeta(Module& module) {
  Node* kw = module.graph().FindNode("kw");
  ASSERT_NE(kw, nullptr);
  kw->meta().provenance = Provenance{"fuse-elementwise", {"a", "b_1"}};
  kw->meta().entries["quant.scale"] = "0.5";
  kw->meta().entries["note"] = "caf\xc3\xa9 \"quoted\"";
  Node* split = module.graph().FindNode("split");
  ASSERT_NE(split, nullptr);
  split->meta().type = TensorType{DType::kF32, {Dim(4)}};
  Node* x = module.graph().FindNode("x");
  ASSERT_NE(x, nullptr);
  x->meta().location = SourceLocation{"model.py", 12, 7};
  x->meta().provenance = Provenance{"", {}};  // Present but empty.
}

GpbReadOptions NoVerify() {
  GpbReadOptions options;
  options.verify = false;
  return options;
}

TEST(GpbRoundTripTest, TextToGpbToJsonToTextKeepsEverything) {
  Module original = ParseOrDie(kKitchenSink);
  AddHiddenMeta(original);
  const std::string text = PrintAll(original);
  const std::string hidden = Hidden(original);
  // The parse gave every node a location; those must survive too.
  ASSERT_THAT(hidden, HasSubstr("%ints target='f' loc=test.graft:"));
  ASSERT_THAT(hidden, HasSubstr("prov=fuse-elementwise<-a,b_1,"));

  const std::string dir = MakeTempDir("gpb_roundtrip");
  const std::string gpb = dir + "/model.gpb";
  ASSERT_TRUE(WriteGpbFile(original, gpb).ok());
  // big (1200 bytes) is over the default 1 KiB limit.
  EXPECT_TRUE(Exists(gpb + ".data"));
  absl::StatusOr<LoadedModel> from_gpb = ReadGpbFile(gpb, NoVerify());
  ASSERT_TRUE(from_gpb.ok()) << from_gpb.status();
  EXPECT_EQ(PrintAll(from_gpb->module), text);
  EXPECT_EQ(Hidden(from_gpb->module), hidden);

  const std::string json = dir + "/model.json";
  ASSERT_TRUE(WriteJsonFile(from_gpb->module, json).ok());
  absl::StatusOr<LoadedModel> from_json = ReadJsonFile(json, NoVerify());
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  EXPECT_EQ(PrintAll(from_json->module), text);
  EXPECT_EQ(Hidden(from_json->module), hidden);

  // And back to text: the same text, parsed again.
  const std::string graft = dir + "/model.graft";
  ASSERT_TRUE(SaveModel(from_json->module, graft).ok());
  absl::StatusOr<Module> from_text = LoadModel(graft);
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  EXPECT_EQ(PrintAll(*from_text), text);
}

TEST(GpbRoundTripTest, ArgumentKindsAreKeptExactly) {
  Module original = ParseOrDie(kKitchenSink);
  const std::string dir = MakeTempDir("gpb_args");
  ASSERT_TRUE(WriteGpbFile(original, dir + "/m.gpb").ok());
  absl::StatusOr<LoadedModel> loaded = ReadGpbFile(dir + "/m.gpb", NoVerify());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Graph& g = loaded->module.graph();

  const Node* ints = g.FindNode("ints");
  ASSERT_NE(ints, nullptr);
  ASSERT_EQ(ints->num_args(), 4u);
  EXPECT_EQ(ints->arg(2).int_value(), INT64_MIN);

  const Node* floats = g.FindNode("floats");
  ASSERT_NE(floats, nullptr);
  EXPECT_TRUE(floats->arg(1).is_double());  // 1.0 stays a float.
  EXPECT_TRUE(std::signbit(floats->arg(4).double_value()));  // -0.0
  EXPECT_EQ(floats->arg(5).double_value(), 5e-324);
  EXPECT_TRUE(std::isnan(floats->arg(8).double_value()));

  const Node* words = g.FindNode("words");
  ASSERT_NE(words, nullptr);
  EXPECT_TRUE(words->arg(2).is_none());
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ(words->arg(3 + i).dtype_value(), static_cast<DType>(i));
  }

  const Node* strings = g.FindNode("strings");
  ASSERT_NE(strings, nullptr);
  EXPECT_EQ(strings->arg(1).string_value(), "q\"b\\s\n\t\x01");
  EXPECT_EQ(strings->arg(2).string_value(), "");
  EXPECT_EQ(strings->arg(3).string_value(), "\xff\xfe");  // Not UTF-8.

  // Node references inside nested lists are real uses of %x.
  const Node* x = g.FindNode("x");
  const Node* lists = g.FindNode("lists");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(lists, nullptr);
  EXPECT_EQ(lists->arg(2).list()[0].list()[0].node(), x);
  EXPECT_EQ(lists->arg(4).list()[1].node(), x);
  // %x: once in lists[2], twice in lists[4], once in %kw.
  EXPECT_EQ(x->num_uses(), 4u);

  const Node* kw = g.FindNode("kw");
  ASSERT_NE(kw, nullptr);
  ASSERT_EQ(kw->kwargs().size(), 4u);
  EXPECT_EQ(kw->kwargs()[1].first, "odd key");  // Order is kept.
  EXPECT_TRUE(kw->kwarg("none")->is_none());

  const Node* split = g.FindNode("split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->meta().tuple_types.size(), 2u);

  const Module* fused = loaded->module.FindSubmodule("fused_0");
  ASSERT_NE(fused, nullptr);
  const Node* a = fused->graph().FindNode("a");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->type().has_value());
  EXPECT_TRUE(a->type()->shape[1].is_symbolic());
  EXPECT_EQ(a->type()->shape[1].symbol(), "seq len");
  EXPECT_NE(fused->FindSubmodule("inner"), nullptr);
}

TEST(GpbRoundTripTest, EveryDTypesBytesInlineAndInSideFile) {
  for (int64_t limit : {int64_t{-1}, int64_t{0}, kDefaultInlineLimit}) {
    Module module;
    for (int i = 0; i < kNumDTypes; ++i) {
      const DType dtype = static_cast<DType>(i);
      // 1000 elements: 1000..8000 bytes, and 3 elements: at most 24.
      module.SetTensor(absl::StrCat("big_", DTypeName(dtype)),
                       RandomTensor(dtype, {10, 100}, 100 + i));
      module.SetTensor(absl::StrCat("small_", DTypeName(dtype)),
                       RandomTensor(dtype, {3}, 200 + i));
    }
    module.graph().Output(ArgumentList{});
    const std::string dir = MakeTempDir("gpb_dtypes");
    GpbWriteOptions options;
    options.inline_limit = limit;
    ASSERT_TRUE(WriteGpbFile(module, dir + "/m.gpb", options).ok());
    EXPECT_EQ(Exists(dir + "/m.gpb.data"), limit >= 0) << limit;
    absl::StatusOr<LoadedModel> loaded = ReadGpbFile(dir + "/m.gpb");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(Hidden(loaded->module), Hidden(module)) << "limit " << limit;
    for (const auto& [name, t] : loaded->module.tensors()) {
      const Tensor* orig = module.FindTensor(name);
      ASSERT_NE(orig, nullptr);
      EXPECT_TRUE(t.value.BitwiseEqual(*orig)) << name;
      const bool mapped =
          limit >= 0 && t.value.NumBytes() > static_cast<uint64_t>(limit);
      EXPECT_EQ(t.value.storage()->owned(), !mapped) << name << " " << limit;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.value.raw_data()) % 64, 0u)
          << name;
    }
  }
}

// Reads the .gpb of `path` back as a proto, to look at its layout.
proto::Model ReadProto(const std::string& path) {
  proto::Model model;
  EXPECT_TRUE(model.ParseFromString(ReadBytes(path)));
  return model;
}

TEST(GpbRoundTripTest, InlineLimitDecidesWhereDataGoes) {
  Module module;
  module.SetTensor("at_limit", Tensor(DType::kF32, {256}));     // 1024 bytes
  module.SetTensor("over_limit", Tensor(DType::kU8, {1025}));   // 1025 bytes
  module.SetTensor("second_over", Tensor(DType::kF64, {200}));  // 1600 bytes
  module.SetTensor("tiny", Tensor(DType::kBool, {1}));
  module.graph().Output(ArgumentList{});
  const std::string dir = MakeTempDir("gpb_limit");
  const std::string path = dir + "/m.gpb";
  ASSERT_TRUE(WriteGpbFile(module, path).ok());
  proto::Model model = ReadProto(path);
  ASSERT_EQ(model.tensors_size(), 4);
  std::map<std::string, const proto::Tensor*> by_name;
  for (const proto::Tensor& t : model.tensors()) by_name[t.name()] = &t;
  EXPECT_TRUE(by_name["at_limit"]->has_inline_data());
  EXPECT_TRUE(by_name["tiny"]->has_inline_data());
  ASSERT_TRUE(by_name["over_limit"]->has_external());
  ASSERT_TRUE(by_name["second_over"]->has_external());
  // Sorted by name: over_limit first, right after the 64-byte header; then
  // second_over at the next multiple of 64 after 64 + 1025 = 1089.
  EXPECT_EQ(by_name["over_limit"]->external().offset(), 64u);
  EXPECT_EQ(by_name["over_limit"]->external().length(), 1025u);
  EXPECT_EQ(by_name["second_over"]->external().offset(), 1152u);
  EXPECT_EQ(by_name["second_over"]->external().length(), 1600u);
  ASSERT_TRUE(model.has_data_file());
  EXPECT_EQ(model.data_file().size(), 1152u + 1600u);
  const std::string side = ReadBytes(path + ".data");
  EXPECT_EQ(side.size(), 2752u);
  EXPECT_EQ(side.substr(0, 8), "GRAFTDAT");

  // All inline: no side file, and a stale one from the save above is gone.
  GpbWriteOptions inline_all;
  inline_all.inline_limit = -1;
  ASSERT_TRUE(WriteGpbFile(module, path, inline_all).ok());
  EXPECT_FALSE(ReadProto(path).has_data_file());
  EXPECT_FALSE(Exists(path + ".data"));
  EXPECT_TRUE(ReadGpbFile(path).ok());

  // A larger limit keeps over_limit inline too.
  GpbWriteOptions larger;
  larger.inline_limit = 1025;
  ASSERT_TRUE(WriteGpbFile(module, path, larger).ok());
  proto::Model model2 = ReadProto(path);
  for (const proto::Tensor& t : model2.tensors()) {
    EXPECT_EQ(t.has_external(), t.name() == "second_over") << t.name();
  }
}

TEST(GpbRoundTripTest, MappedTensorsOutliveTheLoaderAndTheFiles) {
  Tensor kept;
  const Tensor original = RandomTensor(DType::kF32, {64, 64}, 9);
  {
    Module module;
    module.SetTensor("w", original);
    module.graph().Output(ArgumentList{});
    const std::string dir = MakeTempDir("gpb_mmap");
    const std::string path = dir + "/m.gpb";
    ASSERT_TRUE(WriteGpbFile(module, path).ok());
    {
      absl::StatusOr<Module> loaded = LoadModel(path);
      ASSERT_TRUE(loaded.ok()) << loaded.status();
      kept = *loaded->FindTensor("w");
      EXPECT_FALSE(kept.storage()->owned());  // A view of the mapping.
    }  // The module is gone; the mapping must not be.
    // Even the files may go: the mapping holds the pages.
    ASSERT_EQ(::unlink((path + ".data").c_str()), 0);
    ASSERT_EQ(::unlink(path.c_str()), 0);
  }
  ASSERT_TRUE(kept.defined());
  EXPECT_TRUE(kept.BitwiseEqual(original));
  // Writing into a mapped tensor changes this copy only (copy-on-write).
  kept.data<float>()[0] = 42.0f;
  EXPECT_EQ(kept.data<float>()[0], 42.0f);
}

TEST(GpbRoundTripTest, SavingOverTheFilesAModuleIsMappedFromWorks) {
  Module module;
  module.SetTensor("w", RandomTensor(DType::kF32, {1000}, 1));
  module.graph().Output(ArgumentList{});
  const std::string dir = MakeTempDir("gpb_resave");
  const std::string path = dir + "/m.gpb";
  ASSERT_TRUE(WriteGpbFile(module, path).ok());
  absl::StatusOr<Module> loaded = LoadModel(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  // The loaded tensor views the old side file while the new one replaces it.
  loaded->SetTensor("v", RandomTensor(DType::kI32, {500}, 2));
  ASSERT_TRUE(SaveModel(*loaded, path).ok());
  absl::StatusOr<Module> again = LoadModel(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Hidden(*again), Hidden(*loaded));
  EXPECT_TRUE(again->FindTensor("w")->BitwiseEqual(*module.FindTensor("w")));
}

TEST(GpbRoundTripTest, ProducerAndMetadataAreRecorded) {
  Module module =
      ParseOrDie("graph():\n  %x = placeholder[target=x]\n  return x\n");
  GpbWriteOptions options;
  options.producer = "my exporter 2.1";
  options.metadata = {{"author", "me"}, {"license", "MIT"}};
  const std::string dir = MakeTempDir("gpb_meta");
  ModelSaveOptions save;
  save.binary = options;
  for (const char* name : {"/m.gpb", "/m.json"}) {
    ASSERT_TRUE(SaveModel(module, dir + name, save).ok());
    absl::StatusOr<LoadedModel> loaded = LoadModelWithInfo(dir + name);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->info.producer, "my exporter 2.1");
    EXPECT_EQ(loaded->info.format_major, 1u);
    EXPECT_EQ(loaded->info.format_minor, 0u);
    ASSERT_EQ(loaded->info.metadata.size(), 2u);
    EXPECT_EQ(loaded->info.metadata[1].first, "license");
    EXPECT_EQ(loaded->info.metadata[1].second, "MIT");
  }
  // The default producer names graft.
  ASSERT_TRUE(SaveModel(module, dir + "/d.gpb").ok());
  absl::StatusOr<LoadedModel> loaded = LoadModelWithInfo(dir + "/d.gpb");
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(absl::StartsWith(loaded->info.producer, "graft "))
      << loaded->info.producer;
}

TEST(GpbRoundTripTest, DeepNestingFitsTheBinaryFormat) {
  // 64 levels of lists and of submodules: the text format's limits.
  std::string list = "1";
  for (int i = 0; i < 64; ++i) list = absl::StrCat("[", list, "]");
  std::string text;
  for (int i = 0; i < 64; ++i) absl::StrAppend(&text, "submodule s", i, " {\n");
  // The innermost graph holds the deep list; each level closes with a graph.
  absl::StrAppend(&text, "graph():\n  %f = call_function[target=f](args = (",
                  list, ",), kwargs = {})\n  return f\n}\n");
  for (int i = 0; i < 63; ++i)
    absl::StrAppend(&text, "graph():\n  return None\n}\n");
  absl::StrAppend(&text, "graph():\n  return None\n");
  Module module = ParseOrDie(text);
  const std::string dir = MakeTempDir("gpb_deep");
  ASSERT_TRUE(WriteGpbFile(module, dir + "/m.gpb").ok());
  absl::StatusOr<LoadedModel> loaded = ReadGpbFile(dir + "/m.gpb", NoVerify());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(PrintAll(loaded->module), PrintAll(module));
  // JSON cannot nest that deep; it says so instead of failing later.
  absl::Status json = WriteJsonFile(module, dir + "/m.json");
  EXPECT_FALSE(json.ok());
  EXPECT_THAT(json.message(), HasSubstr("deeper than JSON allows"));
  EXPECT_FALSE(Exists(dir + "/m.json"));
  // One level more than the limit is refused when writing.
  Module deeper;
  Node* x = deeper.graph().Placeholder("x");
  Argument arg = Argument(x);
  for (int i = 0; i < 65; ++i) arg = Argument(ArgumentList{arg});
  deeper.graph().Output(arg);
  absl::Status s = WriteGpbFile(deeper, dir + "/d.gpb");
  EXPECT_THAT(s.message(), HasSubstr("lists nest deeper than 64"));
}

// Every .graft file of the repository's lit tests and examples: print(text)
// == print(load(save(module))) for .gpb and .json, and the same tensor
// bytes. Files that verify as text are read back with verification on.
std::vector<std::string> GraftFiles(const std::string& root) {
  std::vector<std::string> files;
  std::deque<std::string> dirs = {root + "/tests/lit", root + "/examples"};
  while (!dirs.empty()) {
    const std::string dir = dirs.front();
    dirs.pop_front();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = dir + "/" + name;
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        dirs.push_back(path);
      } else if (absl::EndsWith(name, ".graft")) {
        files.push_back(path);
      }
    }
    ::closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(GpbRoundTripTest, EveryGraftFileOfTheRepository) {
  const char* source_dir = std::getenv("GRAFT_SOURCE_DIR");
  if (source_dir == nullptr) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  const std::vector<std::string> files = GraftFiles(source_dir);
  const std::string dir = MakeTempDir("gpb_repo");
  int round_tripped = 0;
  int verified = 0;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    absl::StatusOr<Module> text = LoadModel(file);
    if (!text.ok()) continue;  // Files made to fail (error tests).
    const bool verifies = Verify(*text).ok();
    ModelLoadOptions load;
    load.binary.verify = verifies;
    for (const char* ext : {".gpb", ".json"}) {
      const std::string out = absl::StrCat(dir, "/m", round_tripped, ext);
      absl::Status saved = SaveModel(*text, out);
      ASSERT_TRUE(saved.ok()) << saved;
      absl::StatusOr<Module> back = LoadModel(out, load);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(PrintModule(*back), PrintModule(*text)) << ext;
      EXPECT_EQ(PrintAll(*back), PrintAll(*text)) << ext;
      EXPECT_EQ(Hidden(*back), Hidden(*text)) << ext;
    }
    ++round_tripped;
    verified += verifies;
  }
  std::printf("round-tripped %d of %zu .graft files (%d verify)\n",
              round_tripped, files.size(), verified);
  // The repository has a few dozen; most parse and most of those verify.
  EXPECT_GE(round_tripped, 20) << "of " << files.size() << " files";
  EXPECT_GE(verified, 15);
}

}  // namespace
}  // namespace graft
