// ONNX import of bad or unsupported models: each gives one error that names
// the file and, where there is one, the ONNX node, and never crashes.

#include "gtest/gtest.h"

#ifdef GRAFT_HAVE_ONNX

#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "tests/onnx/onnx_test_util.h"

namespace graft::onnx_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A file of its own for this process: test runs may share the directory.
std::string TempFile(const std::string& name, const std::string& bytes) {
  std::string path =
      ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(OnnxImportErrors, NotAProtobuf) {
  std::string path = TempFile("garbage.onnx", "\xff\xff\xff\xff not onnx");
  absl::StatusOr<Module> m = ImportOnnxFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            path + ": not a valid ONNX model (the protobuf does not parse)");
}

TEST(OnnxImportErrors, EmptyFileHasNoGraph) {
  std::string path = TempFile("empty.onnx", "");
  absl::StatusOr<Module> m = ImportOnnxFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            path + ": not an ONNX model: it has no graph");
}

TEST(OnnxImportErrors, MissingFile) {
  absl::StatusOr<Module> m = ImportOnnxFile("/nonexistent/model.onnx");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("/nonexistent/model.onnx"));
}

ModelBuilder ReluModel(int64_t opset) {
  ModelBuilder b(opset);
  b.FloatInput("x", {2});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y");
  return b;
}

TEST(OnnxImportErrors, OpsetsOutsideTheRange) {
  ModelBuilder old = ReluModel(6);
  EXPECT_THAT(ImportError(old),
              StartsWith("test.onnx: opset 6 is not supported: graft imports "
                         "opsets 7 to 24"));
  ModelBuilder future = ReluModel(25);
  EXPECT_THAT(ImportError(future), HasSubstr("opset 25 is not supported"));
  for (int64_t opset : {7, 9, 11, 12, 13, 17, 18, 20, 21, 22, 23, 24}) {
    ModelBuilder ok = ReluModel(opset);
    EXPECT_EQ(ImportError(ok), "") << "opset " << opset;
  }
  ModelBuilder none = ReluModel(17);
  none.model().mutable_opset_import(0)->set_domain("ai.onnx.ml");
  EXPECT_EQ(ImportError(none),
            "test.onnx: the model imports no opset of the default ONNX domain");
}

// Counts the opens of one file (through inotify), to see which files an
// import reads.
class OpenCounter {
 public:
  explicit OpenCounter(const std::string& path)
      : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ >= 0) watch_ = inotify_add_watch(fd_, path.c_str(), IN_OPEN);
  }
  ~OpenCounter() {
    if (fd_ >= 0) close(fd_);
  }
  OpenCounter(const OpenCounter&) = delete;
  OpenCounter& operator=(const OpenCounter&) = delete;

  bool ok() const { return fd_ >= 0 && watch_ >= 0; }

  // The opens since the last call. The kernel queues the event before
  // open() returns, so every open made so far is counted.
  int Take() {
    int opens = 0;
    alignas(inotify_event) char buffer[4096];
    for (;;) {
      const ssize_t got = read(fd_, buffer, sizeof(buffer));
      if (got <= 0) return opens;
      for (ssize_t at = 0; at < got;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if (event->mask & IN_OPEN) ++opens;
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
  }

 private:
  int fd_;
  int watch_ = -1;
};

// An unsupported opset is refused before the initializers are read: the
// file that holds a model's external data is never opened.
TEST(OnnxImportErrors, UnsupportedOpsetStopsBeforeTheInitializers) {
  std::string dir = ::testing::TempDir() + "/onnx_opset_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr) << std::strerror(errno);
  const std::string weights = dir + "/weights.bin";
  {
    const float values[2] = {1, 2};
    std::ofstream f(weights, std::ios::binary);
    f.write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  auto model = [](int64_t opset) {
    ModelBuilder b(opset);
    TP* w = b.NewTensor("w", TP::FLOAT, {2});
    w->set_data_location(TP::EXTERNAL);
    onnx::StringStringEntryProto* location = w->add_external_data();
    location->set_key("location");
    location->set_value("weights.bin");
    b.Output("w");
    return b;
  };
  OpenCounter opens(weights);
  ASSERT_TRUE(opens.ok()) << "inotify: " << std::strerror(errno);

  // With a supported opset the import reads the file, and the counter sees
  // it.
  ModelBuilder supported = model(17);
  absl::StatusOr<Module> m =
      ImportOnnxModel(supported.model(), dir, "test.onnx", {});
  EXPECT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(opens.Take(), 1);

  ModelBuilder old = model(6);
  m = ImportOnnxModel(old.model(), dir, "test.onnx", {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()),
              StartsWith("test.onnx: opset 6 is not supported"));
  EXPECT_EQ(opens.Take(), 0);
  std::filesystem::remove_all(dir);
}

TEST(OnnxImportErrors, UnknownInputValue) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  b.Node("Add", {"x", "nope"}, {"y"}, "add1");
  b.Output("y");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'add1' (Add): input 1 'nope' is not defined: no "
            "graph input, initializer or earlier node output has that name");
}

