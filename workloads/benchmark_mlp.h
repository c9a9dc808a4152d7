#ifndef GRAFT_WORKLOADS_BENCHMARK_MLP_H_
#define GRAFT_WORKLOADS_BENCHMARK_MLP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "graph/module.h"

namespace graft {

// Pass as `batch` for a symbolic batch dimension named "batch".
inline constexpr int64_t kSymbolicBatch = -1;

// The benchmark MLP of DESIGN.md section 12, traced with the C++ tracer:
//   x: f32[batch, 1024]
//   relu(fc1: Linear(1024, 4096)) -> relu(fc2: Linear(4096, 4096))
//   -> fc3: Linear(4096, 1024) -> f32[batch, 1024]
// Parameters "fc{1,2,3}.{weight,bias}" are RandomTensor(f32, dims, seed + i)
// for i = 0..5 in that order (uniform in [-1, 1)), each recorded with init
// "random(seed=N)" so the text format prints them compactly. The same seed
// gives the same bytes on every platform. 13 nodes: one placeholder, six
// get_attr, three linear, two relu, the output.
Module BuildBenchmarkMlp(int64_t batch, uint64_t seed);

// The same, returning the tracer's error instead of aborting (the build
// fails only if the core op set lacks linear or relu).
absl::StatusOr<Module> TraceBenchmarkMlp(int64_t batch, uint64_t seed);

}  // namespace graft

#endif  // GRAFT_WORKLOADS_BENCHMARK_MLP_H_
