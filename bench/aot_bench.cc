// Compiled model files against the JIT, on the benchmark MLP (1024 -> 4096
// -> 4096 -> 1024, batch 32, f32, about 100 MB of weights): the file's size,
// load-to-first-result time (in this process, and in a new process where
// oneDNN starts cold), and per-run medians of the file and of the orc JIT
// it was written from, measured in alternating blocks in one run.
//
//   build/bench/aot [--runs 300] [--batch 32]

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "graph/random_tensor.h"
#include "runtime/compiled_model.h"
#include "workloads/benchmark_mlp.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "aot: %s\n", status.ToString().c_str());
  return 1;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Load-to-first-result of `path`, in milliseconds, or a negative number.
double LoadToFirstResult(const std::string& path, const std::vector<graft::Tensor>& inputs) {
  const double start = Now();
  auto model = graft::runtime::CompiledModel::Load(path);
  if (!model.ok()) return Fail(model.status()), -1;
  if (auto y = (*model)->Run(inputs); !y.ok()) return Fail(y.status()), -1;
  return (Now() - start) * 1e3;
}

// What a new process measures (`--first-result PATH BATCH`).
int FirstResultChild(const std::string& path, int64_t batch) {
  const std::vector<graft::Tensor> inputs = {
      graft::RandomTensor(graft::DType::kF32, {batch, 1024}, 7)};
  const double ms = LoadToFirstResult(path, inputs);
  if (ms < 0) return 1;
  std::printf("%.3f\n", ms);
  return 0;
}

// Runs `self --first-result path batch` and reads the milliseconds it prints.
double NewProcessFirstResult(const char* self, const std::string& path, int64_t batch) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    const std::string b = std::to_string(batch);
    execl("/proc/self/exe", self, "--first-result", path.c_str(), b.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  char text[64] = {};
  const ssize_t n = read(pipe_fds[0], text, sizeof(text) - 1);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? std::atof(text) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--first-result") == 0) {
    return FirstResultChild(argv[2], std::atoll(argv[3]));
  }
  int runs = 300;
  int64_t batch = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--batch") batch = std::atoll(argv[i + 1]);
  }
  const graft::Module model = graft::BuildBenchmarkMlp(batch, 1);
  const std::vector<graft::Tensor> inputs = {
      graft::RandomTensor(graft::DType::kF32, {batch, 1024}, 7)};
  auto orc = graft::CreateBackend("orc");
  if (!orc.ok()) return Fail(orc.status());
  double t = Now();
  auto jit = (*orc)->Compile(model, {});
  if (!jit.ok()) return Fail(jit.status());
  const double compile_ms = (Now() - t) * 1e3;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("graft-aot-bench-" + std::to_string(getpid()) +
                                                 ".gcx")).string();
  t = Now();
  if (absl::Status s = (*orc)->WriteCompiledModel(**jit, path); !s.ok()) return Fail(s);
  const double write_ms = (Now() - t) * 1e3;
  const double bytes = static_cast<double>(std::filesystem::file_size(path));

  std::vector<double> load_only, unload_ms;
  for (int i = 0; i < 5; ++i) {
    const double start = Now();
    auto m = graft::runtime::CompiledModel::Load(path);
    if (!m.ok()) return Fail(m.status());
    load_only.push_back((Now() - start) * 1e3);
    const double unload = Now();
    m->reset();
    unload_ms.push_back((Now() - unload) * 1e3);
  }
  std::vector<double> in_process;
  for (int i = 0; i < 5; ++i) in_process.push_back(LoadToFirstResult(path, inputs));
  std::vector<double> new_process;
  for (int i = 0; i < 5; ++i) new_process.push_back(NewProcessFirstResult(argv[0], path, batch));

  auto loaded = graft::runtime::CompiledModel::Load(path);
  if (!loaded.ok()) return Fail(loaded.status());
  std::vector<double> jit_us, file_us;
  for (int i = 0; i < 10; ++i) {
    (void)(*jit)->Run(inputs);
    (void)(*loaded)->Run(inputs);
  }
  // Alternating blocks, so that both see the same machine.
  for (int block = 0; block < 10; ++block) {
    for (int i = 0; i < runs / 10; ++i) {
      t = Now();
      (void)(*jit)->Run(inputs);
      jit_us.push_back((Now() - t) * 1e6);
    }
    for (int i = 0; i < runs / 10; ++i) {
      t = Now();
      (void)(*loaded)->Run(inputs);
      file_us.push_back((Now() - t) * 1e6);
    }
  }
  std::filesystem::remove(path);
  std::printf("benchmark MLP 1024-4096-4096-1024, batch %lld, f32, orc, %u threads\n",
              static_cast<long long>(batch), std::thread::hardware_concurrency());
  std::printf("  JIT compile (LLVM + oneDNN packing)   %9.1f ms\n", compile_ms);
  std::printf("  write the .gcx                        %9.1f ms\n", write_ms);
  std::printf("  .gcx size                             %9.1f MB\n", bytes / 1e6);
  std::printf("  load alone (map, verify, link, prepare) %7.2f ms (median of 5)\n",
              Median(load_only));
  std::printf("  unload                                 %7.2f ms (median of 5)\n",
              Median(unload_ms));
  std::printf("  load to first result, this process    %9.2f ms (median of 5)\n",
              Median(in_process));
  std::printf("  load to first result, new process     %9.2f ms (median of 5)\n",
              Median(new_process));
  std::printf("  per run, JIT                          %9.1f us (median of %zu)\n",
              Median(jit_us), jit_us.size());
  std::printf("  per run, .gcx through graft::runtime  %9.1f us (median of %zu)\n",
              Median(file_us), file_us.size());
  std::printf("  .gcx / JIT per run                    %9.3f\n",
              Median(file_us) / Median(jit_us));
  return 0;
}
