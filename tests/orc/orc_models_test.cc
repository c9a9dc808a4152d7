// Whole models on the orc backend (with the interpreter taking what orc
// does not claim) against the interpreter, as read and after the built-in
// pass pipelines; and orc executables in the on-disk compile cache.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/compile_cache.h"
#include "backends/disk_cache.h"
#include "backends/fallback_executable.h"
#include "backends/orc/cache_entry.h"
#include "backends/orc/orc_executable.h"
#include "backends/interp/constant_evaluator.h"
#include "gmock/gmock.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "tests/backends/cache_dirs.h"
#include "onnx/onnx_import.h"
#include "passes/pass_context.h"
#include "passes/pipeline.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/interp_test_util.h"
#include "tests/backends/model_files.h"
#include "tests/orc/orc_test_util.h"

namespace graft::orc_test {
namespace {

namespace fs = std::filesystem;
using ::graft::backend_test::ModelFiles;
using ::graft::backend_test::RandomInputs;
using ::graft::interp_test::FreshSeed;
using ::testing::SizeIs;

// The pipelines of `graft demo` and of a user who asks for everything.
constexpr const char* kPipelines[] = {
    "shape-prop,cse,dce,fuse-linear-activation,canonicalize",
    "shape-prop,canonicalize,fold-batchnorm,fold-constants,cse,dce,"
    "fuse-linear-activation,fuse-elementwise,shape-prop",
};

std::string Breaks(const CompileReport& report) {
  std::string text;
  for (const GraphBreak& b : report.breaks) {
    absl::StrAppend(&text, "\n  ", b.node, " (", b.op, "): ", b.reason);
  }
  return text;
}

// Compiles `module` on orc with fallback, runs it on `inputs` and compares
// with `want`. Returns the graph breaks, for the log.
void ExpectModelMatches(const Module& module, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>& want, const std::string& what) {
  SCOPED_TRACE(what);
  CompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                       CompileWithFallback(Orc(), module, {}, &report));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run(inputs));
  ExpectAllClose(got, want, kReduceTol, e->output_signature());
  std::printf("%s: %d partitions, %d on orc, %zu graph breaks%s\n", what.c_str(),
              report.partitions, report.backend_partitions, report.breaks.size(),
              Breaks(report).c_str());
}

TEST(OrcModels, EveryModelMatchesTheInterpreter) {
  backend_test::FindSourceDir();
  const std::vector<std::string> files = ModelFiles(HaveOnnx());
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  if (!HaveOnnx()) std::printf("ONNX import is not built: only .graft models run\n");
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    ASSERT_OK_AND_ASSIGN(Module module, LoadModel(path));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                         Interp().Compile(module, {}));
    const std::string name = absl::StrCat(
        fs::path(path).parent_path().filename().string(), "/",
        fs::path(path).filename().string());
    for (int64_t size : {3, 1}) {
      SCOPED_TRACE(absl::StrCat("symbols sized ", size));
      const std::vector<Tensor> inputs =
          RandomInputs(reference->input_signature(), seed, size);
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(inputs));
      ExpectModelMatches(module, inputs, want,
                         absl::StrCat(name, " with symbols sized ", size));
      for (const char* text : kPipelines) {
        SCOPED_TRACE(text);
        Module optimized = module.Clone();
        ASSERT_OK_AND_ASSIGN(passes::Pipeline pipeline,
                             passes::Pipeline::FromString(text));
        passes::PassContext ctx;
        ctx.constant_evaluator = interp::EvaluateNode;
        ASSERT_OK(pipeline.Run(optimized, ctx).status());
        ExpectModelMatches(optimized, inputs, want,
                           absl::StrCat("  after ", text));
      }
    }
  }
}

