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
//     ./gemm_candidates [--all] [ROWS,IN,OUT[,relu] ...]
//
// Without layers, the MLP's three layers at 1024 and 512 rows. --all also
// searches beyond the heuristic: every algorithm cuBLASLt has for the types,
// with every tile, stage count, cluster shape, CTA swizzle and K split (1 to
// 4) that cublasLtMatmulAlgoCheck accepts, each screened by a short loop,
// the fastest eight then timed as above.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_kernels.h"

namespace {

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

bool g_search_all = false;

template <typename T>
std::vector<T> Cap(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t what) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, what, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS ||
      bytes == 0) {
    return {};
  }
  std::vector<T> values(bytes / sizeof(T));
  cublasLtMatmulAlgoCapGetAttribute(&algo, what, values.data(), bytes, &bytes);
  return values;
}

struct Found {
  cublasLtMatmulAlgo_t algo;
  float us;
};

// Every configuration cublasLtMatmulAlgoCheck accepts, screened by a loop
// of 10 launches; the fastest eight timed as Gemm::Time does.
Found SearchAll(Gemm& g, int& screened) {
  int ids[512];
  int count = 0;
  CHECK_BLAS(cublasLtMatmulAlgoGetIds(g.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF,
                                 CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, 512, ids, &count));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const float one = 1, zero = 0;
  std::vector<Found> quick;
  for (int a = 0; a < count; ++a) {
    cublasLtMatmulAlgo_t base;
    if (cublasLtMatmulAlgoInit(g.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF,
                               CUDA_R_16BF, CUDA_R_16BF, ids[a], &base) != CUBLAS_STATUS_SUCCESS) {
      continue;
    }
    std::vector<uint32_t> tiles = Cap<uint32_t>(base, CUBLASLT_ALGO_CAP_TILE_IDS);
    std::vector<uint32_t> stages = Cap<uint32_t>(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
    // No capability lists the cluster shapes: the check refuses those an
    // algorithm lacks.
    const std::vector<uint32_t> clusters = {
        CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
        CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
        CUBLASLT_CLUSTER_SHAPE_1x4x1};
    if (tiles.empty()) tiles = {CUBLASLT_MATMUL_TILE_UNDEFINED};
    if (stages.empty()) stages = {CUBLASLT_MATMUL_STAGES_UNDEFINED};
    const std::vector<int> split_support = Cap<int>(base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT);
    const std::vector<int> swizzle_support = Cap<int>(base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT);
    const int max_split = !split_support.empty() && split_support[0] ? 4 : 1;
    const int max_swizzle = !swizzle_support.empty() && swizzle_support[0] ? 1 : 0;
    for (uint32_t tile : tiles) {
      for (uint32_t stage : stages) {
        for (uint32_t cluster : clusters) {
          for (int split = 1; split <= max_split; ++split) {
            for (int swizzle = 0; swizzle <= max_swizzle; ++swizzle) {
              cublasLtMatmulAlgo_t algo = base;
              const uint32_t scheme = split > 1 ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
                                                : CUBLASLT_REDUCTION_SCHEME_NONE;
              cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                   sizeof(tile));
              cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage,
                                                   sizeof(stage));
              cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                   &cluster, sizeof(cluster));
              cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                                   sizeof(split));
              cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                   &scheme, sizeof(scheme));
              cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING,
                                                   &swizzle, sizeof(swizzle));
              cublasLtMatmulHeuristicResult_t check{};
              if (cublasLtMatmulAlgoCheck(g.handle, g.desc, g.a, g.b, g.c, g.c, &algo, &check) !=
                      CUBLAS_STATUS_SUCCESS ||
                  check.workspaceSize > kWorkspace) {
                continue;
              }
              auto run = [&] {
                return cublasLtMatmul(g.handle, g.desc, &one, g.w, g.a, g.x, g.b, &zero, g.y, g.c,
                                      g.y, g.c, &algo, g.workspace, kWorkspace, g.stream);
              };
              if (run() != CUBLAS_STATUS_SUCCESS) continue;
              cudaEventRecord(start, g.stream);
              for (int i = 0; i < 10; ++i) run();
              cudaEventRecord(stop, g.stream);
              cudaEventSynchronize(stop);
              float ms = 0;
              cudaEventElapsedTime(&ms, start, stop);
              quick.push_back({algo, ms * 100});
              ++screened;
            }
          }
        }
      }
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(quick.begin(), quick.end(), [](const Found& x, const Found& y) { return x.us < y.us; });
  Found best{quick.empty() ? cublasLtMatmulAlgo_t{} : quick[0].algo, 1e9f};
  for (size_t i = 0; i < quick.size() && i < 8; ++i) {
    const float us = g.Time(quick[i].algo);
    if (us > 0 && us < best.us) best = {quick[i].algo, us};
  }
  return best;
}

void Explore(cublasLtHandle_t handle, const Layer& l) {
  Gemm g{};
  g.handle = handle;
  CHECK(cudaStreamCreate(&g.stream));
  CHECK(cudaMalloc(&g.w, size_t(l.n) * l.k * 2));
  CHECK(cudaMalloc(&g.x, size_t(l.m) * l.k * 2));
  CHECK(cudaMalloc(&g.y, size_t(l.m) * l.n * 2));
  CHECK(cudaMalloc(&g.bias, size_t(l.n) * 2));
  CHECK(cudaMalloc(&g.workspace, kWorkspace));
  cudaMemset(g.w, 0x3c, size_t(l.n) * l.k * 2);
  cudaMemset(g.x, 0x3c, size_t(l.m) * l.k * 2);
  cudaMemset(g.bias, 0x3c, size_t(l.n) * 2);
  CHECK_BLAS(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
  const cublasLtEpilogue_t epilogue = l.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  const cudaDataType_t bias_type = CUDA_R_16BF;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                 sizeof(bias_type));
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, l.k, l.n, l.k));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, l.k, l.m, l.k));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&g.c, CUDA_R_16BF, l.n, l.m, l.n));
  cublasLtMatmulPreference_t preference;
  cublasLtMatmulPreferenceCreate(&preference);
  const uint64_t workspace = kWorkspace;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace, sizeof(workspace));
  constexpr int kRequested = 64;
  cublasLtMatmulHeuristicResult_t results[kRequested] = {};
  int found = 0;
  CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(handle, g.desc, g.a, g.b, g.c, g.c, preference, kRequested,
                                       results, &found));
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
  std::printf("| %d x %d x %d | %.1f us (%.0f TFLOPS) | %s | %.1f us (%.0f TFLOPS) | %d of %d | %s |",
              l.m, l.k, l.n, first, gflop / first * 1e3, text, best, gflop / best * 1e3,
              best_rank, found, best_text);
  if (g_search_all) {
    int screened = 0;
    const Found all = SearchAll(g, screened);
    Describe(all.algo, best_text, sizeof(best_text));
    std::printf(" %.1f us (%.0f TFLOPS) | %d | %s |", all.us, gflop / all.us * 1e3, screened,
                best_text);
  }
  std::printf("\n");
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
  CHECK_BLAS(cublasLtCreate(&handle));
  std::vector<Layer> layers;
  int first = 1;
  if (argc > 1 && std::string(argv[1]) == "--all") {
    g_search_all = true;
    first = 2;
  }
  std::printf("| rows x in x out | heuristic's first | its config | fastest offered | "
              "its rank of found | its config |%s\n|---|---|---|---|---|---|%s\n",
              g_search_all ? " fastest of all | screened | its config |" : "",
              g_search_all ? "---|---|---|" : "");
  for (int i = first; i < argc; ++i) {
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
