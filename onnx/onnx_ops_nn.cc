// Linear algebra, convolution, pooling and normalization operators.
//
// graft's conv2d and pooling take one symmetric padding per spatial dim
// (PyTorch's); ONNX gives begin and end pads per dim ([x1_begin, x2_begin,
// x1_end, x2_end]) or asks for "SAME" padding. Unequal pads become an
// explicit pad node in front (zeros for convolution and average pooling
// that counts the pads, -inf for max pooling). 1-D convolution and pooling
// run as 2-D ones over an inserted size-1 height; a 3-D convolution as one
// 2-D convolution per temporal tap of its kernel (ConvertConv3d).

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"

namespace graft::onnx_import {
namespace {

// A convolution or pooling window over 2 spatial dims (a 1-D node's dims
// lifted by a leading size-1 dim), or 3 for a 3-D convolution.
struct Window {
  int spatial = 2;  // The node's own count: 1, 2 or 3.
  std::vector<int64_t> kernel, stride, dilation, begin, end;

  bool Symmetric() const { return begin == end; }
  // PyTorch's pooling allows at most half the kernel as padding.
  bool PoolPaddingFits() const {
    return Symmetric() && begin[0] * 2 <= kernel[0] &&
           begin[1] * 2 <= kernel[1];
  }
  // graft's pad list (pairs from the last dim) for explicit padding.
  std::vector<int64_t> PadList() const {
    return {begin[1], end[1], begin[0], end[0]};
  }
};

// Reads kernel_shape, strides, dilations, pads and auto_pad. `kernel` is
// the weight's spatial size for convolutions, empty for pooling (which
// takes kernel_shape).
absl::StatusOr<Window> ReadWindow(NodeContext& ctx, const TensorType& x,
                                  std::vector<int64_t> kernel,
                                  bool has_dilations) {
  const int64_t s = x.rank() - 2;
  if (s < 1 || s > 3) {
    return NodeContext::Unsupported(absl::StrCat(
        "only 1-D, 2-D and 3-D ", ctx.op_type(), " is supported; input ", x.ToString(), " has ",
        std::max<int64_t>(s, 0), " spatial dims"));
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> kshape,
                   ctx.attrs().Ints("kernel_shape"));
  if (kshape.has_value()) {
    if (!kernel.empty() && *kshape != kernel) {
      return NodeContext::Invalid(absl::StrCat(
          "kernel_shape ", IntsToString(*kshape),
          " does not match the weight's spatial size ", IntsToString(kernel)));
    }
    kernel = *kshape;
  }
  if (kernel.size() != static_cast<size_t>(s)) {
    return NodeContext::Invalid(absl::StrCat(
        "needs kernel_shape with ", s, " entries for input ", x.ToString()));
  }
  Window w;
  w.spatial = static_cast<int>(s);
  w.kernel = kernel;
  ASSIGN_OR_RETURN(w.stride, IntsAttr(ctx, "strides", s, 1));
  if (has_dilations) {
    ASSIGN_OR_RETURN(w.dilation, IntsAttr(ctx, "dilations", s, 1));
  } else {
    w.dilation.assign(s, 1);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntsAttr(ctx, "pads", 2 * s, 0));
  ASSIGN_OR_RETURN(std::string auto_pad,
                   ctx.attrs().String("auto_pad", "NOTSET"));
  // Sizes beyond this are no real model and would overflow the arithmetic.
  constexpr int64_t kMaxWindow = int64_t{1} << 31;
  for (int64_t i = 0; i < s; ++i) {
    if (w.kernel[i] < 1 || w.stride[i] < 1 || w.dilation[i] < 1 ||
        pads[i] < 0 || pads[s + i] < 0) {
      return NodeContext::Invalid(
          "kernel_shape, strides and dilations must be positive and pads "
          "non-negative");
    }
    if (w.kernel[i] > kMaxWindow || w.stride[i] > kMaxWindow ||
        w.dilation[i] > kMaxWindow || pads[i] > kMaxWindow ||
        pads[s + i] > kMaxWindow) {
      return NodeContext::Invalid(
          "kernel_shape, strides, dilations or pads are too large");
    }
    w.begin.push_back(pads[i]);
    w.end.push_back(pads[s + i]);
  }
  if (auto_pad == "VALID") {
    std::fill(w.begin.begin(), w.begin.end(), 0);
    std::fill(w.end.begin(), w.end.end(), 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // Output size ceil(in / stride); the extra pad goes at the end for
    // SAME_UPPER and at the beginning for SAME_LOWER.
    for (int64_t i = 0; i < s; ++i) {
      Dim in = x.shape[2 + i];
      if (in.is_symbolic()) {
        return NodeContext::Unsupported(absl::StrCat(
            "auto_pad=", auto_pad, " needs static spatial dims, but input ",
            x.ToString(), " has the symbolic dim '", in.ToString(), "'"));
      }
      int64_t out = (in.value() + w.stride[i] - 1) / w.stride[i];
      int64_t span = (w.kernel[i] - 1) * w.dilation[i] + 1;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.stride[i] + span - in.value());
      int64_t small = total / 2, large = total - total / 2;
      w.begin[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.end[i] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
    return NodeContext::Unsupported(
        absl::StrCat("auto_pad=\"", auto_pad, "\" is not supported"));
  }
  if (s == 1) {
    for (auto* v : {&w.kernel, &w.stride, &w.dilation})
      v->insert(v->begin(), 1);
    w.begin.insert(w.begin.begin(), 0);
    w.end.insert(w.end.begin(), 0);
  }
  return w;
}

// A 1-D input as [N, C, 1, L].
absl::StatusOr<Node*> Lift(NodeContext& ctx, const Window& w, Node* x) {
  if (w.spatial == 2) return x;
  return ctx.Call("unsqueeze", {x, int64_t{2}});
}

absl::StatusOr<Node*> Lower(NodeContext& ctx, const Window& w, Node* y) {
  if (w.spatial == 2) return y;
  return ctx.Call("squeeze", {y, Argument::IntList({2})});
}

// A 5-D input's channels, frames, height and width, which a 3-D node
// folds into 2-D ones and so needs static (the batch may be symbolic).
absl::StatusOr<std::vector<int64_t>> FrameDims(NodeContext& ctx, const TensorType& tx) {
  std::vector<int64_t> in(4);
  for (int i = 0; i < 4; ++i) {
    const Dim d = tx.shape[1 + i];
    if (d.is_symbolic()) {
      return NodeContext::Unsupported(absl::StrCat(
          "a 3-D ", ctx.op_type(), " needs static channels, frames, height and width; input ",
          tx.ToString(), " has the symbolic dim '", d.ToString(), "'"));
    }
    in[i] = d.value();
  }
  return in;
}

// [N, C, T, H, W] as [N * T, C, H, W]: each frame a 2-D input of its own.
absl::StatusOr<Node*> FoldFrames(NodeContext& ctx, Node* x, int64_t c, int64_t h, int64_t w) {
  ASSIGN_OR_RETURN(Node * folded, ctx.Call("permute", {x, Argument::IntList({0, 2, 1, 3, 4})}));
  return ctx.Call("reshape", {folded, Argument::IntList({-1, c, h, w})});
}

// A 3-D convolution as 2-D ones, one per temporal tap kt of the kernel:
// the input's frames kt*dt, kt*dt + st, ... (after padding the time dim)
// are folded into the batch ([N*T', C, H, W]) and convolved with the
// weight's frame kt; the taps' results are added (the bias once) and
// unfolded to [N, Co, T', H', W']. As many multiply-adds as a direct 3-D
// convolution, on each backend's conv2d. C, T, H and W must be static.
absl::Status ConvertConv3d(NodeContext& ctx, const TensorType& tx, const std::vector<int64_t>& wdims,
                           int64_t group, const Window& w, Node* x, Node* weight, Argument bias) {
  ASSIGN_OR_RETURN(const std::vector<int64_t> in, FrameDims(ctx, tx));
  const int64_t co = wdims[0], kt = wdims[2];
  const bool plane_symmetric = w.begin[1] == w.end[1] && w.begin[2] == w.end[2];
  std::vector<int64_t> pads = {0, 0, 0, 0, w.begin[0], w.end[0]};
  if (!plane_symmetric) pads = {w.begin[2], w.end[2], w.begin[1], w.end[1], w.begin[0], w.end[0]};
  const std::vector<int64_t> padding =
      plane_symmetric ? std::vector<int64_t>{w.begin[1], w.begin[2]} : std::vector<int64_t>{0, 0};
  // Sizes after the explicit pad, then the output's.
  const int64_t frames = in[1] + w.begin[0] + w.end[0];
  const int64_t h = in[2] + (plane_symmetric ? 0 : w.begin[1] + w.end[1]);
  const int64_t wd = in[3] + (plane_symmetric ? 0 : w.begin[2] + w.end[2]);
  // 0 where the kernel's span is larger than the padded size.
  auto out_size = [](int64_t size, int64_t pad, int64_t k, int64_t stride, int64_t dilation) {
    const int64_t room = size + 2 * pad - dilation * (k - 1) - 1;
    return room < 0 ? int64_t{0} : room / stride + 1;
  };
  const int64_t t_out = out_size(frames, 0, kt, w.stride[0], w.dilation[0]);
  const int64_t h_out = out_size(h, padding[0], wdims[3], w.stride[1], w.dilation[1]);
  const int64_t w_out = out_size(wd, padding[1], wdims[4], w.stride[2], w.dilation[2]);
  if (t_out < 1 || h_out < 1 || w_out < 1) {
    return NodeContext::Invalid(absl::StrCat("the kernel ", IntsToString(w.kernel),
                                             " is larger than the padded input ", tx.ToString()));
  }
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; })) {
    ASSIGN_OR_RETURN(x, ctx.Call("pad", {x, Argument::IntList(pads)}));
  }
  Node* sum = nullptr;
  for (int64_t tap = 0; tap < kt; ++tap) {
    const int64_t first = tap * w.dilation[0];
    ASSIGN_OR_RETURN(Node * frames_of_tap,
                     ctx.Call("slice", {x, int64_t{2}, first, first + (t_out - 1) * w.stride[0] + 1,
                                        w.stride[0]}));
    ASSIGN_OR_RETURN(Node * folded, FoldFrames(ctx, frames_of_tap, in[0], h, wd));
    ASSIGN_OR_RETURN(Node * kernel, ctx.Call("slice", {weight, int64_t{2}, tap, tap + 1}));
    ASSIGN_OR_RETURN(kernel, ctx.Call("squeeze", {kernel, Argument::IntList({2})}));
    ASSIGN_OR_RETURN(Node * y, ctx.Call("conv2d", {folded, kernel, tap == 0 ? bias : Argument(),
                                                   Argument::IntList({w.stride[1], w.stride[2]}),
                                                   Argument::IntList(padding),
                                                   Argument::IntList({w.dilation[1], w.dilation[2]}),
                                                   group}));
    if (sum == nullptr) {
      sum = y;
    } else {
      ASSIGN_OR_RETURN(sum, ctx.Call("add", {sum, y}));
    }
  }
  ASSIGN_OR_RETURN(Node * y, ctx.Call("reshape", {sum, Argument::IntList({-1, t_out, co, h_out, w_out})}));
  ASSIGN_OR_RETURN(y, ctx.Call("permute", {y, Argument::IntList({0, 2, 1, 3, 4})}));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertConv(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(TensorType tw, ctx.InputType(1));
  if (tw.rank() != tx.rank()) {
    return NodeContext::Invalid(absl::StrCat("weight ", tw.ToString(),
                                             " and input ", tx.ToString(),
                                             " must have the same rank"));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> wdims, StaticDimsOf(tw, "the weight"));
  std::vector<int64_t> kernel(wdims.begin() + std::min<size_t>(2, wdims.size()),
                              wdims.end());
  ASSIGN_OR_RETURN(int64_t group, ctx.attrs().Int("group", 1));
  ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, tx, kernel, true));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * weight, ctx.Input(1, "W"));
  Argument bias;
  if (ctx.HasInput(2)) {
    ASSIGN_OR_RETURN(Node * b, ctx.Input(2, "B"));
    bias = b;
  }
  if (w.spatial == 3) return ConvertConv3d(ctx, tx, wdims, group, w, x, weight, bias);
  ASSIGN_OR_RETURN(x, Lift(ctx, w, x));
  ASSIGN_OR_RETURN(weight, Lift(ctx, w, weight));
  std::vector<int64_t> padding = w.begin;
  if (!w.Symmetric()) {
    ASSIGN_OR_RETURN(x, ctx.Call("pad", {x, Argument::IntList(w.PadList())}));
    padding = {0, 0};
  }
  ASSIGN_OR_RETURN(
      Node * y,
      ctx.Call("conv2d", {x, weight, bias, Argument::IntList(w.stride),
                          Argument::IntList(padding),
                          Argument::IntList(w.dilation), group}));
  ASSIGN_OR_RETURN(y, Lower(ctx, w, y));
  return ctx.SetOutput(0, y);
}

