// GridSample (opset 16; 20's mode names too) on 4-D inputs: each output
// pixel reads the input at a position the grid gives at run time, so the
// reads are gathers of run-time indices: the input's planes flattened to
// [N, C, H * W], one gather per tap (one for nearest, four for bilinear),
// each weighted and, with zeros padding, masked where the tap falls
// outside the input (border and reflection padding move positions inside). Coordinates follow ONNX's (and PyTorch's)
// definition: with align_corners, -1 and 1 are the centres of the corner
// pixels; without, their outer edges.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"

namespace graft::onnx_import {
namespace {

struct Sampling {
  bool bilinear = true;
  // Outside the input: taps read zeros; or positions are clamped into it
  // (border), after being mirrored at its edges until inside (reflection).
  enum class Padding { kZeros, kBorder, kReflection } padding = Padding::kZeros;
  bool align_corners = false;
};

absl::StatusOr<Sampling> ReadSampling(NodeContext& ctx) {
  Sampling s;
  ASSIGN_OR_RETURN(int64_t align, ctx.attrs().Int("align_corners", 0));
  ASSIGN_OR_RETURN(std::string mode, ctx.attrs().String("mode", ctx.opset() >= 20 ? "linear" : "bilinear"));
  ASSIGN_OR_RETURN(std::string padding, ctx.attrs().String("padding_mode", "zeros"));
  s.align_corners = align != 0;
  if (mode == "nearest") {
    s.bilinear = false;
  } else if (mode != "bilinear" && mode != "linear") {
    return NodeContext::Unsupported(absl::StrCat("mode \"", mode, "\" is not supported (bilinear, nearest)"));
  }
  if (padding == "border") {
    s.padding = Sampling::Padding::kBorder;
  } else if (padding == "reflection") {
    s.padding = Sampling::Padding::kReflection;
  } else if (padding != "zeros") {
    return NodeContext::Invalid(
        absl::StrCat("unknown padding_mode \"", padding, "\" (zeros, border, reflection)"));
  }
  return s;
}

class GridSampler {
 public:
  GridSampler(NodeContext& ctx, const Sampling& s, Node* planes, int64_t channels)
      : ctx_(ctx), s_(s), planes_(planes), channels_(channels) {}

  // Grid coordinate g (in [-1, 1]) as a position along a dim of n pixels.
  absl::StatusOr<Node*> Position(Node* g, int64_t n) {
    const double size = static_cast<double>(n);
    Node* p;
    if (s_.align_corners) {  // (g + 1) / 2 * (n - 1)
      ASSIGN_OR_RETURN(p, ctx_.Call("add", {g, 1.0}));
      ASSIGN_OR_RETURN(p, ctx_.Call("mul", {p, (size - 1) / 2}));
    } else {  // ((g + 1) * n - 1) / 2
      ASSIGN_OR_RETURN(p, ctx_.Call("add", {g, 1.0}));
      ASSIGN_OR_RETURN(p, ctx_.Call("mul", {p, size / 2}));
      ASSIGN_OR_RETURN(p, ctx_.Call("sub", {p, 0.5}));
    }
    // A NaN position reads nothing: far outside (zeros) or the first pixel
    // (border), rather than an index no gather takes.
    ASSIGN_OR_RETURN(Node * nan, ctx_.Call("ne", {p, p}));
    ASSIGN_OR_RETURN(p, ctx_.Call("where", {nan, -2.0, p}));
    if (s_.padding == Sampling::Padding::kReflection) {
      // Between the corner pixels' centres, or their outer edges.
      ASSIGN_OR_RETURN(p, Reflect(p, s_.align_corners ? 0.0 : -0.5, s_.align_corners ? size - 1 : size - 0.5));
    }
    if (s_.padding != Sampling::Padding::kZeros) {
      ASSIGN_OR_RETURN(p, ctx_.Call("clamp", {p, 0.0, size - 1}));
    }
    return p;
  }

