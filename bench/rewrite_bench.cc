// Rewrite speed on the chain graph (N x (mul 2.0, add 1.0, relu)):
// replace_pattern(relu(x + 1.0) -> leaky_relu(x + 1.0)), dce, cse and the
// greedy driver with the same rewrite, at 9k, 90k and 1M nodes.
//
//   build/bench/rewrite --benchmark_counters_tabular=true
//
// Each iteration works on a fresh copy of the graph (the copy is not timed).
#include "benchmark/benchmark.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/matcher.h"
#include "passes/replace_pattern.h"
#include "passes/rewrite_driver.h"
#include "workloads/chain_graph.h"

namespace graft::passes {
namespace {

// relu(x + 1.0), and its replacement leaky_relu(x + 1.0).
Module OneOpPattern(absl::string_view activation) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x");
  Node* add = g.CallFunction("add", {x, 1.0});
  g.Output(g.CallFunction(activation, {add}));
  return m;
}

class LeakyReluPattern : public RewritePattern {
 public:
  LeakyReluPattern() : RewritePattern("relu-to-leaky-relu") {}
  absl::StatusOr<bool> MatchAndRewrite(Node* root, Rewriter& rw) const override {
    Node* add = nullptr;
    static const m::Pattern pattern =
        m::Call("relu", m::Call("add", m::Any(), m::Literal(1.0)));
    if (!pattern.Match(root)) return false;
    add = root->arg(0).node();
    rw.ReplaceNode(root, rw.Call("leaky_relu", {add}));
    return true;
  }
};

int64_t Nodes(const benchmark::State& state) { return state.range(0); }

Module ChainGraph(int64_t repetitions) { return BuildChainGraph(repetitions); }

void Report(benchmark::State& state, int64_t nodes, int64_t changes) {
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["changes"] = static_cast<double>(changes);
  state.counters["nodes/s"] = benchmark::Counter(
      static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}

// Runs `fn` on a fresh chain graph per iteration; only `fn` is timed.
template <typename Fn>
void OnFreshChain(benchmark::State& state, Module (*make)(int64_t), Fn fn) {
  Module base = make(Nodes(state) / 3);
  int64_t changes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Module m = base.Clone();
    state.ResumeTiming();
    changes = fn(m);
    state.PauseTiming();
    { Module discard = std::move(m); }
    state.ResumeTiming();
  }
  Report(state, static_cast<int64_t>(base.graph().num_nodes()), changes);
}

void BM_ReplacePattern(benchmark::State& state) {
  Module pattern = OneOpPattern("relu");
  Module replacement = OneOpPattern("leaky_relu");
  OnFreshChain(state, ChainGraph, [&](Module& m) -> int64_t {
    auto r = ReplacePattern(m, pattern, replacement);
    return r.ok() ? static_cast<int64_t>(r->size()) : -1;
  });
}

void BM_GreedyDriver(benchmark::State& state) {
  std::vector<std::unique_ptr<RewritePattern>> patterns;
  patterns.push_back(std::make_unique<LeakyReluPattern>());
  OnFreshChain(state, ChainGraph, [&](Module& m) -> int64_t {
    auto r = ApplyPatternsGreedily(m, patterns);
    return r.ok() ? r->rewrites : -1;
  });
}

// Every node dead: the output returns the input.
Module DeadChain(int64_t repetitions) {
  Module m = BuildChainGraph(repetitions);
  Node* out = m.graph().output();
  out->SetArgs({m.graph().placeholders()[0]});
  return m;
}

void BM_DceAllDead(benchmark::State& state) {
  OnFreshChain(state, DeadChain, [&](Module& m) -> int64_t {
    int64_t before = static_cast<int64_t>(m.graph().num_nodes());
    EliminateDeadCode(m.graph());
    return before - static_cast<int64_t>(m.graph().num_nodes());
  });
}

void BM_DceNoneDead(benchmark::State& state) {
  OnFreshChain(state, ChainGraph, [&](Module& m) -> int64_t {
    return EliminateDeadCode(m.graph()) ? 1 : 0;
  });
}

// Each repetition computes x * 2.0 twice and adds the two: CSE merges one.
Module DuplicatedChain(int64_t repetitions) {
  Module module;
  Graph& g = module.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {16}});
  for (int64_t i = 0; i < repetitions / 1; ++i) {
    Node* a = g.CallFunction("mul", {x, 2.0});
    Node* b = g.CallFunction("mul", {x, 2.0});
    x = g.CallFunction("add", {a, b});
  }
  g.Output(x);
  return module;
}

void BM_Cse(benchmark::State& state) {
  OnFreshChain(state, DuplicatedChain, [&](Module& m) -> int64_t {
    int64_t before = static_cast<int64_t>(m.graph().num_nodes());
    PassContext ctx;
    CsePass cse;
    (void)cse.Run(m, ctx);
    return before - static_cast<int64_t>(m.graph().num_nodes());
  });
}

#define GRAFT_SIZES Arg(9'000)->Arg(90'000)->Arg(1'000'002)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_ReplacePattern)->GRAFT_SIZES;
BENCHMARK(BM_GreedyDriver)->GRAFT_SIZES;
BENCHMARK(BM_DceAllDead)->GRAFT_SIZES;
BENCHMARK(BM_DceNoneDead)->GRAFT_SIZES;
BENCHMARK(BM_Cse)->GRAFT_SIZES;

}  // namespace
}  // namespace graft::passes

BENCHMARK_MAIN();