TEST(OnnxImportErrors, UnnamedNodeIsNamedByPosition) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  b.Node("Relu", {"x"}, {"r"}, "relu");
  b.Node("Add", {"r", "nope"}, {"y"})->clear_name();
  b.Output("y");
  EXPECT_THAT(ImportError(b), StartsWith("test.onnx: node #1 (Add): "));
}

TEST(OnnxImportErrors, UnsupportedOpAndDomain) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  b.Node("NonZero", {"x"}, {"y"}, "nz");
  b.Output("y");
  EXPECT_THAT(ImportError(b),
              StartsWith("test.onnx: node 'nz' (NonZero): op type 'NonZero' is "
                         "not supported"));
  ModelBuilder c;
  c.FloatInput("x", {2});
  c.Node("Inverse", {"x"}, {"y"}, "inv")->set_domain("com.microsoft");
  c.Output("y");
  EXPECT_EQ(ImportError(c),
            "test.onnx: node 'inv' (com.microsoft.Inverse): op type 'Inverse' of the "
            "domain 'com.microsoft' is not supported (graft imports the default ONNX "
            "domain, the model's local functions, and the com.microsoft operators "
            "docs/onnx.md lists)");
  // A supported one with too few inputs says so.
  ModelBuilder d;
  d.FloatInput("x", {2});
  d.Node("FusedGemm", {"x"}, {"y"}, "fg")->set_domain("com.microsoft");
  d.Output("y");
  EXPECT_EQ(ImportError(d),
            "test.onnx: node 'fg' (com.microsoft.FusedGemm): needs at least 2 inputs "
            "and an output, has 1 and 1");
}

TEST(OnnxImportErrors, UnsupportedAttributes) {
  ModelBuilder unknown;
  unknown.FloatInput("x", {2});
  AttrInt(unknown.Node("Relu", {"x"}, {"y"}, "relu"), "foo", 1);
  unknown.Output("y");
  EXPECT_EQ(ImportError(unknown),
            "test.onnx: node 'relu' (Relu): attribute 'foo' is not supported");

  ModelBuilder wrap(19);
  wrap.FloatInput("x", {1, 3});
  wrap.IntsConstant("pads", {0, 1, 0, 1});
  AttrString(wrap.Node("Pad", {"x", "pads"}, {"y"}, "pad"), "mode", "wrap");
  wrap.Output("y");
  EXPECT_EQ(ImportError(wrap),
            "test.onnx: node 'pad' (Pad): mode \"wrap\" is not supported "
            "(constant, reflect, edge)");

  ModelBuilder conv4d;
  conv4d.FloatInput("x", {1, 1, 2, 2, 2, 2});
  conv4d.FloatInitializer("w", {1, 1, 1, 1, 1, 1}, {1});
  conv4d.Node("Conv", {"x", "w"}, {"y"}, "conv");
  conv4d.Output("y");
  EXPECT_THAT(ImportError(conv4d),
              StartsWith("test.onnx: node 'conv' (Conv): only 1-D, 2-D and 3-D Conv "
                         "is supported"));
  ModelBuilder pool4d;
  pool4d.FloatInput("x", {1, 1, 2, 2, 2, 2});
  AttrInts(pool4d.Node("MaxPool", {"x"}, {"y"}, "pool"), "kernel_shape", {2, 2, 2, 2});
  pool4d.Output("y");
  EXPECT_THAT(ImportError(pool4d),
              StartsWith("test.onnx: node 'pool' (MaxPool): only 1-D, 2-D and 3-D MaxPool "
                         "is supported"));
  // A 3-D convolution folds its frames into the batch: they must be known.
  ModelBuilder frames;
  frames.Input("x", TP::FLOAT, std::vector<std::string>{"1", "1", "t", "2", "2"});
  frames.FloatInitializer("w", {1, 1, 1, 1, 1}, {1});
  frames.Node("Conv", {"x", "w"}, {"y"}, "conv");
  frames.Output("y");
  EXPECT_THAT(ImportError(frames),
              StartsWith("test.onnx: node 'conv' (Conv): a 3-D Conv needs static channels, "
                         "frames, height and width"));
  // Five frames of kernel over three frames of input.
  ModelBuilder long_kernel;
  long_kernel.FloatInput("x", {2, 1, 3, 2, 2});
  long_kernel.FloatInitializer("w", {1, 1, 5, 1, 1}, {1, 1, 1, 1, 1});
  AttrInts(long_kernel.Node("Conv", {"x", "w"}, {"y"}, "conv"), "strides", {3, 1, 1});
  long_kernel.Output("y");
  EXPECT_THAT(ImportError(long_kernel),
              StartsWith("test.onnx: node 'conv' (Conv): the kernel [5,1,1] is larger than the "
                         "padded input"));

  ModelBuilder training;
  training.FloatInput("x", {1, 1, 1, 1});
  for (const char* name : {"s", "b", "m", "v"}) {
    training.FloatInitializer(name, {1}, {1});
  }
  AttrInt(training.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"},
                        "bn"),
          "training_mode", 1);
  training.Output("y");
  EXPECT_THAT(
      ImportError(training),
      HasSubstr("node 'bn' (BatchNormalization): training_mode=1 is not "
                "supported"));
}

