// Linear algebra, convolution and pooling ops of docs/ops.md.

#include <algorithm>
#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/core_ops_internal.h"
#include "graph/type_rules.h"

namespace graft::core_ops {
namespace {

using K = ParamKind;

absl::Status RequireSameDType(const InferContext& ctx, absl::string_view a,
                              absl::string_view b) {
  if (!ctx.IsTensor(a) || !ctx.IsTensor(b)) return absl::OkStatus();
  TensorType ta = ctx.Type(a);
  TensorType tb = ctx.Type(b);
  if (ta.dtype == tb.dtype) return absl::OkStatus();
  return ctx.Error(absl::StrCat(a, " is ", ta.ToString(), " but ", b, " is ",
                                tb.ToString(),
                                "; cast one so that the dtypes match"));
}

absl::StatusOr<TensorType> Matmul(const InferContext& ctx) {
  TensorType a = ctx.Type("input");
  TensorType b = ctx.Type("other");
  if (a.rank() == 0 || b.rank() == 0) {
    return ctx.Error(
        absl::StrCat("both arguments need at least one dim, got "
                     "input ",
                     a.ToString(), " and other ", b.ToString()));
  }
  absl::Status status = RequireSameDType(ctx, "input", "other");
  if (!status.ok()) return status;
  // 1-D operands: input is a row vector, other a column vector; the added
  // dim is dropped from the result again (torch.matmul).
  Dim ka = a.shape.back();
  Dim kb = b.rank() == 1 ? b.shape[0] : b.shape[b.rank() - 2];
  if (rules::DimsConflict(ka, kb)) {
    return ctx.Error(absl::StrCat(
        "input ", a.ToString(), " has ", ka.ToString(), " columns but other ",
        b.ToString(), " has ", kb.ToString(),
        " rows; the last dim of input must equal the ",
        b.rank() == 1 ? "only" : "second-to-last", " dim of other"));
  }
  Shape batch_a(a.shape.begin(),
                a.shape.end() - std::min<int64_t>(a.rank(), 2));
  Shape batch_b(b.shape.begin(),
                b.shape.end() - std::min<int64_t>(b.rank(), 2));
  absl::StatusOr<Shape> shape = rules::BroadcastShapes(batch_a, batch_b);
  if (!shape.ok()) {
    return ctx.Error(absl::StrCat(
        "batch dims of input ", a.ToString(), " and other ", b.ToString(),
        " do not broadcast: ", shape.status().message()));
  }
  if (a.rank() >= 2) shape->push_back(a.shape[a.rank() - 2]);
  if (b.rank() >= 2) shape->push_back(b.shape.back());
  return TensorType{a.dtype, *std::move(shape)};
}

absl::StatusOr<TensorType> Linear(const InferContext& ctx) {
  TensorType x = ctx.Type("input");
  TensorType w = ctx.Type("weight");
  if (x.rank() == 0) {
    return ctx.Error(absl::StrCat("input ", x.ToString(),
                                  " needs at least one dim (the features)"));
  }
  if (w.rank() != 1 && w.rank() != 2) {
    return ctx.Error(absl::StrCat("weight ", w.ToString(),
                                  " must be 2-D [out_features, in_features]"));
  }
  for (const char* p : {"weight", "bias"}) {
    absl::Status status = RequireSameDType(ctx, "input", p);
    if (!status.ok()) return status;
  }
  Dim in = x.shape.back();
  Dim expected = w.shape.back();
  if (rules::DimsConflict(in, expected)) {
    return ctx.Error(absl::StrCat("input has ", in.ToString(),
                                  " features but weight expects ",
                                  expected.ToString(), " (weight ",
                                  w.ToString(), ", input ", x.ToString(), ")"));
  }
  Shape shape(x.shape.begin(), x.shape.end() - 1);
  // A 1-D weight is a single output feature whose dim is dropped.
  if (w.rank() == 2) shape.push_back(w.shape[0]);
  if (ctx.IsTensor("bias")) {
    TensorType bias = ctx.Type("bias");
    Dim out = w.rank() == 2 ? w.shape[0] : Dim(1);
    bool ok = bias.rank() == 0 ||
              (bias.rank() == 1 && !rules::DimsConflict(bias.shape[0], out));
    if (!ok) {
      return ctx.Error(absl::StrCat("bias ", bias.ToString(),
                                    " does not match the ", out.ToString(),
                                    " output features of weight ", w.ToString(),
                                    "; expected [", out.ToString(), "]"));
    }
  }
  return TensorType{x.dtype, std::move(shape)};
}

// Height and width values of an int[] parameter given as 1 or 2 ints.
absl::StatusOr<std::array<int64_t, 2>> Pair(const InferContext& ctx,
                                            absl::string_view name,
                                            int64_t min_value) {
  std::vector<int64_t> v = ctx.call().Ints(name);
  if (v.size() != 1 && v.size() != 2) {
    return ctx.Error(absl::StrCat(name, " must have 1 or 2 entries, got [",
                                  absl::StrJoin(v, ","), "]"));
  }
  std::array<int64_t, 2> out = {v[0], v.back()};
  for (int64_t x : out) {
    if (x < min_value) {
      return ctx.Error(
          absl::StrCat(name, " entries must be ",
                       min_value == 0 ? "non-negative" : "positive", ", got [",
                       absl::StrJoin(v, ","), "]"));
    }
  }
  return out;
}

// One spatial dim of a convolution or pooling window.
struct Window {
  Dim kernel;
  int64_t stride;
  int64_t padding;
  int64_t dilation;
  bool ceil_mode;
};

// PyTorch's pooling_output_shape (convolution is the floor case):
// out = floor_or_ceil((in + 2p - d(k-1) - 1) / s) + 1, and with ceil_mode a
// last window that would start in the right padding is dropped. A symbolic
// input size keeps its symbol when the window preserves the size (stride 1,
// "same" padding); otherwise the result is a fresh symbol.
absl::StatusOr<Dim> WindowOutput(const InferContext& ctx, Dim in,
                                 const Window& w, absl::string_view which,
                                 int64_t result_dim) {
  if (w.kernel.is_symbolic()) return rules::UnknownDim(ctx, result_dim);
  if (w.kernel.value() < 1) {
    return ctx.Error(absl::StrCat("kernel ", which, " must be positive, got ",
                                  w.kernel.value()));
  }
  int64_t span = w.dilation * (w.kernel.value() - 1);
  if (in.is_symbolic()) {
    if (w.stride == 1 && span == 2 * w.padding) return in;
    return rules::UnknownDim(ctx, result_dim);
  }
  int64_t padded = in.value() + 2 * w.padding;
  int64_t room = padded - span - 1 + (w.ceil_mode ? w.stride - 1 : 0);
  // Floor division, also for a negative numerator (PyTorch's div_rtn).
  int64_t out =
      (room >= 0 ? room / w.stride : -((-room + w.stride - 1) / w.stride)) + 1;
  if (w.ceil_mode && (out - 1) * w.stride >= in.value() + w.padding) --out;
  if (out < 1) {
    return ctx.Error(absl::StrCat("input ", which, " ", in.value(), " (",
                                  padded, " with padding) is smaller than the ",
                                  w.dilation > 1 ? "dilated " : "", "kernel ",
                                  which, " ", span + 1));
  }
  return Dim(out);
}

// Checks that the input is [N,]C,H,W and returns the index of C.
absl::StatusOr<int64_t> ChannelDim(const InferContext& ctx,
                                   const TensorType& x) {
  if (x.rank() != 3 && x.rank() != 4) {
    return ctx.Error(absl::StrCat("input ", x.ToString(),
                                  " must be 4-D (N, C, H, W) or 3-D "
                                  "(C, H, W)"));
  }
  return x.rank() - 3;
}

absl::StatusOr<TensorType> Conv2d(const InferContext& ctx) {
  for (const char* p : {"weight", "bias"}) {
    absl::Status status = RequireSameDType(ctx, "input", p);
    if (!status.ok()) return status;
  }
  return Conv2dShape(ctx);
}

}  // namespace

absl::StatusOr<TensorType> Conv2dShape(const InferContext& ctx) {
  TensorType x = ctx.Type("input");
  TensorType w = ctx.Type("weight");
  absl::StatusOr<int64_t> c = ChannelDim(ctx, x);
  if (!c.ok()) return c.status();
  if (w.rank() != 4) {
    return ctx.Error(absl::StrCat("weight ", w.ToString(),
                                  " must be 4-D [out_channels, "
                                  "in_channels/groups, kh, kw]"));
  }
  int64_t groups = ctx.call().Int("groups");
  if (groups < 1) {
    return ctx.Error(absl::StrCat("groups must be positive, got ", groups));
  }
  Dim in_channels = x.shape[*c];
  Dim out_channels = w.shape[0];
  if (in_channels.is_constant() && in_channels.value() % groups != 0) {
    return ctx.Error(absl::StrCat("groups=", groups, " does not divide ",
                                  in_channels.value(), " input channels"));
  }
  if (out_channels.is_constant() && out_channels.value() % groups != 0) {
    return ctx.Error(absl::StrCat("groups=", groups, " does not divide the ",
                                  out_channels.value(),
                                  " output channels of weight ", w.ToString()));
  }
  std::optional<Dim> expected = rules::MulDims(w.shape[1], groups);
  if (expected.has_value() && rules::DimsConflict(in_channels, *expected)) {
    return ctx.Error(
        absl::StrCat("input ", x.ToString(), " has ", in_channels.ToString(),
                     " channels but weight ", w.ToString(), " expects ",
                     expected->ToString(), " (", w.shape[1].ToString(),
                     " per group, groups=", groups, ")"));
  }
  if (ctx.IsTensor("bias")) {
    TensorType bias = ctx.Type("bias");
    if (bias.rank() != 1 || rules::DimsConflict(bias.shape[0], out_channels)) {
      return ctx.Error(
          absl::StrCat("bias ", bias.ToString(), " does not match the ",
                       out_channels.ToString(), " output channels of weight ",
                       w.ToString()));
    }
  }
  absl::StatusOr<std::array<int64_t, 2>> stride = Pair(ctx, "stride", 1);
  if (!stride.ok()) return stride.status();
  absl::StatusOr<std::array<int64_t, 2>> padding = Pair(ctx, "padding", 0);
  if (!padding.ok()) return padding.status();
  absl::StatusOr<std::array<int64_t, 2>> dilation = Pair(ctx, "dilation", 1);
  if (!dilation.ok()) return dilation.status();
  Shape shape(x.shape.begin(), x.shape.begin() + *c);
  shape.push_back(out_channels);
  const char* names[2] = {"height", "width"};
  for (int i = 0; i < 2; ++i) {
    Window window{w.shape[2 + i], (*stride)[i], (*padding)[i], (*dilation)[i],
                  /*ceil_mode=*/false};
    absl::StatusOr<Dim> d =
        WindowOutput(ctx, x.shape[*c + 1 + i], window, names[i], *c + 1 + i);
    if (!d.ok()) return d.status();
    shape.push_back(*d);
  }
  return TensorType{x.dtype, std::move(shape)};
}

namespace {

absl::StatusOr<TensorType> Pool(const InferContext& ctx, bool average) {
  TensorType x = ctx.Type("input");
  absl::StatusOr<int64_t> c = ChannelDim(ctx, x);
  if (!c.ok()) return c.status();
  if (average && !IsFloatingPoint(x.dtype)) {
    return ctx.Error(absl::StrCat("input ", x.ToString(),
                                  " is not floating point; cast it to a "
                                  "float dtype first"));
  }
  absl::StatusOr<std::array<int64_t, 2>> kernel = Pair(ctx, "kernel_size", 1);
  if (!kernel.ok()) return kernel.status();
  absl::StatusOr<std::array<int64_t, 2>> stride =
      ctx.call().IsNone("stride") ? kernel : Pair(ctx, "stride", 1);
  if (!stride.ok()) return stride.status();
  absl::StatusOr<std::array<int64_t, 2>> padding = Pair(ctx, "padding", 0);
  if (!padding.ok()) return padding.status();
  std::array<int64_t, 2> dilation = {1, 1};
  if (!average) {
    absl::StatusOr<std::array<int64_t, 2>> d = Pair(ctx, "dilation", 1);
    if (!d.ok()) return d.status();
    dilation = *d;
  }
  bool ceil_mode = ctx.call().Bool("ceil_mode");
  Shape shape(x.shape.begin(), x.shape.begin() + *c + 1);
  const char* names[2] = {"height", "width"};
  for (int i = 0; i < 2; ++i) {
    if ((*padding)[i] * 2 > (*kernel)[i]) {
      return ctx.Error(absl::StrCat("padding ", (*padding)[i],
                                    " must be at most half the kernel ",
                                    names[i], " ", (*kernel)[i]));
    }
    Window window{(*kernel)[i], (*stride)[i], (*padding)[i], dilation[i],
                  ceil_mode};
    absl::StatusOr<Dim> d =
        WindowOutput(ctx, x.shape[*c + 1 + i], window, names[i], *c + 1 + i);
    if (!d.ok()) return d.status();
    shape.push_back(*d);
  }
  return TensorType{x.dtype, std::move(shape)};
}

absl::StatusOr<TensorType> AdaptiveAvgPool(const InferContext& ctx) {
  TensorType x = ctx.Type("input");
  absl::StatusOr<int64_t> c = ChannelDim(ctx, x);
  if (!c.ok()) return c.status();
  if (!IsFloatingPoint(x.dtype)) {
    return ctx.Error(absl::StrCat("input ", x.ToString(),
                                  " is not floating point; cast it to a "
                                  "float dtype first"));
  }
  absl::StatusOr<std::array<int64_t, 2>> size = Pair(ctx, "output_size", 1);
  if (!size.ok()) return size.status();
  Shape shape(x.shape.begin(), x.shape.begin() + *c + 1);
  shape.push_back((*size)[0]);
  shape.push_back((*size)[1]);
  return TensorType{x.dtype, std::move(shape)};
}

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  Add(r, {.name = "matmul",
          .params = {Param("input", K::kTensor), Param("other", K::kTensor)},
          .traits = {.kind = OpKind::kContraction, .flops = LastDimContractionFlops},
          .infer = One(Matmul),
          .summary = "matrix product (torch.matmul: 1-D rules, batch dims "
                     "broadcast)"});
  Add(r, {.name = "linear",
          .params = {Param("input", K::kTensor), Param("weight", K::kTensor),
                     Optional("bias", K::kTensor)},
          .traits = {.kind = OpKind::kContraction, .flops = LastDimContractionFlops},
          .infer = One(Linear),
          .summary = "input @ weight^T + bias, weight [out, in]"});
  Add(r, {.name = "conv2d",
          .params = {Param("input", K::kTensor), Param("weight", K::kTensor),
                     Optional("bias", K::kTensor),
                     Defaulted("stride", K::kIntList, 1),
                     Defaulted("padding", K::kIntList, 0),
                     Defaulted("dilation", K::kIntList, 1),
                     Defaulted("groups", K::kInt, 1)},
          .traits = {.kind = OpKind::kContraction, .flops = Conv2dFlops},
          .infer = One(Conv2d),
          .summary = "2-D convolution, NCHW, weight [out, in/groups, kh, kw]"});
  Add(r,
      {.name = "max_pool2d",
       .params = {Param("input", K::kTensor), Param("kernel_size", K::kIntList),
                  Optional("stride", K::kIntList),
                  Defaulted("padding", K::kIntList, 0),
                  Defaulted("dilation", K::kIntList, 1),
                  Defaulted("ceil_mode", K::kBool, false)},
       .traits = {.kind = OpKind::kReduction},
       .infer = One([](const InferContext& ctx) {
         return Pool(ctx, /*average=*/false);
       }),
       .summary = "2-D max pooling, NCHW"});
  Add(r,
      {.name = "avg_pool2d",
       .params = {Param("input", K::kTensor), Param("kernel_size", K::kIntList),
                  Optional("stride", K::kIntList),
                  Defaulted("padding", K::kIntList, 0),
                  Defaulted("ceil_mode", K::kBool, false),
                  Defaulted("count_include_pad", K::kBool, true)},
       .traits = {.kind = OpKind::kReduction},
       .infer = One(
           [](const InferContext& ctx) { return Pool(ctx, /*average=*/true); }),
       .summary = "2-D average pooling, NCHW"});
  Add(r, {.name = "adaptive_avg_pool2d",
          .params = {Param("input", K::kTensor),
                     Param("output_size", K::kIntList)},
          .traits = {.kind = OpKind::kReduction},
          .infer = One(AdaptiveAvgPool),
          .summary = "2-D average pooling to a given output size, NCHW"});
}

}  // namespace graft::core_ops