  // p mirrored at lo and hi until it lies between them, as PyTorch does:
  // d = |p - lo| in spans of hi - lo; an even number of whole spans leaves
  // lo + the rest, an odd one hi - the rest.
  absl::StatusOr<Node*> Reflect(Node* p, double lo, double hi) {
    const double span = hi - lo;
    if (span <= 0) return ctx_.Call("mul", {p, 0.0});  // One pixel, with align_corners.
    ASSIGN_OR_RETURN(Node * d, ctx_.Call("sub", {p, lo}));
    ASSIGN_OR_RETURN(d, ctx_.Call("abs", {d}));
    ASSIGN_OR_RETURN(Node * spans, ctx_.Call("div", {d, span}));
    ASSIGN_OR_RETURN(spans, ctx_.Call("floor", {spans}));
    ASSIGN_OR_RETURN(Node * whole, ctx_.Call("mul", {spans, span}));
    ASSIGN_OR_RETURN(Node * rest, ctx_.Call("sub", {d, whole}));
    ASSIGN_OR_RETURN(Node * half, ctx_.Call("mul", {spans, 0.5}));
    ASSIGN_OR_RETURN(Node * half_floor, ctx_.Call("floor", {half}));
    ASSIGN_OR_RETURN(Node * even, ctx_.Call("eq", {half, half_floor}));
    ASSIGN_OR_RETURN(Node * up, ctx_.Call("add", {rest, lo}));
    ASSIGN_OR_RETURN(Node * down, ctx_.Call("neg", {rest}));
    ASSIGN_OR_RETURN(down, ctx_.Call("add", {down, hi}));
    return ctx_.Call("where", {even, up, down});
  }

  // The input at integer positions (y, x) ([N, Ho, Wo], floats), times
  // `weight` where given, as [N, C, Ho * Wo]; zero where the position is
  // outside the input (with zeros padding).
  absl::StatusOr<Node*> Tap(Node* y, Node* x, Node* weight, int64_t height, int64_t width) {
    ASSIGN_OR_RETURN(Node * yc, ctx_.Call("clamp", {y, 0.0, static_cast<double>(height - 1)}));
    ASSIGN_OR_RETURN(Node * xc, ctx_.Call("clamp", {x, 0.0, static_cast<double>(width - 1)}));
    // Whole numbers, combined as integers (f16 holds them only to 2048).
    ASSIGN_OR_RETURN(Node * row, ctx_.Call("cast", {yc, DType::kI64}));
    ASSIGN_OR_RETURN(Node * column, ctx_.Call("cast", {xc, DType::kI64}));
    ASSIGN_OR_RETURN(Node * at, ctx_.Call("mul", {row, width}));
    ASSIGN_OR_RETURN(at, ctx_.Call("add", {at, column}));
    ASSIGN_OR_RETURN(at, Rows(at));
    ASSIGN_OR_RETURN(at, ctx_.Call("expand", {at, Argument::IntList({-1, channels_, -1})}));
    ASSIGN_OR_RETURN(Node * v, ctx_.Call("gather", {planes_, int64_t{2}, at}));
    if (weight != nullptr) {
      ASSIGN_OR_RETURN(Node * w, Rows(weight));
      ASSIGN_OR_RETURN(v, ctx_.Call("mul", {v, w}));
    }
    if (s_.padding != Sampling::Padding::kZeros) return v;
    // Inside: the clamped position is the position.
    ASSIGN_OR_RETURN(Node * same_y, ctx_.Call("eq", {yc, y}));
    ASSIGN_OR_RETURN(Node * same_x, ctx_.Call("eq", {xc, x}));
    ASSIGN_OR_RETURN(Node * inside, ctx_.Call("logical_and", {same_y, same_x}));
    ASSIGN_OR_RETURN(inside, Rows(inside));
    return ctx_.Call("where", {inside, v, 0.0});
  }

 private:
  // [N, Ho, Wo] as [N, 1, Ho * Wo], to meet the channels.
  absl::StatusOr<Node*> Rows(Node* v) {
    ASSIGN_OR_RETURN(Node * flat, ctx_.Call("flatten", {v, int64_t{1}, int64_t{2}}));
    return ctx_.Call("unsqueeze", {flat, int64_t{1}});
  }

