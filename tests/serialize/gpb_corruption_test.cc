// Hostile and damaged model files: each gives one clear error that names the
// file and the place, never a crash, a hang or a huge allocation. Run these
// under the ASan build too (GRAFT_SANITIZE=ON).

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serialize/gpb_format.h"
#include "serialize/gpb_reader.h"
#include "serialize/gpb_writer.h"
#include "serialize/json_format.h"
#include "serialize/side_file.h"
#include "tests/serialize/gpb_test_util.h"

namespace graft {
namespace {

using ::graft::testing_util::MakeTempDir;
using ::graft::testing_util::ParseOrDie;
using ::graft::testing_util::PrintAll;
using ::graft::testing_util::ReadBytes;
using ::graft::testing_util::WriteBytes;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A model that verifies and uses everything it has, so that losing any part
// of it (a tensor, the submodule, the side file record, a node) is an
// error: then every truncation of the file must fail.
constexpr absl::string_view kModel = R"(
tensor big : f32[300] = random(seed=1)
tensor b : f32[4] = [1.0, 2.0, 3.0, 4.0]

submodule sub {
  graph():
    %a : f32[4] = placeholder[target=a]
    %r : f32[4] = call_function[target=relu](args = (%a,), kwargs = {})
    return r
}

graph():
    %x : f32[4] = placeholder[target=x]
    %b : f32[4] = get_attr[target=b]
    %big : f32[300] = get_attr[target=big]
    %add : f32[4] = call_function[target=add](args = (%x, %b), kwargs = {})
    %s : f32[4] = call_module[target=sub](args = (%add,), kwargs = {})
    %cat : f32[8] = call_function[target=concat](args = ([%s, %add],), kwargs = {dim: 0})
    return (cat, big)
)";

// The model saved in a fresh directory: dir/m.gpb and dir/m.gpb.data.
class GpbCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("gpb_corrupt");
    path_ = dir_ + "/m.gpb";
    side_ = path_ + ".data";
    ASSERT_TRUE(WriteGpbFile(ParseOrDie(kModel), path_).ok());
    gpb_bytes_ = ReadBytes(path_);
    side_bytes_ = ReadBytes(side_);
    ASSERT_TRUE(proto_.ParseFromString(gpb_bytes_));
    ASSERT_TRUE(ReadGpbFile(path_).ok());
  }

  // Loads `bytes` as the .gpb, with the intact side file (mapped once: the
  // file tests below read from disk, these from memory, which is faster);
  // on success also prints the module, which must not crash either.
  absl::Status LoadBytes(const std::string& bytes, bool verify = true) {
    if (side_file_ == nullptr) {
      absl::StatusOr<std::shared_ptr<MappedFile>> side =
          MappedFile::Open(side_);
      EXPECT_TRUE(side.ok()) << side.status();
      if (side.ok()) side_file_ = *side;
    }
    GpbReadOptions options;
    options.verify = verify;
    absl::StatusOr<LoadedModel> loaded =
        ParseGpb(bytes, path_, side_file_, options);
    if (loaded.ok()) PrintAll(loaded->module);
    return loaded.status();
  }

  absl::Status LoadProto(const proto::Model& model, bool verify = true) {
    std::string bytes;
    EXPECT_TRUE(model.SerializeToString(&bytes));
    return LoadBytes(bytes, verify);
  }

  std::string dir_;
  std::string path_;
  std::string side_;
  std::string gpb_bytes_;
  std::string side_bytes_;
  proto::Model proto_;
  std::shared_ptr<MappedFile> side_file_;
};

TEST_F(GpbCorruptionTest, EveryTruncationOfTheModelFails) {
  for (size_t size = 0; size < gpb_bytes_.size(); ++size) {
    absl::Status s = LoadBytes(gpb_bytes_.substr(0, size));
    EXPECT_FALSE(s.ok()) << "cut at " << size;
    EXPECT_THAT(std::string(s.message()), StartsWith(path_))
        << "cut at " << size;
  }
}

