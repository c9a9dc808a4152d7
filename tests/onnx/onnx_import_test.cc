// ONNX import: models built with libonnx's classes, imported, checked for
// structure (placeholders, get_attr, folded static reshapes, provenance)
// and run on the interpreter against hand-worked values.

#include "onnx/onnx_import.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#ifdef GRAFT_HAVE_ONNX

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "graph/verifier.h"
#include "onnx/onnx_import_state.h"
#include "tests/onnx/onnx_test_util.h"

namespace graft::onnx_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OnnxImport, BuildHasOnnx) { EXPECT_TRUE(HaveOnnx()); }

// x[2,3] -> Gemm(fc1, transB) -> Relu -> MatMul(w2) -> Add(b2) -> y.
ModelBuilder Mlp() {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  b.FloatInitializer("fc1.weight", {2, 3}, {1, 0, -1, 0, 1, 0});
  b.FloatInitializer("fc1.bias", {2}, {0.5, -1});
  b.FloatInitializer("w2", {2, 1}, {2, 3});
  b.FloatInitializer("b2", {1}, {1});
  AttrInt(b.Node("Gemm", {"x", "fc1.weight", "fc1.bias"}, {"h"}, "fc1"),
          "transB", 1);
  b.Node("Relu", {"h"}, {"r"}, "relu");
  b.Node("MatMul", {"r", "w2"}, {"m"}, "fc2");
  b.Node("Add", {"m", "b2"}, {"y"}, "bias2");
  b.Output("y", TP::FLOAT);
  return b;
}

TEST(OnnxImport, MlpRunsAndKeepsNames) {
  ModelBuilder b = Mlp();
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  EXPECT_THAT(CallTargets(m), ElementsAre("linear", "relu", "matmul", "add"));
  std::vector<Node*> ph = m.graph().placeholders();
  ASSERT_EQ(ph.size(), 1u);
  EXPECT_EQ(ph[0]->name(), "x");
  EXPECT_EQ(ph[0]->type()->ToString(), "f32[2,3]");
  // Initializers used as tensors become module tensors of the same name;
  // the one-element bias b2 became a literal.
  EXPECT_NE(m.FindTensor("fc1.weight"), nullptr);
  EXPECT_NE(m.FindTensor("fc1.bias"), nullptr);
  EXPECT_NE(m.FindTensor("w2"), nullptr);
  EXPECT_EQ(m.FindTensor("b2"), nullptr);
  // The output value is named after the ONNX output.
  EXPECT_NE(m.graph().FindNode("y"), nullptr);
  EXPECT_TRUE(Verify(m).ok());
  // h = x W1^T + b1 = [[-1.5, 1], [-1.5, 4]]; relu -> [[0,1],[0,4]];
  // y = r [2,3]^T + 1 = [[4], [13]].
  ONNX_ASSERT_OK_AND_ASSIGN(out,
                            RunModule(m, {F32({2, 3}, {1, 2, 3, 4, 5, 6})}));
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {2, 1}, {4, 13});
}

TEST(OnnxImport, EveryNodeNamesItsOnnxNode) {
  ModelBuilder b = Mlp();
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  for (const Node* n : m.graph().nodes()) {
    if (n->op() != OpCode::kCallFunction) continue;
    const std::string* name = n->meta().entries.Find(onnx_import::kOnnxNodeKey);
    const std::string* op = n->meta().entries.Find(onnx_import::kOnnxOpKey);
    ASSERT_NE(name, nullptr) << n->Ref();
    ASSERT_NE(op, nullptr) << n->Ref();
    ASSERT_TRUE(n->meta().location.has_value());
    EXPECT_EQ(n->meta().location->file, "test.onnx");
    if (n->is_call("linear")) {
      EXPECT_EQ(*name, "fc1");
      EXPECT_EQ(*op, "Gemm");
      EXPECT_EQ(n->meta().location->line, 1);
    }
    if (n->is_call("add")) {
      EXPECT_EQ(*name, "bias2");
      EXPECT_EQ(*op, "Add");
      EXPECT_EQ(n->meta().location->line, 4);
    }
  }
}

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch exports
// x.view(x.size(0), -1).
void AddFlattenPattern(ModelBuilder& b) {
  b.Node("Shape", {"x"}, {"s"});
  b.IntsConstant("zero", {0}, /*scalar=*/true);
  AttrInt(b.Node("Gather", {"s", "zero"}, {"d0"}), "axis", 0);
  b.IntsConstant("axes0", {0});
  b.Node("Unsqueeze", {"d0", "axes0"}, {"u"});
  b.IntsConstant("minus1", {-1});
  AttrInt(b.Node("Concat", {"u", "minus1"}, {"shape"}), "axis", 0);
  b.Node("Reshape", {"x", "shape"}, {"y"});
  b.Output("y");
}

