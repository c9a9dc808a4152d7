// Tensor parallelism on GPUs: the repository's models sharded over two GPUs
// (CompileSharded on the cuda backend: rank r on GPU r, collectives through
// NCCL inside each rank's CUDA graph) against the unsharded interpreter.
// Skips, saying why, on a machine with fewer than two GPUs or no NCCL.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/nccl_world.h"
#include "backends/sharded_executable.h"
#include "graph/collective_ops.h"
#include "gtest/gtest.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/model_files.h"
#include "tests/cuda/cuda_test_util.h"

namespace graft::cuda_test {
namespace {

// Skips unless a world of two GPUs can be made.
#define SKIP_WITHOUT_TWO_GPUS()                                            \
  do {                                                                     \
    SKIP_WITHOUT_GPU();                                                    \
    absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> world =     \
        ::graft::cuda::CreateNcclWorld(2);                                 \
    if (!world.ok()) GTEST_SKIP() << world.status().message();             \
  } while (0)

// Against `reference`: the interpreter, or the unsharded module on one GPU
// at the same precision (for models too large for the interpreter).
// Split by batch, the ranks are compiled for the inputs' sizes (so that a
// symbolic batch splits), read their rows of the caller's tensors in place
// (or copy them where their programs cannot) and return their rows, which
// Run joins.
void ExpectShardedOnGpusMatches(const Module& module, const std::vector<Tensor>& inputs,
                                CompileOptions options, double tol,
                                Backend& reference = Interp(),
                                passes::ShardStrategy strategy = passes::ShardStrategy::kTensor) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> whole,
                       reference.Compile(module, &reference == &Interp() ? CompileOptions{}
                                                                          : options));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, whole->Run(inputs));
  if (strategy == passes::ShardStrategy::kBatch) {
    for (const Tensor& t : inputs) options.input_types.push_back(t.type());
  }
  ShardedCompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedExecutable> sharded,
                       CompileSharded(Cuda(), module, 2, options, &report, strategy));
  std::fprintf(stderr, "  by %s: %s\n", std::string(passes::ShardStrategyName(strategy)).c_str(),
               report.shard.Summary().c_str());
  // The collectives run on the GPU (other ops may fall back, as unsharded).
  for (const GraphBreak& b : report.rank0.breaks) {
    EXPECT_FALSE(IsCollectiveOp(b.op)) << b.node << ": " << b.reason;
  }
  // Twice: the second run replays the captured graph, NCCL calls included.
  for (int run = 0; run < 2; ++run) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, sharded->Run(inputs));
    ExpectAllClose(got, want, tol);
  }
  // Inputs on GPU 0, as a caller's tensors usually are: copied to each
  // other rank's GPU before any rank starts (a rank refused them, and the
  // abort of the world that followed hung).
  std::vector<Tensor> on_gpu0;
  for (const Tensor& t : inputs) {
    ASSERT_OK_AND_ASSIGN(Tensor d, CopyToDevice(t, Cuda().allocator(CompileOptions{})));
    on_gpu0.push_back(std::move(d));
  }
  std::fprintf(stderr, "  inputs on GPU 0\n");
  for (int run = 0; run < 2; ++run) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, sharded->Run(on_gpu0));
    ExpectAllClose(got, want, tol);
  }
  if (strategy != passes::ShardStrategy::kBatch || sharded->row_split_outputs().empty()) return;
  // Outputs kept on the device: the joined rows on GPU 0 too.
  options.keep_outputs_on_device = true;
  ASSERT_OK_AND_ASSIGN(sharded, CompileSharded(Cuda(), module, 2, options, nullptr, strategy));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> kept, sharded->Run(on_gpu0));
  std::vector<Tensor> on_host;
  for (int i : sharded->row_split_outputs()) {
    EXPECT_EQ(kept[i].device().ToString(), "cuda:0") << "output " << i;
  }
  for (const Tensor& t : kept) {
    ASSERT_OK_AND_ASSIGN(on_host.emplace_back(), CopyToHost(t));
  }
  ExpectAllClose(on_host, want, tol);
}

TEST(CudaSharding, EveryModelOnTwoGpusGivesTheUnshardedResult) {
  SKIP_WITHOUT_TWO_GPUS();
  backend_test::FindSourceDir();
  const std::vector<std::string> files = backend_test::ModelFiles(true);
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    std::fprintf(stderr, "sharding %s\n", path.c_str());
    absl::StatusOr<Module> m = LoadModel(path);
    if (!m.ok()) continue;  // .onnx without ONNX import in this build.
    const std::vector<Tensor> inputs =
        backend_test::RandomInputs(PlaceholderSignature(m->graph()), std::random_device{}());
    ExpectShardedOnGpusMatches(*m, inputs, {}, kReduceTol);
    ExpectShardedOnGpusMatches(*m, inputs, {}, kReduceTol, Interp(),
                               passes::ShardStrategy::kBatch);
  }
}