TEST(OnnxImportErrors, AttributeOfTheWrongType) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  AttrFloat(b.Node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1.0f);
  b.Output("y");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'sm' (Softmax): attribute 'axis' must be INT, got "
            "FLOAT");
}

TEST(OnnxImportErrors, InitializerSizesAndTypes) {
  ModelBuilder raw;
  TP* t = raw.NewTensor("w", TP::FLOAT, {3});
  t->set_raw_data(std::string(8, '\0'));
  raw.Output("w");
  EXPECT_EQ(ImportError(raw),
            "test.onnx: initializer 'w': raw_data has 8 bytes but its type "
            "f32[3] needs 12");

  ModelBuilder typed;
  typed.FloatInitializer("w", {3}, {1, 2});
  typed.Output("w");
  EXPECT_EQ(ImportError(typed),
            "test.onnx: initializer 'w': has 2 values in float_data but its "
            "shape [3] needs 3");

  ModelBuilder empty;
  empty.NewTensor("w", TP::INT64, {2});
  empty.Output("w");
  EXPECT_THAT(ImportError(empty),
              HasSubstr("initializer 'w': has no data (no raw_data, no "
                        "int64_data and no external data)"));

  ModelBuilder negative;
  negative.FloatInitializer("w", {-1}, {});
  negative.Output("w");
  EXPECT_THAT(ImportError(negative),
              HasSubstr("initializer 'w': has a negative dim in [-1]"));

  ModelBuilder huge;
  huge.FloatInitializer("w", {1 << 30, 1 << 30, 1 << 30}, {1});
  huge.Output("w");
  EXPECT_THAT(ImportError(huge), HasSubstr("is too large"));

  ModelBuilder strings;
  strings.NewTensor("s", TP::STRING, {1})->add_string_data("a");
  strings.Output("s");
  EXPECT_EQ(ImportError(strings),
            "test.onnx: initializer 's': element type STRING is not supported "
            "(graft has f32, f16, bf16, f64, i8, u8, i32, i64 and bool)");

  ModelBuilder input;
  input.Input("x", TP::UINT32, std::vector<int64_t>{2});
  input.Node("Identity", {"x"}, {"y"});
  input.Output("y");
  EXPECT_THAT(ImportError(input),
              HasSubstr("input 'x': element type UINT32 is not supported"));
}

TEST(OnnxImportErrors, MixedDtypes) {
  ModelBuilder b;
  b.FloatInput("x", {2});
  b.Input("i", TP::INT64, std::vector<int64_t>{2});
  b.Node("Add", {"x", "i"}, {"y"}, "add");
  b.Output("y");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'add' (Add): inputs have different dtypes "
            "(f32[2] and i64[2]); Add takes one dtype");
  ModelBuilder logic;
  logic.FloatInput("x", {2});
  logic.Node("And", {"x", "x"}, {"y"}, "and");
  logic.Output("y");
  EXPECT_EQ(ImportError(logic),
            "test.onnx: node 'and' (And): input 0 is f32[2], but And takes "
            "bool tensors");
}

