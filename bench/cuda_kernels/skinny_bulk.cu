// An experiment for graft's product of few rows (skinny_gemm_source.h):
// the weights stream into shared memory by Hopper's bulk copies
// (cp.async.bulk, the TMA without a tensor map) through a ring of stages,
// so the bytes in flight are bounded by shared memory, not by the
// registers a thread can hold. One block a multiprocessor; warp 0 issues
// the copies, every warp multiplies its 16 weight rows by the stage's x
// rows on the tensor cores as graft's kernel does (the same fragments, so
// the same products), and K split over blocks is summed by the last
// block of a tile in split order, as in graft's kernel.
//
// Times it beside graft's kernel and a streaming read of the same bytes at
// the benchmark MLP's three bf16 layer shapes (batch 32), weights rotated
// past L2, and prints how far its results are from graft's kernel's.
// Built with nvcc on the GPU machine:
//
//   cd bench/cuda_kernels && python3 extract_source.py &&
//     nvcc -arch=sm_90a -O3 -std=c++17 -o skinny_bulk skinny_bulk.cu && ./skinny_bulk
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels.inc"
#include "bench_kernels.h"

namespace bulk {

constexpr int kRows = 32;                 // Rows of x.
constexpr int kMB = kRows / 8;            // Blocks of 8 rows (the mma's n).
constexpr int kSK = 256;                  // k elements a stage.
constexpr int kRowBytes = kSK * 2 + 64;   // A row's stride in shared memory: the
                                          // 64-byte pad puts the 16-byte reads of a
                                          // quarter warp in distinct banks.

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n"
      "waiting:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra waiting;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
// `bytes` (a multiple of 16) from global `src` to shared `dst`, counted on `bar`.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes,
                                          unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

// y[32, N] = x[32, K] w[N, K]^T + bias, bf16, K cut in S chunks of C; a
// block is 16 * W weight rows over one chunk, NS stages in its ring.
template <int W, int N, int K, int S, int C, int NS>
__global__ void __launch_bounds__(32 * W, 1)
    product(const g_bfloat* __restrict__ x, const g_bfloat* __restrict__ w,
            const g_bfloat* __restrict__ bias, g_bfloat* __restrict__ y, float* __restrict__ partial,
            int* __restrict__ counters) {
  constexpr int kTile = 16 * W, kTiles = N / kTile, kThreads = 32 * W;
  constexpr int kStageRows = kTile + kRows;
  constexpr int kStageBytes = kStageRows * kRowBytes;
  constexpr int kStages = C / kSK;
  static_assert(N % kTile == 0 && K % C == 0 && C % kSK == 0 && K / C == S, "bench shapes only");
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + NS * kStageBytes);
  unsigned long long* empty = full + NS;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int tile = blockIdx.x % kTiles, split = blockIdx.x / kTiles;
  const int n_base = tile * kTile, k0 = split * C;
  if (threadIdx.x == 0) {
    for (int s = 0; s < NS; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, W);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  // Warp 0's lanes copy stage i (the tile's rows, then x's) into its slot.
  auto issue = [&](int i) {
    const int slot = i % NS;
    unsigned char* base = smem + slot * kStageBytes;
    const int kk = k0 + i * kSK;
    if (lane == 0) mbar_expect(full + slot, kStageRows * kSK * 2);
    __syncwarp();
    for (int r = lane; r < kStageRows; r += 32) {
      const g_bfloat* src = r < kTile ? w + (long long)(n_base + r) * K + kk
                                      : x + (long long)(r - kTile) * K + kk;
      bulk_copy(base + r * kRowBytes, src, kSK * 2, full + slot);
    }
  };
  if (warp == 0) {
    for (int i = 0; i < NS && i < kStages; ++i) issue(i);
  }
  float acc[kMB][4];
#pragma unroll
  for (int b = 0; b < kMB; ++b) acc[b][0] = acc[b][1] = acc[b][2] = acc[b][3] = 0;
  const int r0 = warp * 16 + g;  // This thread's weight rows r0 and r0 + 8 in the tile.
  for (int i = 0; i < kStages; ++i) {
    const int slot = i % NS;
    mbar_wait(full + slot, (i / NS) & 1);
    const unsigned char* base = smem + slot * kStageBytes;
#pragma unroll
    for (int step = 0; step < kSK / 32; ++step) {
      const int byte = (step * 32 + t * 8) * 2;
      const uint4 wl = *reinterpret_cast<const uint4*>(base + r0 * kRowBytes + byte);
      const uint4 wh = *reinterpret_cast<const uint4*>(base + (r0 + 8) * kRowBytes + byte);
#pragma unroll
      for (int b = 0; b < kMB; ++b) {
        const uint4 xv =
            *reinterpret_cast<const uint4*>(base + (kTile + b * 8 + g) * kRowBytes + byte);
        g_skinny::mma_pair<0>(acc[b], wl, wh, xv);
      }
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + slot);
    // The slot is free once every warp is done with it: refill it.
    if (warp == 0 && i + NS < kStages) {
      mbar_wait(empty + slot, (i / NS) & 1);
      issue(i + NS);
    }
  }
  // Split K: the last block of a tile adds every split's sums in order.
  if (S > 1) {
    float* mine = partial + ((long long)(tile * S + split) * kMB * kThreads) * 4;
#pragma unroll
    for (int b = 0; b < kMB; ++b) {
      *reinterpret_cast<float4*>(mine + (b * kThreads + threadIdx.x) * 4) =
          make_float4(acc[b][0], acc[b][1], acc[b][2], acc[b][3]);
    }
    __threadfence();
    __syncthreads();
    __shared__ int last;
    if (threadIdx.x == 0) last = atomicAdd(counters + tile, 1) == S - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
#pragma unroll
    for (int b = 0; b < kMB; ++b) acc[b][0] = acc[b][1] = acc[b][2] = acc[b][3] = 0;
    for (int s = 0; s < S; ++s) {
      const float* theirs = partial + ((long long)(tile * S + s) * kMB * kThreads) * 4;
#pragma unroll
      for (int b = 0; b < kMB; ++b) {
        const float4 v = __ldcg(reinterpret_cast<const float4*>(theirs + (b * kThreads + threadIdx.x) * 4));
        acc[b][0] += v.x; acc[b][1] += v.y; acc[b][2] += v.z; acc[b][3] += v.w;
      }
    }
    if (threadIdx.x == 0) counters[tile] = 0;
  }
  // acc[b]: (row n0, x rows 8b+2t, 8b+2t+1), then (row n1, the same).
  const int n0 = n_base + r0, n1 = n0 + 8;
#pragma unroll
  for (int b = 0; b < kMB; ++b) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = h == 0 ? n0 : n1;
      const float bn = g_b2f(bias[n]);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int m = b * 8 + 2 * t + j;
        y[(long long)m * N + n] = g_f2b(acc[b][h * 2 + j] + bn);
      }
    }
  }
}

}  // namespace bulk

