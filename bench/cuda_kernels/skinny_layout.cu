// An experiment for graft's product of few rows (skinny_gemm_source.h):
// does the order of the weights in memory limit how fast they stream?
// Reads the weights with graft's kernel's access pattern (blocks of 64
// rows over a chunk of K, each thread 16-byte pieces of two rows, two
// register buffers in flight) without the products, from the row-major
// matrix graft uploads, and from a copy packed in the order the threads
// read it (each warp's load then reads 512 contiguous bytes, each block's
// iteration 8 KB), beside a plain streaming read of the same bytes.
//
//   cd bench/cuda_kernels && nvcc -arch=sm_90a -O3 -std=c++17 -o skinny_layout skinny_layout.cu && ./skinny_layout
#include <cuda_runtime.h>

#include <cstdio>
#include <type_traits>

#include "bench_kernels.h"

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

// kU pieces of 16 bytes a row and thread an iteration, rows n0 and n1.
template <bool kPacked, int kU>
__global__ void __launch_bounds__(128, 4)
    pattern(const uint4* w, int k_bytes, int chunk_bytes, int tiles, unsigned* sink) {
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int tile = blockIdx.x % tiles, split = blockIdx.x / tiles;
  const int iters = chunk_bytes / (kU * 64);
  const int n0 = tile * 64 + warp * 16 + g, n1 = n0 + 8;
  auto addr = [&](int it, int u, int h) -> const uint4* {
    if (kPacked) return w + ((size_t)((size_t)blockIdx.x * iters + it) * (2 * kU) + h * kU + u) * 128 + tid;
    return w + ((size_t)(h ? n1 : n0) * k_bytes + split * chunk_bytes + it * kU * 64 + u * 64 + t * 16) / 16;
  };
  auto load = [&](uint4 (&r)[2 * kU], int it) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      r[u] = load_stream(addr(it, u, 0));
      r[kU + u] = load_stream(addr(it, u, 1));
    }
  };
  unsigned acc = 0;
  auto consume = [&](const uint4 (&r)[2 * kU]) {
#pragma unroll
    for (int i = 0; i < 2 * kU; ++i) acc ^= r[i].x ^ r[i].y ^ r[i].z ^ r[i].w;
  };
  uint4 a[2 * kU], b[2 * kU];
  load(a, 0);
  if (iters > 1) load(b, 1);
#pragma unroll 1
  for (int it = 0; it < iters; it += 2) {
    consume(a);
    if (it + 2 < iters) load(a, it + 2);
    if (it + 1 >= iters) break;
    consume(b);
    if (it + 3 < iters) load(b, it + 3);
  }
  if (acc == 0x12345678u) *sink = acc;
}

int main() {
  constexpr size_t kSpan = 256u << 20;  // Launches rotate through 256 MB: past L2.
  uint4* w;
  unsigned* sink;
  CHECK(cudaMalloc(&w, kSpan));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(w, 1, kSpan));
  size_t offset = 0;
  auto weights = [&](size_t bytes) {
    offset += bytes;
    if (offset + bytes > kSpan) offset = 0;
    return w + offset / 16;
  };
  std::printf("| N x K bf16 | chunk B | blocks | kU | row-major us | packed us | streaming read us |\n|---|---|---|---|---|---|---|\n");
  auto run = [&](int n, int k, int chunk_bytes, auto u_tag) {
    constexpr int kU = decltype(u_tag)::value;
    const size_t bytes = (size_t)n * k * 2;
    const int tiles = n / 64, blocks = tiles * (k * 2 / chunk_bytes);
    const float rm = MicrosecondsPerLaunch([&] {
      pattern<false, kU><<<blocks, 128>>>(weights(bytes), k * 2, chunk_bytes, tiles, sink);
    });
    const float pk = MicrosecondsPerLaunch([&] {
      pattern<true, kU><<<blocks, 128>>>(weights(bytes), k * 2, chunk_bytes, tiles, sink);
    });
    const float sr = MicrosecondsPerLaunch([&] {
      stream_read<<<132 * 8, 256>>>(weights(bytes), bytes / 16, sink);
    });
    CHECK(cudaDeviceSynchronize());
    std::printf("| %dx%d | %d | %d | %d | %.2f | %.2f | %.2f |\n", n, k, chunk_bytes, blocks, kU, rm, pk, sr);
  };
  using U2 = std::integral_constant<int, 2>;
  using U4 = std::integral_constant<int, 4>;
  for (int chunk : {512, 1024, 2048, 4096}) {
    run(4096, 4096, chunk, U2{});
    run(4096, 4096, chunk, U4{});
  }
  for (int chunk : {256, 512, 1024}) run(4096, 1024, chunk, U2{});
  for (int chunk : {512, 1024, 2048}) run(1024, 4096, chunk, U2{});
  CHECK(cudaGetLastError());
}
