// The benchmark MLP's three products (batch 32: 1024 -> 4096 -> 4096 ->
// 1024, ReLU between) as graft's skinny-product kernel runs them in a
// run: chained as programmatic dependents (each kernel may start loading
// its weights while the one before ends) inside a CUDA graph. Each row of
// the table is one layout of the kernel over the GPU (warps per block,
// 16-byte weight loads in flight per row, blocks per multiprocessor the
// split of K aims at, blocks per multiprocessor the register cap allows),
// per dtype, beside a streaming read of the same weight bytes in the same
// graph shape. Built with nvcc on the GPU machine:
//
//   cd bench/cuda_kernels && python3 extract_source.py &&
//     nvcc -arch=sm_90 -O3 -std=c++17 -o skinny_chain skinny_chain.cu && ./skinny_chain
//
// `./skinny_chain stress` runs chains alternating between two inputs and
// counts results that differ from plain launches' (a kernel reading what
// the one before wrote too early, or from a stale cache line, sees the
// other input's values); `./skinny_chain check` compares the first runs
// of the f32 chain with a float64 reference. Run both with
// CUDA_MODULE_LOADING=EAGER: lazy loading delays the first launches
// enough to hide a race.
//
// The weights are not rotated: as in a run of the MLP, whatever of them
// stays in L2 from one run to the next helps. Each figure is the median
// of 7 rounds of 20 graph replays of 10 chained runs, per run
// (`prefetch own RUNS`: RUNS chained runs a graph, 200 / RUNS replays).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels.inc"
#include "bench_kernels.h"

constexpr int kMultiprocessors = 132;  // Overwritten in main from the device.
constexpr int kRows = 32;

// What skinny_gemm.cc's LayOut picks for a layout.
struct Split {
  int splits, chunk;
};
__host__ __device__ constexpr int CeilDiv(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr Split LayOut(int n, int k, int elem, int warps, int blocks_per_sm) {
  const int tiles = CeilDiv(n, 16 * warps);
  const int granule = 512 / elem;
  const int spread = CeilDiv(blocks_per_sm * kMultiprocessors, tiles);
  const int wanted = spread > 1 ? spread : 1;
  const int chunk = CeilDiv(CeilDiv(k, wanted), granule) * granule;
  return {CeilDiv(k, chunk), chunk};
}


// `prefetch` mode: a share of the next layer's first `prefetch_bytes`
// (this block's slice) prefetched into L2 by one bulk prefetch, at the
// kernel's start (1) or as each block leaves (2); 0: none.
int g_prefetch = 0;
unsigned g_prefetch_percent = 100;
std::vector<int> g_prefetch_modes = {0, 1, 2, 3, 4};  // `prefetch own`: 0, 3 and 4 only.

__device__ __forceinline__ void PrefetchSlice(const unsigned char* next, unsigned bytes) {
  if (bytes == 0 || threadIdx.x != 0) return;
  const unsigned slice = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~15u;
  const unsigned begin = blockIdx.x * slice;
  if (begin >= bytes) return;
  const unsigned n = bytes - begin < slice ? bytes - begin : slice;
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(next + begin), "r"(n) : "memory");
}

// `prefetch` mode 3: each block prefetches its own weights (its rows over
// its chunk of K) into L2 as it starts, before it waits for the kernel
// before: the whole layer is requested as soon as its blocks are resident.
template <class T, int W, int N, int K, int kChunk>
__device__ __forceinline__ void PrefetchOwn(const T* w) {
  constexpr int kTiles = CeilDiv(N, 16 * W);
  const int tile = blockIdx.x % kTiles, split = blockIdx.x / kTiles;
  const int row = tile * 16 * W + threadIdx.x, k0 = split * kChunk;
  if (threadIdx.x >= 16 * W || row >= N || k0 >= K) return;
  const unsigned bytes = (unsigned)((K - k0 < kChunk ? K - k0 : kChunk) * sizeof(T));
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(w + (long long)row * K + k0),
               "r"(bytes) : "memory");
}

