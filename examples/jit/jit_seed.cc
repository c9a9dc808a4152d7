// The JIT's life cycle, timed: the first call of a function (trace, passes,
// compile), warm calls (the cached code), a new shape, and the first call
// in a new process that finds the compiled code in the disk cache.
//
//   jit_seed            runs it all, in a fresh cache folder of its own
//   jit_seed --child    (what it runs as the new process)

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/random_tensor.h"
#include "jit/jit.h"

namespace {

using graft::Proxy;
using graft::Tensor;

// A two-layer perceptron with its weights as arguments.
auto Mlp() {
  return [](Proxy x, Proxy w1, Proxy w2) { return matmul(relu(matmul(x, w1)), w2); };
}

struct Weights {
  Tensor w1 = graft::RandomTensor(graft::DType::kF32, {256, 1024}, 1);
  Tensor w2 = graft::RandomTensor(graft::DType::kF32, {1024, 256}, 2);
};

double Micros(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

template <typename F>
double TimeCall(F& f, const Tensor& x, const Weights& w) {
  const auto start = std::chrono::steady_clock::now();
  auto y = f(x, w.w1, w.w2);
  const double us = Micros(start);
  if (!y.ok()) {
    std::fprintf(stderr, "jit_seed: %s\n", y.status().ToString().c_str());
    std::exit(1);
  }
  return us;
}

template <typename F>
double MedianOfWarmCalls(F& f, const Tensor& x, const Weights& w) {
  std::vector<double> us;
  for (int i = 0; i < 50; ++i) us.push_back(TimeCall(f, x, w));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

void PrintStats(const char* when, const graft::JitStats& s) {
  std::printf("  %-26s traces %lld, compiles %lld, disk hits %lld, hits %lld\n", when,
              static_cast<long long>(s.traces), static_cast<long long>(s.compiles),
              static_cast<long long>(s.disk_hits), static_cast<long long>(s.hits));
}

int Child() {
  Weights w;
  auto f = graft::Jit(Mlp());
  const Tensor x = graft::RandomTensor(graft::DType::kF32, {32, 256}, 3);
  const double first = TimeCall(f, x, w);
  std::printf("%-34s %10.0f us\n", "new process, warm disk cache", first);
  PrintStats("in the new process:", f.stats());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return Child();
  // A cache folder of our own, so that the first call really compiles.
  const std::string cache =
      (std::filesystem::temp_directory_path() / ("graft-jit-seed-" + std::to_string(getpid())))
          .string();
  setenv("GRAFT_CACHE_DIR", cache.c_str(), 1);
  Weights w;
  auto f = graft::Jit(Mlp());
  const Tensor x = graft::RandomTensor(graft::DType::kF32, {32, 256}, 3);
  const Tensor x64 = graft::RandomTensor(graft::DType::kF32, {64, 256}, 4);
  std::printf("x[32, 256] @ w1[256, 1024] -> relu -> @ w2[1024, 256], default backend\n");
  std::printf("%-34s %10.0f us\n", "first call (trace + compile)", TimeCall(f, x, w));
  std::printf("%-34s %10.1f us\n", "warm call (median of 50)", MedianOfWarmCalls(f, x, w));
  std::printf("%-34s %10.0f us\n", "new shape x[64, 256] (recompile)", TimeCall(f, x64, w));
  std::printf("%-34s %10.1f us\n", "warm call at the new shape", MedianOfWarmCalls(f, x64, w));
  PrintStats("in this process:", f.stats());
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    execl("/proc/self/exe", argv[0], "--child", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::filesystem::remove_all(cache);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
