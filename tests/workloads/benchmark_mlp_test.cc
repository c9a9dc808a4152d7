#include "workloads/benchmark_mlp.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "graph/op_registry.h"
#include "graph/random_tensor.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

TensorType F32(std::initializer_list<int64_t> dims) {
  return TensorType{DType::kF32, ShapeFromDims(std::vector<int64_t>(dims))};
}

TEST(BenchmarkMlpTest, ShapesNodesAndParameters) {
  ASSERT_NE(OpRegistry::Global().Find("linear"), nullptr)
      << "waits on the linear op schema";
  Module m = BuildBenchmarkMlp(32, 7);
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
  EXPECT_EQ(m.graph().num_nodes(), 13u);
  int linears = 0, relus = 0, attrs = 0;
  for (const Node* n : m.graph().nodes()) {
    linears += n->is_call("linear");
    relus += n->is_call("relu");
    attrs += n->op() == OpCode::kGetAttr;
  }
  EXPECT_EQ(linears, 3);
  EXPECT_EQ(relus, 2);
  EXPECT_EQ(attrs, 6);
  EXPECT_EQ(m.graph().output()->arg(0).node()->type(), F32({32, 1024}));
  int64_t parameters = 0;
  for (const auto& [name, t] : m.tensors()) parameters += t.value.NumElements();
  // 1024*4096 + 4096 + 4096*4096 + 4096 + 4096*1024 + 1024.
  EXPECT_EQ(parameters, 25'175'040);
  EXPECT_EQ(m.tensors().at("fc1.weight").init, "random(seed=7)");
  EXPECT_EQ(m.tensors().at("fc3.bias").init, "random(seed=12)");
  EXPECT_TRUE(m.FindTensor("fc1.bias")
                  ->BitwiseEqual(RandomTensor(DType::kF32, {4096}, 8)));
}

TEST(BenchmarkMlpTest, SymbolicBatch) {
  ASSERT_NE(OpRegistry::Global().Find("linear"), nullptr)
      << "waits on the linear op schema";
  Module m = BuildBenchmarkMlp(kSymbolicBatch, 0);
  EXPECT_EQ(m.graph().output()->arg(0).node()->type()->ToString(),
            "f32[batch,1024]");
  EXPECT_FALSE(TraceBenchmarkMlp(0, 0).ok());
}

}  // namespace
}  // namespace graft