// graft's kernel at the same shape (no activation), for the comparison.
template <int N, int K, int S, int C>
__global__ void __launch_bounds__(128, 4) graft_product(const g_bfloat* x, const g_bfloat* w,
                                                        const g_bfloat* b, g_bfloat* y,
                                                        float* partial, int* counters) {
  g_skinny::gemm<g_bfloat, g_bfloat, g_bfloat, g_bfloat, g_skinny::no_quant, 0, 0, true, true, 4, 2,
                 32, 32, N, K, S, C>(x, w, b, nullptr, y, partial, counters);
}

float Float(unsigned short bits) {
  unsigned u = static_cast<unsigned>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int main() {
  constexpr size_t kWeightBytes = 4096ull * 4096 * 2;
  constexpr int kCopies = 8;  // 256 MB: far past L2.
  g_bfloat *w, *x, *bias, *y_graft, *y_bulk;
  float* partial;
  int* counters;
  unsigned* sink;
  CHECK(cudaMalloc(&w, kCopies * kWeightBytes));
  CHECK(cudaMalloc(&x, 32 * 4096 * 2));
  CHECK(cudaMalloc(&bias, 4096 * 2));
  CHECK(cudaMalloc(&y_graft, 32 * 4096 * 2));
  CHECK(cudaMalloc(&y_bulk, 32 * 4096 * 2));
  CHECK(cudaMalloc(&partial, 32 << 20));
  CHECK(cudaMalloc(&counters, 65536));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(counters, 0, 65536));
  // Values that differ by position (bf16 bits from a hash), small and finite.
  {
    std::vector<unsigned short> host(kWeightBytes / 2);
    for (size_t i = 0; i < host.size(); ++i) {
      const unsigned h = static_cast<unsigned>(i * 2654435761u) >> 20;  // 12 bits.
      host[i] = static_cast<unsigned short>(0x3c00 + (h & 0x1ff) - ((h & 0x200) ? 0x8000 : 0));
    }
    for (int c = 0; c < kCopies; ++c) {
      CHECK(cudaMemcpy(reinterpret_cast<char*>(w) + c * kWeightBytes, host.data(), kWeightBytes,
                       cudaMemcpyHostToDevice));
    }
    CHECK(cudaMemcpy(x, host.data() + 12345, 32 * 4096 * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(bias, host.data() + 777, 4096 * 2, cudaMemcpyHostToDevice));
  }
  // Each launch reads the next `bytes` of the 256 MB, so no layer's weights
  // are still in L2 from an earlier launch.
  size_t offset = 0;
  auto weights = [&](size_t bytes) {
    offset += bytes;
    if (offset + bytes > kCopies * kWeightBytes) offset = 0;
    return reinterpret_cast<const g_bfloat*>(reinterpret_cast<char*>(w) + offset);
  };
  auto read = [&](size_t bytes) {
    return MicrosecondsPerLaunch([&] {
      stream_read<<<132 * 8, 256>>>((const uint4*)weights(bytes), bytes / 16, sink);
    });
  };
  // Largest difference between the two kernels' results, relative to the
  // largest result (the sums differ only in order).
  // A NaN on one side only (the outputs start as NaNs) is an infinite
  // difference.
  auto differ = [&](int n) {
    std::vector<unsigned short> a(32 * n), b(32 * n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(a.data(), y_graft, a.size() * 2, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b.data(), y_bulk, b.size() * 2, cudaMemcpyDeviceToHost));
    float most = 0, diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(Float(a[i])) || std::isnan(Float(b[i]))) return INFINITY;
      most = std::fmax(most, std::fabs(Float(a[i])));
      diff = std::fmax(diff, std::fabs(Float(a[i]) - Float(b[i])));
    }
    return most > 0 ? diff / most : diff;
  };
  std::printf(
      "| shape | MB | graft kernel us | bulk W,NS us | streaming read us | bulk vs graft max rel diff |\n"
      "|---|---|---|---|---|---|\n");