TEST_F(GpbCorruptionTest, EveryTruncationOfTheSideFileFails) {
  for (size_t size = 0; size < side_bytes_.size(); size += 7) {
    WriteBytes(side_, side_bytes_.substr(0, size));
    absl::StatusOr<LoadedModel> loaded = ReadGpbFile(path_);
    ASSERT_FALSE(loaded.ok()) << "cut at " << size;
    EXPECT_THAT(std::string(loaded.status().message()), StartsWith(side_))
        << size;
  }
  // Extended, too.
  WriteBytes(side_, side_bytes_ + std::string(64, '\0'));
  absl::StatusOr<LoadedModel> loaded = ReadGpbFile(path_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("bytes, but " + path_ + " expects"));
}

TEST_F(GpbCorruptionTest, FlippedBytesNeverCrash) {
  int failed = 0;
  for (size_t i = 0; i < gpb_bytes_.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string bytes = gpb_bytes_;
      bytes[i] = static_cast<char>(bytes[i] ^ mask);
      // A flip may give a valid model (a changed tensor value, an op name
      // that is still an op): those must load and print. The rest fail.
      absl::Status s = LoadBytes(bytes);
      if (!s.ok()) {
        ++failed;
        EXPECT_THAT(std::string(s.message()), StartsWith(path_));
      }
      LoadBytes(bytes, /*verify=*/false).IgnoreError();
    }
  }
  // Most flips break something.
  EXPECT_GT(failed, static_cast<int>(gpb_bytes_.size()));
}

TEST_F(GpbCorruptionTest, FlippedSideFileBytes) {
  // In the header: refused.
  for (size_t i = 0; i < 24; ++i) {
    std::string bytes = side_bytes_;
    bytes[i] = static_cast<char>(bytes[i] ^ 0x10);
    WriteBytes(side_, bytes);
    EXPECT_FALSE(ReadGpbFile(path_).ok()) << i;
  }
  // In the data: loads (the data is mapped, not read), unless asked to check.
  std::string bytes = side_bytes_;
  bytes[100] = static_cast<char>(bytes[100] ^ 0x10);
  WriteBytes(side_, bytes);
  EXPECT_TRUE(ReadGpbFile(path_).ok());
  GpbReadOptions check;
  check.check_data = true;
  absl::StatusOr<LoadedModel> loaded = ReadGpbFile(path_, check);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            side_ +
                ": the side file's bytes do not match its id: the tensor "
                "data is corrupted");
  WriteBytes(side_, side_bytes_);
  EXPECT_TRUE(ReadGpbFile(path_, check).ok());
}

TEST_F(GpbCorruptionTest, SideFileProblems) {
  // Missing.
  ASSERT_EQ(::unlink(side_.c_str()), 0);
  absl::StatusOr<LoadedModel> loaded = ReadGpbFile(path_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            absl::StrCat("cannot open ", side_, " (the side file of ", path_,
                         "): No such file or directory"));
  // Not a side file.
  WriteBytes(side_, std::string(side_bytes_.size(), 'x'));
  loaded = ReadGpbFile(path_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr(side_ + ": not a graft side file"));
  // Shorter than the header.
  WriteBytes(side_, "GRAFTDAT");
  loaded = ReadGpbFile(path_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("shorter than its 64-byte header"));
  // From another save of a model of the same layout, other data.
  Module other = ParseOrDie(
      absl::StrReplaceAll(kModel, {{"random(seed=1)", "random(seed=2)"}}));
  ASSERT_TRUE(WriteGpbFile(other, dir_ + "/other.gpb").ok());
  const std::string other_side = ReadBytes(dir_ + "/other.gpb.data");
  ASSERT_EQ(other_side.size(), side_bytes_.size());
  WriteBytes(side_, other_side);
  loaded = ReadGpbFile(path_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            absl::StrCat(side_, " does not belong to ", path_,
                         ": its id differs from the one the model records "
                         "(the two files come from different saves)"));
  // A directory where the side file should be.
  ASSERT_EQ(::unlink(side_.c_str()), 0);
  ASSERT_EQ(::mkdir(side_.c_str(), 0755), 0);
  loaded = ReadGpbFile(path_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("it is a directory"));
}

