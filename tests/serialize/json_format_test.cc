#include "serialize/json_format.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "graph/random_tensor.h"
#include "gtest/gtest.h"
#include "tests/serialize/gpb_test_util.h"

namespace graft {
namespace {

using ::graft::testing_util::Hidden;
using ::graft::testing_util::MakeTempDir;
using ::graft::testing_util::ParseOrDie;
using ::graft::testing_util::PrintAll;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(JsonFormatTest, IsProtobufsJsonMappingWithProtoFieldNames) {
  Module module = ParseOrDie(R"(
tensor t : u8[3] = [1, 2, 3]
graph():
    %x : f32[batch,2] = placeholder[target=x]
    %t = get_attr[target=t]
    return (x, t)
)");
  absl::StatusOr<std::string> json = ModuleToJson(module);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_THAT(*json, HasSubstr("\"format_major\": 1"));
  EXPECT_THAT(*json, HasSubstr("\"producer\": \"graft "));
  EXPECT_THAT(*json, HasSubstr("\"op\": \"OPCODE_PLACEHOLDER\""));
  EXPECT_THAT(*json, HasSubstr("\"dtype\": \"DTYPE_U8\""));
  // Bytes 01 02 03 in base64.
  EXPECT_THAT(*json, HasSubstr("\"inline_data\": \"AQID\""));
  EXPECT_THAT(*json, HasSubstr("\"symbol\": \"batch\""));
  // int64 values are strings in protobuf's JSON mapping.
  EXPECT_THAT(*json, HasSubstr("\"size\": \"2\""));
  EXPECT_THAT(*json, Not(HasSubstr("data_file")));
}

TEST(JsonFormatTest, LargeTensorsAreInlineToo) {
  Module module;
  module.SetTensor("big", RandomTensor(DType::kF64, {1000}, 3));  // 8000 bytes
  module.graph().Output(ArgumentList{});
  const std::string dir = MakeTempDir("json_big");
  GpbWriteOptions options;
  options.inline_limit = 0;  // Ignored: JSON has no side file.
  ASSERT_TRUE(WriteJsonFile(module, dir + "/m.json", options).ok());
  EXPECT_FALSE(testing_util::Exists(dir + "/m.json.data"));
  EXPECT_FALSE(testing_util::Exists(dir + "/m.gpb.data"));
  absl::StatusOr<LoadedModel> loaded = ReadJsonFile(dir + "/m.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Hidden(loaded->module), Hidden(module));
}

TEST(JsonFormatTest, SpecialFloatsSurvive) {
  Module module = ParseOrDie(
      "graph():\n  %f = call_function[target=f](args = (-0.0, 0.0, nan, inf, "
      "-inf, 5e-324, 1.7976931348623157e+308, -2.5), kwargs = {})\n"
      "  return f\n");
  absl::StatusOr<std::string> json = ModuleToJson(module);
  ASSERT_TRUE(json.ok());
  absl::StatusOr<LoadedModel> loaded =
      ModuleFromJson(*json, "f.json", GpbReadOptions{.verify = false});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(PrintAll(loaded->module), PrintAll(module));
  const Node* f = loaded->module.graph().FindNode("f");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(std::signbit(f->arg(0).double_value()));
  EXPECT_FALSE(std::signbit(f->arg(1).double_value()));
}

TEST(JsonFormatTest, HandWrittenJsonWithDefaultFieldNamesLoads) {
  // protobuf's default JSON names (lowerCamelCase) are accepted as well.
  const std::string json = R"({
    "formatMajor": 1,
    "tensors": [{"name": "c", "dtype": "DTYPE_I32", "dims": ["2"],
                 "inlineData": "AQAAAP////8="}],
    "graph": {"nodes": [
      {"name": "x", "op": "OPCODE_PLACEHOLDER", "target": "x",
       "type": {"dtype": "DTYPE_I32", "dims": [{"size": "2"}]}},
      {"name": "c", "op": "OPCODE_GET_ATTR", "target": "c"},
      {"name": "add", "op": "OPCODE_CALL_FUNCTION", "target": "add",
       "args": [{"node": "x"}, {"node": "c"}]},
      {"name": "output", "op": "OPCODE_OUTPUT", "target": "output",
       "args": [{"node": "add"}]}
    ]}
  })";
  absl::StatusOr<LoadedModel> loaded = ModuleFromJson(json, "hand.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(
      PrintAll(loaded->module),
      "tensor c : i32[2] = [1, -1]\n\n"
      "graph():\n"
      "    %x : i32[2] = placeholder[target=x]\n"
      "    %c = get_attr[target=c]\n"
      "    %add = call_function[target=add](args = (%x, %c), kwargs = {})\n"
      "    return add\n");
}

}  // namespace
}  // namespace graft