absl::StatusOr<Node*> MaxPoolPlanes(NodeContext& ctx, const Window& w, Node* x, int64_t ceil_mode);
absl::StatusOr<Node*> AvgPoolPlanes(NodeContext& ctx, const Window& w, Node* x, int64_t ceil_mode,
                                    int64_t count_pad);

// A 3-D pooling, separable: the 2-D pooling of each frame (the frames
// folded into the batch), then the temporal window over its results, a
// maximum, or a sum divided by the window's frames (those in the input,
// without count_include_pad: the planes' average already divides by the
// plane's count). C, T, H and W must be static.
absl::Status ConvertPool3d(NodeContext& ctx, const TensorType& tx, const Window& w, Node* x, bool max,
                           int64_t ceil_mode, int64_t count_pad) {
  ASSIGN_OR_RETURN(const std::vector<int64_t> in, FrameDims(ctx, tx));
  const int64_t c = in[0], frames = in[1], kt = w.kernel[0], st = w.stride[0], dt = w.dilation[0];
  const int64_t begin = w.begin[0], end = w.end[0];
  const int64_t span = (kt - 1) * dt + 1, padded = frames + begin + end;
  if (padded < span) {
    return NodeContext::Invalid(absl::StrCat("the kernel ", IntsToString(w.kernel),
                                             " is larger than the padded input ", tx.ToString()));
  }
  int64_t t_out = (padded - span) / st + 1;
  if (ceil_mode != 0) {
    // PyTorch's rule: the last window starts inside the input or its
    // leading pad.
    int64_t ceil_out = (padded - span + st - 1) / st + 1;
    if ((ceil_out - 1) * st >= frames + begin) --ceil_out;
    if (ceil_out != t_out && !max) {
      return NodeContext::Unsupported("a 3-D AveragePool whose ceil_mode adds a frame");
    }
    t_out = ceil_out;
  }
  const int64_t extra = std::max<int64_t>(0, (t_out - 1) * st + span - padded);
  Window plane;
  plane.kernel = {w.kernel[1], w.kernel[2]};
  plane.stride = {w.stride[1], w.stride[2]};
  plane.dilation = {w.dilation[1], w.dilation[2]};
  plane.begin = {w.begin[1], w.begin[2]};
  plane.end = {w.end[1], w.end[2]};
  ASSIGN_OR_RETURN(Node * folded, FoldFrames(ctx, x, c, in[2], in[3]));
  ASSIGN_OR_RETURN(Node * planes, max ? MaxPoolPlanes(ctx, plane, folded, ceil_mode)
                                      : AvgPoolPlanes(ctx, plane, folded, ceil_mode, count_pad));
  // Its batch (N * T) may be symbolic; its height and width are not.
  ASSIGN_OR_RETURN(TensorType pooled, ctx.TypeOf(planes));
  const Dim out_h = pooled.shape[2], out_w = pooled.shape[3];
  if (out_h.is_symbolic() || out_w.is_symbolic()) {
    return NodeContext::Invalid(absl::StrCat("pooled frames of unknown size ", pooled.ToString()));
  }
  ASSIGN_OR_RETURN(Node * y, ctx.Call("reshape", {planes, Argument::IntList({-1, frames, c, out_h.value(),
                                                                           out_w.value()})}));
  if (begin + end + extra > 0) {
    const double fill = max ? -std::numeric_limits<double>::infinity() : 0.0;
    ASSIGN_OR_RETURN(y, ctx.Call("pad", {y, Argument::IntList({0, 0, 0, 0, 0, 0, begin, end + extra}),
                                         "constant", fill}));
  }
  Node* window = nullptr;
  for (int64_t tap = 0; tap < kt; ++tap) {
    ASSIGN_OR_RETURN(Node * taps, ctx.Call("slice", {y, int64_t{1}, tap * dt,
                                                     tap * dt + (t_out - 1) * st + 1, st}));
    if (window == nullptr) {
      window = taps;
    } else {
      ASSIGN_OR_RETURN(window, ctx.Call(max ? "maximum" : "add", {window, taps}));
    }
  }
  if (!max) {
    Tensor counts(tx.dtype, {1, t_out, 1, 1, 1});
    for (int64_t i = 0; i < t_out; ++i) {
      int64_t n = 0;
      for (int64_t tap = 0; tap < kt; ++tap) {
        const int64_t at = i * st + tap * dt - begin;
        n += count_pad != 0 ? (at < frames + end) : (at >= 0 && at < frames);
      }
      counts.SetFromDouble(i, static_cast<double>(n));
    }
    ASSIGN_OR_RETURN(Node * divisor, ctx.ConstantNode(std::move(counts), "frames"));
    ASSIGN_OR_RETURN(window, ctx.Call("div", {window, divisor}));
  }
  ASSIGN_OR_RETURN(window, ctx.Call("permute", {window, Argument::IntList({0, 2, 1, 3, 4})}));
  return ctx.SetOutput(0, window);
}