TEST(OnnxImport, ShapeArithmeticFoldsToStaticReshape) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3, 4});
  AddFlattenPattern(b);
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  // Nothing but the reshape remains: no Shape, Gather or constants.
  EXPECT_THAT(CallTargets(m), ElementsAre("reshape"));
  EXPECT_TRUE(m.tensors().empty());
  const Node* reshape = m.graph().FindNode("y");
  ASSERT_NE(reshape, nullptr);
  EXPECT_THAT(reshape->arg(1).int_list(), ElementsAre(2, 12));
  EXPECT_EQ(reshape->type()->ToString(), "f32[2,12]");
  std::vector<double> values;
  for (int i = 0; i < 24; ++i) values.push_back(i);
  ONNX_ASSERT_OK_AND_ASSIGN(out, RunModule(m, {F32({2, 3, 4}, values)}));
  ExpectTensor(out[0], DType::kF32, {2, 12}, values);
}

TEST(OnnxImport, SymbolicBatchFoldsToReshapeWithOneInferredDim) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, std::vector<std::string>{"batch", "3", "4"});
  AddFlattenPattern(b);
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  EXPECT_THAT(CallTargets(m), ElementsAre("reshape"));
  const Node* reshape = m.graph().FindNode("y");
  ASSERT_NE(reshape, nullptr);
  EXPECT_THAT(reshape->arg(1).int_list(), ElementsAre(-1, 12));
  EXPECT_EQ(reshape->type()->ToString(), "f32[batch,12]");
  std::vector<double> values;
  for (int i = 0; i < 60; ++i) values.push_back(i);
  ONNX_ASSERT_OK_AND_ASSIGN(out, RunModule(m, {F32({5, 3, 4}, values)}));
  ExpectTensor(out[0], DType::kF32, {5, 12}, values);
}

// The attention head split: x.view(*x.shape[:2], heads, head_dim).
ModelBuilder HeadSplit(std::vector<std::string> dims, const std::string& x = "x") {
  ModelBuilder b;
  b.Input(x, TP::FLOAT, dims);
  b.Node("Shape", {x}, {"s"});
  b.IntsConstant("start", {0});
  b.IntsConstant("end", {2});
  b.Node("Slice", {"s", "start", "end"}, {"lead"});
  b.IntsConstant("heads", {2, 4});
  AttrInt(b.Node("Concat", {"lead", "heads"}, {"shape"}), "axis", 0);
  b.Node("Reshape", {x, "shape"}, {"y"});
  b.Output("y");
  return b;
}

TEST(OnnxImport, HeadSplitWithSymbolicBatch) {
  ModelBuilder b = HeadSplit({"batch", "3", "8"});
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  const Node* reshape = m.graph().FindNode("y");
  ASSERT_NE(reshape, nullptr);
  EXPECT_THAT(reshape->arg(1).int_list(), ElementsAre(-1, 3, 2, 4));
  EXPECT_EQ(reshape->type()->ToString(), "f32[batch,3,2,4]");
}

