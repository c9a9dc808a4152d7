#include "backends/cuda/gemm.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/strided_view.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

cudaDataType_t CudaType(DType t) {
  switch (t) {
    case DType::kF16: return CUDA_R_16F;
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

}  // namespace

absl::StatusOr<cublasLtHandle_t> SharedCublasLt(int device) {
  static std::mutex mu;
  static auto* handles = new std::map<int, cublasLtHandle_t>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles->find(device);
  if (it != handles->end()) return it->second;
  int current = 0;
  RETURN_IF_ERROR(GRAFT_CUDA(cudaGetDevice(&current)));
  RETURN_IF_ERROR(GRAFT_CUDA(cudaSetDevice(device)));
  cublasLtHandle_t handle = nullptr;
  absl::Status made;
  {
    std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
    made = GRAFT_CUBLAS(cublasLtCreate(&handle));
  }
  (void)cudaSetDevice(current);
  RETURN_IF_ERROR(made);
  handles->emplace(device, handle);
  return handle;
}

std::future<void> PrepareCublasLt(int device) {
  try {
    return std::async(std::launch::async, [device] {
      // This thread's device first: SharedCublasLt restores the current
      // one, and restoring a fresh thread's GPU 0 would start a context
      // there in a process that may never use it.
      if (cudaSetDevice(device) == cudaSuccess) (void)SharedCublasLt(device);
    });
  } catch (const std::system_error&) {
    return {};
  }
}

GemmPlan::~GemmPlan() {
  if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
  if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
  if (c_ != nullptr) cublasLtMatrixLayoutDestroy(c_);
  if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
}

absl::StatusOr<std::unique_ptr<GemmPlan>> GemmPlan::Create(cublasLtHandle_t handle,
                                                           const GemmShape& shape,
                                                           bool autotune,
                                                           const std::string& algo_bytes) {
  std::unique_ptr<GemmPlan> plan(new GemmPlan());
  plan->handle_ = handle;
  plan->shape_ = shape;
  RETURN_IF_ERROR(plan->Describe());
  if (algo_bytes.size() == sizeof(cublasLtMatmulAlgo_t)) {
    // An algorithm from the disk cache, whose bytes have their own hash in
    // the entry and whose key names this GPU and this cuBLASLt: taken as
    // it is. Checking
    // it (cublasLtMatmulAlgoCheck) would start cuBLASLt's heuristics, which
    // costs a new process about 100 ms (bench/cuda_kernels/
    // cublaslt_first_use.cu) when the program needs none of them.
    std::memcpy(&plan->algo_, algo_bytes.data(), sizeof(cublasLtMatmulAlgo_t));
    return plan;
  }
  RETURN_IF_ERROR(plan->Choose(autotune));
  return plan;
}

// Row-major C = A B is column-major C^T = B^T A^T: cuBLASLt's first operand
// is our B, its second our A, and its result is N x M.
absl::Status GemmPlan::Describe() {
  const GemmShape& s = shape_;
  const bool f64 = s.dtype == DType::kF64;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F
          : (s.dtype == DType::kF32 && s.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  RETURN_IF_ERROR(
      GRAFT_CUBLAS(cublasLtMatmulDescCreate(&desc_, compute, f64 ? CUDA_R_64F : CUDA_R_32F)));
  const cublasOperation_t trans_first = s.b_is_nk ? CUBLAS_OP_T : CUBLAS_OP_N;
  RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatmulDescSetAttribute(
      desc_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_first, sizeof(trans_first))));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (s.activation == "relu") {
    epilogue = s.has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  } else if (s.activation == "gelu_tanh") {
    epilogue = s.has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  } else if (s.has_bias) {
    epilogue = CUBLASLT_EPILOGUE_BIAS;
  }
  RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatmulDescSetAttribute(
      desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue))));
  if (s.has_bias) {
    const cudaDataType_t bias_type = CudaType(s.bias_dtype);
    RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatmulDescSetAttribute(
        desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type))));
  }
  const cudaDataType_t type = CudaType(s.dtype);
  const uint64_t first_rows = s.b_is_nk ? s.k : s.n, first_cols = s.b_is_nk ? s.n : s.k;
  RETURN_IF_ERROR(GRAFT_CUBLAS(
      cublasLtMatrixLayoutCreate(&a_, type, first_rows, first_cols, first_rows)));
  RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatrixLayoutCreate(&b_, type, s.k, s.m, s.k)));
  RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatrixLayoutCreate(&c_, type, s.n, s.m, s.n)));
  if (s.batch > 1) {
    const int32_t count = static_cast<int32_t>(s.batch);
    const int64_t strides[3] = {s.stride_b, s.stride_a, s.stride_c};
    cublasLtMatrixLayout_t layouts[3] = {a_, b_, c_};
    for (int i = 0; i < 3; ++i) {
      RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatrixLayoutSetAttribute(
          layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count))));
      RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatrixLayoutSetAttribute(
          layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
          sizeof(strides[i]))));
    }
  }
  return absl::OkStatus();
}

