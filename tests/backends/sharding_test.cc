// Tensor parallelism on the host: ShardModule's ranks, run together in an
// in-process world (CompileSharded on the interpreter), must give the
// unsharded module's outputs; and the shards must be the Megatron split
// (weights divided, one all_reduce per pair, no all_gather where none is
// needed).

#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "backends/communicator.h"
#include "backends/run_failure.h"
#include "backends/sharded_executable.h"
#include "gmock/gmock.h"
#include "graph/collective_ops.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "passes/shard.h"
#include "serialize/model_io.h"
#include "support/status_macros.h"
#include "support/status_matchers.h"
#include "tests/backends/differential_test_util.h"
#include "tests/backends/model_files.h"

namespace graft::backend_test {
namespace {

using ::graft::differential::ExpectAllClose;
using ::graft::differential::Interp;
using ::graft::differential::kReduceTol;
using ::graft::testing::StatusIs;
using ::testing::HasSubstr;

// Fresh random f32 data: each run tries other values.
Tensor RandomF32(std::vector<int64_t> dims) {
  return RandomTensor(DType::kF32, std::move(dims), std::random_device{}());
}

// Runs `module` whole and over `world` ranks on `inputs`; expects equal
// outputs and returns what sharding did.
passes::ShardReport ExpectShardedMatches(
    const Module& module, int world, const std::vector<Tensor>& inputs,
    passes::ShardStrategy strategy = passes::ShardStrategy::kTensor) {
  SCOPED_TRACE(absl::StrCat("world of ", world));
  ShardedCompileReport report;
  absl::StatusOr<std::unique_ptr<Executable>> whole = Interp().Compile(module, {});
  EXPECT_OK(whole.status());
  absl::StatusOr<std::unique_ptr<Executable>> sharded =
      CompileSharded(Interp(), module, world, {}, &report, strategy);
  EXPECT_OK(sharded.status());
  if (!whole.ok() || !sharded.ok()) return report.shard;
  absl::StatusOr<std::vector<Tensor>> want = (*whole)->Run(inputs);
  absl::StatusOr<std::vector<Tensor>> got = (*sharded)->Run(inputs);
  EXPECT_OK(want.status());
  EXPECT_OK(got.status());
  if (want.ok() && got.ok()) ExpectAllClose(*got, *want, kReduceTol);
  return report.shard;
}

Module Parse(const std::string& text) {
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_OK(m.status());
  return m.ok() ? *std::move(m) : Module();
}

// Two layers, 8 -> 16 -> 4 features.
constexpr char kPerceptron[] = R"(
tensor fc1.weight : f32[16,8] = random(seed=1)
tensor fc1.bias : f32[16] = random(seed=2)
tensor fc2.weight : f32[4,16] = random(seed=3)
tensor fc2.bias : f32[4] = random(seed=4)

graph():
    %x : f32[batch,8] = placeholder[target=x]
    %w1 = get_attr[target=fc1.weight]
    %b1 = get_attr[target=fc1.bias]
    %fc1 = call_function[target=linear](args = (%x, %w1), kwargs = {bias: %b1})
    %relu = call_function[target=relu](args = (%fc1,), kwargs = {})
    %w2 = get_attr[target=fc2.weight]
    %b2 = get_attr[target=fc2.bias]
    %fc2 = call_function[target=linear](args = (%relu, %w2), kwargs = {bias: %b2})
    %softmax = call_function[target=softmax](args = (%fc2,), kwargs = {dim: -1})
    return softmax
)";

TEST(Sharding, APerceptronSplitsIntoOneColumnRowPair) {
  Module m = Parse(kPerceptron);
  const std::vector<Tensor> inputs = {RandomF32({5, 8})};
  for (int world : {2, 4}) {
    passes::ShardReport r = ExpectShardedMatches(m, world, inputs);
    EXPECT_THAT(r.column_parallel, ::testing::ElementsAre("fc1"));
    EXPECT_THAT(r.row_parallel, ::testing::ElementsAre("fc2"));
    EXPECT_EQ(r.all_reduces, 1);
    EXPECT_EQ(r.all_gathers, 0);
  }
}

TEST(Sharding, EachRankKeepsItsShareOfTheWeights) {
  Module m = Parse(kPerceptron);
  const Tensor& w1 = *m.FindTensor("fc1.weight");
  for (int rank : {0, 1}) {
    ASSERT_OK_AND_ASSIGN(Module part, passes::ShardModule(m, {2, rank}));
    const Tensor* fc1 = nullptr;
    const Tensor* fc2 = nullptr;
    for (const auto& [name, t] : part.tensors()) {
      if (absl::StartsWith(name, "fc1.weight")) fc1 = &t.value;
      if (absl::StartsWith(name, "fc2.weight")) fc2 = &t.value;
    }
    ASSERT_NE(fc1, nullptr);
    ASSERT_NE(fc2, nullptr);
    EXPECT_EQ(fc1->dims(), (std::vector<int64_t>{8, 8}));  // Rows 8r..8r+7.
    EXPECT_EQ(fc2->dims(), (std::vector<int64_t>{4, 8}));  // Columns 8r..8r+7.
    for (int64_t i = 0; i < 8 * 8; ++i) {
      ASSERT_EQ(fc1->GetAsDouble(i), w1.GetAsDouble(rank * 64 + i));
    }
    int collectives = 0;
    for (const Node* n : part.graph().nodes()) {
      collectives += n->op() == OpCode::kCallFunction && IsCollectiveOp(n->target());
    }
    EXPECT_EQ(collectives, 1);
  }
}

TEST(Sharding, LayersThatDoNotDivideStayWhole) {
  Module m = Parse(kPerceptron);
  const std::vector<Tensor> inputs = {RandomF32({3, 8})};
  passes::ShardReport r = ExpectShardedMatches(m, 3, inputs);  // 16 % 3 != 0.
  EXPECT_TRUE(r.column_parallel.empty());
  EXPECT_EQ(r.all_reduces + r.all_gathers, 0);
}

// A value split by columns that the output also reads is gathered there.
TEST(Sharding, ASplitValueAnOpNeedsWholeIsGathered) {
  Module m = Parse(absl::StrReplaceAll(kPerceptron, {{"return softmax", "return [softmax, relu]"}}));
  const std::vector<Tensor> inputs = {RandomF32({2, 8})};
  for (int world : {2, 4}) {
    passes::ShardReport r = ExpectShardedMatches(m, world, inputs);
    EXPECT_EQ(r.all_reduces, 1);
    EXPECT_EQ(r.all_gathers, 1);
  }
}

// A split value that other ops need whole: each gets it gathered (a
// layer_norm and a sum over the split dim, a concat, the output, and a
// transposed copy that a second layer then reads split along its rows).
TEST(Sharding, EveryOpThatNeedsAWholeValueGetsOne) {
  Module m = Parse(R"(
tensor w1 : f32[16,8] = random(seed=1)
tensor w2 : f32[4,16] = random(seed=2)
tensor w3 : f32[3,6] = random(seed=3)

graph():
    %x : f32[3,8] = placeholder[target=x]
    %w1 = get_attr[target=w1]
    %h = call_function[target=linear](args = (%x, %w1), kwargs = {})
    %r = call_function[target=relu](args = (%h,), kwargs = {})
    %w2 = get_attr[target=w2]
    %y = call_function[target=linear](args = (%r, %w2), kwargs = {})
    %n = call_function[target=layer_norm](args = (%r, [16]), kwargs = {})
    %s = call_function[target=sum](args = (%r, [1]), kwargs = {keepdim: True})
    %c = call_function[target=concat](args = ([%r, %x], 1), kwargs = {})
    %t = call_function[target=transpose](args = (%r, 0, 1), kwargs = {})
    %w3 = get_attr[target=w3]
    %u = call_function[target=matmul](args = (%t, %w3), kwargs = {})
    return [y, n, s, c, u, r]
)");
  const std::vector<Tensor> inputs = {RandomF32({3, 8})};
  for (int world : {2, 4}) {
    passes::ShardReport r = ExpectShardedMatches(m, world, inputs);
    EXPECT_EQ(r.column_parallel.size(), 1u) << r.Summary();
    EXPECT_GE(r.all_gathers, 1) << r.Summary();
  }
}

// One head on 2-D values: q @ k^T contracts the split dim (a partial sum,
// then all_reduce), p @ v keeps v's columns split for the output layer.
TEST(Sharding, AProductOverTheSplitDimIsSummed) {
  Module m = Parse(R"(
tensor wq : f32[8,8] = random(seed=1)
tensor wk : f32[8,8] = random(seed=2)
tensor wv : f32[8,8] = random(seed=3)
tensor wo : f32[8,8] = random(seed=4)

graph():
    %x : f32[4,8] = placeholder[target=x]
    %wq = get_attr[target=wq]
    %wk = get_attr[target=wk]
    %wv = get_attr[target=wv]
    %wo = get_attr[target=wo]
    %q = call_function[target=linear](args = (%x, %wq), kwargs = {})
    %k = call_function[target=linear](args = (%x, %wk), kwargs = {})
    %v = call_function[target=linear](args = (%x, %wv), kwargs = {})
    %kt = call_function[target=transpose](args = (%k, 0, 1), kwargs = {})
    %s = call_function[target=matmul](args = (%q, %kt), kwargs = {})
    %p = call_function[target=softmax](args = (%s,), kwargs = {dim: -1})
    %o = call_function[target=matmul](args = (%p, %v), kwargs = {})
    %y = call_function[target=linear](args = (%o, %wo), kwargs = {})
    return [y, s]
)");
  const std::vector<Tensor> inputs = {RandomF32({4, 8})};
  for (int world : {2, 4}) {
    passes::ShardReport r = ExpectShardedMatches(m, world, inputs);
    EXPECT_EQ(r.all_reduces, 2) << r.Summary();  // q @ k^T, and the output layer.
    EXPECT_EQ(r.all_gathers, 0) << r.Summary();
  }
}

// A split dim of one element per rank must not vanish in a squeeze that
// keeps it whole.
TEST(Sharding, ASqueezeKeepsASplitDimOfOnePerRank) {
  Module m = Parse(R"(
tensor w1 : f32[2,4] = random(seed=1)
tensor w2 : f32[3,2] = random(seed=2)

graph():
    %x : f32[5,4] = placeholder[target=x]
    %w1 = get_attr[target=w1]
    %h = call_function[target=linear](args = (%x, %w1), kwargs = {})
    %r = call_function[target=squeeze](args = (%h,), kwargs = {})
    %w2 = get_attr[target=w2]
    %y = call_function[target=linear](args = (%r, %w2), kwargs = {})
    return y
)");
  ExpectShardedMatches(m, 2, {RandomF32({5, 4})});
}

// Inputs no rank would take fail before any rank starts; the next run works.
TEST(Sharding, ABadRunLeavesTheRanksReady) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedExecutable> e,
                       CompileSharded(Interp(), Parse(kPerceptron), 2, {}));
  EXPECT_THAT(e->Run({RandomF32({5, 7})}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 0")));
  EXPECT_OK(e->Run({RandomF32({5, 8})}).status());
}

// A perceptron (one all-reduce) with an index_select of rows before it
// (`before`) or after it.
Module IndexedPerceptron(bool before) {
  const std::string head = R"(
tensor table : f32[10,8] = random(seed=5)
tensor fc1.weight : f32[16,8] = random(seed=1)
tensor fc2.weight : f32[8,16] = random(seed=3)

graph():
    %x : f32[4,8] = placeholder[target=x]
    %ids : i64[4] = placeholder[target=ids]
)";
  const std::string pair = R"(
    %w1 = get_attr[target=fc1.weight]
    %fc1 = call_function[target=linear](args = (%in, %w1), kwargs = {})
    %relu = call_function[target=relu](args = (%fc1,), kwargs = {})
    %w2 = get_attr[target=fc2.weight]
    %fc2 = call_function[target=linear](args = (%relu, %w2), kwargs = {})
)";
  if (before) {
    return Parse(head + R"(
    %table = get_attr[target=table]
    %rows = call_function[target=index_select](args = (%table, 0, %ids), kwargs = {})
    %in = call_function[target=add](args = (%x, %rows), kwargs = {})
)" + pair + "    return fc2\n");
  }
  return Parse(head + "    %in = call_function[target=relu](args = (%x,), kwargs = {})\n" + pair + R"(
    %out = call_function[target=index_select](args = (%fc2, 0, %ids), kwargs = {})
    return out
)");
}