TEST(OnnxImport, TwoSymbolicDimsNeedStaticShapes) {
  ModelBuilder b = HeadSplit({"batch", "seq", "8"});
  absl::StatusOr<Module> m = b.Import();
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("test.onnx: node 'Reshape_7' (Reshape): "));
  EXPECT_THAT(m.status().message(), HasSubstr("'batch'"));
  EXPECT_THAT(m.status().message(), HasSubstr("'seq'"));
  EXPECT_THAT(m.status().message(), HasSubstr("input_shapes"));

  OnnxImportOptions options;
  options.dim_values = {{"batch", 2}, {"seq", 3}};
  ONNX_ASSERT_OK_AND_ASSIGN(fixed, b.Import(options));
  const Node* reshape = fixed.graph().FindNode("y");
  ASSERT_NE(reshape, nullptr);
  EXPECT_THAT(reshape->arg(1).int_list(), ElementsAre(2, 3, 2, 4));

  OnnxImportOptions shapes;
  shapes.input_shapes = {{"x", {1, 5, 8}}};
  ONNX_ASSERT_OK_AND_ASSIGN(fixed2, b.Import(shapes));
  EXPECT_EQ(fixed2.graph().placeholders()[0]->type()->ToString(), "f32[1,5,8]");
}

// Sizes may name an input as graft names its placeholder ("/embed/x:0" is
// embed_x_0), and a symbolic dim as graft names it: what a user of `graft run`
// sees.
TEST(OnnxImport, SizesMayUseGraftsNames) {
  ModelBuilder b = HeadSplit({"batch-size", "seq", "8"}, "/embed/x:0");
  OnnxImportOptions by_placeholder;
  by_placeholder.input_shapes = {{"embed_x_0", {2, 3, 8}}};
  ONNX_ASSERT_OK_AND_ASSIGN(a, b.Import(by_placeholder));
  EXPECT_EQ(a.graph().FindNode("y")->type()->ToString(), "f32[2,3,2,4]");
  OnnxImportOptions by_symbol;
  by_symbol.dim_values = {{"batch_size", 4}, {"seq", 5}};
  ONNX_ASSERT_OK_AND_ASSIGN(c, b.Import(by_symbol));
  EXPECT_EQ(c.graph().FindNode("y")->type()->ToString(), "f32[4,5,2,4]");
}

TEST(OnnxImport, InputShapeOptionsAreChecked) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  OnnxImportOptions wrong_name;
  wrong_name.input_shapes = {{"z", {2, 3}}};
  absl::StatusOr<Module> m = b.Import(wrong_name);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("input_shapes names 'z', which is not an input of the "
                        "model (inputs: x)"));
  OnnxImportOptions wrong_size;
  wrong_size.input_shapes = {{"x", {4, 3}}};
  m = b.Import(wrong_size);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("input 'x' has size 2 in dim 0, but "
                        "OnnxImportOptions::input_shapes gives 4"));
}

TEST(OnnxImport, InputNamesAreSanitized) {
  ModelBuilder b;
  b.FloatInput("input.1", {2});
  b.FloatInput("/embed/x:0", {2});
  b.Node("Add", {"input.1", "/embed/x:0"}, {"onnx::Add_3"});
  b.Output("onnx::Add_3");
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  std::vector<Node*> ph = m.graph().placeholders();
  ASSERT_EQ(ph.size(), 2u);
  EXPECT_EQ(ph[0]->name(), "input.1");
  EXPECT_EQ(ph[1]->name(), "embed_x_0");
  EXPECT_NE(m.graph().FindNode("onnx_Add_3"), nullptr);
}

