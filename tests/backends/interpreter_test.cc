// The interpreter's walk: hooks, value lifetimes, submodules, outputs and
// run-time errors.

#include "backends/interp/interpreter.h"

#include <map>
#include <string>

#include "backends/interp/kernel.h"
#include "graph/op_registry.h"
#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TensorType F32Type(Shape shape) {
  return TensorType{DType::kF32, std::move(shape)};
}

// x -> relu -> add(relu, 1) -> output.
Module ReluAddModule() {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", F32Type({3}));
  Node* relu = g.CallFunction("relu", {x});
  Node* add = g.CallFunction("add", {relu, 1.0});
  g.Output(add);
  return m;
}

// Records every node's value, in order.
class Recorder : public interp::Interpreter {
 public:
  using Interpreter::Interpreter;
  std::vector<std::string> order;
  std::map<std::string, Tensor> values;

 protected:
  absl::StatusOr<interp::Value> RunNode(const Node& node) override {
    absl::StatusOr<interp::Value> v = Interpreter::RunNode(node);
    order.push_back(node.name());
    if (v.ok() && v->is_tensor()) values[node.name()] = v->tensor().Clone();
    return v;
  }
};

TEST(Interpreter, RecorderSeesEveryNode) {
  Module m = ReluAddModule();
  Recorder rec(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, rec.Run({F32({3}, {-1, 0, 2})}));
  EXPECT_THAT(rec.order, ElementsAre("x", "relu", "add", "output"));
  ExpectTensor(rec.values["x"], DType::kF32, {3}, {-1, 0, 2});
  ExpectTensor(rec.values["relu"], DType::kF32, {3}, {0, 0, 2});
  ExpectTensor(rec.values["add"], DType::kF32, {3}, {1, 1, 3});
  ExpectTensor(rec.values["output"], DType::kF32, {3}, {1, 1, 3});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensor(out[0], DType::kF32, {3}, {1, 1, 3});
}

// Replaces relu's result with 10 everywhere.
class ReluReplacer : public interp::Interpreter {
 public:
  using Interpreter::Interpreter;

 protected:
  absl::StatusOr<interp::Value> CallFunction(const Node& node) override {
    if (node.is_call("relu")) return interp::Value(F32({3}, {10, 10, 10}));
    return Interpreter::CallFunction(node);
  }
};

TEST(Interpreter, SubclassCanReplaceAValue) {
  Module m = ReluAddModule();
  ReluReplacer replacer(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, replacer.Run({F32({3}, {-1, 0, 2})}));
  ExpectTensor(out[0], DType::kF32, {3}, {11, 11, 11});
}

// Checks, before each node runs, which earlier values are still held.
class LifetimeProbe : public interp::Interpreter {
 public:
  using Interpreter::Interpreter;
  std::map<std::string, std::vector<std::string>> live_before;
  std::vector<const Node*> nodes;

 protected:
  absl::StatusOr<interp::Value> RunNode(const Node& node) override {
    std::vector<std::string>& live = live_before[node.name()];
    for (const Node* n : nodes) {
      if (ValueOf(n) != nullptr) live.push_back(n->name());
    }
    nodes.push_back(&node);
    return Interpreter::RunNode(node);
  }
};

TEST(Interpreter, FreesValuesAfterTheirLastUse) {
  // x -> a = neg(x) -> b = neg(a) -> c = add(b, x) -> output; d = neg(x) is
  // dead.
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", F32Type({1}));
  Node* a = g.CallFunction("neg", {x});
  Node* d = g.CallFunction("relu", {x});
  (void)d;
  Node* b = g.CallFunction("neg", {a});
  Node* c = g.CallFunction("add", {b, x});
  g.Output(c);
  LifetimeProbe probe(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, probe.Run({F32({1}, {5})}));
  ExpectTensor(out[0], DType::kF32, {1}, {10});
  EXPECT_THAT(probe.live_before["neg"], ElementsAre("x"));
  EXPECT_THAT(probe.live_before["relu"], ElementsAre("x", "neg"));
  // The unused relu was dropped right away.
  EXPECT_THAT(probe.live_before["neg_1"], ElementsAre("x", "neg"));
  // neg's last use was neg_1.
  EXPECT_THAT(probe.live_before["add"], ElementsAre("x", "neg_1"));
  EXPECT_THAT(probe.live_before["output"], ElementsAre("add"));
}