TEST_F(GpbCorruptionTest, ModelPathThatIsNotAFile) {
  absl::StatusOr<LoadedModel> loaded = ReadGpbFile(dir_ + "/missing.gpb");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            "cannot open " + dir_ + "/missing.gpb: No such file or directory");
  const std::string sub = dir_ + "/d.gpb";
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  loaded = ReadGpbFile(sub);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("it is a directory"));
  // A FIFO nobody writes to: refused at once, not waited on.
  const std::string fifo = dir_ + "/f.gpb";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  loaded = ReadGpbFile(fifo);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("not a regular file"));
  loaded = ReadJsonFile(fifo);
  ASSERT_FALSE(loaded.ok());
}

// A length-delimited protobuf field, encoded by hand.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Field(int number, const std::string& payload) {
  return Varint(static_cast<uint64_t>(number) << 3 | 2) +
         Varint(payload.size()) + payload;
}

TEST_F(GpbCorruptionTest, HostileRawBytes) {
  // format_major = 1 (format_minor = 0 is the default, not written).
  const std::string version = Varint(1 << 3) + Varint(1);
  ASSERT_EQ(gpb_bytes_.substr(0, 2), version);
  // A graph (field 4) that claims 2^35 bytes.
  absl::Status s =
      LoadBytes(version + Varint(4 << 3 | 2) + Varint(uint64_t{1} << 35));
  EXPECT_THAT(s.message(),
              HasSubstr("truncated, corrupted or nested too deep"));
  // A tensor whose packed dims (field 3) claim more bytes than there are.
  s = LoadBytes(version + Field(5, Varint(3 << 3 | 2) + Varint(1000) + "\x01"));
  EXPECT_THAT(s.message(),
              HasSubstr("truncated, corrupted or nested too deep"));
  // Lists nested 1000 deep: protobuf's recursion is bounded; no stack
  // overflow. Argument.list = 8, ArgumentList.elements = 1, Node.args = 4,
  // Graph.nodes = 1, Model.graph = 4.
  std::string arg = Varint(3 << 3) + Varint(1);  // Argument.int_value = 1
  for (int i = 0; i < 1000; ++i) arg = Field(8, Field(1, arg));
  const std::string node = Field(1, "f") + Field(4, arg);
  s = LoadBytes(version + Field(4, Field(1, node)));
  EXPECT_THAT(s.message(), HasSubstr("nested too deep"));
  // A name that is not UTF-8 (protobuf refuses it; nothing is logged).
  s = LoadBytes(version + Field(4, Field(1, Field(1, "\xff\xfe"))));
  EXPECT_THAT(s.message(),
              HasSubstr("truncated, corrupted or nested too deep"));
}

// One row: a change to the valid proto, and the error it must give (after
// "<file>: ").
struct Case {
  std::string name;
  std::function<void(proto::Model&)> mutate;
  std::string expected;
};