// max_pool2d over the planes of x ([N, C, H, W]); unequal pads become an
// explicit pad of -inf.
absl::StatusOr<Node*> MaxPoolPlanes(NodeContext& ctx, const Window& w, Node* x, int64_t ceil_mode) {
  std::vector<int64_t> padding = w.begin;
  if (!w.PoolPaddingFits()) {
    if (ceil_mode != 0) {
      return NodeContext::Unsupported(absl::StrCat(
          "ceil_mode=1 with pads ", IntsToString(w.begin), " (begin) and ",
          IntsToString(w.end),
          " (end) is not supported: graft pools pad symmetrically, at most "
          "half the kernel"));
    }
    const double neg_inf = -std::numeric_limits<double>::infinity();
    ASSIGN_OR_RETURN(x, ctx.Call("pad", {x, Argument::IntList(w.PadList()),
                                         "constant", neg_inf}));
    padding = {0, 0};
  }
  return ctx.Call("max_pool2d",
                  {x, Argument::IntList(w.kernel), Argument::IntList(w.stride),
                   Argument::IntList(padding), Argument::IntList(w.dilation),
                   ceil_mode != 0});
}

absl::Status ConvertMaxPool(NodeContext& ctx) {
  RETURN_IF_ERROR(ctx.RequireUnused(1, "Indices"));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, tx, {}, true));
  ASSIGN_OR_RETURN(int64_t ceil_mode, ctx.attrs().Int("ceil_mode", 0));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  if (w.spatial == 3) return ConvertPool3d(ctx, tx, w, x, /*max=*/true, ceil_mode, 0);
  ASSIGN_OR_RETURN(x, Lift(ctx, w, x));
  ASSIGN_OR_RETURN(Node * y, MaxPoolPlanes(ctx, w, x, ceil_mode));
  ASSIGN_OR_RETURN(y, Lower(ctx, w, y));
  return ctx.SetOutput(0, y);
}