TEST(Interpreter, LongChainRuns) {
  Module m;
  Graph& g = m.graph();
  Node* v = g.Placeholder("x", F32Type({2}));
  for (int i = 0; i < 100000; ++i) v = g.CallFunction("neg", {v});
  g.Output(v);
  interp::Interpreter interpreter(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, interpreter.Run({F32({2}, {1, -2})}));
  ExpectTensor(out[0], DType::kF32, {2}, {1, -2});
}

TEST(Interpreter, RunsTwiceWithFreshValues) {
  Module m = ReluAddModule();
  interp::Interpreter interpreter(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(a, interpreter.Run({F32({3}, {1, 2, 3})}));
  GRAFT_ASSERT_OK_AND_ASSIGN(b, interpreter.Run({F32({3}, {-1, -2, -3})}));
  ExpectTensor(a[0], DType::kF32, {3}, {2, 3, 4});
  ExpectTensor(b[0], DType::kF32, {3}, {1, 1, 1});
}

TEST(Interpreter, OutputListAndTuples) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", F32Type({4}));
  Node* n = g.CallFunction("neg", {x});
  Node* s = g.CallFunction("split", {x, 2});
  g.Output(ArgumentList{n, s, x});
  interp::Interpreter interpreter(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, interpreter.Run({F32({4}, {1, 2, 3, 4})}));
  ASSERT_EQ(out.size(), 4u);
  ExpectTensor(out[0], DType::kF32, {4}, {-1, -2, -3, -4});
  ExpectTensor(out[1], DType::kF32, {2}, {1, 2});
  ExpectTensor(out[2], DType::kF32, {2}, {3, 4});
  ExpectTensor(out[3], DType::kF32, {4}, {1, 2, 3, 4});
  GRAFT_ASSERT_OK_AND_ASSIGN(value,
                             interpreter.RunToValue({F32({4}, {1, 2, 3, 4})}));
  EXPECT_TRUE(value.is_tuple());
}

TEST(Interpreter, GetAttrReadsModuleTensors) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", F32Type({2}));
  Node* w = g.GetAttr("w");
  g.Output(g.CallFunction("mul", {x, w}));
  m.SetTensor("w", F32({2}, {3, 4}));
  interp::Interpreter interpreter(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, interpreter.Run({F32({2}, {1, 2})}));
  ExpectTensor(out[0], DType::kF32, {2}, {3, 8});

  Module missing;
  missing.graph().Output(missing.graph().GetAttr("nope"));
  interp::Interpreter bad(missing);
  absl::StatusOr<std::vector<Tensor>> err = bad.Run({});
  ASSERT_FALSE(err.ok());
  EXPECT_THAT(err.status().message(), HasSubstr("node %nope (get_attr nope)"));
}

// main: y = relu(call_module block(x, b=w)); block(a, b) = add(a, b).
Module ModuleWithSubmodule() {
  Module block;
  Node* a = block.graph().Placeholder("a", F32Type({2}));
  Node* b = block.graph().Placeholder("b", F32Type({2}));
  block.graph().Output(block.graph().CallFunction("add", {a, b}));
  Module m;
  m.AddSubmodule("block", std::move(block));
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", F32Type({2}));
  Node* w = g.Placeholder("w", F32Type({2}));
  Node* call = g.CallModule("block", {x}, {{"b", w}});
  g.Output(g.CallFunction("relu", {call}));
  return m;
}

