// What graft::Jit adds to a call: a jitted function called in a loop
// against the executable it compiled, run directly (Executable::Run), on a
// tiny function where the overhead is all there is, in one run.
//
//   build/bench/jit_overhead [--calls 200000]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "graph/random_tensor.h"
#include "jit/jit.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

auto Tiny() {
  return [](graft::Proxy x) { return relu(x * 2.0 + 1.0); };
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 200000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--calls") calls = std::atoi(argv[i + 1]);
  }
  graft::JitOptions options;
  options.disk_cache = false;
  auto f = graft::Jit(Tiny(), options);
  const graft::Tensor x = graft::RandomTensor(graft::DType::kF32, {2, 3}, 1);
  if (auto y = f(x); !y.ok()) {
    std::fprintf(stderr, "jit_overhead: %s\n", y.status().ToString().c_str());
    return 1;
  }
  const std::string backend = graft::CreateBackend("orc").ok() ? "orc" : "interp";
  auto module = graft::trace::Trace(Tiny(), x.type());
  auto b = graft::CreateBackend(backend);
  auto e = (*b)->Compile(*module, {});
  if (!e.ok()) {
    std::fprintf(stderr, "jit_overhead: %s\n", e.status().ToString().c_str());
    return 1;
  }
  const std::vector<graft::Tensor> inputs{x};
  std::vector<double> jit_us, run_us;
  for (int block = 0; block < 10; ++block) {
    double t = Now();
    for (int i = 0; i < calls / 10; ++i) (void)f(x);
    jit_us.push_back((Now() - t) * 1e6 / (calls / 10));
    t = Now();
    for (int i = 0; i < calls / 10; ++i) (void)(*e)->Run(inputs);
    run_us.push_back((Now() - t) * 1e6 / (calls / 10));
  }
  std::sort(jit_us.begin(), jit_us.end());
  std::sort(run_us.begin(), run_us.end());
  std::printf("relu(x * 2 + 1) on f32[2,3], %s, %d calls each in 10 alternating blocks\n",
              backend.c_str(), calls);
  std::printf("  graft::Jit call            %6.3f us (median block)\n", jit_us[5]);
  std::printf("  Executable::Run            %6.3f us (median block)\n", run_us[5]);
  std::printf("  what the JIT adds          %6.3f us\n", jit_us[5] - run_us[5]);
  return 0;
}
