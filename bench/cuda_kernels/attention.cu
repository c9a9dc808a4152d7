// graft's attention kernel (backends/cuda/attention_source.h) alone, on the
// GPT-2 block's causal attention: batch 8, 12 heads of 64, sequence 256,
// bf16; q, k and v read in place from one [8, 256, 2304] product, the
// output written as [8, 256, 12, 64], as the CUDA backend runs it. The
// result is compared with a plain f32 kernel (the largest difference over
// the largest value); the time is the mean of back-to-back launches
// (bench_kernels.h). Built from the kernels.inc of the working tree, or,
// with -DKERNELS='"other.inc"', from another copy (extract_source.py --out).
//
//   cd bench/cuda_kernels && python3 extract_source.py &&
//     nvcc -arch=sm_90 -O3 -std=c++17 -o attention attention.cu && ./attention
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_kernels.h"
#ifndef KERNELS
#define KERNELS "kernels.inc"
#endif
#include KERNELS

namespace {

constexpr int kBatch = 8, kHeads = 12, kSeq = 256, kDim = 64;
constexpr int kRow = 3 * kHeads * kDim;  // The qkv product's row.
constexpr int kOutRow = kHeads * kDim;
constexpr int kTiles = kSeq / 64;

__global__ void __launch_bounds__(128) Graft(g_bfloat* out, const g_bfloat* qkv) {
  g_attention::run<g_bfloat, kDim, kDim, true, false>(
      out, qkv, qkv + kOutRow, qkv + 2 * kOutRow, kSeq, kSeq, kTiles, 0.125f, -INFINITY,
      [](long long, int, int) { return false; },
      [](long long b) {
        const long long h = b % kHeads, n = b / kHeads;
        const long long in = n * kSeq * kRow + h * kDim;
        return g_attention::bases{in, in, in, n * kSeq * kOutRow + h * kDim};
      },
      kRow, kRow, kRow, kOutRow);
}

// One thread per query row, f32 throughout.
__global__ void Reference(float* out, const g_bfloat* qkv) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kBatch * kHeads * kSeq) return;
  const int row = i % kSeq, h = (i / kSeq) % kHeads, n = i / (kSeq * kHeads);
  const g_bfloat* q = qkv + ((long long)n * kSeq + row) * kRow + h * kDim;
  float m = -INFINITY, l = 0.f, o[kDim] = {};
  for (int j = 0; j <= row; ++j) {
    const g_bfloat* k = qkv + ((long long)n * kSeq + j) * kRow + kOutRow + h * kDim;
    float s = 0.f;
    for (int d = 0; d < kDim; ++d) s += g_b2f(q[d]) * g_b2f(k[d]);
    s *= 0.125f;
    const float mn = fmaxf(m, s), c = expf(m - mn), p = expf(s - mn);
    l = l * c + p;
    for (int d = 0; d < kDim; ++d) o[d] = o[d] * c + p * g_b2f(k[kOutRow + d]);
    m = mn;
  }
  float* y = out + ((long long)n * kSeq + row) * kOutRow + h * kDim;
  for (int d = 0; d < kDim; ++d) y[d] = o[d] / l;
}

__global__ void Fill(g_bfloat* x, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = g_f2b(((h & 0xffff) / 65536.f - 0.5f) * 4.f);
  }
}

}  // namespace

int main() {
  const long long in_n = (long long)kBatch * kSeq * kRow, out_n = (long long)kBatch * kSeq * kOutRow;
  g_bfloat *qkv, *out;
  float* ref;
  CHECK(cudaMalloc(&qkv, in_n * sizeof(g_bfloat)));
  CHECK(cudaMalloc(&out, out_n * sizeof(g_bfloat)));
  CHECK(cudaMalloc(&ref, out_n * sizeof(float)));
  Fill<<<1024, 256>>>(qkv, in_n, 7);
  Reference<<<(kBatch * kHeads * kSeq + 127) / 128, 128>>>(ref, qkv);
  const int grid = kBatch * kHeads * kTiles;
  Graft<<<grid, 128>>>(out, qkv);
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned short> got(out_n);
  std::vector<float> want(out_n);
  CHECK(cudaMemcpy(got.data(), out, out_n * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(want.data(), ref, out_n * 4, cudaMemcpyDeviceToHost));
  double worst = 0, largest = 0;
  for (long long i = 0; i < out_n; ++i) {
    const unsigned bits = (unsigned)got[i] << 16;
    float g;
    std::memcpy(&g, &bits, 4);
    worst = std::fmax(worst, std::fabs(g - want[i]));
    largest = std::fmax(largest, std::fabs(want[i]));
  }
  const float us = MicrosecondsPerLaunch([&] { Graft<<<grid, 128>>>(out, qkv); });
  std::printf("attention b%d h%d s%d d%d bf16 causal: %.2f us, error %.2e of %.2f\n", kBatch,
              kHeads, kSeq, kDim, us, worst / largest, largest);
  return worst / largest < 2e-2 ? 0 : 1;
}
