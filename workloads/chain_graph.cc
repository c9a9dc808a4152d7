#include "workloads/chain_graph.h"

namespace graft {

Module BuildChainGraph(int64_t repetitions, bool reserve_names) {
  Module module;
  Graph& g = module.graph();
  if (reserve_names) g.ReserveNodes(static_cast<size_t>(3 * repetitions + 2));
  TensorType type{DType::kF32, {16}};
  Node* x = g.Placeholder("x", type);
  for (int64_t i = 0; i < repetitions; ++i) {
    Node* mul = g.CallFunction("mul", {x, 2.0});
    mul->set_type(type);
    Node* add = g.CallFunction("add", {mul, 1.0});
    add->set_type(type);
    x = g.CallFunction("relu", {add});
    x->set_type(type);
  }
  g.Output(x);
  return module;
}

}  // namespace graft
