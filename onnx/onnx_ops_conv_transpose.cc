// ConvTranspose (1-D and 2-D) as a convolution, so that every backend runs
// it with the conv2d it has (3-D only where the stride is the kernel: one
// matrix product, ConvertConvTranspose3d). The weight must be known at import time; it
// is rearranged once, here. Two ways:
//
// - Where the stride divides the kernel (UNet's kernel 2 stride 2, a GAN's
//   kernel 4 stride 2), without dilation: each of the stride^2 output
//   phases (output positions modulo the stride) is an ordinary convolution
//   of the input with every stride-th tap of the flipped kernel. The phases
//   are one conv2d with stride^2 times the output channels, interleaved
//   into place by a reshape and a permute (as PixelShuffle), then cropped
//   by the pads. Its multiply-adds are those of a direct transposed
//   convolution.
// - Otherwise, the convolution of the input spread out by the stride
//   (stride - 1 zeros between elements), padded by dilation * (kernel - 1)
//   less the node's pads, at stride 1, with the kernel flipped and its
//   input and output channels swapped within each group: stride^2 more
//   multiply-adds (most of them by zeros), any attributes.

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"

namespace graft::onnx_import {
namespace {

// Per spatial dim (always two: a 1-D node gets a leading size-1 dim).
struct TransposedWindow {
  std::vector<int64_t> in, kernel, stride, dilation, begin, end, output_padding;
};

absl::StatusOr<TransposedWindow> ReadTransposedWindow(
    NodeContext& ctx, const std::vector<int64_t>& in,
    const std::vector<int64_t>& kernel) {
  const size_t s = in.size();
  TransposedWindow w{.in = in, .kernel = kernel};
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> kshape,
                   ctx.attrs().Ints("kernel_shape"));
  if (kshape.has_value() && *kshape != kernel) {
    return NodeContext::Invalid(
        absl::StrCat("kernel_shape ", IntsToString(*kshape),
                     " does not match the weight's spatial size ", IntsToString(kernel)));
  }
  ASSIGN_OR_RETURN(w.stride, IntsAttr(ctx, "strides", s, 1));
  ASSIGN_OR_RETURN(w.dilation, IntsAttr(ctx, "dilations", s, 1));
  ASSIGN_OR_RETURN(w.output_padding, IntsAttr(ctx, "output_padding", s, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntsAttr(ctx, "pads", 2 * s, 0));
  ASSIGN_OR_RETURN(std::string auto_pad, ctx.attrs().String("auto_pad", "NOTSET"));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> output_shape,
                   ctx.attrs().Ints("output_shape"));
  constexpr int64_t kMax = int64_t{1} << 24;  // No real model comes near.
  for (size_t i = 0; i < s; ++i) {
    if (w.kernel[i] < 1 || w.stride[i] < 1 || w.dilation[i] < 1 || pads[i] < 0 ||
        pads[s + i] < 0 || w.output_padding[i] < 0) {
      return NodeContext::Invalid(
          "kernel, strides and dilations must be positive, pads and "
          "output_padding non-negative");
    }
    if (w.kernel[i] > kMax || w.stride[i] > kMax || w.dilation[i] > kMax ||
        pads[i] > kMax || pads[s + i] > kMax || w.output_padding[i] > kMax) {
      return NodeContext::Invalid("kernel, strides, dilations or pads are too large");
    }
    // Output sizes multiply the input's by the stride: both bounded, no
    // product overflows.
    if (w.in[i] > kMax) {
      return NodeContext::Invalid(absl::StrCat("the input's spatial size ", w.in[i],
                                               " is too large"));
    }
    if (w.output_padding[i] >= std::max(w.stride[i], w.dilation[i])) {
      return NodeContext::Invalid(absl::StrCat(
          "output_padding ", IntsToString(w.output_padding),
          " must be smaller than the stride or the dilation"));
    }
    w.begin.push_back(pads[i]);
    w.end.push_back(pads[s + i]);
  }
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "NOTSET" && auto_pad != "VALID" && !auto_pad.empty()) {
    return NodeContext::Unsupported(absl::StrCat("auto_pad=\"", auto_pad, "\" is not supported"));
  }
  if (auto_pad == "VALID") {
    std::fill(w.begin.begin(), w.begin.end(), 0);
    std::fill(w.end.begin(), w.end.end(), 0);
  }
  if (output_shape.has_value() || same) {
    // The pads follow from the output size asked for; the odd one goes at
    // the end for SAME_UPPER, at the beginning otherwise (ONNX's rule).
    std::vector<int64_t> out(s);
    for (size_t i = 0; i < s; ++i) out[i] = w.in[i] * w.stride[i];
    if (output_shape.has_value()) {
      if (output_shape->size() != s && output_shape->size() != s + 2) {
        return NodeContext::Invalid(absl::StrCat("output_shape ", IntsToString(*output_shape),
                                                 " must have ", s, " entries"));
      }
      out.assign(output_shape->end() - s, output_shape->end());
    }
    for (size_t i = 0; i < s; ++i) {
      const int64_t full = w.stride[i] * (w.in[i] - 1) + w.output_padding[i] +
                           (w.kernel[i] - 1) * w.dilation[i] + 1;
      const int64_t total = full - out[i];
      if (total < 0) {
        return NodeContext::Unsupported(absl::StrCat(
            "output size ", out[i], " is larger than the full result (", full,
            "); raise output_padding instead"));
      }
      const int64_t small = total / 2, large = total - small;
      w.begin[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.end[i] = auto_pad == "SAME_UPPER" ? large : small;
    }
  }
  return w;
}

// W [C, M/g, kh, kw] as conv2d's weight [M, C/g, kh, kw], flipped in space.
Tensor ConvolutionWeight(const Tensor& w, int64_t groups) {
  const int64_t c = w.dim(0), mg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const int64_t cg = c / groups;
  Tensor out(w.dtype(), {mg * groups, cg, kh, kw});
  const size_t elem = DTypeSize(w.dtype());
  const auto* src = static_cast<const std::byte*>(w.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t ci = 0; ci < cg; ++ci) {
      for (int64_t m = 0; m < mg; ++m) {
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t from = (((g * cg + ci) * mg + m) * kh + (kh - 1 - i)) * kw + (kw - 1 - j);
            const int64_t to = (((g * mg + m) * cg + ci) * kh + i) * kw + j;
            std::memcpy(dst + to * elem, src + from * elem, elem);
          }
        }
      }
    }
  }
  return out;
}