// Initializers in each of their encodings, returned as outputs.
TEST(OnnxImport, InitializerEncodings) {
  ModelBuilder b;
  b.FloatInitializer("f", {2}, {1.5, -2});
  b.Int64Initializer("i64", {2}, {int64_t{1} << 40, -3});
  TP* i32 = b.NewTensor("i32", TP::INT32, {2});
  i32->add_int32_data(7);
  i32->add_int32_data(-8);
  TP* f64 = b.NewTensor("f64", TP::DOUBLE, {1});
  f64->add_double_data(0.25);
  TP* boolean = b.NewTensor("flag", TP::BOOL, {3});
  for (int v : {1, 0, 5}) boolean->add_int32_data(v);
  TP* half = b.NewTensor("half", TP::FLOAT16, {2});
  half->add_int32_data(0x3C00);  // 1.0
  half->add_int32_data(0xC000);  // -2.0
  TP* u8 = b.NewTensor("u8", TP::UINT8, {1});
  u8->add_int32_data(200);
  b.RawInitializer("raw", F32({2, 2}, {1, 2, 3, 4}));
  b.RawInitializer("raw_i8", T(DType::kI8, {2}, {-5, 6}));
  for (const char* name :
       {"f", "i64", "i32", "f64", "flag", "half", "u8", "raw", "raw_i8"}) {
    b.Output(name);
  }
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  ONNX_ASSERT_OK_AND_ASSIGN(out, RunModule(m, {}));
  ASSERT_EQ(out.size(), 9u);
  ExpectTensor(out[0], DType::kF32, {2}, {1.5, -2});
  EXPECT_EQ(out[1].dtype(), DType::kI64);
  EXPECT_EQ(out[1].data<int64_t>()[0], int64_t{1} << 40);
  EXPECT_EQ(out[1].data<int64_t>()[1], -3);
  ExpectTensor(out[2], DType::kI32, {2}, {7, -8});
  ExpectTensor(out[3], DType::kF64, {1}, {0.25});
  ExpectTensor(out[4], DType::kBool, {3}, {1, 0, 1});
  ExpectTensor(out[5], DType::kF16, {2}, {1, -2});
  ExpectTensor(out[6], DType::kU8, {1}, {200});
  ExpectTensor(out[7], DType::kF32, {2, 2}, {1, 2, 3, 4});
  ExpectTensor(out[8], DType::kI8, {2}, {-5, 6});
}

// Graph inputs that have an initializer (IR version 3 models list weights
// as inputs) are constants, not placeholders.
TEST(OnnxImport, InputWithInitializerIsAConstant) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  b.FloatInput("w", {2});
  b.FloatInitializer("w", {2}, {10, 20});
  b.Node("Add", {"x", "w"}, {"y"});
  b.Output("y");
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  ASSERT_EQ(m.graph().placeholders().size(), 1u);
  ONNX_ASSERT_OK_AND_ASSIGN(out, RunModule(m, {F32({2}, {1, 2})}));
  ExpectTensor(out[0], DType::kF32, {2}, {11, 22});
}

TEST(OnnxImport, ConstantNodeForms) {
  ModelBuilder b;
  b.FloatConstant("t", {2}, {3, 4});
  AttrFloat(b.Node("Constant", {}, {"f"}), "value_float", 2.5f);
  AttrFloats(b.Node("Constant", {}, {"fs"}), "value_floats", {1, 2, 3});
  AttrInt(b.Node("Constant", {}, {"i"}), "value_int", 7);
  AttrInts(b.Node("Constant", {}, {"is"}), "value_ints", {4, 5});
  for (const char* name : {"t", "f", "fs", "i", "is"}) b.Output(name);
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  ONNX_ASSERT_OK_AND_ASSIGN(out, RunModule(m, {}));
  ASSERT_EQ(out.size(), 5u);
  ExpectTensor(out[0], DType::kF32, {2}, {3, 4});
  ExpectTensor(out[1], DType::kF32, {}, {2.5});
  ExpectTensor(out[2], DType::kF32, {3}, {1, 2, 3});
  ExpectTensor(out[3], DType::kI64, {}, {7});
  ExpectTensor(out[4], DType::kI64, {2}, {4, 5});
}

TEST(OnnxImport, BigUniformConstantBecomesFull) {
  ModelBuilder b;
  b.FloatInput("x", {8, 8});
  b.IntsConstant("shape", {8, 8});
  onnx::NodeProto* c = b.Node("ConstantOfShape", {"shape"}, {"ones"});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::FLOAT);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_float_data(1);
  b.Node("Add", {"x", "ones"}, {"y"});
  b.Output("y");
  ONNX_ASSERT_OK_AND_ASSIGN(m, b.Import());
  EXPECT_THAT(CallTargets(m), ElementsAre("full", "add"));
  EXPECT_TRUE(m.tensors().empty());
}

