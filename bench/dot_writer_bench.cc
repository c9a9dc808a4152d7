// Drawing the chain graph (N x (mul, add, relu)) as DOT text with
// ModuleToDot, every node drawn (no --max-nodes limit), at 10k, 100k and 1M
// nodes. Graphviz is not involved: this is graft's own text writer.
//
//   build/bench/dot_writer --benchmark_counters_tabular=true
//
// Counters: nodes/s, and the DOT text's size in bytes per node.
#include <cstddef>

#include "benchmark/benchmark.h"
#include "viz/dot_writer.h"
#include "workloads/chain_graph.h"

namespace graft {
namespace {

void BM_ModuleToDotChain(benchmark::State& state) {
  Module m = BuildChainGraph(state.range(0) / 3);
  DotOptions options;
  options.max_nodes = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    DotResult dot = ModuleToDot(m, options);
    bytes = dot.text.size();
    benchmark::DoNotOptimize(dot);
  }
  const double nodes = static_cast<double>(m.graph().num_nodes());
  state.counters["nodes"] = nodes;
  state.counters["nodes/s"] =
      benchmark::Counter(nodes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes/node"] = static_cast<double>(bytes) / nodes;
}

BENCHMARK(BM_ModuleToDotChain)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace graft

BENCHMARK_MAIN();