// x [N, C, H, W] with stride - 1 zeros after every element of the spatial
// dims: [N, C, H * sh, W * sw] (the last stride - 1 rows and columns are
// zeros too; the caller accounts for them).
absl::StatusOr<Node*> SpreadOut(NodeContext& ctx, Node* x, int64_t c,
                                const TransposedWindow& w) {
  if (w.stride[0] == 1 && w.stride[1] == 1) return x;
  const int64_t h = w.in[0], wd = w.in[1], sh = w.stride[0], sw = w.stride[1];
  ASSIGN_OR_RETURN(Node * six, ctx.Call("reshape", {x, Argument::IntList({-1, c, h, 1, wd, 1})}));
  ASSIGN_OR_RETURN(Node * padded,
                   ctx.Call("pad", {six, Argument::IntList({0, sw - 1, 0, 0, 0, sh - 1})}));
  return ctx.Call("reshape", {padded, Argument::IntList({-1, c, h * sh, wd * sw})});
}

// Pads (positive) or crops (negative) the two spatial dims at each end.
absl::StatusOr<Node*> PadOrCrop(NodeContext& ctx, Node* x, const std::vector<int64_t>& lo,
                                const std::vector<int64_t>& hi) {
  std::vector<int64_t> pads;  // graft's pad list: pairs from the last dim.
  bool any_pad = false;
  for (int i = 1; i >= 0; --i) {
    pads.push_back(std::max<int64_t>(lo[i], 0));
    pads.push_back(std::max<int64_t>(hi[i], 0));
    any_pad = any_pad || lo[i] > 0 || hi[i] > 0;
  }
  if (any_pad) {
    ASSIGN_OR_RETURN(x, ctx.Call("pad", {x, Argument::IntList(pads)}));
  }
  for (int i = 0; i < 2; ++i) {
    if (lo[i] >= 0 && hi[i] >= 0) continue;
    ASSIGN_OR_RETURN(TensorType t, ctx.TypeOf(x));
    const int64_t size = t.shape[2 + i].value();
    const int64_t start = std::max<int64_t>(-lo[i], 0);
    const int64_t stop = size - std::max<int64_t>(-hi[i], 0);
    if (stop <= start) {
      return NodeContext::Invalid("the pads leave an empty output");
    }
    ASSIGN_OR_RETURN(x, ctx.Call("slice", {x, int64_t{2 + i}, start, stop}));
  }
  return x;
}

