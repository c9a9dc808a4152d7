#include "workloads/benchmark_mlp.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/random_tensor.h"
#include "graph/tracer.h"

namespace graft {

absl::StatusOr<Module> TraceBenchmarkMlp(int64_t batch, uint64_t seed) {
  if (batch < 1 && batch != kSymbolicBatch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "benchmark MLP: batch must be positive or kSymbolicBatch, got ",
        batch));
  }
  Tracer t;
  Dim batch_dim = batch == kSymbolicBatch ? Dim::Symbol("batch") : Dim(batch);
  Proxy x = t.Input("x", TensorType{DType::kF32, {batch_dim, 1024}});
  uint64_t next_seed = seed;
  auto parameter = [&](std::string name, std::vector<int64_t> dims) {
    uint64_t s = next_seed++;
    return t.Parameter(name, RandomTensor(DType::kF32, std::move(dims), s),
                       absl::StrCat("random(seed=", s, ")"));
  };
  auto layer = [&](Proxy input, absl::string_view name, int64_t in,
                   int64_t out) {
    Proxy weight = parameter(absl::StrCat(name, ".weight"), {out, in});
    Proxy bias = parameter(absl::StrCat(name, ".bias"), {out});
    return linear(input, weight, bias);
  };
  Proxy h = relu(layer(x, "fc1", 1024, 4096));
  h = relu(layer(h, "fc2", 4096, 4096));
  Proxy y = layer(h, "fc3", 4096, 1024);
  return t.Finish({y});
}

Module BuildBenchmarkMlp(int64_t batch, uint64_t seed) {
  absl::StatusOr<Module> module = TraceBenchmarkMlp(batch, seed);
  if (!module.ok()) {
    // Only a broken core op set gets here: a build problem, not user input.
    std::fprintf(stderr, "graft: cannot build the benchmark MLP: %s\n",
                 module.status().ToString().c_str());
    std::abort();
  }
  return *std::move(module);
}

}  // namespace graft
