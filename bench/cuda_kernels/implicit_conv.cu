// graft's implicit-GEMM convolution (backends/cuda/implicit_conv_source.h)
// with several block tiles, beside what the CUDA backend runs without it:
// the patches written to a column buffer by a kernel (16 bytes a thread,
// as graft's), then one cuBLASLt product (its heuristic's first pick), for
// ResNet-18's convolutions at batch 32, bf16, bias and ReLU in all. Each
// variant timed alone (bench_kernels.h's MicrosecondsPerLaunch: launches
// back to back, not in a graph); the last tile's result compared with the
// columns path's (or, for the stem, graft's tile's): the largest
// difference over the largest value.
//
//   cd bench/cuda_kernels && python3 extract_source.py &&
//     nvcc -arch=sm_90 -O3 -std=c++17 -o implicit_conv implicit_conv.cu -lcublasLt &&
//     ./implicit_conv
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_kernels.h"
#include "kernels.inc"

namespace {

template <int N, int H, int W, int CIN, int COUT, int KS, int S, int P>
struct Conv {
  static constexpr int HO = (H + 2 * P - KS) / S + 1, WO = (W + 2 * P - KS) / S + 1;
  static constexpr int M = N * HO * WO, K = KS * KS * CIN;
  static constexpr int KP = (K + 7) / 8 * 8;  // The weight's rows, padded.
};

// The implicit kernel with tile `Tile` (g_iconv::tile), its stages in
// dynamic shared memory.
template <class Tile, int N, int H, int W, int CIN, int COUT, int KS, int S, int P>
__global__ void __launch_bounds__(Tile::kThreads) Implicit(const g_bfloat* x, const g_bfloat* w,
                                                          const g_bfloat* bias, g_bfloat* y) {
  using C = Conv<N, H, W, CIN, COUT, KS, S, P>;
  extern __shared__ __align__(128) unsigned char dynamic[];
  g_iconv::conv<Tile, g_bfloat, g_bfloat, true, false, true, N, H, W, CIN, C::HO, C::WO, COUT, KS,
                KS, S, S, P, P, 1, 1, C::KP>(x, w, bias, nullptr, y,
                                             reinterpret_cast<g_bfloat*>(dynamic));
}

// The patches, taps outer: one thread 16 bytes (8 channels of one tap).
template <int N, int H, int W, int CIN, int COUT, int KS, int S, int P>
__global__ void Columns(const uint4* x, uint4* columns) {
  using C = Conv<N, H, W, CIN, COUT, KS, S, P>;
  constexpr int kPieces = CIN / 8;
  const long long total = (long long)C::M * C::K / 8;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    long long rest = i;
    const int ci = rest % kPieces; rest /= kPieces;
    const int kx = rest % KS; rest /= KS;
    const int ky = rest % KS; rest /= KS;
    const int ox = rest % C::WO; rest /= C::WO;
    const int oy = rest % C::HO; rest /= C::HO;
    const int y = oy * S - P + ky, xx = ox * S - P + kx;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (y >= 0 && y < H && xx >= 0 && xx < W) v = x[((rest * H + y) * W + xx) * kPieces + ci];
    columns[i] = v;
  }
}

struct Lt {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulAlgo_t algo;
  void* workspace;
};

Lt Plan(cublasLtHandle_t handle, int m, int n, int k, const void* bias) {
  Lt lt{};
  lt.handle = handle;
  CHECK_BLAS(cublasLtMatmulDescCreate(&lt.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
  cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  const cudaDataType_t bias_type = CUDA_R_16BF;
  cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                 sizeof(bias_type));
  cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&lt.a, CUDA_R_16BF, k, n, k));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&lt.b, CUDA_R_16BF, k, m, k));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&lt.c, CUDA_R_16BF, n, m, n));
  cublasLtMatmulPreference_t preference;
  cublasLtMatmulPreferenceCreate(&preference);
  const uint64_t workspace = 32u << 20;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace, sizeof(workspace));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(handle, lt.desc, lt.a, lt.b, lt.c, lt.c, preference, 1,
                                       &result, &found));
  lt.algo = result.algo;
  CHECK(cudaMalloc(&lt.workspace, workspace));
  return lt;
}

