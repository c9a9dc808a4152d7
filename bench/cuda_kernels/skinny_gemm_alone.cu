// graft's skinny-product kernel timed alone, beside cuBLAS and a plain
// streaming read of the same bytes, at the benchmark MLP's three layer
// shapes (batch 32; int8 with several splits of K): what docs/benchmarks.md quotes as "kernels timed alone".
// Built with nvcc on the GPU machine (graft itself compiles the kernel with
// NVRTC; this program includes the same source):
//
//   cd bench/cuda_kernels && python3 extract_source.py &&
//     nvcc -arch=sm_90 -O3 -std=c++17 -o skinny_gemm_alone skinny_gemm_alone.cu -lcublas &&
//     ./skinny_gemm_alone
//
// Weights rotate over copies larger than L2 together, so every launch
// streams them from memory; each figure is the mean of 100 back-to-back
// launches after 10 warm-ups, timed with CUDA events.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "kernels.inc"
#include "bench_kernels.h"

// S splits of C each (what graft's planner picks on a 132-SM GPU,
// skinny_gemm.cc, and others).
template <class T, int kMode, int N, int K, int S, int C>
__global__ void __launch_bounds__(128, 4) skinny(const T* x, const T* w, const T* b, T* y,
                                                 float* partial, int* counters) {
  g_skinny::gemm<T, T, T, T, g_skinny::no_quant, kMode, 1, true, true, 4, 4, 32, 32, N, K, S, C>(
      x, w, b, nullptr, y, partial, counters);
}

template <int N, int K, int S, int C>
__global__ void __launch_bounds__(128, 4) skinny_int8(const signed char* x, const signed char* w,
                                                      const float* b, const float* scales,
                                                      unsigned char* y, float* partial,
                                                      int* counters) {
  g_skinny::gemm<signed char, signed char, unsigned char, float, int8_layer, 4, 1, true, true, 4, 4, 32, 32, N, K, S,
                 C>(x, w, b, scales, y, partial, counters);
}

int main() {
  constexpr size_t kWeightBytes = 4096ull * 4096 * 4;  // The largest: f32 4096x4096.
  constexpr int kCopies = 4;                           // 256 MB: far past L2.
  char *w, *x, *bias, *y;
  float* partial;
  int* counters;
  unsigned* sink;
  CHECK(cudaMalloc(&w, kCopies * kWeightBytes));
  CHECK(cudaMalloc(&x, 32 * 4096 * 4));
  CHECK(cudaMalloc(&bias, 4096 * 4));
  CHECK(cudaMalloc(&y, 32 * 4096 * 4));
  CHECK(cudaMalloc(&partial, 32 << 20));
  CHECK(cudaMalloc(&counters, 65536));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(counters, 0, 65536));
  // Small finite values in every float format (0x3c3c: bf16 0.0115, f16 1.06).
  CHECK(cudaMemset(w, 0x3c, kCopies * kWeightBytes));
  CHECK(cudaMemset(x, 0x3c, 32 * 4096 * 4));
  CHECK(cudaMemset(bias, 0, 4096 * 4));
  int next = 0;
  auto weights = [&] {
    next = (next + 1) % kCopies;
    return w + next * kWeightBytes;
  };
  std::printf("| shape | bytes | graft kernel us | cuBLAS us | streaming read us |\n|---|---|---|---|---|\n");
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::printf("cublasCreate failed\n");
    return 1;
  }
  const float one = 1, zero = 0;
  auto cublas_bf16 = [&](int n, int k) {
    cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, 32, k, &one, weights(), CUDA_R_16BF, k, x,
                 CUDA_R_16BF, k, &zero, y, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                 CUBLAS_GEMM_DEFAULT);
  };
  auto read = [&](size_t bytes) {
    return MicrosecondsPerLaunch([&] {
      stream_read<<<132 * 8, 256>>>((const uint4*)weights(), bytes / 16, sink);
    });
  };
#define BF16(N, K, S, C)                                                                     \
  std::printf("| bf16 %dx%d | %d MB | %.2f | %.2f | %.2f |\n", N, K, N * K * 2 >> 20,         \
              MicrosecondsPerLaunch([&] {                                                    \
                skinny<g_bfloat, 0, N, K, S, C><<<(N + 63) / 64 * S, 128>>>(                 \
                    (const g_bfloat*)x, (const g_bfloat*)weights(), (const g_bfloat*)bias,   \
                    (g_bfloat*)y, partial, counters);                                        \
              }),                                                                            \
              MicrosecondsPerLaunch([&] { cublas_bf16(N, K); }), read((size_t)N * K * 2));
#define F32(N, K, S, C)                                                                      \
  std::printf("| f32 (3xTF32) %dx%d | %d MB | %.2f | | %.2f |\n", N, K, N * K * 4 >> 20,      \
              MicrosecondsPerLaunch([&] {                                                    \
                skinny<float, 3, N, K, S, C><<<(N + 63) / 64 * S, 128>>>(                    \
                    (const float*)x, (const float*)weights(), (const float*)bias, (float*)y, \
                    partial, counters);                                                      \
              }),                                                                            \
              read((size_t)N * K * 4));
#define INT8(N, K, S, C)                                                                     \
  std::printf("| int8 %dx%d S=%d C=%d | %d MB | %.2f | | %.2f |\n", N, K, S, C, N * K >> 20,   \
              MicrosecondsPerLaunch([&] {                                                    \
                skinny_int8<N, K, S, C><<<(N + 63) / 64 * S, 128>>>(                         \
                    (const signed char*)x, (const signed char*)weights(), (const float*)bias, \
                    (const float*)bias, (unsigned char*)y, partial, counters);               \
              }),                                                                            \
              read((size_t)N * K));
  INT8(4096, 1024, 2, 512)
  INT8(4096, 1024, 4, 256)
  INT8(4096, 1024, 8, 128)
  INT8(4096, 4096, 8, 512)
  INT8(4096, 4096, 16, 256)
  INT8(1024, 4096, 8, 512)
  INT8(1024, 4096, 16, 256)
  INT8(1024, 4096, 32, 128)
  BF16(4096, 1024, 4, 256)
  BF16(4096, 4096, 8, 512)
  BF16(1024, 4096, 16, 256)
  F32(4096, 1024, 8, 128)
  F32(4096, 4096, 8, 512)
  F32(1024, 4096, 32, 128)
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  return 0;
}
