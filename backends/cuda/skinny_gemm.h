#ifndef GRAFT_BACKENDS_CUDA_SKINNY_GEMM_H_
#define GRAFT_BACKENDS_CUDA_SKINNY_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_program.h"
#include "backends/cuda/gemm_shape.h"
#include "backends/step_program.h"

namespace graft::cuda {

// A linear layer of at most this many rows can run as graft's own kernel
// (skinny_gemm_source.h) rather than cuBLASLt: by default (gemm=auto)
// in f32 and for bf16/f16 weights of at most 16 MB, in every precision
// with gemm=graft. graft::quantized_linear always runs as graft's kernel,
// more rows as row tiles of this many.
inline constexpr int64_t kSkinnyMaxRows = 64;
// gemm=auto: bf16/f16 weights up to this size run as graft's kernel.
inline constexpr int64_t kSkinnyAutoMaxHalfWeightBytes = int64_t{16} << 20;
// Tile counters a run context keeps zeroed for the split-K fix-up.
inline constexpr int64_t kSkinnyCounters = 16384;
// A layer's weights are prefetched into L2 where they take at most this
// share of it (SkinnyGemm::prefetch_weights).
inline constexpr double kSkinnyPrefetchL2Share = 0.6;
// The GEMM workspace's last bytes hold x's row scales of a mode-5 product
// (skinny_gemm_source.h, kRowScaleOffset): partial sums stay before them.
inline constexpr int64_t kSkinnyRowScaleBytes = 512;

// The constants of an int8 product (graft::quantized_linear, mode 4).
struct SkinnyInt8 {
  double input_scale = 1;
  int zero_point = 0;
  bool unsigned_input = false;
  DType output = DType::kF32;  // f32, or quantized again to i8 or u8.
  double output_scale = 1;
  int output_zero_point = 0;
};

// How a skinny product is laid over the GPU: `tiles` of 64 weight rows,
// K cut into `splits` chunks of `chunk`, `row_tiles` of `tile_rows` rows of
// x (more than one only for int8), one block per (tile, chunk, row tile).
struct SkinnyGemm {
  GemmShape shape;
  std::string activation;  // "", relu, gelu or gelu_tanh.
  // 0 bf16, 1 f16, 2 tf32, 3 f32 as 3xTF32, 4 int8, 5 tf32 as f16 products
  // of per-row scaled operands (weights converted by ScaledHalfWeights).
  int mode = 0;
  int64_t tiles = 1, splits = 1, chunk = 0;
  int64_t tile_rows = 1, row_tiles = 1;
  // 16-byte weight loads in flight per row and thread, and the blocks a
  // multiprocessor holds at once (the split of K aims at that many, and
  // the register cap lets that many fit).
  int unroll = 4, blocks_per_sm = 4;
  bool weights_ready = false;  // The weight is a module tensor.
  // Each block first prefetches all of its weights into L2 (module
  // weights whose bytes are at most kSkinnyPrefetchL2Share of the GPU's
  // L2, on compute capability 9.0 on; for int8 of more than 64 rows, the
  // first row tile's blocks. The benchmark MLP's products ran about 5%
  // faster so within one run on an H200, f32's 64 MB layer 8% slower,
  // docs/benchmarks.md).
  bool prefetch_weights = false;
  // How x and y are stored: the product's dtype, or f32 for a bf16/f16
  // product that absorbed the casts around it (Step::casts_input,
  // Step::result_dtype): x is rounded as it is read, y before it is
  // widened, as the casts would have.
  DType input_dtype = DType::kF32, result_dtype = DType::kF32;
  SkinnyInt8 int8;             // Mode 4 only.

  int64_t grid() const { return tiles * splits * row_tiles; }
  // Partial sums the blocks of a split product leave for the last one.
  size_t ScratchBytes() const;
  // Mode 5: x as scaled f16 rows, which the kernel before the product
  // writes just before the row scales at the scratch buffer's end; its
  // offset in the buffer (bytes). 0 bytes for the other modes.
  size_t HalfInputBytes() const;
  size_t HalfInputOffset() const;
};

// The skinny plan of a GEMM step, or nothing when cuBLASLt runs it: the
// step is not a linear layer of at most kSkinnyMaxRows rows with its
// weight as [out, in], of f32/f16/bf16, K a multiple of one 16-byte load,
// with an activation the kernel knows; or `options.gemm` is "cublaslt",
// or "auto" and the product is tf32 or has bf16/f16 weights over 16 MB.
// graft::quantized_linear has a plan whenever CanLowerQuantizedLinear
// accepts it (and the compute capability is 8.0 or more).
// The kernel needs the tensor cores' bf16 and tf32 products (compute
// capability 8.0, given as 80; 90 by default, Hopper); it loads its first
// weights before waiting for the kernel before it only where they are
// module tensors (`weights_ready`: nothing in the run writes them).
//
// Its blocks prefetch their weights into L2 first where those are module
// tensors of at most kSkinnyPrefetchL2Share of `options.l2_cache_bytes`.
//
// tf32 (gemm auto or graft) runs as mode 5 where `program` is given and
// the weight is a module tensor [out, in] (in a multiple of 8) that only
// such products read: its state slot then holds ScaledHalfWeights, not
// f32 (HalfWeightSlots).
std::optional<SkinnyGemm> SkinnyGemmFor(const Step& step, const CudaOptions& options,
                                        int multiprocessors, int compute_capability = 90,
                                        const StepProgram* program = nullptr);

// The state slots of `program` that mode-5 products read (their weights,
// uploaded as ScaledHalfWeights).
std::vector<int> HalfWeightSlots(const StepProgram& program, const CudaOptions& options,
                                 int compute_capability);

// An f32 weight [out, in] as mode 5 reads it: each row divided by a power
// of two s (its largest finite |value| then in [2^14, 2^15); 1 for a row
// without one) and rounded to f16, the rows in order, then the out f32
// scales s. Bytes (u8).
Tensor ScaledHalfWeights(const Tensor& weight);

// The kernel before a mode-5 product: x's rows scaled and rounded to f16,
// and their scales, into the scratch buffer (SkinnyGemm::HalfInputOffset),
// `extern "C" __global__ void name(x, partial, counters)`.
std::string SkinnyHalfInputKernel(const std::string& name, const SkinnyGemm& plan);

// Whether the library call `call` runs as graft's kernel in bf16 or f16,
// which can absorb the casts around it (StepTarget::absorbs_casts).
bool SkinnyGemmAbsorbsCasts(const Node& call, const CudaOptions& options);

// `extern "C" __global__ void name(x, w, bias, y, partial, counters)`, and
// for int8 `name(x, w, bias, weight_scales, y, partial, counters)`.
// Why graft's kernel cannot run this graft::quantized_linear, or OK: an
// i8/u8 input, an i8 [out, in] weight with in a multiple of 16, f32 scales
// and bias, activation none or relu, an f32, i8 or u8 result.
absl::Status CanLowerQuantizedLinear(const Node& node);

std::string SkinnyGemmKernel(const std::string& name, const SkinnyGemm& plan);

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_SKINNY_GEMM_H_
