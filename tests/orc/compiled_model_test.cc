// Compiled model files (.gcx): written from orc executables, loaded and run
// by graft::runtime with no LLVM; damaged, foreign and mismatched files
// refused with clear errors.

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/orc/compiled_model_writer.h"
#include "backends/orc/llvm_jit.h"
#include "gmock/gmock.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "onnx/onnx_import.h"
#include "passes/quantize/lower.h"
#include "quantize/quantize_model.h"
#include "runtime/artifact.h"
#include "runtime/compiled_model.h"
#include "runtime/cpu_features.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/cache_dirs.h"
#include "tests/backends/interp_test_util.h"
#include "tests/backends/model_files.h"
#include "tests/orc/orc_test_util.h"

namespace graft::orc_test {
namespace {

namespace fs = std::filesystem;
using ::graft::backend_test::ModelFiles;
using ::graft::backend_test::RandomInputs;
using ::graft::interp_test::FreshSeed;
using ::graft::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Layers large enough (20k multiply-adds) to run through oneDNN with
// packed weights rather than as generated loops.
constexpr absl::string_view kMlp = R"(
tensor w : f32[512,8] = random(seed=1)
tensor b : f32[512] = random(seed=2)
tensor w2 : f32[8,512] = random(seed=3)

graph():
    %x : f32[5,8] = placeholder[target=x]
    %w : f32[512,8] = get_attr[target=w]
    %b : f32[512] = get_attr[target=b]
    %w2 : f32[8,512] = get_attr[target=w2]
    %fc : f32[5,512] = call_function[target=linear](args = (%x, %w), kwargs = {bias: %b})
    %relu : f32[5,512] = call_function[target=relu](args = (%fc,), kwargs = {})
    %fc2 : f32[5,8] = call_function[target=linear](args = (%relu, %w2), kwargs = {})
    %t : f32[5,8] = call_function[target=tanh](args = (%fc2,), kwargs = {})
    %e : f32[5,8] = call_function[target=exp](args = (%t,), kwargs = {})
    return e
)";

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/graft_gcx_", getpid(), "_", name);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Compiles `module` on orc for the types of `inputs` and writes it to `path`.
absl::StatusOr<std::unique_ptr<Executable>> CompileAndWrite(const Module& module,
                                                            const std::vector<Tensor>& inputs,
                                                            const std::string& path) {
  CompileOptions options;
  for (const Tensor& t : inputs) options.input_types.push_back(t.type());
  absl::StatusOr<std::unique_ptr<Executable>> e = Orc().Compile(module, options);
  if (!e.ok()) return e.status();
  absl::Status s = Orc().WriteCompiledModel(**e, path);
  if (!s.ok()) return s;
  return e;
}

void ExpectBitwiseEqual(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].BitwiseEqual(want[i])) << "output " << i;
  }
}

struct MlpFile {
  std::string path;
  std::vector<Tensor> inputs;
  std::vector<Tensor> want;  // From the orc executable it was written from.
};

MlpFile WriteMlp(const std::string& name) {
  MlpFile f;
  f.path = TempPath(name);
  absl::StatusOr<Module> module = ParseModule(kMlp);
  EXPECT_OK(module.status());
  f.inputs = {RandomTensor(DType::kF32, {5, 8}, FreshSeed())};
  absl::StatusOr<std::unique_ptr<Executable>> e = CompileAndWrite(*module, f.inputs, f.path);
  EXPECT_OK(e.status());
  absl::StatusOr<std::vector<Tensor>> want = (*e)->Run(f.inputs);
  EXPECT_OK(want.status());
  f.want = *want;
  return f;
}

TEST(CompiledModel, RunsAsTheJitDoesOnEveryModel) {
  backend_test::FindSourceDir();
  const std::vector<std::string> files = ModelFiles(HaveOnnx());
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  int compiled = 0;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    ASSERT_OK_AND_ASSIGN(Module module, LoadModel(file));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(module, {}));
    const std::vector<Tensor> inputs = RandomInputs(reference->input_signature(), seed);
    const std::string path = TempPath(absl::StrCat(compiled, ".gcx"));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> jit, CompileAndWrite(module, inputs, path));
    ++compiled;
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, jit->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                         runtime::CompiledModel::Load(path));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, model->Run(inputs));
    // The same code and the same library calls: the same bits.
    ExpectBitwiseEqual(got, want);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> interp, reference->Run(inputs));
    ExpectAllClose(got, interp, kReduceTol, reference->output_signature());
    ASSERT_EQ(model->inputs().size(), inputs.size());
    EXPECT_EQ(model->inputs()[0].name, reference->input_signature()[0].name);
    fs::remove(path);
  }
  EXPECT_EQ(compiled, static_cast<int>(files.size()));
}