// avg_pool2d over the planes of x ([N, C, H, W]); unequal pads become an
// explicit pad of zeros, counted.
absl::StatusOr<Node*> AvgPoolPlanes(NodeContext& ctx, const Window& w, Node* x, int64_t ceil_mode,
                                    int64_t count_pad) {
  std::vector<int64_t> padding = w.begin;
  if (!w.PoolPaddingFits()) {
    if (count_pad == 0 || ceil_mode != 0) {
      return NodeContext::Unsupported(absl::StrCat(
          "pads ", IntsToString(w.begin), " (begin) and ", IntsToString(w.end),
          " (end) are only supported with count_include_pad=1 and "
          "ceil_mode=0: graft pools pad symmetrically, at most half the "
          "kernel"));
    }
    ASSIGN_OR_RETURN(x, ctx.Call("pad", {x, Argument::IntList(w.PadList())}));
    padding = {0, 0};
  }
  return ctx.Call("avg_pool2d",
                  {x, Argument::IntList(w.kernel), Argument::IntList(w.stride),
                   Argument::IntList(padding), ceil_mode != 0, count_pad != 0});
}

absl::Status ConvertAveragePool(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, tx, {}, ctx.opset() >= 19));
  for (int64_t d : w.dilation) {
    if (d != 1) {
      return NodeContext::Unsupported(absl::StrCat(
          "dilations ", IntsToString(w.dilation), " are not supported"));
    }
  }
  ASSIGN_OR_RETURN(int64_t ceil_mode, ctx.attrs().Int("ceil_mode", 0));
  ASSIGN_OR_RETURN(int64_t count_pad, ctx.attrs().Int("count_include_pad", 0));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  if (w.spatial == 3) return ConvertPool3d(ctx, tx, w, x, /*max=*/false, ceil_mode, count_pad);
  ASSIGN_OR_RETURN(x, Lift(ctx, w, x));
  ASSIGN_OR_RETURN(Node * y, AvgPoolPlanes(ctx, w, x, ceil_mode, count_pad));
  ASSIGN_OR_RETURN(y, Lower(ctx, w, y));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertGlobalPool(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  if (tx.rank() < 3) {
    return NodeContext::Invalid(
        absl::StrCat("input ", tx.ToString(), " needs at least 3 dims"));
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  Node* y;
  if (ctx.op_type() == "GlobalAveragePool" && tx.rank() == 4) {
    ASSIGN_OR_RETURN(
        y, ctx.Call("adaptive_avg_pool2d", {x, Argument::IntList({1, 1})}));
  } else {
    std::vector<int64_t> dims;
    for (int64_t i = 2; i < tx.rank(); ++i) dims.push_back(i);
    const char* op = ctx.op_type() == "GlobalAveragePool" ? "mean" : "amax";
    ASSIGN_OR_RETURN(y, ctx.Call(op, {x, Argument::IntList(dims), true}));
  }
  return ctx.SetOutput(0, y);
}

absl::Status ConvertMatMul(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Node * a, ctx.Input(0, "A"));
  ASSIGN_OR_RETURN(Node * b, ctx.Input(1, "B"));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("matmul", {a, b}));
  return ctx.SetOutput(0, y);
}