#define RUN(N, K, GS, GC, W, S, C, NS)                                                              \
  {                                                                                                 \
    constexpr int kSmem = NS * (16 * W + 32) * bulk::kRowBytes + 2 * NS * 8;                        \
    auto* kernel = bulk::product<W, N, K, S, C, NS>;                                                \
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));        \
    auto run_graft = [&](const g_bfloat* wt) {                                                      \
      graft_product<N, K, GS, GC><<<(N / 64) * GS, 128>>>(x, wt, bias, y_graft, partial, counters); \
    };                                                                                              \
    auto run_bulk = [&](const g_bfloat* wt) {                                                       \
      bulk::product<W, N, K, S, C, NS><<<(N / (16 * W)) * S, 32 * W, kSmem>>>(x, wt, bias, y_bulk,  \
                                                                              partial, counters);   \
    };                                                                                              \
    CHECK(cudaMemset(y_graft, 0xff, 32 * N * 2));                                                   \
    CHECK(cudaMemset(y_bulk, 0xff, 32 * N * 2));                                                    \
    run_graft(w);                                                                                   \
    run_bulk(w);                                                                                    \
    const float d = differ(N);                                                                      \
    const float tg = MicrosecondsPerLaunch([&] { run_graft(weights((size_t)N * K * 2)); });          \
    const float tb = MicrosecondsPerLaunch([&] { run_bulk(weights((size_t)N * K * 2)); });           \
    std::printf("| bf16 %dx%d | %d | %.2f | %d,%d: %.2f | %.2f | %.1e |\n", N, K, N * K * 2 >> 20,  \
                tg, W, NS, tb, read((size_t)N * K * 2), d);                                         \
    CHECK(cudaGetLastError());                                                                      \
  }
  // graft's layouts (skinny_gemm.cc on 132 SMs) beside bulk layouts of
  // about one block a multiprocessor.
  RUN(4096, 1024, 4, 256, 4, 2, 512, 2)
  RUN(4096, 1024, 4, 256, 4, 4, 256, 1)
  RUN(4096, 4096, 8, 512, 4, 2, 2048, 4)
  RUN(4096, 4096, 8, 512, 4, 2, 2048, 3)
  RUN(4096, 4096, 8, 512, 8, 4, 1024, 2)
  RUN(1024, 4096, 16, 256, 4, 8, 512, 2)
  RUN(1024, 4096, 16, 256, 4, 4, 1024, 4)
  CHECK(cudaDeviceSynchronize());
  return 0;
}