// int8 matrix products and convolutions keep their packed s8 weights in
// the file as the float ones do.
TEST(CompiledModel, Int8ProductsRunAsTheJitDoes) {
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty() || !HaveOnnx()) GTEST_SKIP() << "no test models";
  for (const char* name : {"cnn", "mlp"}) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(
        Module module,
        LoadModel(backend_test::SourceDir() + "/tests/onnx_models/" + name + "/model.onnx"));
    quantize::QuantizeOptions options;
    ASSERT_OK_AND_ASSIGN(options.calibration, quantize::RandomSamples(module, 4, 1));
    ASSERT_OK_AND_ASSIGN(quantize::QuantizeResult q, quantize::QuantizeModel(module, options));
    ASSERT_OK_AND_ASSIGN(passes::quantize::LowerReport audit, passes::quantize::Lower(q.module));
    ASSERT_EQ(audit.int8_macs, audit.total_macs);
    if (!Orc().CanRun(*q.module.graph().FindNode(audit.lowered[0]), {}).ok()) {
      GTEST_SKIP() << "this CPU runs int8 products on the interpreter (no VNNI)";
    }
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(q.module, {}));
    const std::vector<Tensor> inputs = RandomInputs(reference->input_signature(), FreshSeed());
    const std::string path = TempPath(absl::StrCat(name, "_int8.gcx"));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> jit, CompileAndWrite(q.module, inputs, path));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, jit->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                         runtime::CompiledModel::Load(path));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, model->Run(inputs));
    ExpectBitwiseEqual(got, want);
    fs::remove(path);
  }
}

TEST(CompiledModel, ConcurrentRunsAgree) {
  MlpFile f = WriteMlp("concurrent.gcx");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                       runtime::CompiledModel::Load(f.path));
  std::vector<std::thread> threads;
  std::vector<bool> ok(4, false);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      bool good = true;
      for (int i = 0; i < 50; ++i) {
        absl::StatusOr<std::vector<Tensor>> got = model->Run(f.inputs);
        good &= got.ok() && got->size() == 1 && (*got)[0].BitwiseEqual(f.want[0]);
      }
      ok[t] = good;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

// Constant weights are kept as oneDNN packed them, once: the plain copies
// of the two linear layers' weights are not written.
TEST(CompiledModel, WeightsAreKeptPackedOnce) {
  MlpFile f = WriteMlp("packed.gcx");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                       runtime::CompiledModel::Load(f.path));
  const runtime::ArtifactMetadata& m = model->metadata();
  if (m.packing_identity == "none") GTEST_SKIP() << "built without oneDNN";
  ASSERT_EQ(m.packed.size(), 2u);
  EXPECT_EQ(m.packing_identity, runtime::PackingIdentity());
  for (const runtime::LibraryCallSpec& spec : m.library_calls) {
    EXPECT_GE(spec.packed_index, 0) << spec.label;
    EXPECT_EQ(spec.weights_state, -1) << spec.label;
  }
  uint64_t plain = 0;
  for (const runtime::TensorRange& t : m.tensors) plain += t.bytes;
  EXPECT_EQ(plain, 512 * 4u);  // Only the bias b: f32[512].
}

// Odd programs: weights that are also the input of their own product (the
// file must keep their plain form beside the packed one), and products
// with nothing to sum or write (no oneDNN primitive).
TEST(CompiledModel, TiedWeightsAndEmptyProducts) {
  struct Case {
    const char* name;
    const char* text;
    std::vector<int64_t> input;
  };
  const Case cases[] = {
      {"tied", R"(
tensor w : f32[64,64] = random(seed=1)
graph():
    %x : f32[3,64] = placeholder[target=x]
    %w : f32[64,64] = get_attr[target=w]
    %ww : f32[64,64] = call_function[target=linear](args = (%w, %w), kwargs = {})
    %y : f32[3,64] = call_function[target=matmul](args = (%x, %ww), kwargs = {})
    return y
)", {3, 64}},
      {"empty", R"(
tensor w : f32[4,8] = random(seed=1)
graph():
    %x : f32[0,8] = placeholder[target=x]
    %w : f32[4,8] = get_attr[target=w]
    %y : f32[0,4] = call_function[target=linear](args = (%x, %w), kwargs = {})
    return y
)", {0, 8}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(Module module, ParseModule(c.text));
    const std::vector<Tensor> inputs = {RandomTensor(DType::kF32, c.input, FreshSeed())};
    const std::string path = TempPath(absl::StrCat(c.name, ".gcx"));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> jit, CompileAndWrite(module, inputs, path));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                         runtime::CompiledModel::Load(path));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, model->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, jit->Run(inputs));
    ExpectBitwiseEqual(got, want);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(module, {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> reference, interp->Run(inputs));
    ExpectAllClose(got, reference, kReduceTol, interp->output_signature());
  }
}

