#include "backends/fallback_executable.h"

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "onnx/onnx_import.h"
#include "serialize/model_io.h"
#include "support/status_matchers.h"
#include "tests/backends/model_files.h"
#include "tests/backends/test_backends.h"

namespace graft::backend_test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::set<std::string> OpsOf(const Module& module) {
  std::set<std::string> ops;
  for (const Node* n : module.graph().nodes()) {
    if (n->op() == OpCode::kCallFunction) ops.insert(n->target());
  }
  return ops;
}

// Every other op of the model, in name order: enough breaks to exercise
// the partitioner on every model.
std::set<std::string> EveryOther(const std::set<std::string>& ops,
                                 bool first) {
  std::set<std::string> picked;
  bool take = first;
  for (const std::string& op : ops) {
    if (take) picked.insert(op);
    take = !take;
  }
  return picked;
}

void ExpectSameAsInterpreter(const std::string& path,
                             const std::set<std::string>& claimed) {
  SCOPED_TRACE(path);
  ASSERT_OK_AND_ASSIGN(Module module, LoadModel(path));
  interp::InterpBackend interp;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> reference,
                       interp.Compile(module, {}));
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::vector<Tensor> inputs =
      RandomInputs(reference->input_signature(), seed);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, reference->Run(inputs));

  SubsetBackend backend(claimed);
  CompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> split,
                       CompileWithFallback(backend, module, {}, &report));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, split->Run(inputs));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].on_host()) << "output " << i;
    EXPECT_TRUE(got[i].BitwiseEqual(want[i]))
        << "output " << i << ": " << got[i].TypeString() << " vs "
        << want[i].TypeString();
  }
  // Each break names an op the backend did not claim, with its reason.
  for (const GraphBreak& b : report.breaks) {
    EXPECT_FALSE(claimed.contains(b.op)) << b.node;
    EXPECT_THAT(b.reason, HasSubstr("does not claim")) << b.node;
  }
  // What the backend ran is exactly the claimed ops of the model.
  std::set<std::string> ran;
  for (const std::string& op : backend.ran()) ran.insert(op);
  std::set<std::string> expected;
  for (const std::string& op : OpsOf(module)) {
    if (claimed.contains(op)) expected.insert(op);
  }
  // getitem joins the partition of the tuple it reads.
  ran.erase("getitem");
  expected.erase("getitem");
  EXPECT_EQ(ran, expected);
  if (!report.breaks.empty() && !expected.empty()) {
    EXPECT_EQ(backend.host_inputs.load(), 0);
    EXPECT_GT(backend.fake().to_device.load(), 0);
    EXPECT_GT(backend.fake().to_host.load(), 0);
  }
  EXPECT_EQ(report.partitions > 1, !report.breaks.empty() && !expected.empty());
}

TEST(CompileWithFallback, EveryModelMatchesTheInterpreter) {
  const std::vector<std::string> files = ModelFiles(HaveOnnx());
  if (files.empty()) GTEST_SKIP() << "GRAFT_SOURCE_DIR is not set";
  if (!HaveOnnx()) {
    std::printf("ONNX import is not built: only the .graft models run\n");
  }
  for (const std::string& path : files) {
    ASSERT_OK_AND_ASSIGN(Module module, LoadModel(path));
    const std::set<std::string> ops = OpsOf(module);
    ExpectSameAsInterpreter(path, EveryOther(ops, true));
    ExpectSameAsInterpreter(path, EveryOther(ops, false));
    ExpectSameAsInterpreter(path, ops);  // Everything: one partition.
    ExpectSameAsInterpreter(path, {});   // Nothing: all on the interpreter.
  }
}