template <class T, class Y, class Q, int kMode, int kAct, int W, int U, int BPS, int LB, int N, int K>
__global__ void __launch_bounds__(32 * W, LB) layer(const T* x, const T* w, const float* bias,
                                                     const float* scales, Y* y, float* partial,
                                                     int* counters, const unsigned char* next,
                                                     unsigned prefetch_bytes, int prefetch) {
  constexpr Split s = LayOut(N, K, sizeof(T), W, BPS);
  if (prefetch == 1) PrefetchSlice(next, prefetch_bytes);
  if (prefetch == 3 || (prefetch == 4 && (long long)N * K * sizeof(T) <= (36ll << 20))) {
    PrefetchOwn<T, W, N, K, s.chunk>(w);
  }
  g_skinny::gemm<T, T, Y, float, Q, kMode, kAct, true, true, W, U, kRows, kRows, N, K, s.splits,
                 s.chunk>(x, w, bias, scales, y, partial, counters);
  if (prefetch == 2) PrefetchSlice(next, prefetch_bytes);
}

// `persistent` mode: the three products as one kernel whose blocks stay
// resident, a grid barrier between layers. Each block loads its first
// weights of the next layer before it waits at the barrier, so the next
// layer's weights stream while the last blocks of this one finish.
struct GridBarrier {
  unsigned* arrived;  // One counter a barrier, and one for the blocks that left.
  __device__ __forceinline__ void Arrive(int i) const {
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(arrived + i, 1u);
    }
  }
  __device__ __forceinline__ void Wait(int i) const {
    if (threadIdx.x == 0) {
      unsigned seen;
      do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(arrived + i) : "memory");
      } while (seen < gridDim.x);
      __threadfence();
    }
    __syncthreads();
  }
  // The last block to leave zeroes the counters for the next run.
  __device__ __forceinline__ void Leave(int barriers) const {
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      if (atomicAdd(arrived + barriers, 1u) == gridDim.x - 1) {
        for (int i = 0; i <= barriers; ++i) arrived[i] = 0;
        __threadfence();
      }
    }
  }
};
struct BarrierWait {
  GridBarrier barrier;
  int i;
  __device__ __forceinline__ void operator()() const { barrier.Wait(i); }
};

constexpr int Max3(int a, int b, int c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

template <class T, class Y, class Q, int kMode, int W, int U, int BPS, int LB>
struct ChainShape {
  static constexpr Split s1 = LayOut(4096, 1024, sizeof(T), W, BPS);
  static constexpr Split s2 = LayOut(4096, 4096, sizeof(T), W, BPS);
  static constexpr Split s3 = LayOut(1024, 4096, sizeof(T), W, BPS);
  static constexpr int g1 = CeilDiv(4096, 16 * W) * s1.splits, g2 = CeilDiv(4096, 16 * W) * s2.splits,
                       g3 = CeilDiv(1024, 16 * W) * s3.splits;
  static constexpr int grid = Max3(g1, g2, g3);
  static constexpr int shared = Max3(g_skinny::x_share<T, kRows, s1.chunk>::kElements,
                                     g_skinny::x_share<T, kRows, s2.chunk>::kElements,
                                     g_skinny::x_share<T, kRows, s3.chunk>::kElements);
};

template <class T, class Y, class Q, int kMode, int W, int U, int BPS, int LB>
__global__ void __launch_bounds__(32 * W, LB) chain_kernel(const T* x, const T* w1, const T* w2, const T* w3,
                                                         const float* bias, const float* scales, Y* y1,
                                                         Y* y2, Y* y3, float* partial, int* counters,
                                                         unsigned* barrier_counters) {
  typedef ChainShape<T, Y, Q, kMode, W, U, BPS, LB> C;
  __shared__ __align__(16) T xs[C::shared];
  const GridBarrier barrier{barrier_counters};
  const int b = blockIdx.x;
  if (b < C::g1) {
    g_skinny::gemm_block<T, T, Y, float, Q, kMode, 1, true, true, W, U, kRows, kRows, 4096, 1024,
                         C::s1.splits, C::s1.chunk>(b, xs, g_skinny::wait_for_kernel_before(), x, w1,
                                                    bias, scales, y1, partial, counters);
  } else {
    g_skinny::wait_for_kernel_before()();
  }
  barrier.Arrive(0);
  if (b < C::g2) {
    g_skinny::gemm_block<T, Y, Y, float, Q, kMode, 1, true, true, W, U, kRows, kRows, 4096, 4096,
                         C::s2.splits, C::s2.chunk>(b, xs, BarrierWait{barrier, 0}, (const Y*)y1, w2,
                                                    bias, scales, y2, partial, counters + 4096);
  } else {
    barrier.Wait(0);
  }
  barrier.Arrive(1);
  if (b < C::g3) {
    g_skinny::gemm_block<T, Y, Y, float, Q, kMode, 0, true, true, W, U, kRows, kRows, 1024, 4096,
                         C::s3.splits, C::s3.chunk>(b, xs, BarrierWait{barrier, 1}, (const Y*)y2, w3,
                                                    bias, scales, y3, partial, counters + 8192);
  } else {
    barrier.Wait(1);
  }
  barrier.Leave(2);
}

bool g_dependent = true;  // Launch as programmatic dependents (else plain launches).

template <class... P, class... A>
void LaunchDependent(void (*kernel)(P...), int grid, int block, cudaStream_t s, A... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.stream = s;
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = g_dependent ? 1 : 0;
  CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<P>(args)...));
}

