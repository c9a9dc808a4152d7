#ifndef GRAFT_GRAPH_TRACE_OPS_H_
#define GRAFT_GRAPH_TRACE_OPS_H_

#include <cstdint>
#include <optional>
#include <source_location>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/dtype.h"
#include "graph/proxy.h"

// One free function per op of the core set (docs/ops.md), with the same
// parameter names, order and defaults, so traced code reads like PyTorch:
//   Proxy y = relu(linear(x, w, b));
//   Proxy z = conv2d(x, w, std::nullopt, /*stride=*/2, /*padding=*/1);
// Parameter kinds map to C++ types as follows:
//   Tensor -> const Proxy&;        Tensor? -> std::optional<Proxy>
//   Tensor|Scalar -> TensorOrScalar (a Proxy or a number)
//   Tensor[] -> std::vector<Proxy>; int[] -> IntList; int[]? -> OptionalIntList
//   int -> int64_t; int? -> std::optional<int64_t>; float -> double
//   Scalar -> ScalarArg;           str -> absl::string_view; dtype -> DType
// Arguments equal to their default are left out of the recorded node, and a
// later non-default one is recorded by keyword, as FX prints calls.
// Every function takes the caller's source location as a defaulted last
// argument: leave it alone.
namespace graft::trace {

using Loc = std::source_location;

// ---- Elementwise, one input ----
Proxy neg(const Proxy& input, Loc location = Loc::current());
Proxy abs(const Proxy& input, Loc location = Loc::current());
Proxy floor(const Proxy& input, Loc location = Loc::current());
Proxy ceil(const Proxy& input, Loc location = Loc::current());
Proxy round(const Proxy& input, Loc location = Loc::current());
Proxy exp(const Proxy& input, Loc location = Loc::current());
Proxy log(const Proxy& input, Loc location = Loc::current());
Proxy sqrt(const Proxy& input, Loc location = Loc::current());
Proxy rsqrt(const Proxy& input, Loc location = Loc::current());
Proxy sin(const Proxy& input, Loc location = Loc::current());
Proxy cos(const Proxy& input, Loc location = Loc::current());
Proxy tanh(const Proxy& input, Loc location = Loc::current());
Proxy tan(const Proxy& input, Loc location = Loc::current());
Proxy asin(const Proxy& input, Loc location = Loc::current());
Proxy acos(const Proxy& input, Loc location = Loc::current());
Proxy atan(const Proxy& input, Loc location = Loc::current());
Proxy sinh(const Proxy& input, Loc location = Loc::current());
Proxy cosh(const Proxy& input, Loc location = Loc::current());
Proxy asinh(const Proxy& input, Loc location = Loc::current());
Proxy acosh(const Proxy& input, Loc location = Loc::current());
Proxy atanh(const Proxy& input, Loc location = Loc::current());
Proxy sigmoid(const Proxy& input, Loc location = Loc::current());
Proxy relu(const Proxy& input, Loc location = Loc::current());
Proxy silu(const Proxy& input, Loc location = Loc::current());
Proxy erf(const Proxy& input, Loc location = Loc::current());
Proxy reciprocal(const Proxy& input, Loc location = Loc::current());
Proxy logical_not(const Proxy& input, Loc location = Loc::current());
Proxy gelu(const Proxy& input, absl::string_view approximate = "none",
           Loc location = Loc::current());
Proxy leaky_relu(const Proxy& input, double negative_slope = 0.01,
                 Loc location = Loc::current());
Proxy clamp(const Proxy& input, std::optional<ScalarArg> min = std::nullopt,
            std::optional<ScalarArg> max = std::nullopt,
            Loc location = Loc::current());
Proxy cast(const Proxy& input, DType dtype, Loc location = Loc::current());

// ---- Elementwise, two or three inputs (broadcasting) ----
Proxy add(const TensorOrScalar& input, const TensorOrScalar& other,
          Loc location = Loc::current());
Proxy sub(const TensorOrScalar& input, const TensorOrScalar& other,
          Loc location = Loc::current());
Proxy mul(const TensorOrScalar& input, const TensorOrScalar& other,
          Loc location = Loc::current());
Proxy div(const TensorOrScalar& input, const TensorOrScalar& other,
          Loc location = Loc::current());
Proxy pow(const TensorOrScalar& input, const TensorOrScalar& other,
          Loc location = Loc::current());
Proxy maximum(const TensorOrScalar& input, const TensorOrScalar& other,
              Loc location = Loc::current());
Proxy minimum(const TensorOrScalar& input, const TensorOrScalar& other,
              Loc location = Loc::current());
Proxy eq(const TensorOrScalar& input, const TensorOrScalar& other,
         Loc location = Loc::current());
Proxy ne(const TensorOrScalar& input, const TensorOrScalar& other,
         Loc location = Loc::current());
Proxy lt(const TensorOrScalar& input, const TensorOrScalar& other,
         Loc location = Loc::current());
Proxy le(const TensorOrScalar& input, const TensorOrScalar& other,
         Loc location = Loc::current());
Proxy gt(const TensorOrScalar& input, const TensorOrScalar& other,
         Loc location = Loc::current());
Proxy ge(const TensorOrScalar& input, const TensorOrScalar& other,
         Loc location = Loc::current());
Proxy logical_and(const TensorOrScalar& input, const TensorOrScalar& other,
                  Loc location = Loc::current());
Proxy logical_or(const TensorOrScalar& input, const TensorOrScalar& other,
                 Loc location = Loc::current());
Proxy where(const Proxy& condition, const TensorOrScalar& input,
            const TensorOrScalar& other, Loc location = Loc::current());

// Operators: add, sub, mul, div and neg. Comparisons are the functions
// eq, ne, lt, le, gt, ge (an operator== on proxies would read as a test).
// The location comes from the conversion of the operands.
Proxy operator+(const TensorOrScalar& a, const TensorOrScalar& b);
Proxy operator-(const TensorOrScalar& a, const TensorOrScalar& b);
Proxy operator*(const TensorOrScalar& a, const TensorOrScalar& b);
Proxy operator/(const TensorOrScalar& a, const TensorOrScalar& b);
Proxy operator-(const TensorOrScalar& a);

// ---- Reductions and normalization ----
Proxy sum(const Proxy& input, OptionalIntList dim = std::nullopt,
          bool keepdim = false, Loc location = Loc::current());
Proxy mean(const Proxy& input, OptionalIntList dim = std::nullopt,
           bool keepdim = false, Loc location = Loc::current());
Proxy amax(const Proxy& input, OptionalIntList dim = std::nullopt,
           bool keepdim = false, Loc location = Loc::current());
Proxy amin(const Proxy& input, OptionalIntList dim = std::nullopt,
           bool keepdim = false, Loc location = Loc::current());
Proxy argmax(const Proxy& input, std::optional<int64_t> dim = std::nullopt,
             bool keepdim = false, Loc location = Loc::current());
Proxy softmax(const Proxy& input, int64_t dim, Loc location = Loc::current());
Proxy log_softmax(const Proxy& input, int64_t dim,
                  Loc location = Loc::current());
Proxy layer_norm(const Proxy& input, IntList normalized_shape,
                 std::optional<Proxy> weight = std::nullopt,
                 std::optional<Proxy> bias = std::nullopt, double eps = 1e-5,
                 Loc location = Loc::current());
Proxy batch_norm(const Proxy& input, const Proxy& running_mean,
                 const Proxy& running_var,
                 std::optional<Proxy> weight = std::nullopt,
                 std::optional<Proxy> bias = std::nullopt, double eps = 1e-5,
                 Loc location = Loc::current());

// ---- Linear algebra, convolution, pooling ----
Proxy matmul(const Proxy& input, const Proxy& other,
             Loc location = Loc::current());
Proxy linear(const Proxy& input, const Proxy& weight,
             std::optional<Proxy> bias = std::nullopt,
             Loc location = Loc::current());
Proxy conv2d(const Proxy& input, const Proxy& weight,
             std::optional<Proxy> bias = std::nullopt, IntList stride = 1,
             IntList padding = 0, IntList dilation = 1, int64_t groups = 1,
             Loc location = Loc::current());
Proxy max_pool2d(const Proxy& input, IntList kernel_size,
                 OptionalIntList stride = std::nullopt, IntList padding = 0,
                 IntList dilation = 1, bool ceil_mode = false,
                 Loc location = Loc::current());
Proxy avg_pool2d(const Proxy& input, IntList kernel_size,
                 OptionalIntList stride = std::nullopt, IntList padding = 0,
                 bool ceil_mode = false, bool count_include_pad = true,
                 Loc location = Loc::current());
Proxy adaptive_avg_pool2d(const Proxy& input, IntList output_size,
                          Loc location = Loc::current());

// ---- Shapes and data movement ----
Proxy reshape(const Proxy& input, IntList shape, Loc location = Loc::current());
Proxy permute(const Proxy& input, IntList dims, Loc location = Loc::current());
Proxy transpose(const Proxy& input, int64_t dim0, int64_t dim1,
                Loc location = Loc::current());
Proxy flatten(const Proxy& input, int64_t start_dim = 0, int64_t end_dim = -1,
              Loc location = Loc::current());
Proxy squeeze(const Proxy& input, OptionalIntList dim = std::nullopt,
              Loc location = Loc::current());
Proxy unsqueeze(const Proxy& input, int64_t dim, Loc location = Loc::current());
Proxy expand(const Proxy& input, IntList size, Loc location = Loc::current());
Proxy concat(const std::vector<Proxy>& tensors, int64_t dim = 0,
             Loc location = Loc::current());
// One proxy per piece (getitem nodes of the split node). An int gives
// pieces of that size, a list the sizes of the pieces.
std::vector<Proxy> split(const Proxy& input, IntList split_size_or_sections,
                         int64_t dim = 0, Loc location = Loc::current());
Proxy slice(const Proxy& input, int64_t dim = 0,
            std::optional<int64_t> start = std::nullopt,
            std::optional<int64_t> end = std::nullopt, int64_t step = 1,
            Loc location = Loc::current());
Proxy gather(const Proxy& input, int64_t dim, const Proxy& index,
             Loc location = Loc::current());
Proxy index_select(const Proxy& input, int64_t dim, const Proxy& index,
                   Loc location = Loc::current());
Proxy embedding(const Proxy& input, const Proxy& weight,
                Loc location = Loc::current());
Proxy pad(const Proxy& input, IntList pad, absl::string_view mode = "constant",
          double value = 0.0, Loc location = Loc::current());

// ---- Creation ----
// No tensor argument says which tracer to record into: these use
// Tracer::Current(), the innermost live tracer of the calling thread.
Proxy full(IntList size, ScalarArg fill_value, DType dtype = DType::kF32,
           Loc location = Loc::current());
Proxy zeros(IntList size, DType dtype = DType::kF32,
            Loc location = Loc::current());
Proxy arange(ScalarArg start, ScalarArg end, ScalarArg step = int64_t{1},
             std::optional<DType> dtype = std::nullopt,
             Loc location = Loc::current());

// ---- Quantization ----
Proxy quantize_per_tensor(const Proxy& input, double scale, int64_t zero_point,
                          DType dtype, Loc location = Loc::current());
Proxy quantize_per_channel(const Proxy& input, const Proxy& scales,
                           const Proxy& zero_points, int64_t axis, DType dtype,
                           Loc location = Loc::current());
Proxy dequantize(const Proxy& input, const TensorOrScalar& scale,
                 const TensorOrScalar& zero_point,
                 std::optional<int64_t> axis = std::nullopt,
                 DType dtype = DType::kF32, Loc location = Loc::current());

// ---- Structure ----
Proxy getitem(const Proxy& input, int64_t index, Loc location = Loc::current());
Proxy identity(const Proxy& input, Loc location = Loc::current());
Proxy dropout(const Proxy& input, double p = 0.5, bool training = false,
              Loc location = Loc::current());

}  // namespace graft::trace

#endif  // GRAFT_GRAPH_TRACE_OPS_H_