// --- External data ----------------------------------------------------------

class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/onnx_ext_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // 8 bytes of padding, then [1,2,3,4] (unaligned), then at 64 [5,6].
    std::string bytes(72, '\0');
    const float a[4] = {1, 2, 3, 4};
    const float c[2] = {5, 6};
    std::memcpy(bytes.data() + 8, a, sizeof(a));
    std::memcpy(bytes.data() + 64, c, sizeof(c));
    Write(dir_ + "/weights.bin", bytes);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static void Write(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // A model whose output is an external initializer.
  std::string SaveModel(const std::string& location, int64_t offset,
                        int64_t length, std::vector<int64_t> dims) {
    ModelBuilder b;
    TP* t = b.NewTensor("w", TP::FLOAT, dims);
    t->set_data_location(TP::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      onnx::StringStringEntryProto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", location);
    if (offset >= 0) add("offset", std::to_string(offset));
    if (length >= 0) add("length", std::to_string(length));
    b.Output("w");
    std::string path = dir_ + "/model.onnx";
    Write(path, b.model().SerializeAsString());
    return path;
  }

  std::string dir_;
};

TEST_F(OnnxExternalData, ReadsUnalignedAndAlignedTensors) {
  ONNX_ASSERT_OK_AND_ASSIGN(
      m, ImportOnnxFile(SaveModel("weights.bin", 8, 16, {2, 2})));
  ONNX_ASSERT_OK_AND_ASSIGN(out, RunModule(m, {}));
  ExpectTensor(out[0], DType::kF32, {2, 2}, {1, 2, 3, 4});
  ONNX_ASSERT_OK_AND_ASSIGN(
      m2, ImportOnnxFile(SaveModel("weights.bin", 64, -1, {2})));
  ONNX_ASSERT_OK_AND_ASSIGN(out2, RunModule(m2, {}));
  ExpectTensor(out2[0], DType::kF32, {2}, {5, 6});
}

TEST_F(OnnxExternalData, RefusesPathsOutsideTheModelDirectory) {
  absl::StatusOr<Module> m =
      ImportOnnxFile(SaveModel("../weights.bin", 0, 16, {4}));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("model.onnx: initializer 'w'"));
  EXPECT_THAT(m.status().message(),
              HasSubstr("location '../weights.bin' is outside the model's "
                        "directory"));
  m = ImportOnnxFile(SaveModel("/etc/passwd", 0, 16, {4}));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("is an absolute path"));
  // A symbolic link that leads out of the directory is refused too.
  std::string outside = dir_ + "_outside.bin";
  Write(outside, std::string(16, '\0'));
  std::filesystem::create_symlink(outside, dir_ + "/link.bin");
  m = ImportOnnxFile(SaveModel("link.bin", 0, 16, {4}));
  std::filesystem::remove(outside);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("outside the model's directory"));
}

TEST_F(OnnxExternalData, RefusesRangesOutsideTheFile) {
  absl::StatusOr<Module> m =
      ImportOnnxFile(SaveModel("weights.bin", 64, 16, {4}));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("external data file 'weights.bin' has 72 bytes, but "
                        "the tensor needs bytes 64 to 80"));
  m = ImportOnnxFile(SaveModel("weights.bin", 0, 12, {4}));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("external data length 12 does not match the 16 bytes"));
  m = ImportOnnxFile(SaveModel("missing.bin", 0, 16, {4}));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("cannot open external data file"));
}

}  // namespace
}  // namespace graft::onnx_test

#else  // !GRAFT_HAVE_ONNX

namespace graft {
namespace {

TEST(OnnxImport, WithoutOnnxSaysHowToGetIt) {
  EXPECT_FALSE(HaveOnnx());
  absl::StatusOr<Module> m = ImportOnnxFile("model.onnx");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(m.status().message(), ::testing::HasSubstr("model.onnx"));
  EXPECT_THAT(m.status().message(),
              ::testing::HasSubstr("apt-get install libonnx-dev"));
}

}  // namespace
}  // namespace graft

#endif  // GRAFT_HAVE_ONNX