// A communicator of an in-process world that counts the world's aborts.
class CountingCommunicator : public Communicator {
 public:
  CountingCommunicator(std::shared_ptr<Communicator> inner, std::atomic<int>* aborts)
      : Communicator(inner->rank(), inner->world_size()), inner_(std::move(inner)), aborts_(aborts) {}
  absl::StatusOr<Tensor> AllReduceSum(const Tensor& t) override { return inner_->AllReduceSum(t); }
  absl::StatusOr<Tensor> AllGather(const Tensor& t, int64_t dim) override {
    return inner_->AllGather(t, dim);
  }
  void Abort() override {
    ++*aborts_;
    inner_->Abort();
  }
  absl::Status Revive() override { return inner_->Revive(); }

 private:
  std::shared_ptr<Communicator> inner_;
  std::atomic<int>* aborts_;
};

// The interpreter, whose failures say, where `ran_to_end`, that they came
// once the run's work had ended (as the CUDA backend's bad index does,
// run_failure.h), in a world that counts its communicators' aborts.
class MarkingInterp : public Backend {
 public:
  explicit MarkingInterp(bool ran_to_end) : ran_to_end_(ran_to_end) {}
  absl::string_view name() const override { return "marking-interp"; }
  absl::Status CanRun(const Node& node, const CompileOptions& options) const override {
    return Interp().CanRun(node, options);
  }
  absl::StatusOr<std::unique_ptr<Executable>> Compile(const Module& module,
                                                      const CompileOptions& options) override {
    ASSIGN_OR_RETURN(std::unique_ptr<Executable> inner, Interp().Compile(module, options));
    return std::unique_ptr<Executable>(new Marking(std::move(inner), ran_to_end_));
  }
  absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> CreateWorld(
      int world_size) const override {
    std::vector<std::shared_ptr<Communicator>> world;
    for (std::shared_ptr<Communicator>& c : InProcessWorld(world_size)) {
      world.push_back(std::make_shared<CountingCommunicator>(std::move(c), &aborts));
    }
    return world;
  }
  mutable std::atomic<int> aborts{0};