absl::Status GemmPlan::Choose(bool autotune) {
  cublasLtMatmulPreference_t preference = nullptr;
  RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatmulPreferenceCreate(&preference)));
  const uint64_t workspace = kGemmWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace, sizeof(workspace));
  constexpr int kCandidates = 16;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, c_, preference,
                                     autotune ? kCandidates : 1, results, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  RETURN_IF_ERROR(GRAFT_CUBLAS(status));
  if (found == 0) {
    return absl::UnimplementedError(
        absl::StrCat("cuBLASLt has no algorithm for ", shape_.ToString()));
  }
  algo_ = results[0].algo;
  if (!autotune) return absl::OkStatus();
  // Besides the heuristic's picks, each of its first few with the K
  // dimension split: a skinny product (batch 32 through a 4096-wide layer)
  // has too few output tiles to fill the GPU otherwise.
  std::vector<cublasLtMatmulAlgo_t> candidates;
  for (int i = 0; i < found; ++i) candidates.push_back(results[i].algo);
  for (int i = 0; i < std::min(found, 4); ++i) {
    for (int32_t split : {2, 3, 4, 6, 8, 12, 16}) {
      for (uint32_t scheme : {CUBLASLT_REDUCTION_SCHEME_INPLACE,
                              CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE}) {
        cublasLtMatmulAlgo_t algo = results[i].algo;
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                                 sizeof(split)) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                 &scheme, sizeof(scheme)) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoCheck(handle_, desc_, a_, b_, c_, c_, &algo, &check) !=
                CUBLAS_STATUS_SUCCESS ||
            check.workspaceSize > kGemmWorkspaceBytes) {
          continue;
        }
        candidates.push_back(algo);
      }
    }
  }
  if (candidates.size() == 1) return absl::OkStatus();
  return TimeCandidates(candidates);
}

// Times each candidate on the product's shape and keeps the fastest.
absl::Status GemmPlan::TimeCandidates(const std::vector<cublasLtMatmulAlgo_t>& candidates) {
  // Its allocations and synchronizations must not meet a capture elsewhere.
  std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
  const GemmShape& s = shape_;
  const size_t element = DTypeSize(s.dtype);
  const size_t a_bytes = (s.stride_a == 0 ? s.m * s.k : s.batch * s.m * s.k) * element;
  const size_t b_bytes = (s.stride_b == 0 ? s.k * s.n : s.batch * s.k * s.n) * element;
  const size_t c_bytes = s.batch * s.m * s.n * element;
  const size_t set_bytes = a_bytes + b_bytes + c_bytes + static_cast<size_t>(s.n) * 8 + 1024;
  // Timed as runs see them: a product whose operands fit in L2 finds them
  // there from the last run (the benchmark MLP's bf16 weights do on an
  // H100), a larger one streams them from memory either way.
  char* memory = nullptr;
  void* workspace = nullptr;
  RETURN_IF_ERROR(GRAFT_CUDA(cudaMalloc(reinterpret_cast<void**>(&memory), set_bytes)));
  absl::Status status = GRAFT_CUDA(cudaMalloc(&workspace, kGemmWorkspaceBytes));
  // Bytes of 0x3c: about 0.01 in f32, bf16 and f16 alike; never zeros,
  // which some kernels run faster on.
  if (status.ok()) status = GRAFT_CUDA(cudaMemset(memory, 0x3c, set_bytes));
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (status.ok()) status = GRAFT_CUDA(cudaStreamCreate(&stream));
  if (status.ok()) status = GRAFT_CUDA(cudaEventCreate(&start));
  if (status.ok()) status = GRAFT_CUDA(cudaEventCreate(&stop));
  auto run = [&] {
    char* base = memory;
    const size_t a = 0, b = (a_bytes + 255) / 256 * 256;
    const size_t cc = b + (b_bytes + 255) / 256 * 256, bias = cc + (c_bytes + 255) / 256 * 256;
    return Run(stream, base + a, base + b, base + bias, base + cc, base + cc, workspace);
  };
  float best_ms = 1e30f;
  int best_index = 0;
  for (size_t i = 0; i < candidates.size() && status.ok(); ++i) {
    algo_ = candidates[i];
    if (!run().ok() || !run().ok()) continue;
    constexpr int kRepeats = 20;
    cudaEventRecord(start, stream);
    for (int r = 0; r < kRepeats; ++r) run().IgnoreError();
    cudaEventRecord(stop, stream);
    if (!GRAFT_CUDA(cudaEventSynchronize(stop)).ok()) continue;
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (ms < best_ms) best_ms = ms, best_index = static_cast<int>(i);
  }
  algo_ = candidates[best_index];
  if (stop != nullptr) cudaEventDestroy(stop);
  if (start != nullptr) cudaEventDestroy(start);
  if (stream != nullptr) cudaStreamDestroy(stream);
  cudaFree(workspace);
  cudaFree(memory);
  return status;
}

absl::Status GemmPlan::Run(cudaStream_t stream, const void* a, const void* b, const void* bias,
                           const void* residual, void* c, void* workspace) {
  if (shape_.has_bias) {
    RETURN_IF_ERROR(GRAFT_CUBLAS(cublasLtMatmulDescSetAttribute(
        desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias))));
  }
  // D = alpha A B + beta C: C is the residual (beta 1), or D itself,
  // unread (beta 0).
  const double alpha64 = 1, beta64 = shape_.residual ? 1 : 0;
  const float alpha32 = 1, beta32 = shape_.residual ? 1 : 0;
  const bool f64 = shape_.dtype == DType::kF64;
  const void* added = shape_.residual ? residual : c;
  return GRAFT_CUBLAS(cublasLtMatmul(
      handle_, desc_, f64 ? static_cast<const void*>(&alpha64) : &alpha32, b, a_, a, b_,
      f64 ? static_cast<const void*>(&beta64) : &beta32, added, c_, c, c_, &algo_, workspace,
      kGemmWorkspaceBytes, stream));
}

std::string GemmPlan::AlgoBytes() const {
  return std::string(reinterpret_cast<const char*>(&algo_), sizeof(algo_));
}

}  // namespace graft::cuda