  NodeContext& ctx_;
  const Sampling& s_;
  Node* planes_;
  int64_t channels_;
};

absl::Status ConvertGridSample(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Sampling s, ReadSampling(ctx));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(TensorType tg, ctx.InputType(1));
  if (tx.rank() != 4 || tg.rank() != 4 || tg.shape[3] != Dim(2) || !IsFloatingPoint(tx.dtype) ||
      tg.dtype != tx.dtype) {
    return NodeContext::Unsupported(absl::StrCat("GridSample of ", tx.ToString(), " by the grid ", tg.ToString(),
                                                 " is not supported (a float [N, C, H, W] input and a grid "
                                                 "[N, H_out, W_out, 2] of its type)"));
  }
  for (int d = 1; d < 4; ++d) {
    if (!tx.shape[d].is_constant()) {
      return NodeContext::Unsupported(absl::StrCat("GridSample needs static channels, height and width, not ",
                                                   tx.ToString()));
    }
  }
  const int64_t channels = tx.shape[1].value(), height = tx.shape[2].value(), width = tx.shape[3].value();
  if (height == 0 || width == 0) {
    return NodeContext::Invalid(absl::StrCat("GridSample of the empty input ", tx.ToString()));
  }
  if (tx.shape[0].is_constant() && tg.shape[0].is_constant() && tx.shape[0] != tg.shape[0]) {
    return NodeContext::Invalid(absl::StrCat("the grid ", tg.ToString(), " and the input ", tx.ToString(),
                                             " must have one batch"));
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  ASSIGN_OR_RETURN(Node * grid, ctx.Input(1, "grid"));
  ASSIGN_OR_RETURN(Node * planes, ctx.Call("flatten", {x, int64_t{2}, int64_t{3}}));
  GridSampler sampler(ctx, s, planes, channels);
  Node* coords[2];
  for (int64_t k : {0, 1}) {  // x, then y.
    ASSIGN_OR_RETURN(Node * g, ctx.Call("slice", {grid, int64_t{3}, k, k + 1}));
    ASSIGN_OR_RETURN(g, ctx.Call("squeeze", {g, Argument::IntList({3})}));
    ASSIGN_OR_RETURN(coords[k], sampler.Position(g, k == 0 ? width : height));
  }
  Node* out = nullptr;
  if (!s.bilinear) {  // Halves to even, as ONNX and PyTorch round.
    ASSIGN_OR_RETURN(Node * xr, ctx.Call("round", {coords[0]}));
    ASSIGN_OR_RETURN(Node * yr, ctx.Call("round", {coords[1]}));
    ASSIGN_OR_RETURN(out, sampler.Tap(yr, xr, nullptr, height, width));
  } else {
    ASSIGN_OR_RETURN(Node * x0, ctx.Call("floor", {coords[0]}));
    ASSIGN_OR_RETURN(Node * y0, ctx.Call("floor", {coords[1]}));
    ASSIGN_OR_RETURN(Node * x1, ctx.Call("add", {x0, 1.0}));
    ASSIGN_OR_RETURN(Node * y1, ctx.Call("add", {y0, 1.0}));
    ASSIGN_OR_RETURN(Node * wx1, ctx.Call("sub", {coords[0], x0}));
    ASSIGN_OR_RETURN(Node * wy1, ctx.Call("sub", {coords[1], y0}));
    ASSIGN_OR_RETURN(Node * wx0, ctx.Call("neg", {wx1}));
    ASSIGN_OR_RETURN(wx0, ctx.Call("add", {wx0, 1.0}));
    ASSIGN_OR_RETURN(Node * wy0, ctx.Call("neg", {wy1}));
    ASSIGN_OR_RETURN(wy0, ctx.Call("add", {wy0, 1.0}));
    for (auto [yy, wy] : {std::pair{y0, wy0}, std::pair{y1, wy1}}) {
      for (auto [xx, wx] : {std::pair{x0, wx0}, std::pair{x1, wx1}}) {
        ASSIGN_OR_RETURN(Node * w, ctx.Call("mul", {wy, wx}));
        ASSIGN_OR_RETURN(Node * term, sampler.Tap(yy, xx, w, height, width));
        if (out == nullptr) {
          out = term;
        } else {
          ASSIGN_OR_RETURN(out, ctx.Call("add", {out, term}));
        }
      }
    }
  }
  ASSIGN_OR_RETURN(out, ReshapeTo(ctx, out, Shape{tg.shape[0], tx.shape[1], tg.shape[1], tg.shape[2]}));
  return ctx.SetOutput(0, out);
}

}  // namespace

void AddGridSampleConverters(std::vector<OpConverter>& table) {
  table.push_back({.op_type = "GridSample", .convert = ConvertGridSample});
}

}  // namespace graft::onnx_import