 private:
  class Marking : public Executable {
   public:
    Marking(std::unique_ptr<Executable> inner, bool ran_to_end)
        : inner_(std::move(inner)), ran_to_end_(ran_to_end) {}
    absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) override {
      absl::StatusOr<std::vector<Tensor>> out = inner_->Run(inputs);
      if (!out.ok() && ran_to_end_) return MarkRanToEnd(out.status());
      return out;
    }
    const std::vector<ValueSignature>& input_signature() const override {
      return inner_->input_signature();
    }
    const std::vector<ValueSignature>& output_signature() const override {
      return inner_->output_signature();
    }

   private:
    std::unique_ptr<Executable> inner_;
    bool ran_to_end_;
  };
  bool ran_to_end_;
};

// A rank whose run fails (an index out of range on rank 1 only) fails the
// run with an error that names it. Where the failure came once the rank's
// work had ended (here after its all-reduce), nothing is aborted; any other
// failure (here before the all-reduce, its peer waiting in it) aborts the
// world once, which frees the peer. The next run works either way.
TEST(Sharding, ARankThatFailsAbortsTheWorldUnlessItsWorkHadEnded) {
  for (bool before : {false, true}) {
    SCOPED_TRACE(before ? "fails before its all-reduce" : "fails after it, its work ended");
    const Module m = IndexedPerceptron(before);
    MarkingInterp backend(/*ran_to_end=*/!before);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedExecutable> e, CompileSharded(backend, m, 2, {}));
    const Tensor x = RandomF32({4, 8});
    const Tensor good = Tensor::FromVector<int64_t>(DType::kI64, {4}, {0, 3, 2, 1});
    const Tensor bad = Tensor::FromVector<int64_t>(DType::kI64, {4}, {0, 3, 12, 1});
    EXPECT_THAT(e->RunEachRank({{x, good}, {x, bad}}).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::AllOf(HasSubstr("rank 1"), HasSubstr("out of range"))));
    // Every rank's communicator, once: the world aborted once.
    EXPECT_EQ(backend.aborts.load(), before ? 2 : 0);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> whole, Interp().Compile(m, {}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, whole->Run({x, good}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({x, good}));
    ExpectAllClose(got, want, 1e-5);
  }
}