// A user's submodule (here from the partition pass) holding ops that are
// not pointwise: the backend inlines it and compiles its ops.
TEST(OrcModels, UserSubmodulesOfOtherOpsAreInlined) {
  backend_test::FindSourceDir();
  const std::vector<std::string> files = ModelFiles(false);
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  ASSERT_OK_AND_ASSIGN(Module module,
                       LoadModel(backend_test::SourceDir() + "/examples/models/mlp.graft"));
  ASSERT_OK_AND_ASSIGN(passes::Pipeline pipeline,
                       passes::Pipeline::FromString("partition{ops=linear;relu}"));
  passes::PassContext ctx;
  ASSERT_OK(pipeline.Run(module, ctx).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                       Interp().Compile(module, {}));
  const std::vector<Tensor> inputs = RandomInputs(reference->input_signature(), seed);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(inputs));
  ExpectModelMatches(module, inputs, want, "mlp.graft after partition");
}

// ---------------------------------------------------------------------------
// The on-disk cache.

// Layers large enough (20k multiply-adds) to run through oneDNN with
// packed weights rather than as generated loops.
constexpr absl::string_view kFixedMlp = R"(
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
    %sm : f32[5,8] = call_function[target=log_softmax](args = (%fc2,), kwargs = {dim: -1})
    return sm
)";

// The same program shape with other ops: its object must not load for the
// module above.
constexpr absl::string_view kOtherModule = R"(
graph():
    %x : f32[5,8] = placeholder[target=x]
    %e : f32[5,8] = call_function[target=exp](args = (%x,), kwargs = {})
    return e
)";

Module Parse(absl::string_view text) {
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_OK(m);
  return m.ok() ? *std::move(m) : Module();
}

using backend_test::FilesIn;
using backend_test::FreshDir;

// Flips `count` bytes of `path`, starting `from` bytes into it.
void FlipBytes(const std::string& path, int64_t from, int count) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << path;
  for (int i = 0; i < count; ++i) {
    f.seekg(from + i);
    char c;
    f.read(&c, 1);
    f.seekp(from + i);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
}

class OrcDiskCache : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = FreshSeed();
    std::mt19937_64 rng(seed_);
    input_ = RandomData(DType::kF32, {5, 8}, rng);
    module_ = Parse(kFixedMlp);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                         Interp().Compile(module_, {}));
    ASSERT_OK_AND_ASSIGN(want_, reference->Run({input_}));
  }

  // A new cache over `dir` (as a new process would make), the executable
  // it gives for the module, checked against the interpreter.
  void CompileThrough(const std::string& dir, CompileCacheStats& stats,
                      std::vector<Tensor>& out) {
    CompileCache cache(std::make_shared<DiskCache>(dir));
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Executable> e,
                         cache.GetOrCompile(Orc(), module_, {}));
    ASSERT_OK_AND_ASSIGN(out, e->Run({input_}));
    ExpectAllClose(out, want_, kReduceTol);
    stats = cache.stats();
  }

  uint32_t seed_ = 0;
  Tensor input_;
  Module module_;
  std::vector<Tensor> want_;
};

TEST_F(OrcDiskCache, SecondCacheLoadsFromDisk) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  const std::string dir = FreshDir("reuse");
  CompileCacheStats first_stats, second_stats;
  std::vector<Tensor> first, second;
  ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, first_stats, first));
  EXPECT_EQ(first_stats.compiles, 1);
  EXPECT_EQ(first_stats.disk_hits, 0);
  ASSERT_THAT(FilesIn(dir), SizeIs(1));
  ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, second_stats, second));
  EXPECT_EQ(second_stats.compiles, 0);
  EXPECT_EQ(second_stats.disk_hits, 1);
  EXPECT_EQ(second_stats.disk_damaged, 0);
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(first[i].BitwiseEqual(second[i])) << "output " << i;
  }
  fs::remove_all(dir);
}

