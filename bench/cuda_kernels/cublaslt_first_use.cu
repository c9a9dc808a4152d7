// What cuBLASLt's first use in a process costs, call by call: a new
// process that loads a compiled program from the disk cache has the GEMM
// algorithm already, yet spent 80 to 130 ms making its cuBLASLt plans
// (GRAFT_CUDA_PROFILE). Times, in one process: the CUDA context, the
// handle, a matmul descriptor and layouts, an algorithm check of a given
// algorithm (what a cache hit does), a heuristic query (what a compile
// does), the first matmul, and the same calls again for a second shape.
// Built with nvcc on the GPU machine:
//
//   cd bench/cuda_kernels && nvcc -O2 -std=c++17 -o cublaslt_first_use cublaslt_first_use.cu -lcublasLt &&
//     ./cublaslt_first_use [check-first]
//
// `check-first` also checks an algorithm made by cublasLtMatmulAlgoInit
// before any heuristic query has run, as a cache hit checks its own.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

struct Shape {
  int m, n, k;
};

// One bf16 product C[m, n] = A[m, k] B[k, n] (row-major, as graft calls it).
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  explicit Plan(const Shape& s) {
    Check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    Check(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, s.n, s.k, s.n), "layout a");
    Check(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, s.k, s.m, s.k), "layout b");
    Check(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, s.n, s.m, s.n), "layout c");
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bool check_first = argc > 1 && std::string(argv[1]) == "check-first";
  double t = NowMs();
  auto lap = [&](const char* what) {
    const double now = NowMs();
    std::printf("%-44s %8.2f ms\n", what, now - t);
    t = now;
  };
  cudaFree(nullptr);
  lap("CUDA context");
  cublasLtHandle_t handle;
  Check(cublasLtCreate(&handle), "create");
  lap("cublasLtCreate");
  const Shape shapes[2] = {{2048, 3072, 768}, {32, 4096, 4096}};
  void *a, *b, *c, *workspace;
  cudaMalloc(&a, size_t{64} << 20);
  cudaMalloc(&b, size_t{64} << 20);
  cudaMalloc(&c, size_t{64} << 20);
  const size_t workspace_bytes = size_t{32} << 20;
  cudaMalloc(&workspace, workspace_bytes);
  cudaDeviceSynchronize();
  t = NowMs();
  cublasLtMatmulAlgo_t found[2];
  for (int round = 0; round < 2; ++round) {
    const Shape& s = shapes[round];
    Plan plan(s);
    lap(round == 0 ? "descriptor and layouts (first)" : "descriptor and layouts (second shape)");
    cublasLtMatmulPreference_t preference;
    Check(cublasLtMatmulPreferenceCreate(&preference), "preference");
    Check(cublasLtMatmulPreferenceSetAttribute(preference,
                                               CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspace_bytes, sizeof(workspace_bytes)),
          "preference workspace");
    if (check_first && round == 0) {
      // A zeroed algorithm initialized by id, as a cache entry would hold
      // one: cublasLtMatmulAlgoInit then the check.
      cublasLtMatmulAlgo_t algo;
      Check(cublasLtMatmulAlgoInit(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF,
                                   CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, 0, &algo),
            "algo init");
      cublasLtMatmulHeuristicResult_t checked{};
      cublasStatus_t status =
          cublasLtMatmulAlgoCheck(handle, plan.desc, plan.a, plan.b, plan.c, plan.c, &algo, &checked);
      std::printf("  (check of algorithm id 0: status %d)\n", static_cast<int>(status));
      lap("algorithm check, before any heuristic");
    }
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    Check(cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.a, plan.b, plan.c, plan.c,
                                         preference, 1, &result, &returned),
          "heuristic");
    found[round] = result.algo;
    lap(round == 0 ? "heuristic query (first)" : "heuristic query (second shape)");
    cublasLtMatmulHeuristicResult_t checked{};
    Check(cublasLtMatmulAlgoCheck(handle, plan.desc, plan.a, plan.b, plan.c, plan.c,
                                  &found[round], &checked),
          "check");
    lap("algorithm check of the heuristic's choice");
    const float alpha = 1, beta = 0;
    Check(cublasLtMatmul(handle, plan.desc, &alpha, a, plan.a, b, plan.b, &beta, c, plan.c, c,
                         plan.c, &found[round], workspace, workspace_bytes, 0),
          "matmul");
    cudaDeviceSynchronize();
    lap(round == 0 ? "first matmul (with its sync)" : "first matmul of the second shape");
    Check(cublasLtMatmul(handle, plan.desc, &alpha, a, plan.a, b, plan.b, &beta, c, plan.c, c,
                         plan.c, &found[round], workspace, workspace_bytes, 0),
          "matmul");
    cudaDeviceSynchronize();
    lap("second matmul (with its sync)");
    cublasLtMatmulPreferenceDestroy(preference);
  }
  return 0;
}