TEST(OnnxImportErrors, InputWithoutShape) {
  ModelBuilder b;
  onnx::ValueInfoProto* x = b.model().mutable_graph()->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  EXPECT_EQ(ImportError(b),
            "test.onnx: input 'x' has no shape; give one with "
            "OnnxImportOptions::input_shapes");
  OnnxImportOptions options;
  options.input_shapes = {{"x", {3}}};
  EXPECT_EQ(ImportError(b, options), "");
}

// A negative-step Slice is a table of picked indices made at import: a
// huge one is refused at once rather than built.
TEST(OnnxImportErrors, AHugeReversedSliceIsRefused) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, std::vector<int64_t>{int64_t{1} << 40});
  b.Int64Initializer("starts", {1}, {-1});
  b.Int64Initializer("ends", {1}, {std::numeric_limits<int64_t>::min()});
  b.Int64Initializer("axes", {1}, {0});
  b.Int64Initializer("steps", {1}, {-1});
  b.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "flip");
  b.Output("y");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'flip' (Slice): a negative step picking 1099511627776 elements is not "
            "supported (at most 16777216)");
}

// Steps of +-2^63 on known values and on run-time ones take one element
// (the length's arithmetic once overflowed: a fuzzer's finding).
TEST(OnnxImportErrors, ExtremeSliceStepsTakeOneElement) {
  ModelBuilder b;
  b.FloatInput("x", {5, 3});
  b.Node("Shape", {"x"}, {"shape"});
  b.Int64Initializer("starts", {1}, {0});
  b.Int64Initializer("ends", {1}, {std::numeric_limits<int64_t>::max()});
  b.Int64Initializer("axes", {1}, {0});
  b.Int64Initializer("up", {1}, {std::numeric_limits<int64_t>::max()});
  b.Int64Initializer("last", {1}, {-1});
  b.Int64Initializer("before_first", {1}, {std::numeric_limits<int64_t>::min()});
  b.Int64Initializer("down", {1}, {std::numeric_limits<int64_t>::min()});
  b.Node("Slice", {"shape", "starts", "ends", "axes", "up"}, {"first_dim"});
  b.Node("Slice", {"x", "last", "before_first", "axes", "down"}, {"last_row"});
  b.Output("first_dim");
  b.Output("last_row");
  std::vector<Tensor> out = RunModel(b, {F32({5, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})});
  ASSERT_EQ(out.size(), 2u);
  ExpectTensor(out[0], DType::kI64, {1}, {5});
  ExpectTensor(out[1], DType::kF32, {1, 3}, {12, 13, 14});
}

// A resize to more positions than its import-time tables may hold.
TEST(OnnxImportErrors, AHugeResizeIsRefused) {
  ModelBuilder b;
  b.FloatInput("x", {1, 4});
  b.FloatInitializer("roi", {0}, {});
  b.FloatInitializer("scales", {2}, {1, 4e6f});
  b.Node("Resize", {"x", "roi", "scales"}, {"y"}, "up");
  b.Output("y");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'up' (Resize): resizing dim 1 of f32[1,4] to 16000000 positions is not "
            "supported (at most 4194304 in nearest mode: its taps are tables made at import)");
  // Cubic reads four positions a position: a quarter as many.
  ModelBuilder cubic;
  cubic.FloatInput("x", {1, 4});
  cubic.FloatInitializer("roi", {0}, {});
  cubic.FloatInitializer("scales", {2}, {1, 4e5f});
  AttrString(cubic.Node("Resize", {"x", "roi", "scales"}, {"y"}, "up"), "mode", "cubic");
  cubic.Output("y");
  EXPECT_EQ(ImportError(cubic),
            "test.onnx: node 'up' (Resize): resizing dim 1 of f32[1,4] to 1600000 positions is not "
            "supported (at most 1048576 in cubic mode: its taps are tables made at import)");
}

TEST(OnnxImportErrors, RunTimeShapes) {
  ModelBuilder b;
  b.FloatInput("x", {6});
  b.Input("shape", TP::INT64, std::vector<int64_t>{2});
  b.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.Output("y");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'reshape' (Reshape): the shape input 'shape' must "
            "be known at import time (a constant, an initializer, or shape "
            "arithmetic on static shapes), but it is computed at run time");
}

TEST(OnnxImportErrors, TypeRuleErrorsNameTheNode) {
  ModelBuilder b;
  b.FloatInput("a", {2, 3});
  b.FloatInput("b", {4, 5});
  b.Node("MatMul", {"a", "b"}, {"y"}, "mm");
  b.Output("y");
  EXPECT_THAT(ImportError(b),
              StartsWith("test.onnx: node 'mm' (MatMul): matmul: input "
                         "f32[2,3] has 3 columns but other f32[4,5] has 4 "
                         "rows"));
}

