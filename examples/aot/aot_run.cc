// Loads a compiled model file and runs it on inputs of ones, with
// graft::runtime only:  aot_run MODEL.gcx [RUNS]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/compiled_model.h"

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: aot_run MODEL.gcx [RUNS]\n");
    return 2;
  }
  const int runs = argc > 2 ? std::atoi(argv[2]) : 100;
  const auto start = std::chrono::steady_clock::now();
  auto model = graft::runtime::CompiledModel::Load(argv[1]);
  if (!model.ok()) {
    std::fprintf(stderr, "aot_run: %s\n", model.status().ToString().c_str());
    return 1;
  }
  std::vector<graft::Tensor> inputs;
  for (const graft::runtime::ValueSpec& spec : (*model)->inputs()) {
    graft::Tensor t(spec.dtype, spec.dims);
    for (int64_t i = 0; i < t.NumElements(); ++i) t.SetFromDouble(i, 1.0);
    inputs.push_back(t);
  }
  auto outputs = (*model)->Run(inputs);
  if (!outputs.ok()) {
    std::fprintf(stderr, "aot_run: %s\n", outputs.status().ToString().c_str());
    return 1;
  }
  const double first = SecondsSince(start);
  const auto timed = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    if (!(*model)->Run(inputs).ok()) return 1;
  }
  const double per_run = runs > 0 ? SecondsSince(timed) / runs : 0;
  for (size_t i = 0; i < outputs->size(); ++i) {
    const graft::Tensor& y = (*outputs)[i];
    std::printf("output %s: %s, first value %g\n", (*model)->outputs()[i].name.c_str(),
                y.TypeString().c_str(), y.NumElements() > 0 ? y.GetAsDouble(0) : 0.0);
  }
  std::printf("load to first result %.2f ms; %d more runs: %.1f us each\n", first * 1e3, runs,
              per_run * 1e6);
  return 0;
}
