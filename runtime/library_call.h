#ifndef GRAFT_RUNTIME_LIBRARY_CALL_H_
#define GRAFT_RUNTIME_LIBRARY_CALL_H_

// The matrix products and convolutions that compiled CPU code hands to a
// library (oneDNN), described as plain data so that a compiled model file
// carries them (runtime/artifact.h) and the runtime prepares them with no
// graph at hand.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/dtype.h"
#include "runtime/byte_stream.h"

namespace graft::runtime {

enum class LibraryCallKind : uint8_t {
  // dst[..., M, N] = activation(src[..., M, K] @ weights[..., K, N] + bias);
  // batch dims of src and weights may broadcast.
  kMatmul = 0,
  // dst[M, N] = activation(scales[n] * sum_k (src - src_zero_point) * w[n, k]
  // + bias[n]): u8 or s8 activations times constant s8 weights stored
  // [N, K], int32 sums scaled into f32 or requantized.
  kQuantizedMatmul = 1,
  // dst = activation(conv2d(src, weights) + bias), NCHW or NHWC.
  kConv = 2,
  // A product with a dim of size 0 (no library has a primitive for it):
  // the result is the bias alone through the activation, or nothing.
  kEmptyProduct = 3,
  // dst = conv2d on int8 values, summed and scaled as kQuantizedMatmul
  // (scales per output channel), NCHW or NHWC, constant s8 weights
  // [O, C/groups, KH, KW].
  kQuantizedConv = 4,
  // dst[M, N] = s[m] * scales[n] * sum_k q[m, k] * w[n, k] + bias[n]: the
  // f32 src quantized per row to s8 as the call runs (s[m] its largest
  // magnitude over 127), times constant s8 weights stored [N, K]
  // (graft::dynamic_quantized_linear).
  kDynamicQuantizedMatmul = 5,
};

struct LibraryCallSpec {
  LibraryCallKind kind = LibraryCallKind::kMatmul;
  std::string label;       // "%fc1 (linear)": names the call in errors.
  std::string activation;  // "", "relu", "gelu", "gelu_tanh".
  std::vector<int64_t> src, weights, dst;
  // buffers[1 + operand] at run time; bias_operand -1: no bias operand.
  int32_t operand_count = 0;
  int32_t src_operand = 0, weights_operand = 0, bias_operand = -1;
  // The state slot of constant weights, reordered once when the call is
  // prepared; -1: the weights are an operand, or only prepacked.
  int32_t weights_state = -1;
  // Constant weights already in the library's own layout (a compiled model
  // file keeps them so, and loading skips the reorder): an index into the
  // PackedWeights given to PrepareLibraryCall; -1: none.
  int32_t packed_index = -1;
  // kMatmul.
  bool weights_transposed = false;  // Stored [N, K] (linear's weight).
  bool bf16 = false;  // Multiply in bf16 (constant weights), f32 results.
  // kQuantizedMatmul and kQuantizedConv.
  DType src_dtype = DType::kI8;  // kI8 or kU8.
  DType dst_dtype = DType::kF32;  // kF32, kI8 or kU8.
  int32_t bias_state = -1;  // A constant f32 bias [N]; -1: none.
  std::vector<float> scales;  // One per N: the int32 sums' scale.
  int32_t src_zero_point = 0, dst_zero_point = 0;
  float dst_scale = 1;
  // kConv and kQuantizedConv.
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  bool src_channels_last = false, dst_channels_last = false;
  // kEmptyProduct: element i of the result gets bias[(i / repeat) % period]
  // (buffers[bias_buffer], -1: zero).
  int64_t elements = 0, period = 1, repeat = 1;
  int32_t bias_buffer = -1;
};

void EncodeLibraryCallSpec(const LibraryCallSpec& spec, ByteWriter& out);
// Reads and checks a spec (ranks, counts, operand indices).
absl::StatusOr<LibraryCallSpec> DecodeLibraryCallSpec(ByteReader& in);

// A constant the call may read: a module tensor's bytes.
struct ConstantBuffer {
  const void* data = nullptr;
  size_t bytes = 0;
};

// Constant weights in the library's layout: the bytes, and the library's
// own description of that layout (opaque; compared, never interpreted).
struct PackedWeights {
  const void* data = nullptr;
  size_t bytes = 0;
  std::string layout;
};

// The library build that packed weights belong to: "oneDNN 2.6.3 (layout
// 1234 bytes)". Packed weights of another build are refused.
std::string PackingIdentity();

// A call prepared once (primitive chosen, constant weights reordered into
// the library's preferred layout), then run with a step's buffers. Run may
// be called from several threads at once.
class LibraryCall {
 public:
  virtual ~LibraryCall() = default;
  // buffers[0] is the result's data, buffers[1 + i] that of operand i.
  virtual absl::Status Run(void* const* buffers) const = 0;
  // Its constant weights in the layout the library chose, where it has
  // any, for a compiled model file to keep.
  virtual std::optional<PackedWeights> packed_weights() const { return std::nullopt; }
};

// Prepares `spec`, reading constants from `state` (checked against the
// sizes the spec implies) and prepacked weights from `packed`, used in
// place when their layout is the one the library picks here (reordered
// from it otherwise). Make it on a thread whose library threads
// (SetLibraryThreads) are what the runs will use.
absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareLibraryCall(
    const LibraryCallSpec& spec, absl::Span<const ConstantBuffer> state,
    absl::Span<const PackedWeights> packed = {});

// The symbol compiled code calls for a library step, and its definition:
// runs `call` and returns 0, or 1 after keeping the error for
// TakeLibraryError.
inline constexpr char kRunLibrarySymbol[] = "graft_orc_run_library";
extern "C" int graft_orc_run_library(void* call, void* const* buffers);
// The last error of a library call on this thread.
absl::Status TakeLibraryError();

// Limits the library's threads on the calling thread (0: all cores).
void SetLibraryThreads(int threads);

// SetLibraryThreads for the scope's lifetime; then the calling thread's
// own OpenMP setting again, so that running a model does not change how
// the caller's other OpenMP code runs.
class ScopedLibraryThreads {
 public:
  explicit ScopedLibraryThreads(int threads);
  ~ScopedLibraryThreads();
  ScopedLibraryThreads(const ScopedLibraryThreads&) = delete;
  ScopedLibraryThreads& operator=(const ScopedLibraryThreads&) = delete;

 private:
  int previous_openmp_;
  int previous_requested_;
};

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_LIBRARY_CALL_H_