// Self-attention over 4 heads of 8, with separate q, k and v projections
// or one fused projection split three ways, then the output projection
// and a residual.
std::string Attention(bool fused) {
  std::string tensors = R"(
tensor wo : f32[32,32] = random(seed=5)
tensor bo : f32[32] = random(seed=6)
tensor mask : f32[1,1,8,8] = random(seed=7)
)";
  std::string projections;
  if (fused) {
    tensors += "tensor wqkv : f32[96,32] = random(seed=1)\ntensor bqkv : f32[96] = random(seed=2)\n";
    projections = R"(
    %wqkv = get_attr[target=wqkv]
    %bqkv = get_attr[target=bqkv]
    %qkv0 = call_function[target=linear](args = (%x, %wqkv), kwargs = {})
    %qkv = call_function[target=add](args = (%qkv0, %bqkv), kwargs = {})
    %parts = call_function[target=split](args = (%qkv, 32), kwargs = {dim: -1})
    %q = call_function[target=getitem](args = (%parts, 0), kwargs = {})
    %k = call_function[target=getitem](args = (%parts, 1), kwargs = {})
    %v = call_function[target=getitem](args = (%parts, 2), kwargs = {})
)";
  } else {
    for (const char* p : {"q", "k", "v"}) {
      tensors += absl::StrCat("tensor w", p, " : f32[32,32] = random(seed=", int{p[0]}, ")\n",
                              "tensor b", p, " : f32[32] = random(seed=", p[0] + 1, ")\n");
      projections += absl::StrCat("    %w", p, " = get_attr[target=w", p, "]\n", "    %b", p,
                                  " = get_attr[target=b", p, "]\n", "    %", p,
                                  " = call_function[target=linear](args = (%x, %w", p,
                                  "), kwargs = {bias: %b", p, "})\n");
    }
  }
  return tensors + "\ngraph():\n    %x : f32[2,8,32] = placeholder[target=x]\n" + projections + R"(
    %q4 = call_function[target=reshape](args = (%q, [2, 8, 4, 8]), kwargs = {})
    %qh = call_function[target=permute](args = (%q4, [0, 2, 1, 3]), kwargs = {})
    %k4 = call_function[target=reshape](args = (%k, [2, 8, 4, -1]), kwargs = {})
    %kh = call_function[target=permute](args = (%k4, [0, 2, 3, 1]), kwargs = {})
    %v4 = call_function[target=reshape](args = (%v, [2, 8, 4, 8]), kwargs = {})
    %vh = call_function[target=transpose](args = (%v4, 1, 2), kwargs = {})
    %scores = call_function[target=matmul](args = (%qh, %kh), kwargs = {})
    %scaled = call_function[target=mul](args = (%scores, 0.35), kwargs = {})
    %mask = get_attr[target=mask]
    %masked = call_function[target=add](args = (%scaled, %mask), kwargs = {})
    %p = call_function[target=softmax](args = (%masked,), kwargs = {dim: -1})
    %o = call_function[target=matmul](args = (%p, %vh), kwargs = {})
    %ot = call_function[target=permute](args = (%o, [0, 2, 1, 3]), kwargs = {})
    %merged = call_function[target=reshape](args = (%ot, [2, 8, 32]), kwargs = {})
    %wo = get_attr[target=wo]
    %bo = get_attr[target=bo]
    %proj = call_function[target=linear](args = (%merged, %wo), kwargs = {bias: %bo})
    %out = call_function[target=add](args = (%proj, %x), kwargs = {})
    return out
)";
}