// The entry keeps the weights as oneDNN packed them, so that a new process
// maps them instead of packing them again; its results are the same bits.
TEST_F(OrcDiskCache, PackedWeightsTravelWithTheEntry) {
  const std::string dir = FreshDir("packed");
  CompileCacheStats stats;
  std::vector<Tensor> out;
  ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, stats, out));
  std::optional<std::string> bytes = DiskCache(dir).Load(CompileCache::Key(Orc(), module_, {}));
  ASSERT_TRUE(bytes.has_value());
  ASSERT_OK_AND_ASSIGN(orc::OrcCacheEntry entry, orc::DecodeOrcCacheEntry(*bytes));
  ASSERT_EQ(entry.packed.size(), 2u);  // fc and fc2.
  for (const auto& packed : entry.packed) {
    ASSERT_TRUE(packed.has_value());
    EXPECT_GE(packed->bytes, 16u * 4u * 4u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(packed->data) % 64,
              reinterpret_cast<uintptr_t>(bytes->data()) % 64);
  }
  std::vector<Tensor> again;
  ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, stats, again));
  EXPECT_EQ(stats.disk_hits, 1);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_TRUE(out[i].BitwiseEqual(again[i]));
  fs::remove_all(dir);
}

// The entry is written from the executable's own packed weights, not a
// copy of them: its parts point into them, keep the executable alive, and
// join to the bytes SerializeExecutable gives.
TEST_F(OrcDiskCache, EntryPartsPointIntoThePackedWeights) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> compiled, Orc().Compile(module_, {}));
  std::shared_ptr<const Executable> e = std::move(compiled);
  ASSERT_OK_AND_ASSIGN(std::string bytes, Orc().SerializeExecutable(*e));
  ASSERT_OK_AND_ASSIGN(orc::OrcCacheEntry entry, orc::DecodeOrcCacheEntry(bytes));
  ASSERT_OK_AND_ASSIGN(PayloadParts parts, Orc().SerializeExecutableInParts(e));
  EXPECT_EQ(parts.Join(), bytes);
  const auto* program = dynamic_cast<const orc::OrcExecutable&>(*e).fixed();
  ASSERT_NE(program, nullptr);
  int pointing = 0;
  for (const auto& call : program->library_calls()) {
    std::optional<runtime::PackedWeights> packed = call->packed_weights();
    if (!packed.has_value()) continue;
    for (absl::string_view part : parts.parts) pointing += part.data() == packed->data;
  }
  EXPECT_EQ(pointing, 2);  // fc and fc2.
  const long owners = e.use_count();
  EXPECT_GT(owners, 1) << "the parts keep the executable";
  parts = PayloadParts();
  EXPECT_EQ(e.use_count(), owners - 1);
}

// Bytes flipped in the stored file, at its start, middle and end: each is
// found, thrown away and rebuilt, and the rebuilt entry loads again.
TEST_F(OrcDiskCache, DamagedFileIsRebuilt) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  const std::string dir = FreshDir("damaged");
  CompileCacheStats stats;
  std::vector<Tensor> out;
  ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, stats, out));
  for (double where : {0.0, 0.5, 0.97}) {
    SCOPED_TRACE(absl::StrCat("damage at ", where));
    std::vector<std::string> files = FilesIn(dir);
    ASSERT_THAT(files, SizeIs(1));
    const int64_t size = static_cast<int64_t>(fs::file_size(files[0]));
    ASSERT_NO_FATAL_FAILURE(
        FlipBytes(files[0], static_cast<int64_t>(where * (size - 8)), 8));
    ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, stats, out));
    EXPECT_EQ(stats.disk_damaged, 1);
    EXPECT_EQ(stats.disk_hits, 0);
    EXPECT_EQ(stats.compiles, 1);
    ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, stats, out));
    EXPECT_EQ(stats.disk_hits, 1);
    EXPECT_EQ(stats.compiles, 0);
  }
  fs::remove_all(dir);
}