// Loading and running with one library thread leaves the calling thread's
// own OpenMP setting as it was.
TEST(CompiledModel, RunsLeaveTheCallersOpenMpSettingAlone) {
  const auto get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  const auto set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (get == nullptr || set == nullptr) GTEST_SKIP() << "no OpenMP in this process";
  MlpFile f = WriteMlp("openmp.gcx");
  set(3);
  runtime::LoadOptions options;
  options.threads = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                       runtime::CompiledModel::Load(f.path, options));
  EXPECT_EQ(get(), 3);
  ASSERT_OK(model->Run(f.inputs).status());
  EXPECT_EQ(get(), 3);
}

TEST(CompiledModel, WrongInputsAreRefused) {
  MlpFile f = WriteMlp("inputs.gcx");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                       runtime::CompiledModel::Load(f.path));
  EXPECT_THAT(model->Run({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("takes 1 inputs, got 0")));
  EXPECT_THAT(model->Run({RandomTensor(DType::kF32, {6, 8}, 1)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 'x' must be f32[5, 8], got f32[6, 8]")));
  EXPECT_THAT(model->Run({RandomTensor(DType::kF64, {5, 8}, 1)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got f64[5, 8]")));
}

// Each part of the file, damaged by one flipped bit, is named.
TEST(CompiledModel, DamageIsDetectedInEveryPart) {
  MlpFile f = WriteMlp("damage.gcx");
  const std::string good = ReadBytes(f.path);
  ASSERT_OK_AND_ASSIGN(runtime::ArtifactView view, runtime::ParseArtifact(good));
  const size_t object_at = view.object.data() - good.data();
  const size_t data_at = view.data.data() - good.data();
  struct Case {
    size_t offset;
    const char* part;
  };
  for (const Case& c : {Case{runtime::kArtifactHeaderBytes + 3, "metadata"},
                        Case{object_at + view.object.size() / 2, "machine code"},
                        Case{data_at + 5, "weight"}}) {
    SCOPED_TRACE(c.part);
    std::string bad = good;
    bad[c.offset] ^= 0x10;
    const std::string path = TempPath("damaged.gcx");
    WriteBytes(path, bad);
    EXPECT_THAT(runtime::CompiledModel::Load(path),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(path), HasSubstr(c.part), HasSubstr("damaged"))));
  }
}

// Cut anywhere, a file is an error, never a crash or a hang.
TEST(CompiledModel, TruncatedFilesAreErrors) {
  MlpFile f = WriteMlp("truncated.gcx");
  const std::string good = ReadBytes(f.path);
  const std::string path = TempPath("cut.gcx");
  for (size_t n = 0; n < good.size(); n += n < 512 ? 1 : 97) {
    WriteBytes(path, good.substr(0, n));
    EXPECT_FALSE(runtime::CompiledModel::Load(path).ok()) << n << " bytes";
  }
}

// Without checksums (as the fuzz target parses), every bit flipped in the
// metadata still gives a clean error or a model that loads.
TEST(CompiledModel, FlippedMetadataNeverCrashesTheParser) {
  MlpFile f = WriteMlp("flip.gcx");
  const std::string good = ReadBytes(f.path);
  ASSERT_OK_AND_ASSIGN(runtime::ArtifactView view, runtime::ParseArtifact(good));
  const size_t end = view.object.data() - good.data();
  for (size_t i = 0; i < end; ++i) {
    for (int bit : {0, 3, 7}) {
      std::string bad = good;
      bad[i] ^= static_cast<char>(1 << bit);
      (void)runtime::ParseArtifact(bad, /*verify_checksums=*/false);
    }
  }
}

TEST(CompiledModel, OtherFormatVersionsAreRefused) {
  MlpFile f = WriteMlp("version.gcx");
  std::string bytes = ReadBytes(f.path);
  bytes[8] = 2;  // The major version, little-endian.
  const std::string path = TempPath("v2.gcx");
  WriteBytes(path, bytes);
  EXPECT_THAT(runtime::CompiledModel::Load(path),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("format 2."), HasSubstr("reads format 1.x"))));
  WriteBytes(path, "GRAFT is not this\n");
  EXPECT_THAT(runtime::CompiledModel::Load(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a graft compiled")));
  EXPECT_THAT(runtime::CompiledModel::Load(TempPath("missing.gcx")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cannot open")));
}

TEST(CompiledModel, CodeForCpuFeaturesTheMachineLacksIsRefused) {
  MlpFile f = WriteMlp("features.gcx");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                       runtime::CompiledModel::Load(f.path));
  const std::vector<std::string>& needed = model->metadata().cpu_features;
  if (needed.empty()) GTEST_SKIP() << "no CPU features recorded on this architecture";
  // Every recorded feature is one this machine has.
  for (const std::string& feature : needed) {
    EXPECT_EQ(runtime::HostCpuFeatures().count(feature), 1u) << feature;
  }
  std::set<std::string> lacking = runtime::HostCpuFeatures();
  lacking.erase(needed.back());
  runtime::LoadOptions options;
  options.host_features = &lacking;
  EXPECT_THAT(runtime::CompiledModel::Load(f.path, options),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(needed.back()), HasSubstr("which this CPU lacks"))));
  EXPECT_THAT(runtime::CheckCpuFeatures({"sse2", "quantum-fma"}, {"sse2"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot check: quantum-fma")));
}

// Code for a named CPU: a baseline one's file runs here and matches the
// interpreter, and records only that CPU's features; one for a CPU with
// features this machine lacks is refused where it would run.
TEST(CompiledModel, FilesForOtherCpus) {
  ASSERT_OK_AND_ASSIGN(Module module, ParseModule(kMlp));
  const std::vector<Tensor> inputs = {RandomTensor(DType::kF32, {5, 8}, FreshSeed())};
  CompileOptions options;
  options.input_types = {inputs[0].type()};
  options.options["target_cpu"] = "x86-64-v2";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> baseline, Orc().Compile(module, options));
  const std::string path = TempPath("baseline.gcx");
  ASSERT_OK(Orc().WriteCompiledModel(*baseline, path));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> model,
                       runtime::CompiledModel::Load(path));
  const std::vector<std::string>& features = model->metadata().cpu_features;
  EXPECT_THAT(features, ::testing::Contains("sse4.2"));
  EXPECT_THAT(features, ::testing::Not(::testing::Contains("avx")));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, model->Run(inputs));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(module, {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, interp->Run(inputs));
  ExpectAllClose(got, want, kReduceTol, interp->output_signature());

  options.options["target_cpu"] = "sapphirerapids";  // AMX, AVX512-FP16.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> other, Orc().Compile(module, options));
  ASSERT_OK(Orc().WriteCompiledModel(*other, path));
  if (runtime::HostCpuFeatures().count("amx-tile") == 0) {
    EXPECT_THAT(runtime::CompiledModel::Load(path),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr("amx-tile"), HasSubstr("which this CPU lacks"))));
    EXPECT_THAT(other->Run(inputs), StatusIs(absl::StatusCode::kFailedPrecondition,
                                             HasSubstr("does not run here")));
  }
  // This CPU by its own name: the file loads here (system features such as
  // pku or rdpru, which no generated code uses, are not required).
  options.options["target_cpu"] = orc::DetectHostCpu().name;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> named, Orc().Compile(module, options));
  ASSERT_OK(Orc().WriteCompiledModel(*named, path));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::CompiledModel> here,
                       runtime::CompiledModel::Load(path));
  ASSERT_OK(here->Run(inputs).status());
  // x86-64-v4 implies AVX-512 through its named features.
  ASSERT_OK_AND_ASSIGN(const orc::HostCpu v4, orc::TargetCpu("x86-64-v4"));
  EXPECT_TRUE(v4.has_avx512);
  options.options["target_cpu"] = "pentium-mmx-9000";
  EXPECT_THAT(Orc().Compile(module, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown x86-64 CPU")));
}

TEST(CompiledModel, OnlyFixedShapesAndWholeModelsAreWritten) {
  ASSERT_OK_AND_ASSIGN(Module symbolic, ParseModule(R"(
graph():
    %x : f32[n,4] = placeholder[target=x]
    %y : f32[n,4] = call_function[target=relu](args = (%x,), kwargs = {})
    return y
)"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Orc().Compile(symbolic, {}));
  const std::string path = TempPath("symbolic.gcx");
  EXPECT_THAT(Orc().WriteCompiledModel(*e, path),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--dim")));
  EXPECT_FALSE(fs::exists(path));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> interp, Interp().Compile(symbolic, {}));
  EXPECT_THAT(Orc().WriteCompiledModel(*interp, path),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--explain")));
  EXPECT_THAT(Interp().WriteCompiledModel(*interp, path),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("orc does")));
}

TEST(CompiledModel, AFailedWriteLeavesNoFile) {
  ASSERT_OK_AND_ASSIGN(Module module, ParseModule(kMlp));
  const std::string path = TempPath("no/such/dir/model.gcx");
  EXPECT_FALSE(CompileAndWrite(module, {RandomTensor(DType::kF32, {5, 8}, 1)}, path).ok());
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace graft::orc_test
