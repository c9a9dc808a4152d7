#include "backends/interp/execution_plan.h"

#include <thread>
#include <vector>

#include "backends/interp/interp_backend.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/model_files.h"

namespace graft::backend_test {
namespace {

using ::testing::HasSubstr;

// Several threads run one executable at once, each at its own batch size;
// every result equals the same run made alone.
TEST(InterpExecutable, ConcurrentRunsAreSafe) {
  const std::vector<std::string> files = ModelFiles(false);
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    ASSERT_OK_AND_ASSIGN(Module module, LoadModel(path));
    interp::InterpBackend backend;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                         backend.Compile(module, {}));
    constexpr int kThreads = 6;
    std::vector<std::vector<Tensor>> inputs, want;
    for (int t = 0; t < kThreads; ++t) {
      inputs.push_back(RandomInputs(e->input_signature(), 100 * t, 1 + t));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, e->Run(inputs.back()));
      want.push_back(std::move(out));
    }
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 30; ++i) {
          absl::StatusOr<std::vector<Tensor>> out = e->Run(inputs[t]);
          if (!out.ok() || !(*out)[0].BitwiseEqual(want[t][0])) {
            ++mismatches[t];
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << t;
  }
}

TEST(ExecutionPlan, BuildNamesTheNodeThatCannotRun) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x");
  g.Output(g.CallModule("missing", {x}));
  absl::StatusOr<std::unique_ptr<interp::ExecutionPlan>> plan =
      interp::ExecutionPlan::Build(m);
  EXPECT_THAT(plan, testing::StatusIs(absl::StatusCode::kNotFound,
                                      HasSubstr("call_module missing")));
}

// A chain of same-sized values needs two buffers, however long it is.
TEST(ExecutionPlan, PlansMemoryFromLifetimes) {
  Module m;
  Graph& g = m.graph();
  Node* v = g.Placeholder("x", TensorType{DType::kF32, {256}});
  for (int i = 0; i < 10; ++i) {
    v = g.CallFunction("relu", {v});
    v->set_type(TensorType{DType::kF32, {256}});
  }
  g.Output(v);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<interp::ExecutionPlan> plan,
                       interp::ExecutionPlan::Build(m));
  EXPECT_EQ(plan->info().intermediate_bytes, 10u * 1024);
  EXPECT_EQ(plan->info().arena_bytes, 2u * 1024);
}

TEST(ExecutionPlan, CallModuleChecksTheSubmodulesInputs) {
  Module m;
  Module sub;
  Node* p = sub.graph().Placeholder("p", TensorType{DType::kF32, {3}});
  sub.graph().Output(sub.graph().CallFunction("neg", {p}));
  m.AddSubmodule("block", std::move(sub));
  Node* x = m.graph().Placeholder("x", TensorType{DType::kF32, {4}});
  m.graph().Output(m.graph().CallModule("block", {x}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<interp::ExecutionPlan> plan,
                       interp::ExecutionPlan::Build(m));
  EXPECT_THAT(plan->Run({Tensor(DType::kF32, {4})}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("call_module block")));
}

}  // namespace
}  // namespace graft::backend_test
