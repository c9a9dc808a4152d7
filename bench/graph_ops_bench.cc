// Graph-surgery basics on the chain graph (N x (mul, add, relu)):
// build, print, parse, verify, at 10k, 100k and 1M nodes.
//
//   build/bench/graph_ops --benchmark_counters_tabular=true
//
// Counters: nodes/s for each operation, and bytes/node (memory growth while
// building, tensors aside) for Build.
#include <malloc.h>

#include "benchmark/benchmark.h"
#include "graph/huge_pages.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "workloads/chain_graph.h"

namespace graft {
namespace {

int64_t Repetitions(const benchmark::State& state) { return state.range(0) / 3; }

// Memory in use: malloc's heap and mmap'd blocks, and what graphs map
// themselves on huge pages (node slabs, name tables; not seen by malloc).
size_t MemoryInUse() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd + HugePageBytesInUse();
}

void SetNodeCounters(benchmark::State& state, int64_t nodes) {
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes/s"] = benchmark::Counter(
      static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}

// Arg 1: 1 reserves the name table up front (Graph::ReserveNodes), 0 lets
// it grow node by node, as a tracer does.
void BM_Build(benchmark::State& state) {
  int64_t nodes = 0;
  double bytes_per_node = 0;
  const bool reserve = state.range(1) != 0;
  for (auto _ : state) {
    size_t before = MemoryInUse();
    Module m = BuildChainGraph(Repetitions(state), reserve);
    nodes = static_cast<int64_t>(m.graph().num_nodes());
    bytes_per_node = static_cast<double>(MemoryInUse() - before) / nodes;
    state.PauseTiming();
    { Module discard = std::move(m); }
    state.ResumeTiming();
  }
  SetNodeCounters(state, nodes);
  state.counters["bytes/node"] = bytes_per_node;
}

void BM_Print(benchmark::State& state) {
  Module m = BuildChainGraph(Repetitions(state));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = PrintModule(m);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  SetNodeCounters(state, static_cast<int64_t>(m.graph().num_nodes()));
  state.counters["text MB"] = bytes / 1e6;
}

void BM_Parse(benchmark::State& state) {
  Module m = BuildChainGraph(Repetitions(state));
  std::string text = PrintModule(m);
  for (auto _ : state) {
    absl::StatusOr<Module> parsed = ParseModule(text);
    if (!parsed.ok()) {
      state.SkipWithError(std::string(parsed.status().message()).c_str());
      return;
    }
    state.PauseTiming();
    { Module discard = *std::move(parsed); }
    state.ResumeTiming();
  }
  SetNodeCounters(state, static_cast<int64_t>(m.graph().num_nodes()));
}

void BM_Verify(benchmark::State& state) {
  Module m = BuildChainGraph(Repetitions(state));
  for (auto _ : state) {
    absl::Status s = Verify(m);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  SetNodeCounters(state, static_cast<int64_t>(m.graph().num_nodes()));
}

#define GRAFT_SIZES Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_Build)
    ->ArgNames({"nodes", "reserve"})
    ->ArgsProduct({{10'000, 100'000, 1'000'000}, {1, 0}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Print)->GRAFT_SIZES;
BENCHMARK(BM_Parse)->GRAFT_SIZES;
BENCHMARK(BM_Verify)->GRAFT_SIZES;

}  // namespace
}  // namespace graft

BENCHMARK_MAIN();