// Against the unsharded block on one GPU, in bf16 both.
TEST(CudaSharding, TheBf16Gpt2BlockOnTwoGpus) {
  SKIP_WITHOUT_TWO_GPUS();
  backend_test::FindSourceDir();
  if (backend_test::SourceDir().empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  // A GPU machine without ONNX import reads the block converted to .gpb.
  const char* converted = std::getenv("GRAFT_GPT2_BLOCK");
  absl::StatusOr<Module> m = LoadModel(
      converted != nullptr ? std::string(converted)
                           : backend_test::SourceDir() +
                                 "/tests/onnx_models/gpt2_block_opset17/model.onnx");
  if (!m.ok()) GTEST_SKIP() << m.status().message();
  const std::vector<Tensor> inputs =
      backend_test::RandomInputs(PlaceholderSignature(m->graph()), std::random_device{}());
  CompileOptions options;
  options.options["precision"] = "bf16";
  ExpectShardedOnGpusMatches(*m, inputs, options, kHalfTol, Cuda());
  ExpectShardedOnGpusMatches(*m, inputs, options, kHalfTol, Cuda(), passes::ShardStrategy::kBatch);
}

// A rank whose run fails once its graph has run, all-reduce included (an
// index out of range, which the run's error flag reports), leaves the NCCL
// world as it is: the error names the rank, nothing is aborted, and the
// next runs give the unsharded result. The runs go on a thread of their
// own: should one hang, the test program ends after 60 s saying so,
// rather than stopping the suite.
TEST(CudaSharding, ARankThatFailsAfterItsCollectivesLeavesTheWorldReady) {
  SKIP_WITHOUT_TWO_GPUS();
  std::mt19937_64 rng(3);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {4, 16});
  Node* ids = b.In(Tensor::FromVector<int64_t>(DType::kI64, {4}, {0, 3, 2, 1}));
  Node* h = b.Call("relu", {b.Call("linear", {x, b.Const(DType::kF32, {32, 16}),
                                              b.Const(DType::kF32, {32})})});
  Node* y = b.Call("linear", {h, b.Const(DType::kF32, {16, 32}), b.Const(DType::kF32, {16})});
  b.Out({b.Call("index_select", {y, int64_t{0}, ids})});
  ShardedCompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShardedExecutable> sharded,
                       CompileSharded(Cuda(), b.module(), 2, {}, &report));
  EXPECT_EQ(report.shard.all_reduces, 1) << report.shard.Summary();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> whole, Interp().Compile(b.module(), {}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, whole->Run(b.inputs()));
  const std::vector<Tensor> bad{b.inputs()[0],
                                Tensor::FromVector<int64_t>(DType::kI64, {4}, {0, 3, 4, 1})};
  std::promise<void> finished;
  std::future<void> done = finished.get_future();
  std::thread runs([&] {
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE(absl::StrCat("round ", round));
      EXPECT_THAT(sharded->RunEachRank({b.inputs(), bad}).status(),
                  ::graft::testing::StatusIs(
                      absl::StatusCode::kInvalidArgument,
                      ::testing::AllOf(::testing::HasSubstr("rank 1"),
                                       ::testing::HasSubstr("out of range"))));
      for (int run = 0; run < 2; ++run) {
        absl::StatusOr<std::vector<Tensor>> got = sharded->Run(b.inputs());
        EXPECT_OK(got.status());
        if (got.ok()) ExpectAllClose(*got, want, kReduceTol);
      }
    }
    finished.set_value();
  });
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "CudaSharding.ARankThatFailsAfterItsCollectivesLeavesTheWorldReady "
                         "hung for 60 s: ending the test program\n");
    std::fflush(stderr);
    std::_Exit(1);
  }
  runs.join();
}

TEST(CudaSharding, ACollectiveWithoutAWorldSaysHowToRunIt) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(1);
  ModuleBuilder b(rng);
  Node* x = b.In(DType::kF32, {8});
  b.Out({b.Call("graft::all_reduce", {x, int64_t{2}})});
  EXPECT_THAT(Cuda().Compile(b.module(), {}).status(),
              ::graft::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                         ::testing::HasSubstr("--gpus")));
}

}  // namespace
}  // namespace graft::cuda_test
