// Generated loops split over threads (runtime/parallel_steps.h): a large
// enough step runs in parts, one per thread, and gives what the
// interpreter gives.

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/orc/lowering.h"
#include "backends/orc/orc_backend.h"
#include "backends/orc/program.h"
#include "gtest/gtest.h"
#include "runtime/library_call.h"
#include "runtime/parallel_steps.h"
#include "support/status_matchers.h"
#include "tests/backends/interp_test_util.h"
#include "tests/orc/orc_test_util.h"

namespace graft::orc_test {
namespace {

using ::graft::interp_test::FreshSeed;

// Steps of every kind that splits, each over more elements than the split
// needs (65536), on shapes whose parts do not fall on vector widths: a
// fused pointwise group with broadcasting, a permute copy, a quantize,
// softmax and layer_norm over rows, batch_norm, reductions over the last
// dim (RMSNorm's mean: few results, much work) and the first, and a
// softmax of one row and the extremes of everything (one iteration to
// split, or no dim kept: the step runs whole).
ModuleBuilder SplitSteps(std::mt19937_64& rng) {
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {48, 40, 37}, -4, 4);
  Node* y = b.In(DType::kF32, {40, 37}, -1, 1);
  Node* row = b.In(DType::kF32, {70001}, -4, 4);
  // A ramp: its least and largest values in the first and the last part.
  Tensor ramp_data(DType::kF32, {70001});
  for (int64_t i = 0; i < 70001; ++i) ramp_data.data<float>()[i] = static_cast<float>(i);
  Node* ramp = b.In(ramp_data);
  Node* mean = b.In(DType::kF32, {40}, -1, 1);
  Node* var = b.In(DType::kF32, {40}, 0.25, 2);
  b.Out({b.Call("add", {b.Call("relu", {b.Call("mul", {x, y})}), 1.0}),
         b.Call("permute", {x, Argument::IntList({2, 0, 1})}),
         b.Call("quantize_per_tensor", {x, 0.03, int64_t{3}, DType::kI8}),
         b.Call("softmax", {x, int64_t{-1}}), b.Call("softmax", {x, int64_t{1}}),
         b.Call("layer_norm", {x, Argument::IntList({37})}),
         b.Call("batch_norm", {x, mean, var}), b.Call("softmax", {row, int64_t{0}}),
         b.Call("mean", {x}, {{"dim", Argument::IntList({-1})}, {"keepdim", true}}),
         b.Call("sum", {x}, {{"dim", Argument::IntList({0})}}), b.Call("amax", {ramp}),
         b.Call("amin", {ramp})});
  return b;
}

// The ranks of a world on the host (CompileSharded) share its cores: each
// gets its share of `threads` (every core when unset), at least one; a bad
// value is left for Compile to report.
TEST(OrcThreads, RanksOnTheHostShareItsCores) {
  orc::OrcBackend orc;
  CompileOptions options;
  options.options["threads"] = "4";
  EXPECT_EQ(orc.ForRankOnHost(options, 2).Get("threads"), "2");
  EXPECT_EQ(orc.ForRankOnHost(options, 3).Get("threads"), "1");
  EXPECT_EQ(orc.ForRankOnHost(options, 8).Get("threads"), "1");
  EXPECT_EQ(orc.ForRankOnHost(options, 1).Get("threads"), "4");
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_EQ(orc.ForRankOnHost(CompileOptions{}, 2).Get("threads"),
            absl::StrCat(std::max(1, cores / 2)));
  options.options["threads"] = "many";
  EXPECT_EQ(orc.ForRankOnHost(options, 2).Get("threads"), "many");
  EXPECT_THAT(orc.Compile(Module(), orc.ForRankOnHost(options, 2)).status(),
              ::graft::testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(OrcThreads, SplitStepsMatchTheInterpreter) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  ModuleBuilder b = SplitSteps(rng);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference, Interp().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(b.inputs()));
  for (const char* threads : {"2", "3", "1"}) {
    SCOPED_TRACE(absl::StrCat(threads, " threads"));
    CompileOptions options;
    options.options = {{"threads", threads}};
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> orc, Orc().Compile(b.module(), options));
    // Several runs: parts that wrongly share a result race, and the first
    // run's order (the threads still starting) can hide it.
    for (int run = 0; run < 4; ++run) {
      SCOPED_TRACE(absl::StrCat("run ", run));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, orc->Run(b.inputs()));
      ExpectAllClose(got, want, kReduceTol, orc->output_signature());
    }
  }
}