__global__ void fill(unsigned char* p, size_t n, unsigned seed, int kind) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    p[i] = (unsigned char)h;
    if (kind == 1 && (i & 1)) p[i] = 0x3c + (h & 1) * 0x80;    // bf16: about +-0.01
    if (kind == 2 && (i & 3) == 3) p[i] = 0x3c + (h & 1) * 0x80;  // f32: about +-0.01
  }
}

struct Buffers {
  unsigned char *w1, *w2, *w3, *x, *y1, *y2, *y3;
  float *bias, *scales, *partial;
  int* counters;
  unsigned* barrier;  // The persistent chain's grid barrier counters.
};

bool g_persistent = false;  // Chain runs the persistent kernel.
// Runs chained in one graph (`prefetch own 1`: one, as graft's runs are:
// no run's kernels overlap the next run's).
int g_chains = 10;

template <class F>
float MicrosecondsPerRun(cudaStream_t s, F chain) {
  const int kChains = g_chains, kReplays = 200 / g_chains, kRounds = 7;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < kChains; ++i) chain();
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, s));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> rounds;
  for (int r = 0; r < kRounds; ++r) {
    cudaEventRecord(a, s);
    for (int i = 0; i < kReplays; ++i) CHECK(cudaGraphLaunch(exec, s));
    cudaEventRecord(b, s);
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    rounds.push_back(ms * 1000 / (kReplays * kChains));
  }
  std::sort(rounds.begin(), rounds.end());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return rounds[kRounds / 2];
}

// Whether the persistent kernel of a layout has all its blocks resident
// at once (else its grid barrier would never open).
template <class T, class Y, class Q, int kMode, int W, int U, int BPS, int LB>
bool PersistentFits() {
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, chain_kernel<T, Y, Q, kMode, W, U, BPS, LB>, 32 * W, 0));
  return per_sm * kMultiprocessors >= ChainShape<T, Y, Q, kMode, W, U, BPS, LB>::grid;
}