// relu(x) and relu(x) + relu(x) are claimed, sin is not: the two relus and
// the add run as one partition although sin sits between them in the graph.
TEST(CompileWithFallback, GroupsNodesThatAreNotConsecutive) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  Node* r1 = g.CallFunction("relu", {x});
  Node* s = g.CallFunction("sin", {x});
  Node* r2 = g.CallFunction("neg", {x});
  Node* add = g.CallFunction("add", {r1, r2});
  g.Output(g.CallFunction("mul", {add, s}));
  SubsetBackend backend({"relu", "neg", "add"});
  CompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                       CompileWithFallback(backend, m, {}, &report));
  EXPECT_EQ(report.backend_partitions, 1);
  EXPECT_EQ(report.partitions, 3);  // {relu, neg, add}, {sin}, {mul}.
  ASSERT_EQ(report.breaks.size(), 2u);
  EXPECT_EQ(report.breaks[0].node, "sin");
  EXPECT_EQ(report.breaks[1].op, "mul");
  Tensor in = RandomTensor(DType::kF32, {4}, 1);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({in}));
  for (int i = 0; i < 4; ++i) {
    const float v = in.data<float>()[i];
    EXPECT_FLOAT_EQ(got[0].data<float>()[i],
                    (std::max(v, 0.f) - v) * std::sin(v));
  }
}

// relu -> sin -> neg, and relu also feeds the add after neg: relu and
// neg/add cannot share a partition, since sin would have to run both
// before and after it.
TEST(CompileWithFallback, NeverMergesAcrossAPathThroughTheOtherSide) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  Node* r = g.CallFunction("relu", {x});
  Node* s = g.CallFunction("sin", {r});
  Node* n = g.CallFunction("neg", {s});
  g.Output(g.CallFunction("add", {n, r}));
  const PartitionPlan plan = PlanPartitions(m, [](const Node& node) {
    return node.is_call("sin") ? absl::UnimplementedError("no")
                               : absl::OkStatus();
  });
  ASSERT_EQ(plan.partitions.size(), 3u);
  EXPECT_EQ(plan.partitions[0].nodes, std::vector<const Node*>{r});
  EXPECT_EQ(plan.partitions[1].nodes, std::vector<const Node*>{s});
  EXPECT_EQ(plan.partitions[2].nodes.size(), 2u);
  EXPECT_EQ(plan.backend_partitions(), 2);
}

// Random graphs: every value is made in a partition no later than the
// partitions that read it, so running partitions in order is correct.
TEST(PlanPartitions, RandomGraphsHaveNoCycles) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 50; ++round) {
    Module m;
    Graph& g = m.graph();
    std::vector<Node*> values = {g.Placeholder("x")};
    for (int i = 0; i < 40; ++i) {
      Node* a = values[rng() % values.size()];
      Node* b = values[rng() % values.size()];
      values.push_back(rng() % 2 ? g.CallFunction("add", {a, b})
                                 : g.CallFunction("sin", {a}));
    }
    g.Output(values.back());
    std::set<const Node*> unclaimed;
    for (Node* v : values) {
      if (rng() % 3 == 0) unclaimed.insert(v);
    }
    const PartitionPlan plan = PlanPartitions(m, [&](const Node& node) {
      return unclaimed.contains(&node) ? absl::UnimplementedError("no")
                                       : absl::OkStatus();
    });
    std::map<const Node*, size_t> index;
    for (size_t p = 0; p < plan.partitions.size(); ++p) {
      for (const Node* n : plan.partitions[p].nodes) {
        index[n] = p;
        EXPECT_EQ(plan.partitions[p].on_backend, !unclaimed.contains(n));
      }
    }
    for (const auto& [node, p] : index) {
      for (const Node* input : node->inputs()) {
        if (index.contains(input)) {
          EXPECT_LE(index[input], p);
        }
      }
    }
  }
}

TEST(CompileWithFallback, GetitemStaysWithItsTuple) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  Node* split = g.CallFunction("split", {x, 2});
  Node* a = g.CallFunction("getitem", {split, 0});
  Node* b = g.CallFunction("getitem", {split, 1});
  g.Output(g.CallFunction("mul", {g.CallFunction("sin", {a}), b}));
  SubsetBackend backend({"split", "mul"});
  CompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                       CompileWithFallback(backend, m, {}, &report));
  ASSERT_EQ(report.breaks.size(), 1u);
  EXPECT_EQ(report.breaks[0].op, "sin");
  Tensor in = RandomTensor(DType::kF32, {4}, 2);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({in}));
  const float* v = in.data<float>();
  EXPECT_FLOAT_EQ(got[0].data<float>()[0], std::sin(v[0]) * v[2]);
  EXPECT_FLOAT_EQ(got[0].data<float>()[1], std::sin(v[1]) * v[3]);
}

