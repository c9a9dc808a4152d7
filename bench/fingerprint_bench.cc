// Module fingerprints (the compile cache's key) beside loading the same
// model: the benchmark MLP (about 25M f32 parameters, 100 MB), saved as
// .gpb and .onnx-free formats in $TMPDIR.
//
//   build/bench/fingerprint --benchmark_counters_tabular=true
//
// Fingerprint hashes every weight byte (XXH3-128). LoadGpb maps the side
// file and reads no weight page; LoadGpbAndTouch reads every weight page
// once, which is what a first run costs anyway; LoadGpbAndFingerprint is
// what a cached `graft run` does before it finds its executable.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "graph/module_fingerprint.h"
#include "serialize/model_io.h"
#include "workloads/benchmark_mlp.h"

namespace graft {
namespace {

const std::string& GpbPath() {
  static const std::string* path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                   "/graft_fingerprint_bench_XXXXXX");
    if (::mkdtemp(dir.data()) == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    auto* p = new std::string(dir + "/mlp.gpb");
    absl::Status s = SaveModel(BuildBenchmarkMlp(32, 1), *p);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      std::exit(1);
    }
    return p;
  }();
  return *path;
}

size_t WeightBytes(const Module& m) {
  size_t bytes = 0;
  for (const auto& [name, t] : m.tensors()) bytes += t.value.NumBytes();
  return bytes;
}

void SetBytes(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

void BM_Fingerprint(benchmark::State& state) {
  const Module m = BuildBenchmarkMlp(32, 1);
  for (auto _ : state) benchmark::DoNotOptimize(ModuleFingerprint(m));
  SetBytes(state, WeightBytes(m));
}
BENCHMARK(BM_Fingerprint)->Unit(benchmark::kMillisecond);

void BM_LoadGpb(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<Module> m = LoadModel(GpbPath());
    if (!m.ok()) state.SkipWithError(std::string(m.status().message()).c_str());
    bytes = WeightBytes(*m);
  }
  SetBytes(state, bytes);
}
BENCHMARK(BM_LoadGpb)->Unit(benchmark::kMillisecond);

// Sums one byte per 4 KiB page of every weight: the pages a first run reads.
uint64_t Touch(const Module& m) {
  uint64_t sum = 0;
  for (const auto& [name, t] : m.tensors()) {
    const auto* p = static_cast<const unsigned char*>(t.value.raw_data());
    for (size_t i = 0; i < t.value.NumBytes(); i += 4096) sum += p[i];
  }
  return sum;
}

void BM_LoadGpbAndTouch(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<Module> m = LoadModel(GpbPath());
    benchmark::DoNotOptimize(Touch(*m));
    bytes = WeightBytes(*m);
  }
  SetBytes(state, bytes);
}
BENCHMARK(BM_LoadGpbAndTouch)->Unit(benchmark::kMillisecond);

void BM_LoadGpbAndFingerprint(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<Module> m = LoadModel(GpbPath());
    benchmark::DoNotOptimize(ModuleFingerprint(*m));
    bytes = WeightBytes(*m);
  }
  SetBytes(state, bytes);
}
BENCHMARK(BM_LoadGpbAndFingerprint)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace graft

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const std::string& path = graft::GpbPath();
  std::remove(path.c_str());
  std::remove((path + ".data").c_str());
  std::remove(path.substr(0, path.rfind('/')).c_str());
  return 0;
}