template <class T, class Y, class Q, int kMode, int W, int U, int BPS, int LB>
void Chain(const Buffers& b, cudaStream_t s, const unsigned char* x = nullptr) {
  if (g_persistent) {
    LaunchDependent(chain_kernel<T, Y, Q, kMode, W, U, BPS, LB>,
                    ChainShape<T, Y, Q, kMode, W, U, BPS, LB>::grid, 32 * W, s,
                    (const T*)(x ? x : b.x), (const T*)b.w1, (const T*)b.w2, (const T*)b.w3, b.bias,
                    b.scales, (Y*)b.y1, (Y*)b.y2, (Y*)b.y3, b.partial, b.counters, b.barrier);
    return;
  }
  constexpr Split s1 = LayOut(4096, 1024, sizeof(T), W, BPS);
  constexpr Split s2 = LayOut(4096, 4096, sizeof(T), W, BPS);
  constexpr Split s3 = LayOut(1024, 4096, sizeof(T), W, BPS);
  constexpr int kTiles = CeilDiv(4096, 16 * W), kTiles3 = CeilDiv(1024, 16 * W);
  // Each layer's share of the next one's weights (the first layer's for the next run).
  auto share = [](size_t bytes) {
    return g_prefetch ? (unsigned)(bytes * g_prefetch_percent / 100 / 16 * 16) : 0u;
  };
  const size_t small = 4096ull * 1024 * sizeof(T), large = 4096ull * 4096 * sizeof(T);
  LaunchDependent(layer<T, Y, Q, kMode, 1, W, U, BPS, LB, 4096, 1024>, kTiles * s1.splits, 32 * W, s,
                  (const T*)(x ? x : b.x), (const T*)b.w1, b.bias, b.scales, (Y*)b.y1, b.partial,
                  b.counters, (const unsigned char*)b.w2, share(large), g_prefetch);
  LaunchDependent(layer<T, Y, Q, kMode, 1, W, U, BPS, LB, 4096, 4096>, kTiles * s2.splits, 32 * W, s,
                  (const T*)b.y1, (const T*)b.w2, b.bias, b.scales, (Y*)b.y2, b.partial,
                  b.counters + 4096, (const unsigned char*)b.w3, share(small), g_prefetch);
  LaunchDependent(layer<T, Y, Q, kMode, 0, W, U, BPS, LB, 1024, 4096>, kTiles3 * s3.splits, 32 * W, s,
                  (const T*)b.y2, (const T*)b.w3, b.bias, b.scales, (Y*)b.y3, b.partial,
                  b.counters + 8192, (const unsigned char*)b.w1, share(small), g_prefetch);
}

// The result of the chain, as floats.
template <class Y>
std::vector<float> Result(const Buffers& b) {
  std::vector<Y> host(kRows * 1024);
  CHECK(cudaMemcpy(host.data(), b.y3, host.size() * sizeof(Y), cudaMemcpyDeviceToHost));
  std::vector<float> r(host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    if constexpr (sizeof(Y) == 2) {
      unsigned bits = (unsigned)*(const unsigned short*)&host[i] << 16;
      r[i] = *(const float*)&bits;
    } else {
      r[i] = (float)host[i];
    }
  }
  return r;
}

double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (double)(a[i] - b[i]);
    den += (double)b[i] * b[i];
  }
  return den == 0 ? (num == 0 ? 0 : INFINITY) : std::sqrt(num / den);
}

template <class T, class Y, class Q, int kMode, int W, int U, int BPS, int LB>
void Row(const char* dtype, const Buffers& b, cudaStream_t s, std::vector<float>& reference) {
  auto chain = [&] { Chain<T, Y, Q, kMode, W, U, BPS, LB>(b, s); };
  CHECK(cudaMemset(b.y3, 0xff, kRows * 1024 * 4));
  chain();
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGetLastError());
  const std::vector<float> result = Result<Y>(b);
  if (reference.empty()) reference = result;
  const double diff = RelativeDifference(result, reference);
  const float us = MicrosecondsPerRun(s, chain);
  // The same chain again: a result that moves between runs is a race.
  double rerun = 0;
  for (int i = 0; i < 3; ++i) {
    CHECK(cudaMemset(b.y3, 0xff, kRows * 1024 * 4));
    chain();
    CHECK(cudaStreamSynchronize(s));
    rerun = std::max(rerun, RelativeDifference(Result<Y>(b), result));
  }
  std::printf("| %s | %d | %d | %d | %d | %d/%d/%d | %.2f | %.1e | %.1e |\n", dtype, W, U, BPS, LB,
              LayOut(4096, 1024, sizeof(T), W, BPS).splits,
              LayOut(4096, 4096, sizeof(T), W, BPS).splits,
              LayOut(1024, 4096, sizeof(T), W, BPS).splits, us, diff, rerun);
}