// alpha * A' @ B' + beta * C, as linear(A', B, C) in the common case
// (transB=1, alpha=beta=1, C a vector of the output features: what
// PyTorch's nn.Linear exports).
absl::Status ConvertGemm(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t trans_a, ctx.attrs().Int("transA", 0));
  ASSIGN_OR_RETURN(int64_t trans_b, ctx.attrs().Int("transB", 0));
  ASSIGN_OR_RETURN(float alpha, ctx.attrs().Float("alpha", 1.0f));
  ASSIGN_OR_RETURN(float beta, ctx.attrs().Float("beta", 1.0f));
  ASSIGN_OR_RETURN(TensorType ta, ctx.InputType(0));
  ASSIGN_OR_RETURN(TensorType tb, ctx.InputType(1));
  if (ta.rank() != 2 || tb.rank() != 2) {
    return NodeContext::Invalid(absl::StrCat("A ", ta.ToString(), " and B ",
                                             tb.ToString(), " must be 2-D"));
  }
  ASSIGN_OR_RETURN(Node * a, ctx.Input(0, "A"));
  ASSIGN_OR_RETURN(Node * b, ctx.Input(1, "B"));
  if (trans_a != 0) {
    ASSIGN_OR_RETURN(a, ctx.Call("transpose", {a, int64_t{0}, int64_t{1}}));
  }
  const bool has_c = ctx.HasInput(2) && beta != 0.0f;
  const Dim n = trans_b != 0 ? tb.shape[0] : tb.shape[1];
  bool c_is_bias = false;
  if (has_c && trans_b != 0 && alpha == 1.0f && beta == 1.0f) {
    ASSIGN_OR_RETURN(TensorType tc, ctx.InputType(2));
    // linear's bias is [N]; a scalar C is added instead.
    c_is_bias = tc.rank() == 1 && tc.shape[0] == n;
  }
  Node* y;
  if (trans_b != 0) {
    Argument bias;
    if (c_is_bias) {
      ASSIGN_OR_RETURN(Node * c, ctx.Input(2, "C"));
      bias = c;
    }
    ASSIGN_OR_RETURN(y, ctx.Call("linear", {a, b, bias}));
  } else {
    ASSIGN_OR_RETURN(y, ctx.Call("matmul", {a, b}));
  }
  if (alpha != 1.0f) {
    ASSIGN_OR_RETURN(y, ctx.Call("mul", {y, static_cast<double>(alpha)}));
  }
  if (has_c && !c_is_bias) {
    ASSIGN_OR_RETURN(Argument c, ctx.NodeOrScalar(2, 2));
    if (beta != 1.0f) {
      if (c.is_node()) {
        ASSIGN_OR_RETURN(Node * scaled,
                         ctx.Call("mul", {c, static_cast<double>(beta)}));
        c = scaled;
      } else {
        c = Argument(c.number() * static_cast<double>(beta));
      }
    }
    ASSIGN_OR_RETURN(y, ctx.Call("add", {y, c}));
  }
  return ctx.SetOutput(0, y);
}

