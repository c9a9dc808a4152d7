// Format versions: a newer major version is refused with both versions
// named, a newer minor version loads, unknown fields are kept.

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serialize/gpb_format.h"
#include "serialize/gpb_reader.h"
#include "serialize/gpb_writer.h"
#include "serialize/json_format.h"
#include "tests/serialize/gpb_test_util.h"

namespace graft {
namespace {

using ::graft::testing_util::MakeTempDir;
using ::graft::testing_util::ParseOrDie;
using ::graft::testing_util::PrintAll;
using ::graft::testing_util::WriteBytes;
using ::testing::HasSubstr;

constexpr absl::string_view kModel = R"(
tensor b : f32[2] = [1.0, 2.0]
graph():
    %x : f32[2] = placeholder[target=x]
    %b : f32[2] = get_attr[target=b]
    %add : f32[2] = call_function[target=add](args = (%x, %b), kwargs = {})
    return add
)";

proto::Model ValidProto() {
  absl::StatusOr<proto::Model> model =
      ModuleToProto(ParseOrDie(kModel), GpbWriteOptions(), nullptr);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

std::string Encode(const proto::Model& model) {
  std::string bytes;
  EXPECT_TRUE(model.SerializeToString(&bytes));
  return bytes;
}

// A varint field, encoded by hand (the wire format's tag = field << 3 | 0).
std::string VarintField(int field, uint64_t value) {
  std::string out;
  uint64_t tag = static_cast<uint64_t>(field) << 3;
  for (uint64_t v : {tag, value}) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  return out;
}

TEST(GpbVersionTest, WritesTheCurrentVersion) {
  proto::Model model = ValidProto();
  EXPECT_EQ(model.format_major(), 1u);
  EXPECT_EQ(model.format_minor(), 0u);
  EXPECT_EQ(kGpbFormatMajor, 1u);
  EXPECT_EQ(kGpbFormatMinor, 0u);
}

TEST(GpbVersionTest, NewerMajorVersionIsRefusedNamingBoth) {
  proto::Model model = ValidProto();
  model.set_format_major(2);
  model.set_format_minor(3);
  absl::StatusOr<LoadedModel> loaded =
      ParseGpb(Encode(model), "future.gpb", nullptr);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            "future.gpb: the file has format version 2.3, but this graft "
            "reads format 1.x (up to 1.0): use a newer graft to read it");
}

TEST(GpbVersionTest, NewerMajorVersionIsRefusedEvenIfTheRestDoesNotParse) {
  // Version 2.0 followed by bytes that are not a version-1 Model (field 4,
  // the graph, as a varint: a wire type version 1 does not expect).
  const std::string bytes = VarintField(1, 2) + VarintField(4, 7);
  absl::StatusOr<LoadedModel> loaded = ParseGpb(bytes, "future.gpb", nullptr);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("the file has format version 2.0, but this graft "
                        "reads format 1.x"));
}

TEST(GpbVersionTest, NewerMinorVersionLoadsAndKeepsUnknownFields) {
  proto::Model model = ValidProto();
  model.set_format_minor(7);
  // A field a later 1.x might add (number 100), and one inside a node.
  proto::Node* node = model.mutable_graph()->mutable_nodes(2);
  std::string node_bytes;
  ASSERT_TRUE(node->SerializeToString(&node_bytes));
  node->ParseFromString(node_bytes + VarintField(99, 1));
  const std::string bytes = Encode(model) + VarintField(100, 12345);

  absl::StatusOr<LoadedModel> loaded = ParseGpb(bytes, "newer.gpb", nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->info.format_minor, 7u);
  EXPECT_EQ(PrintAll(loaded->module), PrintAll(ParseOrDie(kModel)));

  // protobuf keeps what it does not know (a tool that edits the proto and
  // writes it back preserves the newer fields).
  proto::Model parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.GetReflection()->GetUnknownFields(parsed).field_count(), 1);
  std::string again;
  ASSERT_TRUE(parsed.SerializeToString(&again));
  EXPECT_EQ(again.size(), bytes.size());
}

TEST(GpbVersionTest, FileWithoutAVersionIsNotAModel) {
  proto::Model model = ValidProto();
  model.clear_format_major();
  model.clear_format_minor();
  absl::StatusOr<LoadedModel> loaded =
      ParseGpb(Encode(model), "plain.gpb", nullptr);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(),
            "plain.gpb: not a graft model: it has no format version (graft "
            "writes 1.0)");
  // An empty file parses as an empty message: the same answer.
  loaded = ParseGpb("", "empty.gpb", nullptr);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("empty.gpb: not a graft model"));
}

TEST(GpbVersionTest, OnlyMajorVersionOneIsRead) {
  absl::Status s = CheckFormatVersion("x.gpb", 3, 0);
  EXPECT_THAT(s.message(), HasSubstr("format version 3.0"));
  EXPECT_THAT(s.message(), HasSubstr("use a newer graft"));
  EXPECT_TRUE(CheckFormatVersion("x.gpb", 1, 99).ok());
}

TEST(GpbVersionTest, JsonVersionsFollowTheSameRules) {
  const std::string dir = MakeTempDir("gpb_version_json");
  absl::StatusOr<std::string> json = ModuleToJson(ParseOrDie(kModel));
  ASSERT_TRUE(json.ok()) << json.status();
  ASSERT_THAT(*json, HasSubstr("\"format_major\": 1"));

  std::string future = *json;
  future.replace(future.find("\"format_major\": 1"), 17, "\"format_major\": 2");
  absl::StatusOr<LoadedModel> loaded = ModuleFromJson(future, "future.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("future.json: the file has format version 2.0, but "
                        "this graft reads format 1.x"));

  // A newer major version whose structure changed: still the version error.
  const std::string changed =
      R"({"format_major": 2, "graph": [1, 2, 3], "tensors": "no"})";
  loaded = ModuleFromJson(changed, "changed.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("format version 2.0"));

  // A newer minor version with a field this graft does not know: loads.
  std::string minor = *json;
  minor.insert(1, "\"some_new_field\": {\"x\": 1},\n\"format_minor\": 4,\n");
  loaded = ModuleFromJson(minor, "minor.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->info.format_minor, 4u);
}

}  // namespace
}  // namespace graft
