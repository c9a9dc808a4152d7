// How far cuBLASLt's first heuristic pick is from the fastest algorithm it
// offers, for the benchmark MLP's bf16 products (linear layers as graft
// describes them: weight [N, K], bias, ReLU on the first two) at the rows
// one GPU or one rank of a batch split runs. For each shape: the
// heuristic's first pick, then up to 64 heuristic results, each also with
// its K split 2 to 8 ways, every one timed alone (a loop of 50 launches
// between CUDA events, median of 5 rounds; weights 8 to 32 MB, so each
// launch streams them from L2 or memory as a run would).
//
//   cd bench/cuda_kernels && nvcc -O2 -std=c++17 -o gemm_candidates gemm_candidates.cu -lcublasLt &&
//     ./gemm_candidates [ROWS,IN,OUT[,relu] ...]
//
// Without arguments, the MLP's three layers at 1024 and 512 rows.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void Check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}
void CheckCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

constexpr size_t kWorkspace = 32u << 20;

struct Layer {
  int m, n, k;
  bool relu;
};

struct Gemm {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  void *w, *x, *y, *bias, *workspace;
  cudaStream_t stream;

  float Time(const cublasLtMatmulAlgo_t& algo) {
    const float one = 1, zero = 0;
    auto run = [&] {
      return cublasLtMatmul(handle, desc, &one, w, a, x, b, &zero, y, c, y, c, &algo, workspace,
                            kWorkspace, stream);
    };
    if (run() != CUBLAS_STATUS_SUCCESS) return -1;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<float> rounds;
    for (int r = 0; r < 5; ++r) {
      cudaEventRecord(start, stream);
      for (int i = 0; i < 50; ++i) run();
      cudaEventRecord(stop, stream);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      rounds.push_back(ms * 1000 / 50);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(rounds.begin(), rounds.end());
    return rounds[2];
  }
};

int Attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t what) {
  int value = 0;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, what, &value, sizeof(value), &written);
  return value;
}

void Describe(const cublasLtMatmulAlgo_t& algo, char* out, size_t size) {
  std::snprintf(out, size, "id %d tile %d stages %d splitk %d cluster %d swizzle %d",
                Attr(algo, CUBLASLT_ALGO_CONFIG_ID), Attr(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                Attr(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                Attr(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                Attr(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
                Attr(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
}

void Explore(cublasLtHandle_t handle, const Layer& l) {
  Gemm g{};
  g.handle = handle;
  CheckCuda(cudaStreamCreate(&g.stream), "stream");
  CheckCuda(cudaMalloc(&g.w, size_t(l.n) * l.k * 2), "w");
  CheckCuda(cudaMalloc(&g.x, size_t(l.m) * l.k * 2), "x");
  CheckCuda(cudaMalloc(&g.y, size_t(l.m) * l.n * 2), "y");
  CheckCuda(cudaMalloc(&g.bias, size_t(l.n) * 2), "bias");
  CheckCuda(cudaMalloc(&g.workspace, kWorkspace), "workspace");
  cudaMemset(g.w, 0x3c, size_t(l.n) * l.k * 2);
  cudaMemset(g.x, 0x3c, size_t(l.m) * l.k * 2);
  cudaMemset(g.bias, 0x3c, size_t(l.n) * 2);
  Check(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  const cublasOperation_t t = CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
  const cublasLtEpilogue_t epilogue = l.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  const cudaDataType_t bias_type = CUDA_R_16BF;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                 sizeof(bias_type));
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias));
  Check(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, l.k, l.n, l.k), "a");
  Check(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, l.k, l.m, l.k), "b");
  Check(cublasLtMatrixLayoutCreate(&g.c, CUDA_R_16BF, l.n, l.m, l.n), "c");
  cublasLtMatmulPreference_t preference;
  cublasLtMatmulPreferenceCreate(&preference);
  const uint64_t workspace = kWorkspace;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace, sizeof(workspace));
  constexpr int kRequested = 64;
  cublasLtMatmulHeuristicResult_t results[kRequested] = {};
  int found = 0;
  Check(cublasLtMatmulAlgoGetHeuristic(handle, g.desc, g.a, g.b, g.c, g.c, preference, kRequested,
                                       results, &found),
        "heuristic");
  char text[160];
  const float first = g.Time(results[0].algo);
  Describe(results[0].algo, text, sizeof(text));
  float best = first;
  char best_text[160];
  std::snprintf(best_text, sizeof(best_text), "%s", text);
  int best_rank = 0, tried = 0;
  for (int i = 0; i < found; ++i) {
    for (int split : {1, 2, 3, 4, 6, 8}) {
      cublasLtMatmulAlgo_t algo = results[i].algo;
      if (split > 1) {
        cublasLtMatmulHeuristicResult_t check{};
        const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                                 sizeof(split)) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                 &scheme, sizeof(scheme)) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoCheck(handle, g.desc, g.a, g.b, g.c, g.c, &algo, &check) !=
                CUBLAS_STATUS_SUCCESS ||
            check.workspaceSize > kWorkspace) {
          continue;
        }
      }
      const float us = g.Time(algo);
      ++tried;
      if (us > 0 && us < best) {
        best = us;
        best_rank = i;
        Describe(algo, best_text, sizeof(best_text));
      }
    }
  }
  const double gflop = 2.0 * l.m * l.n * l.k / 1e9;
  std::printf("| %d x %d x %d | %.1f us (%.0f TFLOPS) | %s | %.1f us (%.0f TFLOPS) | %d of %d | %s |\n",
              l.m, l.k, l.n, first, gflop / first * 1e3, text, best, gflop / best * 1e3,
              best_rank, found, best_text);
  std::fflush(stdout);
  cublasLtMatmulPreferenceDestroy(preference);
  cudaFree(g.w);
  cudaFree(g.x);
  cudaFree(g.y);
  cudaFree(g.bias);
  cudaFree(g.workspace);
}

}  // namespace

int main(int argc, char** argv) {
  cublasLtHandle_t handle;
  Check(cublasLtCreate(&handle), "handle");
  std::printf("| rows x in x out | heuristic's first | its config | fastest offered | "
              "its rank of found | its config |\n|---|---|---|---|---|---|\n");
  std::vector<Layer> layers;
  for (int i = 1; i < argc; ++i) {
    Layer l{};
    char relu[8] = {};
    if (std::sscanf(argv[i], "%d,%d,%d,%7s", &l.m, &l.k, &l.n, relu) < 3) {
      std::fprintf(stderr, "a layer is ROWS,IN,OUT[,relu], got %s\n", argv[i]);
      return 1;
    }
    l.relu = relu[0] != 0;
    layers.push_back(l);
  }
  if (layers.empty()) {
    for (int rows : {1024, 512}) {
      layers.push_back({rows, 4096, 1024, true});
      layers.push_back({rows, 4096, 4096, true});
      layers.push_back({rows, 1024, 4096, false});
    }
  }
  for (const Layer& l : layers) Explore(handle, l);
  return 0;
}