TEST(CompileWithFallback, OutputsCanStayOnTheDevice) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  g.Output(g.CallFunction("relu", {g.CallFunction("sin", {x})}));
  SubsetBackend backend({"relu"});
  CompileOptions options;
  options.keep_outputs_on_device = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                       CompileWithFallback(backend, m, options));
  Tensor in = RandomTensor(DType::kF32, {4}, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({in}));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].device().ToString(), "cuda:7");
  ASSERT_OK_AND_ASSIGN(Tensor host, CopyToHost(got[0]));
  EXPECT_TRUE(host.on_host());
  EXPECT_FLOAT_EQ(host.data<float>()[0],
                  std::max(std::sin(in.data<float>()[0]), 0.f));
}

}  // namespace
}  // namespace graft::backend_test

namespace graft::backend_test {
namespace {

TEST(CompileWithFallback, CallModulePartsCarryTheirSubmodules) {
  Module m;
  Module sub;
  Node* p = sub.graph().Placeholder("p", TensorType{DType::kF32, {4}});
  sub.graph().Output(sub.graph().CallFunction("neg", {p}));
  m.AddSubmodule("block", std::move(sub));
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  Node* b = g.CallModule("block", {x});
  g.Output(g.CallFunction("relu", {g.CallFunction("sin", {b})}));
  SubsetBackend backend({"neg", "relu"});
  CompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                       CompileWithFallback(backend, m, {}, &report));
  EXPECT_EQ(report.partitions, 3);
  Tensor in = RandomTensor(DType::kF32, {4}, 4);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({in}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(got[0].data<float>()[i],
                    std::max(std::sin(-in.data<float>()[i]), 0.f));
  }
}

// The subset backend claims every call_module node by itself; one whose
// submodule holds an op it cannot run falls back as a whole, and the
// reason names the op inside.
TEST(CompileWithFallback, ACallModuleRunsWhereItsWholeSubmoduleCan) {
  Module m;
  Module sub;
  Node* p = sub.graph().Placeholder("p", TensorType{DType::kF32, {4}});
  sub.graph().Output(sub.graph().CallFunction("sin", {sub.graph().CallFunction("neg", {p})}));
  m.AddSubmodule("block", std::move(sub));
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  g.Output(g.CallFunction("relu", {g.CallModule("block", {x})}));
  SubsetBackend backend({"neg", "relu"});
  CompileReport report;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                       CompileWithFallback(backend, m, {}, &report));
  ASSERT_EQ(report.breaks.size(), 1u);
  EXPECT_EQ(report.breaks[0].node, "block");
  EXPECT_THAT(report.breaks[0].reason,
              ::testing::HasSubstr("submodule 'block': %sin (sin): the subset "
                                 "backend does not claim sin"));
  Tensor in = RandomTensor(DType::kF32, {4}, 4);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, e->Run({in}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(got[0].data<float>()[i],
                    std::max(std::sin(-in.data<float>()[i]), 0.f));
  }
}

TEST(CompileWithFallback, ATupleOutputAcrossPartsIsRefusedAtCompileTime) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  // No shape-prop: the split's tuple types are unknown.
  g.Output(g.CallFunction("split", {g.CallFunction("sin", {x}), 2}));
  SubsetBackend backend({"split"});
  EXPECT_THAT(CompileWithFallback(backend, m, {}),
              testing::StatusIs(absl::StatusCode::kUnimplemented,
                                HasSubstr("returns a tuple")));
}

TEST(CompileWithFallback, BackendPartsGetTheCompiledInputTypes) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x");  // Typed only by the compile options.
  g.Output(g.CallFunction("relu", {g.CallFunction("sin", {x})}));
  SubsetBackend backend({"sin"});  // relu falls back.
  CompileOptions options;
  options.input_types = {TensorType{DType::kF32, {3}}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executable> e,
                       CompileWithFallback(backend, m, options));
  const std::vector<std::optional<TensorType>> types =
      backend.placeholder_types();
  ASSERT_EQ(types.size(), 1u);
  ASSERT_TRUE(types[0].has_value());
  EXPECT_EQ(types[0]->ToString(), "f32[3]");
  EXPECT_THAT(e->Run({Tensor(DType::kI64, {3})}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK(e->Run({Tensor(DType::kF32, {3})}));
}

}  // namespace
}  // namespace graft::backend_test