float Bf16(unsigned short b) {
  const unsigned u = static_cast<unsigned>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<unsigned short> Random(size_t n, float scale, unsigned seed) {
  std::vector<unsigned short> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    const float f = ((seed >> 8) / 16777216.0f * 2 - 1) * scale;
    unsigned u;
    std::memcpy(&u, &f, 4);
    v[i] = static_cast<unsigned short>((u + 0x8000u) >> 16);
  }
  return v;
}

// The tiles tried: the first (128 x 64, K by 32, 4 stages, 2 x 2 warps)
// and others; graft's now 128x64x64/3, and 64x64x32/4 for the stem
// (implicit_conv.h).
using Graft = g_iconv::tile<128, 64, 32, 4, 2, 2>;
using ThreeStages = g_iconv::tile<128, 64, 32, 3, 2, 2>;
using Small = g_iconv::tile<64, 64, 32, 4, 2, 2>;
using Wide = g_iconv::tile<128, 128, 32, 3, 2, 4>;
using DeepK = g_iconv::tile<128, 64, 64, 3, 2, 2>;
using Tall = g_iconv::tile<256, 64, 32, 3, 4, 2>;
using WideDeepK = g_iconv::tile<128, 128, 64, 3, 2, 4>;
constexpr const char* kTiles[] = {"128x64x32/4", "128x64x32/3", "64x64x32/4 (graft's, stem)",
                                  "128x128x32/3, 8 warps", "128x64x64/3 (graft's)",
                                  "256x64x32/3, 8 warps", "128x128x64/3, 8 warps"};

template <class Tile, int N, int H, int W, int CIN, int COUT, int KS, int S, int P>
float TimeTile(const void* x, const void* w, const void* bias, void* y) {
  using C = Conv<N, H, W, CIN, COUT, KS, S, P>;
  auto kernel = Implicit<Tile, N, H, W, CIN, COUT, KS, S, P>;
  const int bytes = Tile::kSmemElements * 2;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const int grid = ((C::M + Tile::kBM - 1) / Tile::kBM) * ((COUT + Tile::kBN - 1) / Tile::kBN);
  return MicrosecondsPerLaunch([&] {
    kernel<<<grid, Tile::kThreads, bytes>>>(static_cast<const g_bfloat*>(x),
                                            static_cast<const g_bfloat*>(w),
                                            static_cast<const g_bfloat*>(bias),
                                            static_cast<g_bfloat*>(y));
  });
}