// Counts the nodes run, inside submodules too.
class CountingInterpreter : public interp::Interpreter {
 public:
  CountingInterpreter(const Module& m, int* count)
      : Interpreter(m), count_(count) {}

 protected:
  absl::StatusOr<interp::Value> RunNode(const Node& node) override {
    ++*count_;
    return Interpreter::RunNode(node);
  }
  std::unique_ptr<Interpreter> CreateNested(const Module& sub) override {
    return std::make_unique<CountingInterpreter>(sub, count_);
  }

 private:
  int* count_;
};

TEST(Interpreter, CallModuleRunsTheSubmodule) {
  Module m = ModuleWithSubmodule();
  int count = 0;
  CountingInterpreter interpreter(m, &count);
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, interpreter.Run({F32({2}, {1, -5}), F32({2}, {2, 3})}));
  ExpectTensor(out[0], DType::kF32, {2}, {3, 0});
  // Outer: x, w, block, relu, output; inner: a, b, add, output.
  EXPECT_EQ(count, 9);
}

TEST(Interpreter, ErrorsInsideSubmodulesNameBothNodes) {
  Module block;
  Node* a = block.graph().Placeholder("a", TensorType{DType::kI64, {2}});
  block.graph().Output(block.graph().CallFunction("pow", {a, -1}));
  Module m;
  m.AddSubmodule("block", std::move(block));
  Node* x = m.graph().Placeholder("x");
  m.graph().Output(m.graph().CallModule("block", {x}));
  interp::Interpreter interpreter(m);
  absl::StatusOr<std::vector<Tensor>> out = interpreter.Run({I64({2}, {1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("node %block (call_module block): node %pow (pow): "));
  // An input that does not match the submodule's placeholder type.
  absl::StatusOr<std::vector<Tensor>> dtype =
      interpreter.Run({F32({2}, {1, 2})});
  ASSERT_FALSE(dtype.ok());
  EXPECT_THAT(
      dtype.status().message(),
      HasSubstr(
          "node %block (call_module block): input 0 ('a'): expected i64[2]"));
}

TEST(Interpreter, UnknownOpNamesNodeAndOp) {
  Module m;
  Node* x = m.graph().Placeholder("x", F32Type({1}));
  m.graph().Output(m.graph().CallFunction("frobnicate", {x}));
  interp::Interpreter interpreter(m);
  absl::StatusOr<std::vector<Tensor>> out = interpreter.Run({F32({1}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("node %frobnicate (frobnicate)"));
  EXPECT_THAT(out.status().message(), HasSubstr("unknown op 'frobnicate'"));
}

TEST(Interpreter, ChecksInputsAgainstPlaceholderTypes) {
  Module m = ReluAddModule();
  interp::Interpreter interpreter(m);
  absl::StatusOr<std::vector<Tensor>> count = interpreter.Run({});
  ASSERT_FALSE(count.ok());
  EXPECT_THAT(count.status().message(),
              HasSubstr("expected 1 inputs (x), got 0"));
  absl::StatusOr<std::vector<Tensor>> dtype =
      interpreter.Run({I64({3}, {1, 2, 3})});
  ASSERT_FALSE(dtype.ok());
  EXPECT_THAT(dtype.status().message(),
              HasSubstr("input 0 ('x'): expected f32[3], got i64[3]"));
  absl::StatusOr<std::vector<Tensor>> shape =
      interpreter.Run({F32({4}, {1, 2, 3, 4})});
  ASSERT_FALSE(shape.ok());
  EXPECT_THAT(shape.status().message(), HasSubstr("dim 0 is 4, expected 3"));
  absl::StatusOr<std::vector<Tensor>> undefined = interpreter.Run({Tensor()});
  ASSERT_FALSE(undefined.ok());
}

TEST(Interpreter, SymbolicDimsBindConsistently) {
  Module m;
  Graph& g = m.graph();
  const Dim batch = Dim::Symbol("batch");
  Node* x = g.Placeholder("x", F32Type({batch, 2}));
  Node* y = g.Placeholder("y", F32Type({batch, 1}));
  g.Output(g.CallFunction("add", {x, y}));
  interp::Interpreter interpreter(m);
  // Any batch size, the same for both inputs.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      a, interpreter.Run({F32({1, 2}, {1, 2}), F32({1, 1}, {10})}));
  ExpectTensor(a[0], DType::kF32, {1, 2}, {11, 12});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      b, interpreter.Run(
             {F32({3, 2}, {1, 2, 3, 4, 5, 6}), F32({3, 1}, {0, 0, 1})}));
  ExpectTensor(b[0], DType::kF32, {3, 2}, {1, 2, 3, 4, 6, 7});
  absl::StatusOr<std::vector<Tensor>> bad =
      interpreter.Run({F32({2, 2}, {1, 2, 3, 4}), F32({3, 1}, {1, 2, 3})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("input 1 ('y')"));
  EXPECT_THAT(bad.status().message(),
              HasSubstr("batch is 2 from input 0 ('x')"));
}

TEST(Interpreter, UntypedPlaceholdersTakeAnything) {
  Module m;
  Node* x = m.graph().Placeholder("x");
  m.graph().Output(m.graph().CallFunction("neg", {x}));
  interp::Interpreter interpreter(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, interpreter.Run({T(DType::kF64, {1}, {2})}));
  ExpectTensor(out[0], DType::kF64, {1}, {-2});
}

TEST(Interpreter, MissingOutputIsAnError) {
  Module m;
  Node* x = m.graph().Placeholder("x");
  m.graph().CallFunction("neg", {x});
  interp::Interpreter interpreter(m);
  absl::StatusOr<std::vector<Tensor>> out = interpreter.Run({F32({1}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("no output node"));
}

TEST(KernelTable, EveryCoreOpHasAKernel) {
  int core_ops = 0;
  for (const OpSchema* schema : OpRegistry::Global().All()) {
    if (schema->name.find("::") != std::string::npos) continue;
    ++core_ops;
    EXPECT_NE(interp::KernelTable::Global().Find(schema->name), nullptr)
        << "no interpreter kernel for core op " << schema->name;
  }
  EXPECT_GT(core_ops, 0);
}

TEST(KernelTable, ExtensionOpsRunWithARegisteredKernel) {
  OpSchema schema;
  schema.name = "interp_test::twice";
  schema.params = {ParamSpec{"input", ParamKind::kTensor}};
  ASSERT_TRUE(OpRegistry::Global().Register(std::move(schema)).ok());
  auto twice =
      [](const interp::KernelContext& ctx) -> absl::StatusOr<interp::Value> {
    absl::StatusOr<Tensor> x = ctx.Input("input");
    if (!x.ok()) return x.status();
    Tensor out(x->dtype(), x->dims());
    for (int64_t i = 0; i < x->NumElements(); ++i) {
      out.SetFromDouble(i, 2 * x->GetAsDouble(i));
    }
    return interp::Value(out);
  };
  Module m;
  Node* x = m.graph().Placeholder("x", F32Type({2}));
  m.graph().Output(m.graph().CallFunction("interp_test::twice", {x}));
  interp::Interpreter interpreter(m);
  absl::StatusOr<std::vector<Tensor>> before =
      interpreter.Run({F32({2}, {1, 2})});
  ASSERT_FALSE(before.ok());
  EXPECT_THAT(before.status().message(),
              HasSubstr("no kernel for op 'interp_test::twice'"));
  ASSERT_TRUE(
      interp::KernelTable::Global().Register("interp_test::twice", twice).ok());
  EXPECT_FALSE(
      interp::KernelTable::Global().Register("interp_test::twice", twice).ok());
  GRAFT_ASSERT_OK_AND_ASSIGN(out, interpreter.Run({F32({2}, {1, 2})}));
  ExpectTensor(out[0], DType::kF32, {2}, {2, 4});
}

}  // namespace
}  // namespace graft::interp_test
