#include "graph/trace_ops.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace graft::trace {
namespace {

// True if `value` is the parameter's default, so the call can leave it out.
// Int lists compare by value, so a single int equals the one-element list.
bool IsDefault(const Argument& value, const Argument& default_value) {
  if (value == default_value) return true;
  bool value_ints = value.is_int() || value.is_int_list();
  bool default_ints = default_value.is_int() || default_value.is_int_list();
  return value_ints && default_ints &&
         value.int_list() == default_value.int_list();
}

// Collects one op call's arguments in schema order and records it in the
// tracer its proxies belong to. Parameters equal to their default are
// dropped; once one is dropped, later ones go in as keyword arguments.
class CallBuilder {
 public:
  CallBuilder(absl::string_view op, const Loc& location)
      : op_(op), location_(location) {}

  CallBuilder& Tensor(absl::string_view name, const Proxy& proxy) {
    See(proxy);
    return Add(name, proxy, std::nullopt);
  }
  CallBuilder& OptionalTensor(absl::string_view name,
                              const std::optional<Proxy>& proxy) {
    if (!proxy.has_value()) return Add(name, Argument(), Argument());
    return Tensor(name, *proxy);
  }
  CallBuilder& TensorOrScalar(absl::string_view name,
                              const trace::TensorOrScalar& value) {
    if (value.is_proxy()) See(value.proxy());
    return Add(name, value.arg(), std::nullopt);
  }
  CallBuilder& Tensors(absl::string_view name,
                       const std::vector<Proxy>& proxies) {
    ArgumentList list;
    list.reserve(proxies.size());
    for (const Proxy& p : proxies) {
      See(p);
      list.emplace_back(p);
    }
    return Add(name, Argument(std::move(list)), std::nullopt);
  }
  // A literal; `default_value` unset means the parameter is required.
  CallBuilder& Literal(absl::string_view name, Argument value,
                       std::optional<Argument> default_value = std::nullopt) {
    return Add(name, std::move(value), std::move(default_value));
  }

  Proxy Record() {
    Tracer* tracer = FindTracer();
    if (tracer == nullptr) return Proxy();
    return tracer->Call(op_, std::move(args_), std::move(kwargs_), location_);
  }
  std::vector<Proxy> RecordTuple(std::optional<size_t> num_results) {
    Tracer* tracer = FindTracer();
    if (tracer == nullptr) return {};
    return tracer->CallTuple(op_, std::move(args_), std::move(kwargs_),
                             num_results, location_);
  }

 private:
  void See(const Proxy& proxy) {
    if (proxy.tracer() == nullptr) return;  // Invalid: the tracer reports it.
    if (tracer_ == nullptr) tracer_ = proxy.tracer();
    if (proxy.tracer() != tracer_) mixed_ = true;
  }

  CallBuilder& Add(absl::string_view name, Argument value,
                   const std::optional<Argument>& default_value) {
    if (default_value.has_value() && IsDefault(value, *default_value)) {
      by_keyword_ = true;
    } else if (by_keyword_) {
      kwargs_.emplace_back(std::string(name), std::move(value));
    } else {
      args_.push_back(std::move(value));
    }
    return *this;
  }

  Tracer* FindTracer() {
    Tracer* tracer = tracer_ != nullptr ? tracer_ : Tracer::Current();
    if (tracer == nullptr) {
      // No proxy to say where to record and no tracer alive on this
      // thread: a programming error, reported loudly.
      std::fprintf(stderr,
                   "graft: %s:%u: trace::%.*s was called with no traced "
                   "tensor argument and no Tracer alive on this thread\n",
                   location_.file_name(), location_.line(),
                   static_cast<int>(op_.size()), op_.data());
      std::abort();
    }
    if (mixed_) {
      tracer->RecordError(
          op_,
          absl::InvalidArgumentError(
              "its tensor arguments come from different Tracers"),
          location_);
      return nullptr;
    }
    return tracer;
  }