// Entries whose checksum is good but whose contents orc must not trust: a
// cut-off object, an object whose header is damaged, a hash line for
// another program, and another module's object under this module's key.
TEST_F(OrcDiskCache, WholeEntriesWithBadContentsAreRebuilt) {
  SCOPED_TRACE(absl::StrCat("seed ", seed_));
  const std::string dir = FreshDir("contents");
  CompileCacheStats stats;
  std::vector<Tensor> out;
  ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, stats, out));
  const std::string key = CompileCache::Key(Orc(), module_, {});
  std::optional<std::string> good = DiskCache(dir).Load(key);
  ASSERT_TRUE(good.has_value());
  ASSERT_OK_AND_ASSIGN(orc::OrcCacheEntry entry, orc::DecodeOrcCacheEntry(*good));
  ASSERT_GT(entry.object.size(), 64u);

  // The other module's entry, made through a cache of its own.
  Module other = Parse(kOtherModule);
  const std::string other_dir = FreshDir("other");
  {
    CompileCache cache(std::make_shared<DiskCache>(other_dir));
    ASSERT_OK(cache.GetOrCompile(Orc(), other, {}).status());
  }
  std::optional<std::string> foreign =
      DiskCache(other_dir).Load(CompileCache::Key(Orc(), other, {}));
  ASSERT_TRUE(foreign.has_value());

  auto with = [&](const std::function<void(orc::OrcCacheEntry&)>& change) {
    orc::OrcCacheEntry copy = entry;
    change(copy);
    return orc::EncodeOrcCacheEntry(copy);
  };
  const std::string truncated = good->substr(0, good->size() / 2);
  const std::string bad_object = with([](orc::OrcCacheEntry& e) {
    for (size_t i = 0; i < 16; ++i) e.object[i] ^= 0x5a;
  });
  const std::string bad_hash = with([](orc::OrcCacheEntry& e) { e.program_hash[3] ^= 0x01; });
  const std::string no_object = with([](orc::OrcCacheEntry& e) { e.object.clear(); });
  const std::string more_calls =
      with([](orc::OrcCacheEntry& e) { e.packed.push_back(std::nullopt); });
  for (const auto& [what, bytes] :
       std::vector<std::pair<std::string, std::string>>{
           {"truncated entry", truncated},
           {"damaged object header", bad_object},
           {"hash of another program", bad_hash},
           {"no object", no_object},
           {"weights for more library calls than the program has", more_calls},
           {"another module's entry", *foreign},
           {"an entry of the previous format", "graft-orc-executable 1\nabc\nxyz"},
           {"not an orc entry", "graft-orc-executable 2\nxyz\n"}}) {
    SCOPED_TRACE(what);
    DiskCache(dir).Store(key, bytes);
    ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, stats, out));
    EXPECT_EQ(stats.disk_hits, 0);
    EXPECT_EQ(stats.disk_damaged, 1);
    EXPECT_EQ(stats.compiles, 1);
    ASSERT_NO_FATAL_FAILURE(CompileThrough(dir, stats, out));
    EXPECT_EQ(stats.disk_hits, 1);
  }
  fs::remove_all(dir);
  fs::remove_all(other_dir);
}

// Symbolic shapes compile at run time, so there is nothing to write; the
// cache still works, in memory.
TEST_F(OrcDiskCache, SymbolicModulesAreNotWritten) {
  const std::string dir = FreshDir("symbolic");
  Module m = Parse(R"(
graph():
    %x : f32[batch,8] = placeholder[target=x]
    %r : f32[batch,8] = call_function[target=tanh](args = (%x,), kwargs = {})
    return r
)");
  CompileCache cache(std::make_shared<DiskCache>(dir));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Executable> e,
                       cache.GetOrCompile(Orc(), m, {}));
  ASSERT_OK(e->Run({Tensor(DType::kF32, {2, 8})}).status());
  ASSERT_OK(cache.GetOrCompile(Orc(), m, {}).status());
  EXPECT_EQ(cache.stats().compiles, 1);
  EXPECT_EQ(cache.stats().memory_hits, 1);
  EXPECT_THAT(FilesIn(dir), SizeIs(0));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace graft::orc_test