TEST(Sharding, AttentionSplitsByHeads) {
  for (bool fused : {false, true}) {
    SCOPED_TRACE(fused ? "fused q/k/v" : "separate q, k, v");
    Module m = Parse(Attention(fused));
    const std::vector<Tensor> inputs = {RandomF32({2, 8, 32})};
    for (int world : {2, 4}) {
      passes::ShardReport r = ExpectShardedMatches(m, world, inputs);
      EXPECT_EQ(r.column_parallel.size(), fused ? 1u : 3u);
      EXPECT_THAT(r.row_parallel, ::testing::ElementsAre("proj"));
      EXPECT_EQ(r.all_reduces, 1);
      EXPECT_EQ(r.all_gathers, 0);
    }
  }
}

TEST(Sharding, EveryRepositoryModelGivesTheUnshardedResult) {
  FindSourceDir();
  const std::vector<std::string> files = ModelFiles(true);
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    absl::StatusOr<Module> m = LoadModel(path);
    if (!m.ok() && absl::IsUnimplemented(m.status())) continue;  // No ONNX support built.
    ASSERT_OK(m.status());
    const std::vector<Tensor> inputs = RandomInputs(PlaceholderSignature(m->graph()), std::random_device{}());
    for (int world : {2, 3, 4}) {
      passes::ShardReport r = ExpectShardedMatches(*m, world, inputs);
      std::printf("%s over %d: %s\n", path.c_str(), world, r.Summary().c_str());
    }
  }
}