  absl::string_view op_;
  Loc location_;
  Tracer* tracer_ = nullptr;
  bool mixed_ = false;
  bool by_keyword_ = false;
  std::vector<Argument> args_;
  Kwargs kwargs_;
};

Proxy Unary(absl::string_view op, const Proxy& input, const Loc& location) {
  return CallBuilder(op, location).Tensor("input", input).Record();
}

Proxy Binary(absl::string_view op, const TensorOrScalar& input,
             const TensorOrScalar& other, const Loc& location) {
  return CallBuilder(op, location)
      .TensorOrScalar("input", input)
      .TensorOrScalar("other", other)
      .Record();
}

Proxy Reduce(absl::string_view op, const Proxy& input,
             const OptionalIntList& dim, bool keepdim, const Loc& location) {
  return CallBuilder(op, location)
      .Tensor("input", input)
      .Literal("dim", dim.arg(), Argument())
      .Literal("keepdim", keepdim, false)
      .Record();
}

Argument OptionalInt(const std::optional<int64_t>& v) {
  return v.has_value() ? Argument(*v) : Argument();
}

}  // namespace

// ---- Elementwise, one input ----
#define GRAFT_TRACE_UNARY(name)                  \
  Proxy name(const Proxy& input, Loc location) { \
    return Unary(#name, input, location);        \
  }
GRAFT_TRACE_UNARY(neg)
GRAFT_TRACE_UNARY(abs)
GRAFT_TRACE_UNARY(floor)
GRAFT_TRACE_UNARY(ceil)
GRAFT_TRACE_UNARY(round)
GRAFT_TRACE_UNARY(exp)
GRAFT_TRACE_UNARY(log)
GRAFT_TRACE_UNARY(sqrt)
GRAFT_TRACE_UNARY(rsqrt)
GRAFT_TRACE_UNARY(sin)
GRAFT_TRACE_UNARY(cos)
GRAFT_TRACE_UNARY(tanh)
GRAFT_TRACE_UNARY(tan)
GRAFT_TRACE_UNARY(asin)
GRAFT_TRACE_UNARY(acos)
GRAFT_TRACE_UNARY(atan)
GRAFT_TRACE_UNARY(sinh)
GRAFT_TRACE_UNARY(cosh)
GRAFT_TRACE_UNARY(asinh)
GRAFT_TRACE_UNARY(acosh)
GRAFT_TRACE_UNARY(atanh)
GRAFT_TRACE_UNARY(sigmoid)
GRAFT_TRACE_UNARY(relu)
GRAFT_TRACE_UNARY(silu)
GRAFT_TRACE_UNARY(erf)
GRAFT_TRACE_UNARY(reciprocal)
GRAFT_TRACE_UNARY(logical_not)
GRAFT_TRACE_UNARY(identity)
#undef GRAFT_TRACE_UNARY

Proxy gelu(const Proxy& input, absl::string_view approximate, Loc location) {
  return CallBuilder("gelu", location)
      .Tensor("input", input)
      .Literal("approximate", std::string(approximate), "none")
      .Record();
}

Proxy leaky_relu(const Proxy& input, double negative_slope, Loc location) {
  return CallBuilder("leaky_relu", location)
      .Tensor("input", input)
      .Literal("negative_slope", negative_slope, 0.01)
      .Record();
}

Proxy clamp(const Proxy& input, std::optional<ScalarArg> min,
            std::optional<ScalarArg> max, Loc location) {
  return CallBuilder("clamp", location)
      .Tensor("input", input)
      .Literal("min", min.has_value() ? min->arg() : Argument(), Argument())
      .Literal("max", max.has_value() ? max->arg() : Argument(), Argument())
      .Record();
}

Proxy cast(const Proxy& input, DType dtype, Loc location) {
  return CallBuilder("cast", location)
      .Tensor("input", input)
      .Literal("dtype", dtype)
      .Record();
}

// ---- Elementwise, two or three inputs ----
#define GRAFT_TRACE_BINARY(name)                                       \
  Proxy name(const TensorOrScalar& input, const TensorOrScalar& other, \
             Loc location) {                                           \
    return Binary(#name, input, other, location);                      \
  }
GRAFT_TRACE_BINARY(add)
GRAFT_TRACE_BINARY(sub)
GRAFT_TRACE_BINARY(mul)
GRAFT_TRACE_BINARY(div)
GRAFT_TRACE_BINARY(pow)
GRAFT_TRACE_BINARY(maximum)
GRAFT_TRACE_BINARY(minimum)
GRAFT_TRACE_BINARY(eq)
GRAFT_TRACE_BINARY(ne)
GRAFT_TRACE_BINARY(lt)
GRAFT_TRACE_BINARY(le)
GRAFT_TRACE_BINARY(gt)
GRAFT_TRACE_BINARY(ge)
GRAFT_TRACE_BINARY(logical_and)
GRAFT_TRACE_BINARY(logical_or)
#undef GRAFT_TRACE_BINARY

Proxy where(const Proxy& condition, const TensorOrScalar& input,
            const TensorOrScalar& other, Loc location) {
  return CallBuilder("where", location)
      .Tensor("condition", condition)
      .TensorOrScalar("input", input)
      .TensorOrScalar("other", other)
      .Record();
}

Proxy operator+(const TensorOrScalar& a, const TensorOrScalar& b) {
  return Binary("add", a, b, a.location());
}
Proxy operator-(const TensorOrScalar& a, const TensorOrScalar& b) {
  return Binary("sub", a, b, a.location());
}
Proxy operator*(const TensorOrScalar& a, const TensorOrScalar& b) {
  return Binary("mul", a, b, a.location());
}
Proxy operator/(const TensorOrScalar& a, const TensorOrScalar& b) {
  return Binary("div", a, b, a.location());
}
Proxy operator-(const TensorOrScalar& a) {
  return CallBuilder("neg", a.location()).TensorOrScalar("input", a).Record();
}

// ---- Reductions and normalization ----
Proxy sum(const Proxy& input, OptionalIntList dim, bool keepdim, Loc location) {
  return Reduce("sum", input, dim, keepdim, location);
}
Proxy mean(const Proxy& input, OptionalIntList dim, bool keepdim,
           Loc location) {
  return Reduce("mean", input, dim, keepdim, location);
}
Proxy amax(const Proxy& input, OptionalIntList dim, bool keepdim,
           Loc location) {
  return Reduce("amax", input, dim, keepdim, location);
}
Proxy amin(const Proxy& input, OptionalIntList dim, bool keepdim,
           Loc location) {
  return Reduce("amin", input, dim, keepdim, location);
}

Proxy argmax(const Proxy& input, std::optional<int64_t> dim, bool keepdim,
             Loc location) {
  return CallBuilder("argmax", location)
      .Tensor("input", input)
      .Literal("dim", OptionalInt(dim), Argument())
      .Literal("keepdim", keepdim, false)
      .Record();
}

Proxy softmax(const Proxy& input, int64_t dim, Loc location) {
  return CallBuilder("softmax", location)
      .Tensor("input", input)
      .Literal("dim", dim)
      .Record();
}

Proxy log_softmax(const Proxy& input, int64_t dim, Loc location) {
  return CallBuilder("log_softmax", location)
      .Tensor("input", input)
      .Literal("dim", dim)
      .Record();
}

Proxy layer_norm(const Proxy& input, IntList normalized_shape,
                 std::optional<Proxy> weight, std::optional<Proxy> bias,
                 double eps, Loc location) {
  return CallBuilder("layer_norm", location)
      .Tensor("input", input)
      .Literal("normalized_shape", normalized_shape.arg())
      .OptionalTensor("weight", weight)
      .OptionalTensor("bias", bias)
      .Literal("eps", eps, 1e-5)
      .Record();
}

Proxy batch_norm(const Proxy& input, const Proxy& running_mean,
                 const Proxy& running_var, std::optional<Proxy> weight,
                 std::optional<Proxy> bias, double eps, Loc location) {
  return CallBuilder("batch_norm", location)
      .Tensor("input", input)
      .Tensor("running_mean", running_mean)
      .Tensor("running_var", running_var)
      .OptionalTensor("weight", weight)
      .OptionalTensor("bias", bias)
      .Literal("eps", eps, 1e-5)
      .Record();
}

// ---- Linear algebra, convolution, pooling ----
Proxy matmul(const Proxy& input, const Proxy& other, Loc location) {
  return CallBuilder("matmul", location)
      .Tensor("input", input)
      .Tensor("other", other)
      .Record();
}

Proxy linear(const Proxy& input, const Proxy& weight, std::optional<Proxy> bias,
             Loc location) {
  return CallBuilder("linear", location)
      .Tensor("input", input)
      .Tensor("weight", weight)
      .OptionalTensor("bias", bias)
      .Record();
}

Proxy conv2d(const Proxy& input, const Proxy& weight, std::optional<Proxy> bias,
             IntList stride, IntList padding, IntList dilation, int64_t groups,
             Loc location) {
  return CallBuilder("conv2d", location)
      .Tensor("input", input)
      .Tensor("weight", weight)
      .OptionalTensor("bias", bias)
      .Literal("stride", stride.arg(), int64_t{1})
      .Literal("padding", padding.arg(), int64_t{0})
      .Literal("dilation", dilation.arg(), int64_t{1})
      .Literal("groups", groups, int64_t{1})
      .Record();
}

Proxy max_pool2d(const Proxy& input, IntList kernel_size,
                 OptionalIntList stride, IntList padding, IntList dilation,
                 bool ceil_mode, Loc location) {
  return CallBuilder("max_pool2d", location)
      .Tensor("input", input)
      .Literal("kernel_size", kernel_size.arg())
      .Literal("stride", stride.arg(), Argument())
      .Literal("padding", padding.arg(), int64_t{0})
      .Literal("dilation", dilation.arg(), int64_t{1})
      .Literal("ceil_mode", ceil_mode, false)
      .Record();
}

Proxy avg_pool2d(const Proxy& input, IntList kernel_size,
                 OptionalIntList stride, IntList padding, bool ceil_mode,
                 bool count_include_pad, Loc location) {
  return CallBuilder("avg_pool2d", location)
      .Tensor("input", input)
      .Literal("kernel_size", kernel_size.arg())
      .Literal("stride", stride.arg(), Argument())
      .Literal("padding", padding.arg(), int64_t{0})
      .Literal("ceil_mode", ceil_mode, false)
      .Literal("count_include_pad", count_include_pad, true)
      .Record();
}

Proxy adaptive_avg_pool2d(const Proxy& input, IntList output_size,
                          Loc location) {
  return CallBuilder("adaptive_avg_pool2d", location)
      .Tensor("input", input)
      .Literal("output_size", output_size.arg())
      .Record();
}

// ---- Shapes and data movement ----
Proxy reshape(const Proxy& input, IntList shape, Loc location) {
  return CallBuilder("reshape", location)
      .Tensor("input", input)
      .Literal("shape", shape.arg())
      .Record();
}

Proxy permute(const Proxy& input, IntList dims, Loc location) {
  return CallBuilder("permute", location)
      .Tensor("input", input)
      .Literal("dims", dims.arg())
      .Record();
}

Proxy transpose(const Proxy& input, int64_t dim0, int64_t dim1, Loc location) {
  return CallBuilder("transpose", location)
      .Tensor("input", input)
      .Literal("dim0", dim0)
      .Literal("dim1", dim1)
      .Record();
}

Proxy flatten(const Proxy& input, int64_t start_dim, int64_t end_dim,
              Loc location) {
  return CallBuilder("flatten", location)
      .Tensor("input", input)
      .Literal("start_dim", start_dim, int64_t{0})
      .Literal("end_dim", end_dim, int64_t{-1})
      .Record();
}

Proxy squeeze(const Proxy& input, OptionalIntList dim, Loc location) {
  return CallBuilder("squeeze", location)
      .Tensor("input", input)
      .Literal("dim", dim.arg(), Argument())
      .Record();
}

Proxy unsqueeze(const Proxy& input, int64_t dim, Loc location) {
  return CallBuilder("unsqueeze", location)
      .Tensor("input", input)
      .Literal("dim", dim)
      .Record();
}

Proxy expand(const Proxy& input, IntList size, Loc location) {
  return CallBuilder("expand", location)
      .Tensor("input", input)
      .Literal("size", size.arg())
      .Record();
}

Proxy concat(const std::vector<Proxy>& tensors, int64_t dim, Loc location) {
  return CallBuilder("concat", location)
      .Tensors("tensors", tensors)
      .Literal("dim", dim, int64_t{0})
      .Record();
}

std::vector<Proxy> split(const Proxy& input, IntList split_size_or_sections,
                         int64_t dim, Loc location) {
  // With explicit sizes the piece count is known even without types.
  std::optional<size_t> pieces;
  if (split_size_or_sections.arg().is_list()) {
    pieces = split_size_or_sections.arg().list().size();
  }
  return CallBuilder("split", location)
      .Tensor("input", input)
      .Literal("split_size_or_sections", split_size_or_sections.arg())
      .Literal("dim", dim, int64_t{0})
      .RecordTuple(pieces);
}

Proxy slice(const Proxy& input, int64_t dim, std::optional<int64_t> start,
            std::optional<int64_t> end, int64_t step, Loc location) {
  return CallBuilder("slice", location)
      .Tensor("input", input)
      .Literal("dim", dim, int64_t{0})
      .Literal("start", OptionalInt(start), Argument())
      .Literal("end", OptionalInt(end), Argument())
      .Literal("step", step, int64_t{1})
      .Record();
}

Proxy gather(const Proxy& input, int64_t dim, const Proxy& index,
             Loc location) {
  return CallBuilder("gather", location)
      .Tensor("input", input)
      .Literal("dim", dim)
      .Tensor("index", index)
      .Record();
}

Proxy index_select(const Proxy& input, int64_t dim, const Proxy& index,
                   Loc location) {
  return CallBuilder("index_select", location)
      .Tensor("input", input)
      .Literal("dim", dim)
      .Tensor("index", index)
      .Record();
}

Proxy embedding(const Proxy& input, const Proxy& weight, Loc location) {
  return CallBuilder("embedding", location)
      .Tensor("input", input)
      .Tensor("weight", weight)
      .Record();
}

Proxy pad(const Proxy& input, IntList pad, absl::string_view mode, double value,
          Loc location) {
  return CallBuilder("pad", location)
      .Tensor("input", input)
      .Literal("pad", pad.arg())
      .Literal("mode", std::string(mode), "constant")
      .Literal("value", value, 0.0)
      .Record();
}

// ---- Creation ----
Proxy full(IntList size, ScalarArg fill_value, DType dtype, Loc location) {
  return CallBuilder("full", location)
      .Literal("size", size.arg())
      .Literal("fill_value", fill_value.arg())
      .Literal("dtype", dtype, DType::kF32)
      .Record();
}

Proxy zeros(IntList size, DType dtype, Loc location) {
  return CallBuilder("zeros", location)
      .Literal("size", size.arg())
      .Literal("dtype", dtype, DType::kF32)
      .Record();
}

Proxy arange(ScalarArg start, ScalarArg end, ScalarArg step,
             std::optional<DType> dtype, Loc location) {
  return CallBuilder("arange", location)
      .Literal("start", start.arg())
      .Literal("end", end.arg())
      .Literal("step", step.arg(), int64_t{1})
      .Literal("dtype", dtype.has_value() ? Argument(*dtype) : Argument(),
               Argument())
      .Record();
}

// ---- Quantization ----
Proxy quantize_per_tensor(const Proxy& input, double scale, int64_t zero_point,
                          DType dtype, Loc location) {
  return CallBuilder("quantize_per_tensor", location)
      .Tensor("input", input)
      .Literal("scale", scale)
      .Literal("zero_point", zero_point)
      .Literal("dtype", dtype)
      .Record();
}

Proxy quantize_per_channel(const Proxy& input, const Proxy& scales,
                           const Proxy& zero_points, int64_t axis, DType dtype,
                           Loc location) {
  return CallBuilder("quantize_per_channel", location)
      .Tensor("input", input)
      .Tensor("scales", scales)
      .Tensor("zero_points", zero_points)
      .Literal("axis", axis)
      .Literal("dtype", dtype)
      .Record();
}

Proxy dequantize(const Proxy& input, const TensorOrScalar& scale,
                 const TensorOrScalar& zero_point, std::optional<int64_t> axis,
                 DType dtype, Loc location) {
  return CallBuilder("dequantize", location)
      .Tensor("input", input)
      .TensorOrScalar("scale", scale)
      .TensorOrScalar("zero_point", zero_point)
      .Literal("axis", OptionalInt(axis), Argument())
      .Literal("dtype", dtype, DType::kF32)
      .Record();
}

// ---- Structure ----
Proxy getitem(const Proxy& input, int64_t index, Loc location) {
  return CallBuilder("getitem", location)
      .Tensor("input", input)
      .Literal("index", index)
      .Record();
}

Proxy dropout(const Proxy& input, double p, bool training, Loc location) {
  return CallBuilder("dropout", location)
      .Tensor("input", input)
      .Literal("p", p, 0.5)
      .Literal("training", training, false)
      .Record();
}

}  // namespace graft::trace