// One layout of one dtype, for `persistent` mode.
template <class T, class Y_, class Q, int kMode, int W, int U, int BPS, int LB>
struct Layout {
  typedef Y_ Y;
  static bool Fits() { return PersistentFits<T, Y, Q, kMode, W, U, BPS, LB>(); }
  static int Grid() { return ChainShape<T, Y, Q, kMode, W, U, BPS, LB>::grid; }
  static const char* Name() {
    static char name[32];
    std::snprintf(name, sizeof name, "%d/%d/%d/%d", W, U, BPS, LB);
    return name;
  }
  static void Run(const Buffers& b, cudaStream_t s, const unsigned char* x) {
    Chain<T, Y, Q, kMode, W, U, BPS, LB>(b, s, x);
  }
};

float StreamRow(const Buffers& b, cudaStream_t s, int elem, unsigned* sink) {
  return MicrosecondsPerRun(s, [&] {
    const size_t small = 4096ull * 1024 * elem / 16, large = 4096ull * 4096 * elem / 16;
    LaunchDependent(stream_read, kMultiprocessors * 8, 256, s, (const uint4*)b.w1, small, sink);
    LaunchDependent(stream_read, kMultiprocessors * 8, 256, s, (const uint4*)b.w2, large, sink);
    LaunchDependent(stream_read, kMultiprocessors * 8, 256, s, (const uint4*)b.w3, small, sink);
  });
}

#define LAYOUTS(T, Y, Q, MODE, NAME)                           \
  {                                                            \
    std::vector<float> reference;                              \
    Row<T, Y, Q, MODE, 4, 4, 4, 4>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 4, 8, 1, 1>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 4, 8, 3, 3>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 8, 8, 1, 1>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 4, 4, 2, 2>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 4, 8, 2, 2>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 8, 4, 2, 2>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 8, 4, 1, 1>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 4, 4, 3, 3>(NAME, b, s, reference);     \
    Row<T, Y, Q, MODE, 4, 4, 4, 4>(NAME, b, s, reference);     \
  }

// The f32 chain (3xTF32) in one layout: its first run, two more, and a
// float64 reference on the host, as relative differences.
template <int W, int U, int BPS, int LB>
void CheckFirstRun(const Buffers& b, cudaStream_t s) {
  std::vector<std::vector<float>> runs;
  for (int i = 0; i < 3; ++i) {
    CHECK(cudaMemset(b.y3, 0xff, kRows * 1024 * 4));
    Chain<float, float, g_skinny::no_quant, 3, W, U, BPS, LB>(b, s);
    CHECK(cudaStreamSynchronize(s));
    runs.push_back(Result<float>(b));
  }
  auto host = [&](const unsigned char* p, size_t n) {
    std::vector<float> v(n);
    CHECK(cudaMemcpy(v.data(), p, n * 4, cudaMemcpyDeviceToHost));
    return std::vector<double>(v.begin(), v.end());
  };
  std::vector<double> x = host(b.x, kRows * 1024);
  const int dims[4] = {1024, 4096, 4096, 1024};
  const unsigned char* w[3] = {b.w1, b.w2, b.w3};
  for (int l = 0; l < 3; ++l) {
    const int k = dims[l], n = dims[l + 1];
    std::vector<double> wl = host(w[l], (size_t)n * k), y((size_t)kRows * n);
    for (int m = 0; m < kRows; ++m) {
      for (int j = 0; j < n; ++j) {
        double sum = 0;
        for (int i = 0; i < k; ++i) sum += x[(size_t)m * k + i] * wl[(size_t)j * k + i];
        y[(size_t)m * n + j] = l < 2 && sum < 0 ? 0 : sum;
      }
    }
    x = std::move(y);
  }
  const std::vector<float> reference(x.begin(), x.end());
  std::printf("| %d %d %d %d | first vs fp64 %.1e | second %.1e | third %.1e | first vs second %.1e |\n",
              W, U, BPS, LB, RelativeDifference(runs[0], reference),
              RelativeDifference(runs[1], reference), RelativeDifference(runs[2], reference),
              RelativeDifference(runs[0], runs[1]));
}

