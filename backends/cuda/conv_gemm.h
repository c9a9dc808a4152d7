#ifndef GRAFT_BACKENDS_CUDA_CONV_GEMM_H_
#define GRAFT_BACKENDS_CUDA_CONV_GEMM_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/gemm_shape.h"
#include "backends/step_program.h"
#include "graph/node.h"
#include "graph/tensor.h"

namespace graft::cuda {

// A 2-D convolution run as one cuBLASLt product over channels-last (NHWC)
// values, as a linear layer over the output pixels:
//
//   y[n, oy, ox, co] = sum over (ci, ky, kx) of
//       columns[(n, oy, ox), (ci, ky, kx)] * weight[co, ci, ky, kx] + bias[co]
//
// with M = N * Ho * Wo rows, K = Cin * kh * kw and N = Cout. K runs over
// the taps, each tap's channels adjacent ((ky, kx, ci): a tap's patch is
// a contiguous run of the NHWC input, copied 16 bytes at a time), where
// the weight is a module tensor that only such products read: it is then
// uploaded as [Cout, kh, kw, Cin] (ConvTapsOuter), each row padded with
// zeros to a multiple of 16 bytes, which cuBLASLt's tensor-core kernels
// need of a row (ResNet's 7x7 stem over 3 channels has K = 147).
// Otherwise K keeps the weight's own order, (ci, ky, kx), and the weight
// is read as it is. `columns` is the input's patches (im2col), written by
// a generated kernel into the run's column buffer before the product; a
// 1x1 convolution of stride 1 without padding reads the NHWC input itself. Bias and ReLU are cuBLASLt's
// epilogue, as for linear layers. The direct kernel (kernel_emitter.cc)
// keeps grouped convolutions, f64, and products whose column buffer would
// exceed kMaxConvColumnBytes.
struct ConvGemm {
  GemmShape gemm;  // gemm.k: K, padded where taps_outer.
  bool needs_columns = false;
  bool taps_outer = false;  // K by taps: ConvTapsOuter, or a 1x1 kernel.
  int64_t taps_k = 0;        // K before its padding: kh * kw * Cin.
  int64_t column_bytes = 0;  // M * gemm.k elements of the product's dtype.
  // The geometry the column kernel needs.
  int64_t batch = 0, in_channels = 0, height = 0, width = 0;
  int64_t out_height = 0, out_width = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
};

// The largest column buffer a convolution may need to run as a product:
// ResNet-18's widest at batch 32 in f32 is 236 MB.
inline constexpr int64_t kMaxConvColumnBytes = int64_t{1} << 30;

// How `conv` (conv2d, typed) runs as a product, or why it cannot; K in
// the weight's own order.
absl::StatusOr<ConvGemm> ConvGemmOf(const Node& conv);
// How the convolution of `step` (IsConvGemmStep) runs in `program`: K by
// taps and padded where ConvTapsOuter.
absl::StatusOr<ConvGemm> ConvGemmFor(const Step& step, const StepProgram& program);

// Whether `node` is a conv2d that runs as a product (ConvGemmOf succeeds):
// such a convolution reads and writes channels-last values.
bool RunsAsConvGemm(const Node& node);

// Whether the step is a convolution that runs as a product (the step
// program made it channels-last): its column kernel runs before the
// product.
bool IsConvGemmStep(const Step& step);

// Whether the convolution product of `step` orders K by taps, (ky, kx,
// ci): its kernel is larger than 1x1 and its weight is a module tensor
// (state slot) that every step of `program` reading it reads as the
// weight of such a product. The slot is then uploaded by TapsOuterWeights.
bool ConvTapsOuter(const Step& step, const StepProgram& program);
// The state slots of those weights, each with its padded K.
std::map<int, int64_t> TapsOuterWeightSlots(const StepProgram& program);
// A [Cout, Cin, kh, kw] weight as [Cout, padded_k]: each row its taps in
// order, each tap's Cin channels together, then zeros.
Tensor TapsOuterWeights(const Tensor& weight, int64_t padded_k);

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_CONV_GEMM_H_