TEST(OnnxImportErrors, GraphStructure) {
  ModelBuilder missing_output;
  missing_output.FloatInput("x", {2});
  missing_output.Output("z");
  EXPECT_EQ(ImportError(missing_output),
            "test.onnx: graph output 'z' is not computed by any node");

  ModelBuilder twice;
  twice.FloatInput("x", {2});
  twice.Node("Relu", {"x"}, {"y"}, "a");
  twice.Node("Relu", {"x"}, {"y"}, "b");
  twice.Output("y");
  EXPECT_EQ(ImportError(twice),
            "test.onnx: node 'b' (Relu): value 'y' is defined more than once "
            "(ONNX graphs assign each name once)");

  ModelBuilder no_outputs;
  no_outputs.FloatInput("x", {2});
  EXPECT_EQ(ImportError(no_outputs), "test.onnx: the graph has no outputs");

  ModelBuilder late;
  late.FloatInput("x", {2});
  late.Node("Mish", {"x"}, {"y"}, "mish");
  late.Output("y");
  late.model().mutable_opset_import(0)->set_version(13);
  EXPECT_EQ(ImportError(late),
            "test.onnx: node 'mish' (Mish): Mish "
            "needs opset 18 or later, but the model imports opset 13");
}

TEST(OnnxImportErrors, UnsupportedOutputs) {
  ModelBuilder b;
  b.FloatInput("x", {1, 1, 2, 2});
  onnx::NodeProto* pool = b.Node("MaxPool", {"x"}, {"y", "idx"}, "pool");
  AttrInts(pool, "kernel_shape", {2, 2});
  b.Output("y");
  b.Output("idx");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'pool' (MaxPool): output 1 (Indices) 'idx' is "
            "used, and graft does not support it");
}

TEST(OnnxImportErrors, FoldedShapeArithmeticErrors) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  b.Node("Shape", {"x"}, {"s"});
  b.IntsConstant("i", {5}, /*scalar=*/true);
  b.Node("Gather", {"s", "i"}, {"d"}, "g");
  b.Output("d");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'g' (Gather): index 5 is out of range for axis 0 "
            "of size 2");
}

TEST(OnnxImportErrors, SymbolicValuesCannotBeComputedAtRunTime) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, std::vector<std::string>{"batch", "3"});
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Cast", {"s"}, {"f"}, "cast");
  AttrInt(b.model().mutable_graph()->mutable_node(1), "to", TP::FLOAT);
  b.Output("f");
  EXPECT_EQ(ImportError(b),
            "test.onnx: node 'cast' (Cast): cannot compute a cast to f32 at "
            "import time: it depends on the symbolic dim 'batch'");
}

// Corrupting a valid model's bytes at random never crashes the importer.
TEST(OnnxImportErrors, CorruptedBytesNeverCrash) {
  ModelBuilder b;
  b.FloatInput("x", {2, 3});
  b.FloatInitializer("w", {2, 3}, {1, 2, 3, 4, 5, 6});
  b.FloatInitializer("bias", {2}, {1, 2});
  AttrInt(b.Node("Gemm", {"x", "w", "bias"}, {"h"}, "fc"), "transB", 1);
  b.Node("Shape", {"h"}, {"s"});
  b.IntsConstant("minus1", {-1});
  b.Node("Reshape", {"h", "minus1"}, {"y"});
  b.Output("y");
  const std::string bytes = b.model().SerializeAsString();
  uint32_t seed = 12345;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string copy = bytes;
    for (int k = 0; k < 3; ++k) {
      seed = seed * 1664525u + 1013904223u;
      copy[seed % copy.size()] = static_cast<char>(seed >> 24);
    }
    onnx::ModelProto model;
    if (!model.ParseFromString(copy)) continue;
    absl::StatusOr<Module> m =
        ImportOnnxModel(model, "/nonexistent", "x.onnx", {});
    if (!m.ok()) {
      EXPECT_THAT(std::string(m.status().message()), StartsWith("x.onnx: "));
    }
  }
}

}  // namespace
}  // namespace graft::onnx_test

#else  // !GRAFT_HAVE_ONNX

TEST(OnnxImportErrors, NeedsOnnx) {
  GTEST_SKIP() << "graft was built without ONNX (libonnx-dev)";
}

#endif  // GRAFT_HAVE_ONNX
