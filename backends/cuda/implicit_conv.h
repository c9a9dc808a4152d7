#ifndef GRAFT_BACKENDS_CUDA_IMPLICIT_CONV_H_
#define GRAFT_BACKENDS_CUDA_IMPLICIT_CONV_H_

#include <cstdint>
#include <optional>
#include <string>

#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/cuda_program.h"
#include "backends/step_program.h"

namespace graft::cuda {

// A bf16 or f16 convolution whose patches graft's implicit-GEMM kernel
// gathers itself (implicit_conv_source.h), instead of a column kernel
// writing them for cuBLASLt. It runs where
//   - the step is a convolution product (IsConvGemmStep) that needs patches
//     (not a 1x1 of stride 1), K by taps (ConvTapsOuter) and no activation
//     but ReLU;
//   - its input, residual and result are arena values (aligned);
//   - and the kernel is the faster: its tiles fill at least half the
//     multiprocessors, and K is at most kImplicitConvMaxK or the tiles
//     fill every multiprocessor twice. Its blocks have no split of K, so a
//     long K over few tiles is cuBLASLt's (ResNet-18 at batch 32 on an
//     H200: 85.5 against 37.8 us for a 56 x 56 layer of 64 channels, but
//     25.7 against 70.0 us for its 7 x 7 layers of 512;
//     bench/cuda_kernels/implicit_conv.cu), and so is batch 1 (ResNet-18
//     in one graph: 141 us with every convolution on cuBLASLt, 178 with
//     its 56 x 56 ones implicit over 25 tiles).
// With gemm=graft, wherever it can run, faster or not; never with
// gemm=cublaslt. Compute capability 8.0 on (cp.async, ldmatrix, bf16
// mma.sync).
struct ImplicitConv {
  ConvGemm conv;
  std::string activation;  // "" or "relu".
  bool residual = false;   // Step::residual, added before the ReLU.
  // A block's tile (implicit_conv_source.h's g_iconv::tile): `rows` pixels
  // by `columns` output channels, K in steps of `depth` through `stages`
  // stages of shared memory, warps_m x warps_n warps. 128 x 64, K by 64,
  // 3 stages where Cin is a multiple of 8; 64 x 64, K by 32, 4 stages
  // where each element is read apart (the fastest of seven tiles tried on
  // ResNet-18's layers, bench/cuda_kernels/implicit_conv.cu).
  int rows = 128, columns = 64, depth = 64, stages = 3, warps_m = 2, warps_n = 2;
  int64_t grid = 0;  // Blocks: tiles of [M, Cout].
  int threads() const { return 32 * warps_m * warps_n; }
  // Dynamic shared memory: the stages of both operands, 2-byte elements.
  int shared_bytes() const { return stages * (rows + columns) * depth * 2; }
};
inline constexpr int64_t kImplicitConvMaxK = 640;

std::optional<ImplicitConv> ImplicitConvFor(const Step& step, const StepProgram& program,
                                            const CudaOptions& options, int multiprocessors,
                                            int compute_capability);

// The kernel `name` for `plan`: (x, weight, bias, residual, y), the bias
// and residual pointers unread where the product has none.
std::string ImplicitConvKernel(const std::string& name, const ImplicitConv& plan);

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_IMPLICIT_CONV_H_