// The GPT-2 block (attention and MLP) splits with one all_reduce per pair
// and nothing gathered, at 2 and 4 ranks (12 heads).
TEST(Sharding, TheGpt2BlockSplitsAsMegatronDoes) {
  FindSourceDir();
  if (SourceDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  for (const char* opset : {"13", "17"}) {
    const std::string path =
        absl::StrCat(SourceDir(), "/tests/onnx_models/gpt2_block_opset", opset, "/model.onnx");
    absl::StatusOr<Module> m = LoadModel(path);
    if (!m.ok() && absl::IsUnimplemented(m.status())) GTEST_SKIP() << m.status();
    ASSERT_OK(m.status());
    const std::vector<Tensor> inputs = RandomInputs(PlaceholderSignature(m->graph()), std::random_device{}());
    for (int world : {2, 4}) {
      SCOPED_TRACE(path);
      passes::ShardReport r = ExpectShardedMatches(*m, world, inputs);
      EXPECT_EQ(r.row_parallel.size(), 2u) << r.Summary();
      EXPECT_GE(r.column_parallel.size(), 2u) << r.Summary();
      EXPECT_EQ(r.all_reduces, 2) << r.Summary();
      EXPECT_EQ(r.all_gathers, 0) << r.Summary();
    }
  }
}

// Batch splitting: the weights stay whole, each rank takes its rows, the
// outputs are gathered, and nothing else is exchanged.
TEST(Sharding, TheBatchSplitsAcrossRanks) {
  Module m = Parse(Attention(/*fused=*/true));
  const std::vector<Tensor> inputs = {RandomF32({2, 8, 32})};
  passes::ShardReport r = ExpectShardedMatches(m, 2, inputs, passes::ShardStrategy::kBatch);
  EXPECT_THAT(r.batch_split_inputs, ::testing::ElementsAre("x"));
  EXPECT_TRUE(r.column_parallel.empty());
  EXPECT_EQ(r.all_reduces, 0);
  // Compiled, each rank takes and returns only its rows: nothing to gather.
  EXPECT_EQ(r.all_gathers, 0);
  EXPECT_THAT(r.rank_row_inputs, ::testing::ElementsAre(0));
  EXPECT_THAT(r.rank_row_outputs, ::testing::ElementsAre(0));
  // The pass alone keeps the whole inputs and outputs: a slice, a gather.
  passes::ShardReport alone;
  ASSERT_OK_AND_ASSIGN(Module part,
                       passes::ShardModule(m, {2, 1, passes::ShardStrategy::kBatch}, &alone));
  EXPECT_EQ(part.FindTensor("wqkv")->dims(), (std::vector<int64_t>{96, 32}));  // Whole.
  EXPECT_EQ(alone.all_gathers, 1);
  EXPECT_TRUE(alone.rank_row_inputs.empty());
  EXPECT_EQ(part.graph().placeholders()[0]->type()->ToString(), "f32[2,8,32]");
  ASSERT_OK_AND_ASSIGN(Module rows, passes::ShardModule(m, {2, 1, passes::ShardStrategy::kBatch,
                                                            /*rows_in_place=*/true}));
  EXPECT_EQ(rows.graph().placeholders()[0]->type()->ToString(), "f32[1,8,32]");
  EXPECT_EQ(OutputSignature(rows.graph())[0].type->ToString(), "f32[1,8,32]");
}

// Ops over other dims than the batch keep a batch split (each rank returns
// its rows of every output); the same ops over the batch dim get it whole.
TEST(Sharding, OpsOverOtherDimsKeepTheBatchSplit) {
  Module per_sample = Parse(R"(
graph():
    %x : f32[4,3,5] = placeholder[target=x]
    %p = call_function[target=pad](args = (%x, [1, 2], "reflect", 0.0), kwargs = {})
    %i = call_function[target=arange](args = (0, 8, 2), kwargs = {dtype: i64})
    %s = call_function[target=index_select](args = (%p, 2, %i), kwargs = {})
    %a = call_function[target=argmax](args = (%s, 2, True), kwargs = {})
    %g = call_function[target=gather](args = (%s, 2, %a), kwargs = {})
    %c = call_function[target=concat](args = ([%g, %s], 2), kwargs = {})
    %m = call_function[target=amax](args = (%c, [1]), kwargs = {})
    %q = call_function[target=unsqueeze](args = (%s, 1), kwargs = {})
    %t = call_function[target=squeeze](args = (%q, [1]), kwargs = {})
    %w = call_function[target=sum](args = (%t, [1, 2], True), kwargs = {})
    %e = call_function[target=expand](args = (%w, [-1, 3, 2]), kwargs = {})
    return [m, e, w]
)");
  const std::vector<Tensor> inputs = {RandomF32({4, 3, 5})};
  passes::ShardReport r = ExpectShardedMatches(per_sample, 2, inputs, passes::ShardStrategy::kBatch);
  EXPECT_EQ(r.all_gathers, 0) << r.Summary();
  EXPECT_EQ(r.rank_row_outputs.size(), 3u) << r.Summary();

  for (const char* op : {
           R"(call_function[target=pad](args = (%x, [0, 0, 0, 0, 1, 1]), kwargs = {}))",
           R"(call_function[target=index_select](args = (%x, 0, %i), kwargs = {}))",
           R"(call_function[target=argmax](args = (%x, 0, True), kwargs = {}))",
           R"(call_function[target=sum](args = (%x, [0, 2], True), kwargs = {}))",
           R"(call_function[target=concat](args = ([%x, %x], 0), kwargs = {}))",
           R"(call_function[target=expand](args = (%x, [2, 4, 3, 5]), kwargs = {}))",
       }) {
    SCOPED_TRACE(op);
    Module over_batch = Parse(absl::StrCat(R"(
graph():
    %x : f32[4,3,5] = placeholder[target=x]
    %i = call_function[target=arange](args = (3, -1, -1), kwargs = {dtype: i64})
    %y = )", op, R"(
    return y
)"));
    passes::ShardReport whole =
        ExpectShardedMatches(over_batch, 2, inputs, passes::ShardStrategy::kBatch);
    EXPECT_EQ(whole.all_gathers, 1) << whole.Summary();
    EXPECT_TRUE(whole.rank_row_outputs.empty()) << whole.Summary();
  }
}

// A gather whose index is shorter than its input along the split dim: each
// rank's index rows belong with other input rows, so the input is whole.
TEST(Sharding, AGatherOfAShorterIndexGetsItsInputWhole) {
  Module m = Parse(R"(
graph():
    %x : f32[4,2,8] = placeholder[target=x]
    %idx : i64[4,3] = placeholder[target=idx]
    %r = call_function[target=reshape](args = (%x, [8, 8]), kwargs = {})
    %y = call_function[target=gather](args = (%r, 1, %idx), kwargs = {})
    return y
)");
  Tensor idx(DType::kI64, {4, 3});
  for (int64_t i = 0; i < 12; ++i) idx.SetFromDouble(i, (i * 5) % 8);
  ExpectShardedMatches(m, 2, {RandomF32({4, 2, 8}), idx}, passes::ShardStrategy::kBatch);
}

// An empty batch is not split (no rank has rows to take), and runs.
TEST(Sharding, AnEmptyBatchStaysWhole) {
  Module m = Parse(R"(
graph():
    %x : f32[0,4] = placeholder[target=x]
    %r = call_function[target=relu](args = (%x,), kwargs = {})
    return r
)");
  passes::ShardReport r =
      ExpectShardedMatches(m, 2, {RandomF32({0, 4})}, passes::ShardStrategy::kBatch);
  EXPECT_TRUE(r.batch_split_inputs.empty());
  EXPECT_TRUE(r.rank_row_outputs.empty());
}

// Split by batch, each rank returns its rows of the output, which Run
// joins in rank order; the executable's signatures are the module's.
TEST(Sharding, EachRankReturnsItsRowsAndRunJoinsThem) {
  // Rows of 256 and of 192 bytes: each rank reads a view of its rows,
  // at offsets that do and do not fall on 256-byte boundaries.
  for (int width : {64, 48}) {
  const std::string x = absl::StrCat("f32[6,", width, "]");
  Module m = Parse(absl::StrCat(R"(
graph():
    %x : )", x, R"( = placeholder[target=x]
    %y : )", x, R"( = placeholder[target=y]
    %r = call_function[target=relu](args = (%x,), kwargs = {})
    %s = call_function[target=sum](args = (%y,), kwargs = {})
    %m = call_function[target=mul](args = (%r, %s), kwargs = {})
    return (m, s)
)"));
  for (int world : {2, 3}) {
    SCOPED_TRACE(absl::StrCat("world of ", world));
    ShardedCompileReport report;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedExecutable> e,
                         CompileSharded(Interp(), m, world, {}, &report,
                                        passes::ShardStrategy::kBatch));
    // m stays split by rows; s sums every row (one value): gathered first.
    EXPECT_THAT(e->row_split_outputs(), ::testing::ElementsAre(0));
    EXPECT_EQ(report.shard.all_gathers, 1);
    const std::string whole = absl::StrCat("f32[6,", width, "]");
    EXPECT_EQ(e->input_signature()[0].type->ToString(), whole);
    EXPECT_EQ(e->output_signature()[0].type->ToString(), whole);
    EXPECT_EQ(e->output_signature()[1].type->ToString(), "f32[]");
    const std::vector<Tensor> inputs = {RandomF32({6, width}), RandomF32({6, width})};
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Interp().Compile(m, {}).value()->Run(inputs));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run(inputs));
    ExpectAllClose(got, want, kReduceTol);
    ASSERT_OK_AND_ASSIGN(std::vector<std::vector<Tensor>> each,
                         e->RunEachRank(std::vector<std::vector<Tensor>>(world, inputs)));
    ASSERT_EQ(each.size(), static_cast<size_t>(world));
    const int64_t rows = 6 / world;
    for (int r = 0; r < world; ++r) {
      ASSERT_EQ(each[r][0].dims(), (std::vector<int64_t>{rows, width}));
      const float* want_rows = want[0].data<float>() + r * rows * width;
      for (int64_t k = 0; k < rows * width; ++k) {
        ASSERT_NEAR(each[r][0].data<float>()[k], want_rows[k], 1e-4f * (1 + std::abs(want_rows[k])))
            << "rank " << r << ", element " << k;
      }
    }
  }
  }
}

