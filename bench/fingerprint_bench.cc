// Module fingerprints (the compile cache's key) beside loading the same
// model: the benchmark MLP (about 25M f32 parameters, 100 MB), saved as
// .gpb and .onnx-free formats in $TMPDIR.
//
//   build/bench/fingerprint --benchmark_counters_tabular=true
//
// Fingerprint hashes every weight byte (XXH3-128). LoadGpb maps the side
// file and reads no weight page; LoadGpbAndTouch reads every weight page
// once, which is what a first run costs anyway; LoadGpbAndFingerprint is
// what a cached `graft run` does before it finds its executable (gpb: it
// takes the weights' hashes recorded in the .gpb; gpb_side_file_touched:
// the same for a side file whose modification time changed after the
// save (copied without its times, say), whose weights are hashed again).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "graph/module_fingerprint.h"
#include "serialize/gpb_format.h"
#include "serialize/model_io.h"
#include "workloads/benchmark_mlp.h"

namespace graft {
namespace {

std::string SaveInFreshDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                 "/graft_fingerprint_bench_XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  std::string path = dir + "/mlp.gpb";
  absl::Status s = SaveModel(BuildBenchmarkMlp(32, 1), path);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    std::exit(1);
  }
  return path;
}

const std::string& GpbPath() {
  static const std::string* path = new std::string(SaveInFreshDir());
  return *path;
}

// A saved model whose side file's modification time is later than the
// one its .gpb recorded.
const std::string& TouchedGpbPath() {
  static const std::string* path = [] {
    auto* p = new std::string(SaveInFreshDir());
    const struct timespec later[2] = {{0, UTIME_OMIT}, {::time(nullptr) + 10, 0}};
    if (::utimensat(AT_FDCWD, SideFilePath(*p).c_str(), later, 0) != 0) {
      std::perror("utimensat");
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

// A module's first fingerprint, which hashes every weight (storages
// remember their hash, so each iteration needs fresh ones).
void BM_Fingerprint(benchmark::State& state) {
  const Module built = BuildBenchmarkMlp(32, 1);
  for (auto _ : state) {
    state.PauseTiming();
    Module m = built.Clone();
    for (const auto& [name, t] : built.tensors()) {
      m.SetTensor(name, t.value.Clone(), t.init);
    }
    state.ResumeTiming();
    benchmark::DoNotOptimize(ModuleFingerprint(m));
  }
  SetBytes(state, WeightBytes(built));
}
BENCHMARK(BM_Fingerprint)->Unit(benchmark::kMillisecond)->Iterations(20);

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

void BM_LoadAndFingerprint(benchmark::State& state,
                           const std::string& (*path)()) {
  const std::string& file = path();  // Saved before the timing starts.
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<Module> m = LoadModel(file);
    benchmark::DoNotOptimize(ModuleFingerprint(*m));
    bytes = WeightBytes(*m);
  }
  SetBytes(state, bytes);
}
BENCHMARK_CAPTURE(BM_LoadAndFingerprint, gpb, &GpbPath)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadAndFingerprint, gpb_side_file_touched, &TouchedGpbPath)
    ->Unit(benchmark::kMillisecond);

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