TEST_F(GpbCorruptionTest, TableOfHostileModels) {
  constexpr int64_t kBig = int64_t{1} << 40;
  auto node = [](proto::Model& m, absl::string_view name) -> proto::Node& {
    for (proto::Node& n : *m.mutable_graph()->mutable_nodes()) {
      if (n.name() == name) return n;
    }
    ADD_FAILURE() << "no node " << name;
    return *m.mutable_graph()->add_nodes();
  };
  auto tensor = [](proto::Model& m, absl::string_view name) -> proto::Tensor& {
    for (proto::Tensor& t : *m.mutable_tensors()) {
      if (t.name() == name) return t;
    }
    ADD_FAILURE() << "no tensor " << name;
    return *m.add_tensors();
  };
  const uint64_t side_size = side_bytes_.size();
  const std::vector<Case> cases = {
      // Node references.
      {"unknown node",
       [&](proto::Model& m) {
         node(m, "add").mutable_args(0)->set_node("nope");
       },
       "node %add: args[0] refers to %nope, which the graph does not have"},
      {"later node",
       [&](proto::Model& m) {
         node(m, "add").mutable_args(0)->set_node("cat");
       },
       "node %add: args[0] refers to %cat, which is defined after it"},
      {"own node",
       [&](proto::Model& m) {
         node(m, "add").mutable_args(1)->set_node("add");
       },
       "node %add: args[1] refers to its own node %add"},
      {"unknown node in a nested list",
       [&](proto::Model& m) {
         node(m, "cat")
             .mutable_args(0)
             ->mutable_list()
             ->mutable_elements(1)
             ->set_node("zz");
       },
       "node %cat: args[0][1] refers to %zz, which the graph does not have"},
      {"unknown node in a kwarg",
       [&](proto::Model& m) {
         node(m, "cat").mutable_kwargs(0)->mutable_value()->set_node("zz");
       },
       "node %cat: kwargs['dim'] refers to %zz"},
      // Names.
      {"duplicate node name",
       [&](proto::Model& m) { node(m, "b").set_name("x"); },
       "duplicate node name '%x'"},
      {"invalid node name",
       [&](proto::Model& m) { node(m, "b").set_name("1b"); },
       "node #1 has the name '1b', which is not an identifier"},
      {"empty node name", [&](proto::Model& m) { node(m, "b").set_name(""); },
       "node #1 has the name '', which is not an identifier"},
      {"duplicate tensor",
       [&](proto::Model& m) { *m.add_tensors() = tensor(m, "b"); },
       "duplicate tensor 'b'"},
      {"duplicate submodule",
       [&](proto::Model& m) { *m.add_submodules() = m.submodules(0); },
       "duplicate submodule 'sub'"},
      {"duplicate kwarg",
       [&](proto::Model& m) {
         proto::Node& cat = node(m, "cat");
         *cat.add_kwargs() = cat.kwargs(0);
       },
       "node %cat: duplicate keyword argument 'dim'"},
      {"duplicate meta key",
       [&](proto::Model& m) {
         for (int i = 0; i < 2; ++i) {
           proto::StringEntry* e = node(m, "add").add_meta();
           e->set_key("k");
           e->set_value("v");
         }
       },
       "node %add: duplicate meta entry 'k'"},
      {"duplicate metadata key",
       [&](proto::Model& m) {
         for (int i = 0; i < 2; ++i) m.add_metadata()->set_key("k");
       },
       "duplicate metadata key 'k'"},
      // Opcodes, dtypes, arguments.
      {"unknown opcode",
       [&](proto::Model& m) {
         node(m, "add").set_op(static_cast<proto::OpCode>(42));
       },
       "node %add: unknown opcode 42"},
      {"no opcode",
       [&](proto::Model& m) {
         node(m, "add").set_op(proto::OPCODE_UNSPECIFIED);
       },
       "node %add: unknown opcode 0 (none given)"},
      {"empty argument", [&](proto::Model& m) { node(m, "add").add_args(); },
       "node %add: args[2] is empty or of a kind this graft does not know"},
      {"unknown dtype argument",
       [&](proto::Model& m) {
         node(m, "add").add_args()->set_dtype_value(
             static_cast<proto::DType>(77));
       },
       "node %add: args[2] is an unknown dtype 77"},
      {"lists nested 65 deep",
       [&](proto::Model& m) {
         proto::Argument* a = node(m, "add").add_args();
         for (int i = 0; i < 65; ++i) a = a->mutable_list()->add_elements();
         a->set_int_value(1);
       },
       "nests lists deeper than 64 levels"},
      // Types.
      {"type dim without a value",
       [&](proto::Model& m) { node(m, "x").mutable_type()->add_dims(); },
       "node %x: dimension 1 of its type is neither a size nor a symbol"},
      {"negative type dim",
       [&](proto::Model& m) {
         node(m, "x").mutable_type()->mutable_dims(0)->set_size(-3);
       },
       "node %x: dimension 0 of its type is negative (-3)"},
      {"absurd type rank",
       [&](proto::Model& m) {
         for (int i = 0; i < 99; ++i)
           node(m, "x").mutable_type()->add_dims()->set_size(1);
       },
       "node %x: its type has rank 100, over the limit of 64"},
      {"type without dtype",
       [&](proto::Model& m) {
         node(m, "x").mutable_type()->set_dtype(proto::DTYPE_UNSPECIFIED);
       },
       "node %x: its type has an unknown dtype 0 (none given)"},
      {"tuple type with unknown dtype",
       [&](proto::Model& m) {
         node(m, "x").add_tuple_types()->set_dtype(
             static_cast<proto::DType>(11));
       },
       "node %x: its type has an unknown dtype 11"},
      // Tensors.
      {"inline data too short",
       [&](proto::Model& m) {
         tensor(m, "b").mutable_inline_data()->resize(12);
       },
       "tensor 'b': its inline data is 12 bytes, but f32[4] needs 16"},
      {"negative dim", [&](proto::Model& m) { tensor(m, "b").set_dims(0, -4); },
       "tensor 'b': dimension 0 is negative (-4)"},
      {"absurd rank",
       [&](proto::Model& m) {
         for (int i = 0; i < 64; ++i) tensor(m, "b").add_dims(1);
       },
       "tensor 'b': rank 65 is over the limit of 64"},
      {"element count overflows",
       [&](proto::Model& m) {
         tensor(m, "b").set_dims(0, kBig);
         tensor(m, "b").add_dims(kBig);
       },
       "tensor 'b': its size overflows"},
      {"byte size overflows",
       [&](proto::Model& m) { tensor(m, "b").set_dims(0, int64_t{1} << 62); },
       "tensor 'b': its size overflows"},
      {"zero-size but absurd dims",
       [&](proto::Model& m) {
         tensor(m, "b").set_dims(0, 0);
         tensor(m, "b").add_dims(kBig);
         tensor(m, "b").add_dims(kBig);
       },
       "tensor 'b': its size overflows"},
      {"terabytes claimed, bytes given",
       [&](proto::Model& m) {
         tensor(m, "b").set_dims(0, kBig);  // 4 TiB of f32
       },
       "tensor 'b': its inline data is 16 bytes, but f32[1099511627776] needs "
       "4398046511104"},
      {"unknown tensor dtype",
       [&](proto::Model& m) {
         tensor(m, "b").set_dtype(static_cast<proto::DType>(99));
       },
       "tensor 'b': unknown dtype 99"},
      {"tensor without dtype",
       [&](proto::Model& m) {
         tensor(m, "b").set_dtype(proto::DTYPE_UNSPECIFIED);
       },
       "tensor 'b': unknown dtype 0 (none given)"},
      {"tensor without data",
       [&](proto::Model& m) { tensor(m, "b").clear_data(); },
       "tensor 'b': it has no data"},
      // The side file region.
      {"misaligned offset",
       [&](proto::Model& m) {
         tensor(m, "big").mutable_external()->set_offset(65);
       },
       "tensor 'big': its side-file offset 65 is not a multiple of 64"},
      {"offset in the header",
       [&](proto::Model& m) {
         tensor(m, "big").mutable_external()->set_offset(0);
       },
       "tensor 'big': its side-file offset 0 is inside the side file's header"},
      {"offset past the end",
       [&](proto::Model& m) {
         tensor(m, "big").mutable_external()->set_offset(side_size + 64 -
                                                         side_size % 64);
       },
       "ends past the end of " + side_},
      {"region overflowing 64 bits",
       [&](proto::Model& m) {
         tensor(m, "big").mutable_external()->set_offset(
             std::numeric_limits<uint64_t>::max() - 63);
       },
       "ends past the end of " + side_},
      {"region running off the end",
       [&](proto::Model& m) {
         tensor(m, "big").mutable_external()->set_offset(side_size / 64 * 64);
       },
       "ends past the end of " + side_},
      {"length not the tensor's size",
       [&](proto::Model& m) {
         tensor(m, "big").mutable_external()->set_length(1199);
       },
       "tensor 'big': its side-file region is 1199 bytes, but its dtype and "
       "dims need 1200"},
      {"external data but no side file recorded",
       [&](proto::Model& m) { m.clear_data_file(); },
       "tensor 'big': its data is in a side file, but the model records none"},
      {"side file size differs",
       [&](proto::Model& m) {
         m.mutable_data_file()->set_size(side_size + 64);
       },
       absl::StrCat("the side file is ", side_size, " bytes, but ", path_,
                    " expects ", side_size + 64)},
      {"side file id differs",
       [&](proto::Model& m) {
         m.mutable_data_file()->set_id(m.data_file().id() ^ 1);
       },
       "does not belong to " + path_},
      // Submodules.
      {"submodules nested 65 deep",
       [&](proto::Model& m) {
         proto::Submodule* s = m.add_submodules();
         s->set_name("d0");
         for (int i = 1; i <= 65; ++i) {
           s = s->add_submodules();
           s->set_name(absl::StrCat("d", i));
         }
       },
       "submodules nest deeper than 64 levels"},
      {"error inside a submodule names it",
       [&](proto::Model& m) {
         m.mutable_submodules(0)
             ->mutable_graph()
             ->mutable_nodes(1)
             ->mutable_args(0)
             ->set_node("q");
       },
       "submodule 'sub': node %r: args[0] refers to %q, which the graph does "
       "not have"},
      // What only the verifier sees.
      {"get_attr of a missing tensor",
       [&](proto::Model& m) { tensor(m, "b").set_name("c"); },
       "verify: %b reads tensor 'b', which the module does not have"},
      {"output not last",
       [&](proto::Model& m) {
         proto::Node* n = m.mutable_graph()->add_nodes();
         n->set_name("late");
         n->set_op(proto::OPCODE_PLACEHOLDER);
         n->set_target("late");
       },
       "verify: output node %output is not the last node"},
      {"unknown op in a submodule",
       [&](proto::Model& m) {
         m.mutable_submodules(0)->mutable_graph()->mutable_nodes(1)->set_target(
             "no_such_op");
       },
       "verify: in submodule 'sub': %r calls unknown op 'no_such_op'"},
      {"ill-typed call",
       [&](proto::Model& m) {
         node(m, "add").mutable_type()->mutable_dims(0)->set_size(5);
       },
       "verify: %add has type f32[5], but add infers f32[4]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    proto::Model model = proto_;
    c.mutate(model);
    absl::Status s = LoadProto(model);
    ASSERT_FALSE(s.ok());
    // The side file's name starts with the model's.
    EXPECT_THAT(std::string(s.message()), StartsWith(path_));
    EXPECT_THAT(s.message(), HasSubstr(c.expected));
  }
}

TEST_F(GpbCorruptionTest, VerifierCanBeTurnedOff) {
  proto::Model model = proto_;
  model.mutable_submodules(0)->mutable_graph()->mutable_nodes(1)->set_target(
      "plugin::op");
  EXPECT_FALSE(LoadProto(model).ok());
  EXPECT_TRUE(LoadProto(model, /*verify=*/false).ok());
}

TEST_F(GpbCorruptionTest, JsonIsCheckedTheSameWay) {
  absl::StatusOr<std::string> json = ModuleToJson(ParseOrDie(kModel));
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(ModuleFromJson(*json, "m.json").ok());
  // Truncated JSON.
  for (size_t size :
       {size_t{0}, size_t{1}, json->size() / 2, json->size() - 2}) {
    absl::StatusOr<LoadedModel> loaded =
        ModuleFromJson(json->substr(0, size), "m.json");
    ASSERT_FALSE(loaded.ok()) << size;
    EXPECT_THAT(std::string(loaded.status().message()), StartsWith("m.json: "))
        << size;
  }
  // A reference to a later node.
  std::string later = *json;
  const size_t pos = later.find("\"node\": \"x\"");
  ASSERT_NE(pos, std::string::npos);
  later.replace(pos, 11, "\"node\": \"cat\"");
  absl::StatusOr<LoadedModel> loaded = ModuleFromJson(later, "m.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("refers to %cat, which is defined after it"));
  // A side file reference has no place in JSON.
  const std::string with_side =
      R"({"format_major": 1, "data_file": {"size": "64"}})";
  loaded = ModuleFromJson(with_side, "s.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("s.json: a JSON model keeps its tensor data inline"));
  // Wrong JSON types.
  loaded = ModuleFromJson(R"({"format_major": "many"})", "t.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()),
              StartsWith("t.json: not a valid graft JSON model: "));
}

}  // namespace
}  // namespace graft