// Every repository model by batch, where its batch divides (else whole).
TEST(Sharding, EveryRepositoryModelSplitByBatchGivesTheUnshardedResult) {
  FindSourceDir();
  const std::vector<std::string> files = ModelFiles(true);
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    absl::StatusOr<Module> m = LoadModel(path);
    if (!m.ok() && absl::IsUnimplemented(m.status())) continue;
    ASSERT_OK(m.status());
    // Symbolic batches are sized 4 here, to divide.
    std::vector<TensorType> types;
    for (const ValueSignature& s : PlaceholderSignature(m->graph())) {
      TensorType t = *s.type;
      for (Dim& d : t.shape) d = d.is_symbolic() ? Dim(4) : d;
      types.push_back(t);
    }
    Module fixed = m->Clone();
    size_t i = 0;
    for (Node* p : fixed.graph().placeholders()) p->set_type(types[i++]);
    const std::vector<Tensor> inputs =
        RandomInputs(PlaceholderSignature(fixed.graph()), std::random_device{}());
    passes::ShardReport r =
        ExpectShardedMatches(fixed, 2, inputs, passes::ShardStrategy::kBatch);
    std::printf("%s by batch: %s\n", path.c_str(), r.Summary().c_str());
    EXPECT_EQ(r.all_reduces, 0);
    // Only the outputs are gathered where every op works per sample and
    // every output is batch-major. Not so in recurrent (its states are
    // [directions, batch, ...]) nor in the torch.export zoo (its BERT
    // builds the attention mask from the whole batch, its U-Net's batch
    // of 1 stays whole; so do the BERTs ONNX Runtime's optimizers saved),
    // nor in the models of single operators (contrib, functions: some
    // outputs are of weights only, some batches odd), nor in loops (its
    // inputs are index lists and rows a loop walks, none of them a batch).
    if (absl::StrContains(path, "/zoo/") || absl::StrContains(path, "/recurrent/") ||
        absl::StrContains(path, "/loops/") ||
        absl::StrContains(path, "bert") ||
        absl::StrContains(path, "/contrib/") || absl::StrContains(path, "/functions/") ||
        absl::StrContains(path, "/newer_opsets/")) {
      continue;
    }
    // Outputs split by rows stay so (each rank returns its rows); the
    // others are gathered.
    EXPECT_EQ(r.all_gathers + static_cast<int>(r.rank_row_outputs.size()),
              static_cast<int>(OutputSignature(fixed.graph()).size()));
  }
}

