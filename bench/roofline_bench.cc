// This machine's roofline: the fp32 FMA peak (GFLOP/s) and the memory
// read bandwidth (GB/s), on one thread and on all cores, measured rather
// than taken from a data sheet (the CPU model changes between machines).
// With --flops F --bytes B it also prints the floor time of a workload that
// does F floating-point operations and must read B bytes from memory: the
// larger of F / peak and B / bandwidth.
//
//   build/bench/roofline [--threads N] [--flops F --bytes B]

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Twelve independent FMA chains keep both FMA pipes busy across their
// latency. One body per vector width, each compiled for its instructions.
#define GRAFT_FMA_LOOP(Vec, set1, fmadd, lanes)                            \
  Vec acc[12];                                                            \
  for (int i = 0; i < 12; ++i) acc[i] = set1(1.0f + i * 1e-3f);           \
  const Vec a = set1(0.999999f), b = set1(1e-7f);                         \
  for (int64_t it = 0; it < n; ++it) {                                    \
    for (int i = 0; i < 12; ++i) acc[i] = fmadd(acc[i], a, b);            \
  }                                                                       \
  float out = 0;                                                          \
  for (int i = 0; i < 12; ++i) {                                          \
    float v[16];                                                          \
    std::memcpy(v, &acc[i], sizeof(Vec));                                 \
    out += v[0];                                                          \
  }                                                                       \
  *sink = out;                                                            \
  return 12.0 * 2 * lanes * static_cast<double>(n);

__attribute__((target("avx512f"))) double Flops512(int64_t n, float* sink) {
  GRAFT_FMA_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16)
}
__attribute__((target("avx2,fma"))) double Flops256(int64_t n, float* sink) {
  GRAFT_FMA_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8)
}

bool HasAvx512() { return __builtin_cpu_supports("avx512f"); }

// Runs fn(thread) on `threads` threads at once; returns the wall time.
template <typename Fn>
double OnThreads(int threads, Fn fn) {
  std::vector<std::thread> pool;
  const double start = Now();
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, t);
  for (auto& th : pool) th.join();
  return Now() - start;
}

double PeakGflops(int threads) {
  const int64_t n = 100'000'000;
  std::vector<float> sinks(threads);
  std::vector<double> flops(threads);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const double seconds = OnThreads(threads, [&](int t) {
      flops[t] = HasAvx512() ? Flops512(n, &sinks[t]) : Flops256(n, &sinks[t]);
    });
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / seconds / 1e9);
  }
  return best;
}

double ReadBandwidth(int threads) {
  const size_t bytes = size_t{1} << 30;
  const size_t n = bytes / sizeof(float);
  std::unique_ptr<float[]> data(new float[n]);
  OnThreads(threads, [&](int t) {  // Touch every page on its own thread.
    std::fill(data.get() + n / threads * t, data.get() + n / threads * (t + 1), 1.0f);
  });
  std::vector<float> sums(threads);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    const double seconds = OnThreads(threads, [&](int t) {
      const float* p = data.get() + n / threads * t;
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (size_t i = 0; i < n / threads; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
      }
      sums[t] = s0 + s1 + s2 + s3;
    });
    best = std::max(best, static_cast<double>(bytes) / seconds / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  double flops = 0, bytes = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") threads = std::atoi(argv[i + 1]);
    if (flag == "--flops") flops = std::atof(argv[i + 1]);
    if (flag == "--bytes") bytes = std::atof(argv[i + 1]);
  }
  std::printf("vector width: %s\n", HasAvx512() ? "AVX-512" : "AVX2");
  for (int t : {1, threads}) {
    const double peak = PeakGflops(t);
    const double bandwidth = ReadBandwidth(t);
    std::printf("threads %d: fp32 FMA peak %.1f GFLOP/s, memory read %.1f GB/s\n",
                t, peak, bandwidth);
    if (flops > 0) {
      const double compute_ms = flops / peak / 1e6;
      const double memory_ms = bytes / bandwidth / 1e6;
      std::printf("  floor: %.3f ms (compute %.3f ms, memory %.3f ms: %s binds)\n",
                  std::max(compute_ms, memory_ms), compute_ms, memory_ms,
                  compute_ms >= memory_ms ? "compute" : "memory");
    }
    if (t == threads) break;
  }
  return 0;
}
