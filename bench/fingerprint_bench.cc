// Module fingerprints (the compile cache's key) beside loading the same
// model: the benchmark MLP (about 25M f32 parameters, 100 MB), saved as
// .gpb and .onnx-free formats in $TMPDIR.
//
//   build/bench/fingerprint --benchmark_counters_tabular=true
//
// Fingerprint hashes every weight byte (XXH3-128). LoadGpb maps the side
// file and reads no weight page; LoadGpbAndTouch reads every weight page
// once, which is what a first run costs anyway; LoadGpbAndFingerprint is
// what a cached `graft run` does before it finds its executable: for a
// file whose weights this machine hashed before (their hashes come from
// the file-hash memo, support/file_hash_memo.h), and for one it has not.
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

// `first`: the side file is touched before each iteration (its change
// time moves), so the memo of this machine's earlier hashes does not apply
// and the weights are hashed, as on the first load of a file; else the
// steady state of a file loaded before.
void BM_LoadAndFingerprint(benchmark::State& state, bool first) {
  const std::string& file = GpbPath();  // Saved before the timing starts.
  const std::string side = SideFilePath(file);
  size_t bytes = 0;
  for (auto _ : state) {
    if (first) {
      state.PauseTiming();
      if (::utimensat(AT_FDCWD, side.c_str(), nullptr, 0) != 0) std::perror("utimensat");
      state.ResumeTiming();
    }
    absl::StatusOr<Module> m = LoadModel(file);
    benchmark::DoNotOptimize(ModuleFingerprint(*m));
    bytes = WeightBytes(*m);
  }
  SetBytes(state, bytes);
}
BENCHMARK_CAPTURE(BM_LoadAndFingerprint, gpb_seen_before, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadAndFingerprint, gpb_first_time, true)->Unit(benchmark::kMillisecond);

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