// From opset 13 over one axis (default -1). Before, the input is seen as
// 2-D, [dims before axis, dims from axis on] (default axis 1), and each
// row normalized: over every dim from axis on, written out with
// reductions over those dims (no reshape, so any dims may be symbolic).
absl::Status ConvertSoftmax(NodeContext& ctx) {
  const bool over_one_axis = ctx.opset() >= 13;
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", over_one_axis ? -1 : 1));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  const char* op = ctx.op_type() == "Softmax" ? "softmax" : "log_softmax";
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  int64_t a = tx.rank() - 1;
  if (!over_one_axis && tx.rank() > 0) {
    ASSIGN_OR_RETURN(a, NormalizeAxis(axis, tx.rank()));
  }
  if (a >= tx.rank() - 1) {
    ASSIGN_OR_RETURN(Node * y, ctx.Call(op, {x, axis}));
    return ctx.SetOutput(0, y);
  }
  std::vector<int64_t> dims;
  for (int64_t d = a; d < tx.rank(); ++d) dims.push_back(d);
  ASSIGN_OR_RETURN(Node * top, ctx.Call("amax", {x, Argument::IntList(dims), true}));
  ASSIGN_OR_RETURN(Node * shifted, ctx.Call("sub", {x, top}));
  ASSIGN_OR_RETURN(Node * exps, ctx.Call("exp", {shifted}));
  ASSIGN_OR_RETURN(Node * sums, ctx.Call("sum", {exps, Argument::IntList(dims), true}));
  Node* y;
  if (ctx.op_type() == "Softmax") {
    ASSIGN_OR_RETURN(y, ctx.Call("div", {exps, sums}));
  } else {
    ASSIGN_OR_RETURN(Node * logs, ctx.Call("log", {sums}));
    ASSIGN_OR_RETURN(y, ctx.Call("sub", {shifted, logs}));
  }
  return ctx.SetOutput(0, y);
}

absl::Status ConvertBatchNorm(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float eps, ctx.attrs().Float("epsilon", 1e-5f));
  if (ctx.opset() >= 14) {
    ASSIGN_OR_RETURN(int64_t training, ctx.attrs().Int("training_mode", 0));
    if (training != 0) {
      return NodeContext::Unsupported(
          "training_mode=1 is not supported (graft imports models for "
          "inference)");
    }
  }
  if (ctx.opset() < 9) {
    ASSIGN_OR_RETURN(int64_t spatial, ctx.attrs().Int("spatial", 1));
    if (spatial != 1) {
      return NodeContext::Unsupported(
          "spatial=0 (statistics per element rather than per channel) is not supported");
    }
  }
  RETURN_IF_ERROR(ctx.RequireUnused(1, "running_mean"));
  RETURN_IF_ERROR(ctx.RequireUnused(2, "running_var"));
  std::vector<Node*> in;
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (int i = 0; i < 5; ++i) {
    ASSIGN_OR_RETURN(Node * n, ctx.Input(i, names[i]));
    in.push_back(n);
  }
  ASSIGN_OR_RETURN(Node * y,
                   ctx.Call("batch_norm", {in[0], in[3], in[4], in[1], in[2],
                                           static_cast<double>(eps)}));
  return ctx.SetOutput(0, y);
}

absl::Status ConvertLayerNorm(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", -1));
  ASSIGN_OR_RETURN(float eps, ctx.attrs().Float("epsilon", 1e-5f));
  RETURN_IF_ERROR(ctx.RequireUnused(1, "Mean"));
  RETURN_IF_ERROR(ctx.RequireUnused(2, "InvStdDev"));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, tx.rank()));
  TensorType tail{tx.dtype, Shape(tx.shape.begin() + a, tx.shape.end())};
  ASSIGN_OR_RETURN(std::vector<int64_t> normalized,
                   StaticDimsOf(tail, "the normalized dims"));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * scale, ctx.Input(1, "Scale"));
  Argument bias;
  if (ctx.HasInput(2)) {
    ASSIGN_OR_RETURN(Node * b, ctx.Input(2, "B"));
    bias = b;
  }
  ASSIGN_OR_RETURN(
      Node * y, ctx.Call("layer_norm", {x, Argument::IntList(normalized), scale,
                                        bias, static_cast<double>(eps)}));
  return ctx.SetOutput(0, y);
}

// x normalized over its dims from 2 on (biased variance), separately for
// each [n, c]: layer_norm over those dims.
absl::StatusOr<Node*> NormalizeTrailingDims(NodeContext& ctx, Node* x, double eps) {
  ASSIGN_OR_RETURN(TensorType t, ctx.TypeOf(x));
  if (t.rank() < 3) {
    return NodeContext::Invalid(
        absl::StrCat("input ", t.ToString(), " must have a batch, a channel and spatial dims"));
  }
  TensorType tail{t.dtype, Shape(t.shape.begin() + 2, t.shape.end())};
  ASSIGN_OR_RETURN(std::vector<int64_t> normalized, StaticDimsOf(tail, "the normalized dims"));
  return ctx.Call("layer_norm", {x, Argument::IntList(normalized), Argument(), Argument(), eps});
}

