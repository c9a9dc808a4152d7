// Times one model on one backend the way ONNX Runtime's anchor script
// (shared/anchors/ort/ort_cpu.js) times it, and prints the same JSON line,
// so bench/orc_vs_ort.py can set the two side by side:
//
//   build/bench/compiled_run MODEL INPUT.npy [--backend orc] [--threads N]
//       [--runs N] [--matmul-precision f32|bf16]
//
// INPUT.npy may be "random": random inputs of the model's own (static)
// types.
//
// create_ms is the cold compile (no compile cache), first_ms the first run,
// median_ms and min_ms the runs after it. It also prints the cost of
// getting an executable from the compile cache: in the same process
// (memory_hit_us) and, through a fresh on-disk cache, in what a new
// process does (disk_load_ms: reading the entry and loading its object).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/compile_cache.h"
#include "backends/disk_cache.h"
#include "graph/random_tensor.h"
#include "serialize/model_io.h"
#include "serialize/npy.h"

namespace {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "compiled_run: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    return Fail("usage: compiled_run MODEL INPUT.npy [--backend B] "
                "[--threads N] [--runs N]");
  }
  std::string backend_name = "orc";
  std::string threads;
  std::string precision;
  int runs = 50;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--backend") backend_name = argv[i + 1];
    if (flag == "--threads") threads = argv[i + 1];
    if (flag == "--runs") runs = std::atoi(argv[i + 1]);
    if (flag == "--matmul-precision") precision = argv[i + 1];
  }
  absl::StatusOr<graft::Module> module = graft::LoadModel(argv[1]);
  if (!module.ok()) return Fail(std::string(module.status().message()));
  std::vector<graft::Tensor> inputs;
  if (std::string(argv[2]) == "random") {
    uint64_t seed = 0;
    for (const graft::ValueSignature& s : graft::PlaceholderSignature(module->graph())) {
      if (!s.type.has_value()) return Fail("random inputs need typed placeholders");
      std::vector<int64_t> dims;
      for (graft::Dim d : s.type->shape) dims.push_back(d.value());
      inputs.push_back(graft::RandomTensor(s.type->dtype, dims, seed++));
    }
  } else {
    absl::StatusOr<graft::Tensor> input = graft::ReadNpy(argv[2]);
    if (!input.ok()) return Fail(std::string(input.status().message()));
    inputs.push_back(*input);
  }
  absl::StatusOr<std::unique_ptr<graft::Backend>> backend =
      graft::CreateBackend(backend_name);
  if (!backend.ok()) return Fail(std::string(backend.status().message()));

  graft::CompileOptions options;
  for (const graft::Tensor& t : inputs) options.input_types.push_back(t.type());
  if (!threads.empty()) options.options["threads"] = threads;
  if (!precision.empty()) options.options["matmul_precision"] = precision;

  // Cold compile, then the same key again from memory.
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("graft-compiled-run-" + std::to_string(getpid())))
          .string();
  auto disk = std::make_shared<graft::DiskCache>(dir, size_t{4} << 30);
  graft::CompileCache cache(disk);
  double start = Now();
  auto executable = cache.GetOrCompile(**backend, *module, options);
  const double create_ms = (Now() - start) * 1e3;
  if (!executable.ok()) return Fail(std::string(executable.status().message()));
  start = Now();
  auto again = cache.GetOrCompile(**backend, *module, options);
  const double memory_hit_us = (Now() - start) * 1e6;
  // A new cache over the same directory: what a second process finds,
  // once the first one's entry is written (in the background).
  (void)disk->Info();
  graft::CompileCache fresh(disk);
  start = Now();
  auto loaded = fresh.GetOrCompile(**backend, *module, options);
  const double disk_load_ms = (Now() - start) * 1e3;
  const bool disk_hit = fresh.stats().disk_hits == 1;
  std::filesystem::remove_all(dir);

  start = Now();
  auto first = (*executable)->Run(inputs);
  const double first_ms = (Now() - start) * 1e3;
  if (!first.ok()) return Fail(std::string(first.status().message()));
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    start = Now();
    auto out = (*executable)->Run(inputs);
    times.push_back((Now() - start) * 1e3);
    if (!out.ok()) return Fail(std::string(out.status().message()));
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "{\"model\":\"%s\",\"backend\":\"%s\",\"threads\":\"%s\","
      "\"matmul_precision\":\"%s\",\"create_ms\":%.2f,"
      "\"first_ms\":%.3f,\"median_ms\":%.4f,\"min_ms\":%.4f,"
      "\"memory_hit_us\":%.1f,\"disk_load_ms\":%s}\n",
      std::filesystem::path(argv[1]).filename().c_str(), backend_name.c_str(),
      threads.empty() ? "default" : threads.c_str(),
      precision.empty() ? "f32" : precision.c_str(), create_ms, first_ms,
      times[times.size() / 2], times[0], memory_hit_us,
      disk_hit ? std::to_string(disk_load_ms).c_str() : "null");
  return 0;
}