// The phase decomposition applies: the stride divides the kernel, no
// dilation, and output_padding only keeps what the end pad would crop.
bool ByPhases(const TransposedWindow& w) {
  for (int i = 0; i < 2; ++i) {
    if (w.kernel[i] % w.stride[i] != 0 || w.dilation[i] != 1 || w.output_padding[i] > w.end[i]) {
      return false;
    }
  }
  return w.stride[0] > 1 || w.stride[1] > 1;
}

// W [C, M/g, kh, kw] as the phases' conv2d weight [M * sh * sw, C/g, kh/sh,
// kw/sw]: output channel (m, ry, rx) tap (a, b) is W[c, m, sh * (Kh - 1 -
// a) + ry, sw * (Kw - 1 - b) + rx] (every stride-th tap, flipped).
Tensor PhaseWeight(const Tensor& w, int64_t groups, int64_t sh, int64_t sw) {
  const int64_t c = w.dim(0), mg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const int64_t cg = c / groups, th = kh / sh, tw = kw / sw;
  Tensor out(w.dtype(), {mg * groups * sh * sw, cg, th, tw});
  const size_t elem = DTypeSize(w.dtype());
  const auto* src = static_cast<const std::byte*>(w.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t m = 0; m < mg; ++m) {
      for (int64_t ry = 0; ry < sh; ++ry) {
        for (int64_t rx = 0; rx < sw; ++rx) {
          const int64_t o = ((g * mg + m) * sh + ry) * sw + rx;
          for (int64_t ci = 0; ci < cg; ++ci) {
            for (int64_t a = 0; a < th; ++a) {
              for (int64_t b = 0; b < tw; ++b) {
                const int64_t i = sh * (th - 1 - a) + ry, j = sw * (tw - 1 - b) + rx;
                const int64_t from = (((g * cg + ci) * mg + m) * kh + i) * kw + j;
                const int64_t to = ((o * cg + ci) * th + a) * tw + b;
                std::memcpy(dst + to * elem, src + from * elem, elem);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

absl::StatusOr<Node*> ConvTransposeByPhases(NodeContext& ctx, Node* x, const Tensor& weight,
                                            const Argument& bias, int64_t group,
                                            const TransposedWindow& w) {
  const int64_t sh = w.stride[0], sw = w.stride[1];
  const int64_t th = w.kernel[0] / sh, tw = w.kernel[1] / sw;
  const int64_t m = weight.dim(1) * group;
  ASSIGN_OR_RETURN(Node * phase_weight, ctx.ConstantNode(PhaseWeight(weight, group, sh, sw), "weight"));
  // The bias per phase output channel: each m repeated sh * sw times.
  Argument phase_bias;
  if (bias.is_node()) {
    ASSIGN_OR_RETURN(Node * b, ctx.Call("reshape", {bias.node(), Argument::IntList({m, 1})}));
    ASSIGN_OR_RETURN(b, ctx.Call("expand", {b, Argument::IntList({m, sh * sw})}));
    ASSIGN_OR_RETURN(b, ctx.Call("reshape", {b, Argument::IntList({m * sh * sw})}));
    phase_bias = b;
  }
  // Each phase's full convolution: output q in [0, in + taps - 1).
  ASSIGN_OR_RETURN(Node * phases,
                   ctx.Call("conv2d", {x, phase_weight, phase_bias, Argument::IntList({1, 1}),
                                       Argument::IntList({th - 1, tw - 1}), Argument::IntList({1, 1}),
                                       group}));
  const int64_t qh = w.in[0] + th - 1, qw = w.in[1] + tw - 1;
  ASSIGN_OR_RETURN(Node * y, ctx.Call("reshape", {phases, Argument::IntList({-1, m, sh, sw, qh, qw})}));
  ASSIGN_OR_RETURN(y, ctx.Call("permute", {y, Argument::IntList({0, 1, 4, 2, 5, 3})}));
  ASSIGN_OR_RETURN(y, ctx.Call("reshape", {y, Argument::IntList({-1, m, qh * sh, qw * sw})}));
  // Full length (in - 1) * s + k; the pads crop it (output_padding gives
  // back some of the end pad).
  for (int i = 0; i < 2; ++i) {
    const int64_t full = (i == 0 ? qh * sh : qw * sw);
    const int64_t start = w.begin[i], stop = full - w.end[i] + w.output_padding[i];
    if (stop <= start) return NodeContext::Invalid("the pads leave an empty output");
    if (start == 0 && stop == full) continue;
    ASSIGN_OR_RETURN(y, ctx.Call("slice", {y, int64_t{2 + i}, start, stop}));
  }
  return y;
}

absl::StatusOr<Node*> ConvTransposeSpreadOut(NodeContext& ctx, Node* x, const Tensor& weight,
                                             const Argument& bias, int64_t group,
                                             const TransposedWindow& w);

// A 3-D transposed convolution whose stride is its kernel (a 3-D UNet's
// upsampling, kernel 2 stride 2), without pads, dilation or groups: each
// input voxel alone makes its own block of kernel-size outputs, so the
// whole is one product of the voxels' channels by the weight as a matrix
// ([Cin, Cout * kt * kh * kw]), its columns then moved into place (a 3-D
// PixelShuffle). The same multiply-adds as a direct transposed convolution.
absl::Status ConvertConvTranspose3d(NodeContext& ctx, const TransposedWindow& w, const Tensor& weight,
                                    int64_t group) {
  const bool plain = group == 1 && w.stride == w.kernel &&
                     std::all_of(w.dilation.begin(), w.dilation.end(), [](int64_t d) { return d == 1; });
  for (const std::vector<int64_t>* v : {&w.begin, &w.end, &w.output_padding}) {
    if (!plain || std::any_of(v->begin(), v->end(), [](int64_t p) { return p != 0; })) {
      return NodeContext::Unsupported(
          "a 3-D ConvTranspose is supported only with strides equal to its kernel and no pads, "
          "output_padding, dilations or groups");
    }
  }
  const int64_t cin = weight.dim(0), cout = weight.dim(1);
  const int64_t kt = w.kernel[0], kh = w.kernel[1], kw = w.kernel[2];
  const int64_t t = w.in[0], h = w.in[1], wd = w.in[2];
  ASSIGN_OR_RETURN(Node * matrix, ctx.ConstantNode(weight.Reshaped({cin, cout * kt * kh * kw}), "matrix"));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(x, ctx.Call("permute", {x, Argument::IntList({0, 2, 3, 4, 1})}));
  ASSIGN_OR_RETURN(x, ctx.Call("reshape", {x, Argument::IntList({-1, cin})}));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("matmul", {x, matrix}));
  ASSIGN_OR_RETURN(y, ctx.Call("reshape", {y, Argument::IntList({-1, t, h, wd, cout, kt, kh, kw})}));
  ASSIGN_OR_RETURN(y, ctx.Call("permute", {y, Argument::IntList({0, 4, 1, 5, 2, 6, 3, 7})}));
  ASSIGN_OR_RETURN(y, ctx.Call("reshape", {y, Argument::IntList({-1, cout, t * kt, h * kh, wd * kw})}));
  if (ctx.HasInput(2)) {
    ASSIGN_OR_RETURN(Node * b, ctx.Input(2, "B"));
    ASSIGN_OR_RETURN(b, ctx.Call("reshape", {b, Argument::IntList({cout, 1, 1, 1})}));
    ASSIGN_OR_RETURN(y, ctx.Call("add", {y, b}));
  }
  return ctx.SetOutput(0, y);
}

absl::Status ConvertConvTranspose(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  const int64_t s = tx.rank() - 2;
  if (s < 1 || s > 3) {
    return NodeContext::Unsupported(absl::StrCat("only 1-D, 2-D and 3-D ConvTranspose is supported; input ",
                                                 tx.ToString(), " has ", std::max<int64_t>(s, 0),
                                                 " spatial dims"));
  }
  const Tensor* known_w = ctx.Constant(1);
  if (known_w == nullptr) {
    return NodeContext::Unsupported("the weight W must be known at import time (an initializer)");
  }
  if (known_w->rank() != tx.rank()) {
    return NodeContext::Invalid(absl::StrCat("weight ", known_w->TypeString(), " and input ",
                                             tx.ToString(), " must have the same rank"));
  }
  ASSIGN_OR_RETURN(int64_t group, ctx.attrs().Int("group", 1));
  const int64_t c = known_w->dim(0);
  if (group < 1 || c % group != 0) {
    return NodeContext::Invalid(
        absl::StrCat("group ", group, " must be positive and divide the weight's ", c, " input channels"));
  }
  if (tx.shape[1].is_constant() && tx.shape[1].value() != c) {
    return NodeContext::Invalid(absl::StrCat("input ", tx.ToString(), " has ", tx.shape[1].ToString(),
                                             " channels; the weight ", known_w->TypeString(),
                                             " expects ", c));
  }
  TensorType spatial{tx.dtype, Shape(tx.shape.begin() + 2, tx.shape.end())};
  ASSIGN_OR_RETURN(std::vector<int64_t> in, StaticDimsOf(spatial, "ConvTranspose's input"));
  std::vector<int64_t> kernel(known_w->dims().begin() + 2, known_w->dims().end());
  ASSIGN_OR_RETURN(TransposedWindow w, ReadTransposedWindow(ctx, in, kernel));
  if (s == 3) return ConvertConvTranspose3d(ctx, w, *known_w, group);
  Tensor weight = *known_w;
  if (s == 1) {  // Lift to 2-D with a size-1 height.
    for (auto* v : {&w.in, &w.kernel, &w.stride, &w.dilation}) v->insert(v->begin(), 1);
    for (auto* v : {&w.begin, &w.end, &w.output_padding}) v->insert(v->begin(), 0);
    weight = weight.Reshaped({weight.dim(0), weight.dim(1), 1, weight.dim(2)});
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  if (s == 1) {
    ASSIGN_OR_RETURN(x, ctx.Call("unsqueeze", {x, int64_t{2}}));
  }
  Argument bias;
  if (ctx.HasInput(2)) {
    ASSIGN_OR_RETURN(Node * b, ctx.Input(2, "B"));
    bias = b;
  }
  ASSIGN_OR_RETURN(Node * y, ByPhases(w) ? ConvTransposeByPhases(ctx, x, weight, bias, group, w)
                                         : ConvTransposeSpreadOut(ctx, x, weight, bias, group, w));
  if (s == 1) {
    ASSIGN_OR_RETURN(y, ctx.Call("squeeze", {y, Argument::IntList({2})}));
  }
  return ctx.SetOutput(0, y);
}

absl::StatusOr<Node*> ConvTransposeSpreadOut(NodeContext& ctx, Node* x, const Tensor& weight,
                                             const Argument& bias, int64_t group,
                                             const TransposedWindow& w) {
  const int64_t c = weight.dim(0);
  ASSIGN_OR_RETURN(Node * conv_weight, ctx.ConstantNode(ConvolutionWeight(weight, group), "weight"));
  ASSIGN_OR_RETURN(x, SpreadOut(ctx, x, c, w));
  std::vector<int64_t> lo(2), hi(2);
  for (int i = 0; i < 2; ++i) {
    const int64_t reach = w.dilation[i] * (w.kernel[i] - 1);
    lo[i] = reach - w.begin[i];
    // SpreadOut left stride - 1 zeros at the end already.
    hi[i] = reach - w.end[i] + w.output_padding[i] - (w.stride[i] - 1);
  }
  std::vector<int64_t> padding = {0, 0};
  if (lo == hi && lo[0] >= 0 && lo[1] >= 0) {
    padding = lo;  // Symmetric: inside the convolution.
  } else {
    ASSIGN_OR_RETURN(x, PadOrCrop(ctx, x, lo, hi));
  }
  return ctx.Call("conv2d", {x, conv_weight, bias, Argument::IntList({1, 1}), Argument::IntList(padding),
                             Argument::IntList(w.dilation), group});
}

}  // namespace

void AddConvTransposeConverters(std::vector<OpConverter>& table) {
  table.push_back({.op_type = "ConvTranspose", .convert = ConvertConvTranspose});
}

}  // namespace graft::onnx_import