// scale * x + bias with scale and bias [C] applied along dim 1 of a
// rank-`rank` value.
absl::StatusOr<Node*> PerChannelAffine(NodeContext& ctx, Node* x, int64_t rank, int scale_input,
                                       int bias_input) {
  std::vector<int64_t> shape(rank - 1, 1);
  shape[0] = -1;
  for (int i : {scale_input, bias_input}) {
    if (!ctx.HasInput(i)) continue;
    ASSIGN_OR_RETURN(Node * v, ctx.Input(i, i == scale_input ? "scale" : "B"));
    ASSIGN_OR_RETURN(v, ctx.Call("reshape", {v, Argument::IntList(shape)}));
    ASSIGN_OR_RETURN(x, ctx.Call(i == scale_input ? "mul" : "add", {x, v}));
  }
  return x;
}

absl::Status ConvertInstanceNorm(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float eps, ctx.attrs().Float("epsilon", 1e-5f));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "input"));
  ASSIGN_OR_RETURN(Node * y, NormalizeTrailingDims(ctx, x, eps));
  ASSIGN_OR_RETURN(y, PerChannelAffine(ctx, y, tx.rank(), 1, 2));
  return ctx.SetOutput(0, y);
}

// Local response normalization across channels (AlexNet, GoogLeNet):
// x / (bias + alpha / size * s)^beta, s the sum of squares over the size
// channels around each one (floor((size - 1) / 2) before it, the rest
// after). The sum is a convolution of the zero-padded squares, seen as
// [N, 1, C, spatial], with a [size, 1] kernel of ones.
absl::Status ConvertLrn(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float alpha, ctx.attrs().Float("alpha", 1e-4f));
  ASSIGN_OR_RETURN(float beta, ctx.attrs().Float("beta", 0.75f));
  ASSIGN_OR_RETURN(float bias, ctx.attrs().Float("bias", 1.0f));
  ASSIGN_OR_RETURN(std::optional<int64_t> size, ctx.attrs().OptionalInt("size"));
  if (!size.has_value() || *size < 1) return NodeContext::Invalid("needs a size of at least 1");
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  if (tx.rank() < 3 || !IsFloatingPoint(tx.dtype)) {
    return NodeContext::Invalid(absl::StrCat("input ", tx.ToString(),
                                             " must be floats of [N, C, spatial dims]"));
  }
  if (!tx.shape[1].is_constant()) {
    return NodeContext::Unsupported(absl::StrCat("LRN over the symbolic channels of ", tx.ToString()));
  }
  // A window past every channel sums them all: no wider than that.
  const int64_t channels = tx.shape[1].value();
  const int64_t before = std::min((*size - 1) / 2, channels - 1);
  const int64_t after = std::min(*size - 1 - (*size - 1) / 2, channels - 1);
  const int64_t window = before + after + 1;
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * squares, ctx.Call("mul", {x, x}));
  ASSIGN_OR_RETURN(Node * planes, ctx.Call("unsqueeze", {squares, int64_t{1}}));
  ASSIGN_OR_RETURN(planes, ctx.Call("flatten", {planes, int64_t{3}, int64_t{-1}}));
  ASSIGN_OR_RETURN(planes, ctx.Call("pad", {planes, Argument::IntList({0, 0, before, after}),
                                            "constant", 0.0}));
  Tensor ones(tx.dtype, {1, 1, window, 1});
  for (int64_t i = 0; i < window; ++i) ones.SetFromDouble(i, 1.0);
  ASSIGN_OR_RETURN(Node * kernel, ctx.ConstantNode(std::move(ones), "window"));
  ASSIGN_OR_RETURN(Node * sums, ctx.Call("conv2d", {planes, kernel}));
  ASSIGN_OR_RETURN(sums, ReshapeTo(ctx, sums, tx.shape));
  ASSIGN_OR_RETURN(Node * scaled,
                   ctx.Call("mul", {sums, static_cast<double>(alpha) / static_cast<double>(*size)}));
  ASSIGN_OR_RETURN(scaled, ctx.Call("add", {scaled, static_cast<double>(bias)}));
  ASSIGN_OR_RETURN(Node * divisor, ctx.Call("pow", {scaled, static_cast<double>(beta)}));
  ASSIGN_OR_RETURN(Node * y, ctx.Call("div", {x, divisor}));
  return ctx.SetOutput(0, y);
}