TEST(Collectives, WithoutAWorldTheyNameTheWayToRunThem) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %s = call_function[target=graft::all_reduce](args = (%x, 2), kwargs = {})
    return s
)");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Interp().Compile(m, {}));
  EXPECT_THAT(e->Run({RandomTensor(DType::kF32, {4}, 1)}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--gpus 2")));
}

TEST(Collectives, AWorldOfOneIsTheIdentity) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %s = call_function[target=graft::all_reduce](args = (%x, 1), kwargs = {})
    %g = call_function[target=graft::all_gather](args = (%s, 0, 1), kwargs = {})
    return g
)");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e, Interp().Compile(m, {}));
  const Tensor x = RandomTensor(DType::kF32, {4}, 2);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, e->Run({x}));
  EXPECT_TRUE(out[0].BitwiseEqual(x));
}

TEST(Collectives, AnInProcessWorldSumsAndGathersInRankOrder) {
  auto world = InProcessWorld(3);
  std::vector<Tensor> sums(3), gathers(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      Tensor t = Tensor::FromVector(DType::kF32, {2, 1}, std::vector<float>{1.0f * r, 10.0f * r});
      sums[r] = *world[r]->AllReduceSum(t);
      gathers[r] = *world[r]->AllGather(t, 1);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(sums[r].ToDoubles(), (std::vector<double>{3, 30}));
    EXPECT_EQ(gathers[r].dims(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(gathers[r].ToDoubles(), (std::vector<double>{0, 1, 2, 0, 10, 20}));
  }
}

TEST(Collectives, RanksThatDisagreeAllFailAndAnAbortFreesTheWaiters) {
  auto world = InProcessWorld(2);
  std::vector<absl::Status> status(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      status[r] = world[r]->AllReduceSum(Tensor(DType::kF32, {r + 1})).status();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(status[r], StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 1")));
  }
  std::thread waiter([&] { status[0] = world[0]->AllReduceSum(Tensor(DType::kF32, {1})).status(); });
  world[1]->Abort();
  waiter.join();
  EXPECT_THAT(status[0], StatusIs(absl::StatusCode::kAborted));
}

}  // namespace
}  // namespace graft::backend_test
