// Generated loops split over threads (runtime/parallel_steps.h): a large
// enough step runs in parts, one per thread, and gives what the
// interpreter gives.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/orc/lowering.h"
#include "backends/orc/program.h"
#include "gtest/gtest.h"
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
// softmax and layer_norm over rows, batch_norm, and a softmax of one row
// (one iteration to split: the step runs whole).
ModuleBuilder SplitSteps(std::mt19937_64& rng) {
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {48, 40, 37}, -4, 4);
  Node* y = b.In(DType::kF32, {40, 37}, -1, 1);
  Node* row = b.In(DType::kF32, {70001}, -4, 4);
  Node* mean = b.In(DType::kF32, {40}, -1, 1);
  Node* var = b.In(DType::kF32, {40}, 0.25, 2);
  b.Out({b.Call("add", {b.Call("relu", {b.Call("mul", {x, y})}), 1.0}),
         b.Call("permute", {x, Argument::IntList({2, 0, 1})}),
         b.Call("quantize_per_tensor", {x, 0.03, int64_t{3}, DType::kI8}),
         b.Call("softmax", {x, int64_t{-1}}), b.Call("softmax", {x, int64_t{1}}),
         b.Call("layer_norm", {x, Argument::IntList({37})}),
         b.Call("batch_norm", {x, mean, var}), b.Call("softmax", {row, int64_t{0}})});
  return b;
}

TEST(OrcThreads, SplitStepsMatchTheInterpreter) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  ModuleBuilder b = SplitSteps(rng);
  for (const char* threads : {"2", "3", "1"}) {
    SCOPED_TRACE(absl::StrCat(threads, " threads"));
    CompileOptions options;
    options.options = {{"threads", threads}};
    ExpectMatchesInterp(Orc(), b.module(), b.inputs(), kReduceTol, options);
  }
}

// The code of a program for several threads calls the split; for one
// thread it does not.
TEST(OrcThreads, OnlyProgramsForSeveralThreadsSplit) {
  std::mt19937_64 rng(FreshSeed());
  ModuleBuilder b = SplitSteps(rng);
  std::vector<TensorType> types;
  for (const Tensor& t : b.inputs()) {
    TensorType type;
    type.dtype = t.dtype();
    for (int64_t d : t.dims()) type.shape.push_back(Dim(d));
    types.push_back(type);
  }
  for (int threads : {2, 1}) {
    SCOPED_TRACE(absl::StrCat(threads, " threads"));
    orc::ProgramOptions options;
    options.threads = threads;
    ASSERT_OK_AND_ASSIGN(orc::Program program, orc::BuildProgram(b.module(), types, options));
    ASSERT_OK_AND_ASSIGN(std::string object, orc::CompileToObject(program));
    EXPECT_EQ(object.find(runtime::kParallelForSymbol) != std::string::npos, threads > 1);
  }
}

}  // namespace
}  // namespace graft::orc_test
