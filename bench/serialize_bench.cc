// Saving and loading models in graft's binary format (.gpb + .gpb.data):
// a 1 GiB model (16 f32 tensors of 64 MiB and a small graph), whose load
// maps the side file instead of reading it, and the chain graph (N x (mul,
// add, relu)) for graphs with many nodes.
//
//   build/bench/serialize --benchmark_counters_tabular=true
//
// Files go to $TMPDIR (default /tmp), about 1 GiB, removed at the end.
// Load1GiB times LoadModel alone (parse, checks, mmap, verify); the tensor
// pages are read later, on first use, which Load1GiBAndTouch adds (from the
// page cache: the file was just written).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "graph/random_tensor.h"
#include "serialize/gpb_reader.h"
#include "serialize/gpb_writer.h"
#include "serialize/model_io.h"
#include "workloads/chain_graph.h"

namespace graft {
namespace {

constexpr int kTensors = 16;
constexpr int64_t kTensorElements = int64_t{16} << 20;  // 64 MiB of f32 each.

std::string TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                   "/graft_serialize_bench_XXXXXX");
  if (::mkdtemp(templ.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  return templ;
}

// A linear chain over 16 weight tensors: y = relu(linear(y, w_i)) with
// w_i : f32[4096, 4096] (64 MiB each, 1 GiB in all).
Module BigModule() {
  Module m;
  Graph& g = m.graph();
  Node* y = g.Placeholder("x", TensorType{DType::kF32, {Dim(1), Dim(4096)}});
  for (int i = 0; i < kTensors; ++i) {
    const std::string name = absl::StrCat("layer", i, ".weight");
    Tensor w(DType::kF32, {4096, kTensorElements / 4096});
    // Not zeros, so the pages are real; a cheap pattern, not RandomTensor
    // (filling 1 GiB with it would dominate the setup).
    float* p = w.data<float>();
    for (int64_t k = 0; k < kTensorElements; k += 1024)
      p[k] = static_cast<float>(i + k);
    m.SetTensor(name, w);
    Node* wn = g.GetAttr(name, w.type());
    Node* lin = g.CallFunction("linear", {y, wn});
    lin->set_type(TensorType{DType::kF32, {Dim(1), Dim(4096)}});
    y = g.CallFunction("relu", {lin});
    y->set_type(TensorType{DType::kF32, {Dim(1), Dim(4096)}});
  }
  g.Output(y);
  return m;
}

// The 1 GiB model, saved once (when first needed) for all the benchmarks
// that read it.
class SavedBigModel {
 public:
  static SavedBigModel& Get() {
    if (saved_ == nullptr) saved_ = new SavedBigModel();
    return *saved_;
  }
  static SavedBigModel* IfSaved() { return saved_; }
  const std::string& path() const { return path_; }
  void Remove() {
    ::unlink(SideFilePath(path_).c_str());
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

 private:
  SavedBigModel() : dir_(TempDir()), path_(dir_ + "/big.gpb") {
    absl::Status s = SaveModel(BigModule(), path_);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      std::exit(1);
    }
  }
  static inline SavedBigModel* saved_ = nullptr;
  std::string dir_;
  std::string path_;
};

void SetBytesCounter(benchmark::State& state, double bytes) {
  state.counters["GiB"] = bytes / (1 << 30);
  state.counters["GiB/s"] = benchmark::Counter(
      bytes / (1 << 30), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Save1GiB(benchmark::State& state) {
  Module m = BigModule();
  const std::string dir = TempDir();
  const std::string path = dir + "/save.gpb";
  for (auto _ : state) {
    absl::Status s = SaveModel(m, path);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
  SetBytesCounter(state, kTensors * kTensorElements * 4.0);
  ::unlink(SideFilePath(path).c_str());
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

void BM_Load1GiB(benchmark::State& state) {
  const std::string& path = SavedBigModel::Get().path();
  for (auto _ : state) {
    absl::StatusOr<Module> m = LoadModel(path);
    if (!m.ok()) state.SkipWithError(std::string(m.status().message()).c_str());
    benchmark::DoNotOptimize(m);
  }
  SetBytesCounter(state, kTensors * kTensorElements * 4.0);
}

void BM_Load1GiBAndTouch(benchmark::State& state) {
  const std::string& path = SavedBigModel::Get().path();
  for (auto _ : state) {
    absl::StatusOr<Module> m = LoadModel(path);
    if (!m.ok()) {
      state.SkipWithError(std::string(m.status().message()).c_str());
      break;
    }
    // One read per page, so each page is faulted in.
    float sum = 0;
    for (const auto& [name, t] : m->tensors()) {
      const float* p = t.value.data<float>();
      for (int64_t k = 0; k < t.value.NumElements(); k += 1024) sum += p[k];
    }
    benchmark::DoNotOptimize(sum);
  }
  SetBytesCounter(state, kTensors * kTensorElements * 4.0);
}

void BM_Load1GiBCheckData(benchmark::State& state) {
  const std::string& path = SavedBigModel::Get().path();
  ModelLoadOptions options;
  options.binary.check_data = true;
  for (auto _ : state) {
    absl::StatusOr<Module> m = LoadModel(path, options);
    if (!m.ok()) state.SkipWithError(std::string(m.status().message()).c_str());
    benchmark::DoNotOptimize(m);
  }
  SetBytesCounter(state, kTensors * kTensorElements * 4.0);
}

void SetNodeCounters(benchmark::State& state, int64_t nodes) {
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(nodes),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void BM_SaveChain(benchmark::State& state) {
  Module m = BuildChainGraph(state.range(0) / 3);
  const std::string dir = TempDir();
  const std::string path = dir + "/chain.gpb";
  for (auto _ : state) {
    absl::Status s = SaveModel(m, path);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
  SetNodeCounters(state, static_cast<int64_t>(m.graph().num_nodes()));
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

void BM_LoadChain(benchmark::State& state) {
  Module m = BuildChainGraph(state.range(0) / 3);
  const std::string dir = TempDir();
  const std::string path = dir + "/chain.gpb";
  if (absl::Status s = SaveModel(m, path); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<Module> loaded = LoadModel(path);
    if (!loaded.ok())
      state.SkipWithError(std::string(loaded.status().message()).c_str());
    benchmark::DoNotOptimize(loaded);
  }
  SetNodeCounters(state, static_cast<int64_t>(m.graph().num_nodes()));
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

BENCHMARK(BM_Save1GiB)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_Load1GiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Load1GiBAndTouch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Load1GiBCheckData)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SaveChain)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadChain)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace graft

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (graft::SavedBigModel* saved = graft::SavedBigModel::IfSaved()) {
    saved->Remove();
  }
  return 0;
}