std::vector<TensorType> TypesOf(const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) {
    TensorType type;
    type.dtype = t.dtype();
    for (int64_t d : t.dims()) type.shape.push_back(Dim(d));
    types.push_back(type);
  }
  return types;
}

// Large steps call the split, whatever threads the program was compiled
// for (a compiled model file runs on the threads its loader asks for);
// small ones do not.
TEST(OrcThreads, LargeStepsSplitAndSmallOnesDoNot) {
  std::mt19937_64 rng(FreshSeed());
  ModuleBuilder large = SplitSteps(rng);
  ModuleBuilder small(rng);
  Node* x = small.In(DType::kF32, {16, 1000}, -1, 1);
  small.Out({small.Call("softmax", {small.Call("mul", {x, 2.0}), int64_t{-1}})});
  for (int threads : {2, 1}) {
    for (const ModuleBuilder* b : {&large, &small}) {
      SCOPED_TRACE(absl::StrCat(threads, " threads, ", b == &large ? "large" : "small"));
      orc::ProgramOptions options;
      options.threads = threads;
      ASSERT_OK_AND_ASSIGN(orc::Program program,
                           orc::BuildProgram(b->module(), TypesOf(b->inputs()), options));
      ASSERT_OK_AND_ASSIGN(std::string object, orc::CompileToObject(program));
      EXPECT_EQ(object.find(runtime::kParallelForSymbol) != std::string::npos, b == &large);
    }
  }
}

// What graft_orc_parallel_for does with a loop: every iteration once, in
// parts of at least the grain, on as many threads as the run asked for
// (when OpenMP is loaded, as with oneDNN), and a part's failure returned.
struct Seen {
  std::atomic<int> iterations[1000];
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::vector<std::pair<int64_t, int64_t>> parts;
};

int32_t CountIterations(void* const* buffers, int64_t begin, int64_t end) {
  Seen& seen = *static_cast<Seen*>(buffers[0]);
  for (int64_t i = begin; i < end; ++i) seen.iterations[i]++;
  std::lock_guard<std::mutex> lock(seen.mu);
  seen.threads.insert(std::this_thread::get_id());
  seen.parts.push_back({begin, end});
  // Some work, so that one thread does not finish every part alone.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return begin == 0 ? 0 : 7;
}

TEST(OrcThreads, ParallelForRunsEveryIterationOnceOnTheRunsThreads) {
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(absl::StrCat(threads, " threads"));
    auto seen = std::make_unique<Seen>();
    for (auto& n : seen->iterations) n = 0;
    void* buffers[] = {seen.get()};
    int32_t rc;
    {
      runtime::ScopedLibraryThreads run_threads(threads);
      rc = runtime::graft_orc_parallel_for(&CountIterations, buffers, 1000, 100);
    }
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(seen->iterations[i].load(), 1) << "iteration " << i;
    for (const auto& [begin, end] : seen->parts) {
      EXPECT_TRUE(end - begin >= 100 || end == 1000) << begin << ".." << end;
    }
    EXPECT_EQ(seen->parts.size(), static_cast<size_t>(threads));
    // Every part but the first fails with 7.
    EXPECT_EQ(rc, threads == 1 ? 0 : 7);
    if (dlsym(RTLD_DEFAULT, "GOMP_parallel") != nullptr) {
      EXPECT_EQ(seen->threads.size(), static_cast<size_t>(threads));
    }
  }
}

}  // namespace
}  // namespace graft::orc_test