// The largest difference between two bf16 results, over the largest value
// of the first.
double Differs(const void* want, const void* got, size_t n) {
  std::vector<unsigned short> h1(n), h2(n);
  CHECK(cudaDeviceSynchronize());
  cudaMemcpy(h1.data(), want, n * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(h2.data(), got, n * 2, cudaMemcpyDeviceToHost);
  double largest = 0, diff = 0;
  for (size_t i = 0; i < n; ++i) {
    largest = std::max(largest, double(std::fabs(Bf16(h1[i]))));
    diff = std::max(diff, double(std::fabs(Bf16(h1[i]) - Bf16(h2[i]))));
  }
  return diff / largest;
}

template <int N, int H, int W, int CIN, int COUT, int KS, int S, int P>
void Compare(cublasLtHandle_t handle) {
  using C = Conv<N, H, W, CIN, COUT, KS, S, P>;
  const size_t xs = size_t(N) * H * W * CIN, ws = size_t(COUT) * C::KP, ys = size_t(C::M) * COUT;
  void *x, *w, *bias, *y1, *y2, *columns = nullptr;
  CHECK(cudaMalloc(&x, xs * 2));
  CHECK(cudaMalloc(&w, ws * 2));
  CHECK(cudaMalloc(&bias, COUT * 2));
  CHECK(cudaMalloc(&y1, ys * 2));
  CHECK(cudaMalloc(&y2, ys * 2));
  auto hw = Random(ws, 1.0f / std::sqrt(float(C::K)), 2);
  for (int n = 0; n < COUT; ++n) {  // The padding of each row: zeros.
    for (int k = C::K; k < C::KP; ++k) hw[size_t(n) * C::KP + k] = 0;
  }
  const auto hx = Random(xs, 1, 1), hb = Random(COUT, 0.5f, 3);
  cudaMemcpy(x, hx.data(), xs * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(w, hw.data(), ws * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(bias, hb.data(), COUT * 2, cudaMemcpyHostToDevice);
  // The columns path where a tap's channels are 16-byte pieces; the
  // stem's result checked against graft's tile instead.
  float before = 0;
  const void* reference = y1;
  if constexpr (CIN % 8 == 0) {
    CHECK(cudaMalloc(&columns, size_t(C::M) * C::K * 2));
    const Lt lt = Plan(handle, C::M, COUT, C::K, bias);
    const long long pieces = (long long)C::M * C::K / 8;
    const int column_grid = static_cast<int>(std::min<long long>((pieces + 255) / 256, 132 * 16));
    before = MicrosecondsPerLaunch([&] {
      Columns<N, H, W, CIN, COUT, KS, S, P><<<column_grid, 256>>>(static_cast<const uint4*>(x),
                                                                  static_cast<uint4*>(columns));
      const float one = 1, zero = 0;
      CHECK_BLAS(cublasLtMatmul(lt.handle, lt.desc, &one, w, lt.a, columns, lt.b, &zero, y1, lt.c,
                                y1, lt.c, &lt.algo, lt.workspace, 32u << 20, nullptr));
    });
    cudaFree(lt.workspace);
  } else {
    TimeTile<Graft, N, H, W, CIN, COUT, KS, S, P>(x, w, bias, y1);
  }
  std::printf("| %d x %d x %d, %d -> %d, %dx%d s%d | %.1f |", N, H, W, CIN, COUT, KS, KS, S, before);
  const float times[] = {
      TimeTile<Graft, N, H, W, CIN, COUT, KS, S, P>(x, w, bias, y2),
      TimeTile<ThreeStages, N, H, W, CIN, COUT, KS, S, P>(x, w, bias, y2),
      TimeTile<Small, N, H, W, CIN, COUT, KS, S, P>(x, w, bias, y2),
      TimeTile<Wide, N, H, W, CIN, COUT, KS, S, P>(x, w, bias, y2),
      TimeTile<DeepK, N, H, W, CIN, COUT, KS, S, P>(x, w, bias, y2),
      TimeTile<Tall, N, H, W, CIN, COUT, KS, S, P>(x, w, bias, y2),
      TimeTile<WideDeepK, N, H, W, CIN, COUT, KS, S, P>(x, w, bias, y2)};
  // The last tile's result against the reference; each tile's own check
  // is the same code with other constants.
  const double diff = Differs(reference, y2, ys);
  for (float t : times) std::printf(" %.1f |", t);
  std::printf(" %.1e |\n", diff);
  std::fflush(stdout);
  cudaFree(x);
  cudaFree(w);
  cudaFree(bias);
  cudaFree(y1);
  cudaFree(y2);
  if (columns != nullptr) cudaFree(columns);
}

template <int N>
void ResNet18(cublasLtHandle_t handle) {
  Compare<N, 224, 224, 3, 64, 7, 2, 3>(handle);  // The stem: elements read apart.
  Compare<N, 56, 56, 64, 64, 3, 1, 1>(handle);
  Compare<N, 56, 56, 64, 128, 3, 2, 1>(handle);
  Compare<N, 28, 28, 128, 128, 3, 1, 1>(handle);
  Compare<N, 28, 28, 128, 256, 3, 2, 1>(handle);
  Compare<N, 14, 14, 256, 256, 3, 1, 1>(handle);
  Compare<N, 7, 7, 512, 512, 3, 1, 1>(handle);
}

}  // namespace

int main() {
  cublasLtHandle_t handle;
  CHECK_BLAS(cublasLtCreate(&handle));
  std::printf("| batch x H x W, Cin -> Cout, kernel | columns + cuBLASLt |");
  for (const char* t : kTiles) std::printf(" %s |", t);
  std::printf(" max diff / max |\n|---|---|---|---|---|---|---|---|---|---|\n");
  ResNet18<32>(handle);
  return 0;
}