// Runs alternating between two inputs, as programmatic dependents, each
// checked against the same input's result from plain launches: a kernel
// that reads what the one before it wrote too early sees the other
// input's values.
template <class T, class Y, class Q, int kMode, int W, int U, int BPS, int LB>
void Stress(const char* name, const Buffers& b, const unsigned char* x2, cudaStream_t s) {
  const unsigned char* inputs[2] = {b.x, x2};
  std::vector<float> expected[2];
  g_dependent = false;
  for (int i = 0; i < 2; ++i) {
    Chain<T, Y, Q, kMode, W, U, BPS, LB>(b, s, inputs[i]);
    CHECK(cudaStreamSynchronize(s));
    expected[i] = Result<Y>(b);
  }
  g_dependent = true;
  int wrong = 0;
  double worst = 0;
  for (int r = 0; r < 200; ++r) {
    Chain<T, Y, Q, kMode, W, U, BPS, LB>(b, s, inputs[r & 1]);
    CHECK(cudaStreamSynchronize(s));
    const double d = RelativeDifference(Result<Y>(b), expected[r & 1]);
    wrong += d != 0;
    worst = std::max(worst, d);
  }
  std::printf("| %s %d %d %d %d | inputs differ %.1e | wrong runs %d of 200 | worst %.1e |\n", name, W,
              U, BPS, LB, RelativeDifference(expected[0], expected[1]), wrong, worst);
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.multiProcessorCount != kMultiprocessors) {
    std::printf("note: %d multiprocessors; layouts assume %d\n", prop.multiProcessorCount,
                kMultiprocessors);
  }
  std::printf("%s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  Buffers b;
  const size_t large = 4096ull * 4096 * 4, small = 4096ull * 1024 * 4;
  CHECK(cudaMalloc(&b.w1, small));
  CHECK(cudaMalloc(&b.w2, large));
  CHECK(cudaMalloc(&b.w3, small));
  for (unsigned char** p : {&b.x, &b.y1, &b.y2, &b.y3}) CHECK(cudaMalloc(p, kRows * 4096 * 4));
  CHECK(cudaMalloc(&b.bias, 4096 * 4));
  CHECK(cudaMalloc(&b.scales, 4096 * 4));
  CHECK(cudaMalloc(&b.partial, 64 << 20));
  CHECK(cudaMalloc(&b.counters, 3 * 4096 * 4));
  CHECK(cudaMemset(b.counters, 0, 3 * 4096 * 4));
  CHECK(cudaMemset(b.bias, 0, 4096 * 4));
  std::vector<float> scales(4096, 1e-4f);
  CHECK(cudaMemcpy(b.scales, scales.data(), 4096 * 4, cudaMemcpyHostToDevice));
  unsigned* sink;
  CHECK(cudaMalloc(&sink, 4));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto fill_all = [&](int kind) {
    fill<<<1024, 256>>>(b.w1, small, 1, kind);
    fill<<<1024, 256>>>(b.w2, large, 2, kind);
    fill<<<1024, 256>>>(b.w3, small, 3, kind);
    fill<<<1024, 256>>>(b.x, kRows * 4096 * 4, 4, kind);
    CHECK(cudaDeviceSynchronize());
  };
  CHECK(cudaMalloc(&b.barrier, 16 * 4));
  CHECK(cudaMemset(b.barrier, 0, 16 * 4));
  if (argc > 1 && std::string(argv[1]) == "persistent") {
    // Each layout as three kernels and as one persistent kernel, the
    // persistent one checked bit for bit against the three (and against
    // itself across runs, and under the stress of alternating inputs).
    std::printf("| dtype | layout | three kernels us | one kernel us | grid | differs | rerun |\n|---|---|---|---|---|---|---|\n");
    unsigned char* x2;
    CHECK(cudaMalloc(&x2, kRows * 4096 * 4));
    auto compare = [&](const char* name, int kind, auto tag) {
      using L = decltype(tag);
      fill_all(kind);
      fill<<<1024, 256>>>(x2, kRows * 4096 * 4, 99, kind);
      if (!L::Fits()) {
        std::printf("| %s | %s | | does not fit | | | |\n", name, L::Name());
        return;
      }
      g_persistent = false;
      L::Run(b, s, nullptr);
      CHECK(cudaStreamSynchronize(s));
      const std::vector<float> three = Result<typename L::Y>(b);
      L::Run(b, s, x2);
      CHECK(cudaStreamSynchronize(s));
      const std::vector<float> three_x2 = Result<typename L::Y>(b);
      const float us3 = MicrosecondsPerRun(s, [&] { L::Run(b, s, nullptr); });
      g_persistent = true;
      CHECK(cudaMemset(b.y3, 0xff, kRows * 1024 * 4));
      L::Run(b, s, nullptr);
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaGetLastError());
      const double differs = RelativeDifference(Result<typename L::Y>(b), three);
      const float us1 = MicrosecondsPerRun(s, [&] { L::Run(b, s, nullptr); });
      double rerun = 0;
      for (int r = 0; r < 100; ++r) {
        CHECK(cudaMemset(b.y3, 0xff, kRows * 1024 * 4));
        L::Run(b, s, (r & 1) ? x2 : nullptr);
        CHECK(cudaStreamSynchronize(s));
        rerun = std::max(rerun, RelativeDifference(Result<typename L::Y>(b), (r & 1) ? three_x2 : three));
      }
      g_persistent = false;
      std::printf("| %s | %s | %.2f | %.2f | %d | %.1e | %.1e |\n", name, L::Name(), us3, us1, L::Grid(),
                  differs, rerun);
    };
    compare("bf16", 1, Layout<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 2, 4, 4>());
    compare("bf16", 1, Layout<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 4, 4, 4>());
    compare("bf16", 1, Layout<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 4, 2, 2>());
    compare("bf16", 1, Layout<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 8, 2, 2>());
    compare("bf16", 1, Layout<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 4, 3, 3>());
    compare("int8", 0, Layout<signed char, unsigned char, int8_layer, 4, 4, 8, 2, 2>());
    compare("int8", 0, Layout<signed char, unsigned char, int8_layer, 4, 4, 4, 4, 4>());
    compare("int8", 0, Layout<signed char, unsigned char, int8_layer, 4, 4, 8, 3, 3>());
    compare("f32", 2, Layout<float, float, g_skinny::no_quant, 3, 4, 4, 4, 4>());
    compare("tf32", 2, Layout<float, float, g_skinny::no_quant, 2, 4, 4, 4, 4>());
    std::printf("| bf16 stream | | %.2f | | | | |\n", StreamRow(b, s, 2, sink));
    std::printf("| int8 stream | | %.2f | | | | |\n", StreamRow(b, s, 1, sink));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "prefetch") {
    if (argc > 2 && std::string(argv[2]) == "own") g_prefetch_modes = {0, 3, 4};
    if (argc > 3) g_chains = std::atoi(argv[3]);
    // Graft's layouts (bf16 and f16: 2 loads a row, f32 and tf32: 4; int8: 8 in 2 blocks),
    // without and with each layer prefetching the next one's weights into L2.
    std::printf("| dtype | prefetch | share %% | us per run |\n|---|---|---|---|\n");
    auto rows = [&](const char* name, int kind, auto run) {
      fill_all(kind);
      for (int mode : g_prefetch_modes) {
        for (unsigned percent : {50u, 100u}) {
          if ((mode == 0 || mode >= 3) && percent == 50) continue;
          g_prefetch = mode;
          g_prefetch_percent = percent;
          std::printf("| %s | %s | %u | %.2f |\n", name, mode == 0 ? "none" : mode == 1 ? "at start" : mode == 2 ? "as blocks end" : mode == 3 ? "own, at start" : "own, layers <= 36 MB",
                      percent, MicrosecondsPerRun(s, run));
        }
      }
      g_prefetch = 0;
    };
    rows("bf16", 1, [&] { Chain<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 2, 4, 4>(b, s); });
    rows("f32", 2, [&] { Chain<float, float, g_skinny::no_quant, 3, 4, 4, 4, 4>(b, s); });
    rows("int8", 0, [&] { Chain<signed char, unsigned char, int8_layer, 4, 4, 8, 2, 2>(b, s); });
    std::printf("| bf16 stream | | | %.2f |\n", StreamRow(b, s, 2, sink));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "room") {
    // Splits that aim at fewer blocks a multiprocessor than the register
    // cap lets in: room for the next kernel's blocks to start (and load
    // their first weights) while this one runs.
    std::printf("| dtype | warps | loads | blocks aimed | blocks fit | splits | us | vs first | rerun |\n|---|---|---|---|---|---|---|---|---|\n");
    fill_all(1);
    {
      std::vector<float> reference;
      Row<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 2, 4, 4>("bf16", b, s, reference);
      Row<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 2, 2, 4>("bf16", b, s, reference);
      Row<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 2, 3, 4>("bf16", b, s, reference);
      Row<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 4, 2, 4>("bf16", b, s, reference);
      Row<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 2, 2, 6>("bf16", b, s, reference);
      Row<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 2, 4, 8>("bf16", b, s, reference);
    }
    fill_all(0);
    {
      std::vector<float> reference;
      Row<signed char, unsigned char, int8_layer, 4, 4, 8, 2, 2>("int8", b, s, reference);
      Row<signed char, unsigned char, int8_layer, 4, 4, 8, 1, 2>("int8", b, s, reference);
      Row<signed char, unsigned char, int8_layer, 4, 4, 4, 2, 4>("int8", b, s, reference);
      Row<signed char, unsigned char, int8_layer, 4, 4, 4, 4, 4>("int8", b, s, reference);
    }
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "stress") {
    unsigned char* x2;
    CHECK(cudaMalloc(&x2, kRows * 4096 * 4));
    fill<<<1024, 256>>>(x2, kRows * 4096 * 4, 99, 0);
    fill_all(0);
    Stress<signed char, unsigned char, int8_layer, 4, 4, 4, 4, 4>("int8", b, x2, s);
    Stress<signed char, unsigned char, int8_layer, 4, 4, 8, 2, 2>("int8", b, x2, s);
    fill<<<1024, 256>>>(x2, kRows * 4096 * 4, 99, 1);
    fill_all(1);
    Stress<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 4, 4, 4>("bf16", b, x2, s);
    Stress<g_bfloat, g_bfloat, g_skinny::no_quant, 0, 4, 8, 3, 3>("bf16", b, x2, s);
    fill<<<1024, 256>>>(x2, kRows * 4096 * 4, 99, 2);
    fill_all(2);
    Stress<float, float, g_skinny::no_quant, 2, 4, 4, 4, 4>("tf32", b, x2, s);
    Stress<float, float, g_skinny::no_quant, 3, 4, 4, 4, 4>("f32", b, x2, s);
    return 0;
  }
  if (argc > 1) {
    fill_all(2);
    CheckFirstRun<4, 4, 4, 4>(b, s);
    CheckFirstRun<4, 4, 3, 3>(b, s);
    return 0;
  }
  std::printf("\n| dtype | warps | loads | blocks/SM | register cap blocks | splits | us per run | diff to first | rerun diff |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  fill_all(0);
  std::printf("| int8 stream | | | | | | %.2f | |\n", StreamRow(b, s, 1, sink));
  LAYOUTS(signed char, unsigned char, int8_layer, 4, "int8")
  fill_all(1);
  std::printf("| bf16 stream | | | | | | %.2f | |\n", StreamRow(b, s, 2, sink));
  LAYOUTS(g_bfloat, g_bfloat, g_skinny::no_quant, 0, "bf16")
  fill_all(2);
  std::printf("| f32 stream | | | | | | %.2f | |\n", StreamRow(b, s, 4, sink));
  LAYOUTS(float, float, g_skinny::no_quant, 3, "f32 3xTF32")
  LAYOUTS(float, float, g_skinny::no_quant, 2, "tf32")
  CHECK(cudaDeviceSynchronize());
  return 0;
}