// The channels in num_groups groups, each normalized over its channels and
// the spatial dims; scale and bias per group (opsets 18 to 20) or per
// channel (opset 21, and some exporters at 18).
absl::Status ConvertGroupNorm(NodeContext& ctx) {
  ASSIGN_OR_RETURN(float eps, ctx.attrs().Float("epsilon", 1e-5f));
  ASSIGN_OR_RETURN(std::optional<int64_t> num_groups, ctx.attrs().OptionalInt("num_groups"));
  if (!num_groups.has_value()) return NodeContext::Invalid("attribute 'num_groups' is missing");
  const int64_t groups = *num_groups;
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, StaticDimsOf(tx, "GroupNormalization's input"));
  if (dims.size() < 3 || groups < 1 || dims[1] % groups != 0) {
    return NodeContext::Invalid(absl::StrCat("num_groups ", groups, " must divide the channels of ",
                                             tx.ToString(), " (a batch, channels, spatial dims)"));
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * grouped,
                   ctx.Call("reshape", {x, Argument::IntList({dims[0], groups, -1})}));
  ASSIGN_OR_RETURN(Node * y, NormalizeTrailingDims(ctx, grouped, eps));
  // Opsets 18 to 20 define scale and bias per group, 21 per channel; some
  // exporters write per channel at 18 too. Their length says which.
  ASSIGN_OR_RETURN(TensorType ts, ctx.InputType(1));
  const int64_t n = ts.rank() == 1 && ts.shape[0].is_constant() ? ts.shape[0].value() : -1;
  if (n != groups && n != dims[1]) {
    return NodeContext::Invalid(absl::StrCat("scale ", ts.ToString(), " must have num_groups (", groups,
                                             ") or channels (", dims[1], ") entries"));
  }
  if (n == groups) {
    ASSIGN_OR_RETURN(y, PerChannelAffine(ctx, y, 3, 1, 2));
    ASSIGN_OR_RETURN(y, ctx.Call("reshape", {y, Argument::IntList(dims)}));
  } else {
    ASSIGN_OR_RETURN(y, ctx.Call("reshape", {y, Argument::IntList(dims)}));
    ASSIGN_OR_RETURN(y, PerChannelAffine(ctx, y, tx.rank(), 1, 2));
  }
  return ctx.SetOutput(0, y);
}

// Inference: the input unchanged, and a mask of all true.
absl::Status ConvertDropout(NodeContext& ctx) {
  // Before opset 12 the ratio is an attribute and there is no training
  // mode: the node only ever runs as inference.
  if (ctx.opset() < 12) ctx.attrs().Ignore("ratio");
  if (ctx.HasInput(2)) {
    // A bool tensor by the standard (as PyTorch exports it), a number in
    // some writers' files. In training mode a ratio of 0 still passes the
    // input through (torchvision's Swin calls dropout with training left
    // on and p = 0).
    auto constant_zero = [&](int i) {
      std::optional<Argument> v = ctx.ScalarLiteral(i);
      return v.has_value() && (v->is_bool() ? !v->bool_value() : v->is_number() && v->number() == 0);
    };
    if (!constant_zero(2) && !(ctx.HasInput(1) && constant_zero(1))) {
      return NodeContext::Unsupported(
          "training_mode must be a constant false, or the ratio a constant 0 (graft imports "
          "models for inference)");
    }
  }
  if (ctx.OutputUsed(1)) {
    ASSIGN_OR_RETURN(TensorType t, ctx.InputType(0));
    ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                     StaticDimsOf(t, "the mask output"));
    // A bool mask from opset 10; before, of the input's type.
    ASSIGN_OR_RETURN(Node * mask,
                     ctx.opset() >= 10
                         ? ctx.Call("full", {Argument::IntList(dims), true}, {{"dtype", DType::kBool}})
                         : ctx.Call("full", {Argument::IntList(dims), 1.0}, {{"dtype", t.dtype}}));
    RETURN_IF_ERROR(ctx.SetOutput(1, mask));
  }
  return ctx.AliasOutput(0, 0);
}

}  // namespace

void AddNnConverters(std::vector<OpConverter>& table) {
  table.push_back({.op_type = "MatMul", .convert = ConvertMatMul});
  table.push_back({.op_type = "Gemm", .convert = ConvertGemm});
  table.push_back({.op_type = "Conv", .convert = ConvertConv});
  table.push_back({.op_type = "MaxPool",
                   .convert = ConvertMaxPool,
                   .ignored_attributes = {"storage_order"}});
  table.push_back({.op_type = "AveragePool", .convert = ConvertAveragePool});
  table.push_back(
      {.op_type = "GlobalAveragePool", .convert = ConvertGlobalPool});
  table.push_back({.op_type = "GlobalMaxPool", .convert = ConvertGlobalPool});
  table.push_back({.op_type = "Softmax", .convert = ConvertSoftmax});
  table.push_back({.op_type = "LogSoftmax", .convert = ConvertSoftmax});
  table.push_back({.op_type = "BatchNormalization",
                   .convert = ConvertBatchNorm,
                   .ignored_attributes = {"momentum"}});
  table.push_back({.op_type = "LayerNormalization",
                   .convert = ConvertLayerNorm,
                   .ignored_attributes = {"stash_type"}});
  table.push_back({.op_type = "InstanceNormalization", .convert = ConvertInstanceNorm});
  table.push_back({.op_type = "LRN", .convert = ConvertLrn});
  table.push_back({.op_type = "GroupNormalization",
                   .convert = ConvertGroupNorm,
                   .ignored_attributes = {"stash_type"}});
  table.push_back({.op_type = "Dropout",
                   .convert = ConvertDropout,
                   .ignored_attributes = {"seed"}});
}

}  // namespace graft::onnx_import
