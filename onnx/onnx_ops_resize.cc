// Resize (nearest, linear and cubic; every coordinate transformation but
// tf_crop_and_resize) as what every backend runs already: each resized
// dim in turn becomes a weighted sum of index_selects along it. Output
// position o of a dim reads the input at a few positions ("taps") with
// weights that depend only on o, so they are worked out here, at import
// time: one tap of weight 1 for nearest, two for linear, four for cubic.
// The arithmetic of the source coordinate follows ONNX Runtime's (in f32),
// so that positions exactly between two pixels round as it does.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_ops.h"
#include "support/status_macros.h"
#include "onnx/onnx_ops_util.h"

namespace graft::onnx_import {
namespace {

// The most entries a resized dim's taps may have in all: each tap's
// indices and weights are tables made at import, one entry a position (so
// nearest resizes to at most 4M positions, linear 2M, cubic 1M). More
// takes seconds to import.
constexpr int64_t kMaxResizeTaps = int64_t{1} << 22;

struct ResizeParams {
  std::string mode;         // nearest, linear, cubic.
  std::string coordinates;  // coordinate_transformation_mode.
  std::string nearest_mode;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
};

// What one output dim reads: taps[t].index[o] with taps[t].weight[o].
struct Tap {
  std::vector<int64_t> index;
  std::vector<double> weight;
};

// The input coordinate output position o maps to.
float SourceCoordinate(const ResizeParams& p, int64_t o, int64_t in, int64_t out, float scale) {
  const float x = static_cast<float>(o);
  if (p.coordinates == "asymmetric") return x / scale;
  if (p.coordinates == "tf_half_pixel_for_nn") return (x + 0.5f) / scale;
  if (p.coordinates == "align_corners") {
    return out == 1 ? 0.0f : x * static_cast<float>(in - 1) / static_cast<float>(out - 1);
  }
  if (p.coordinates == "pytorch_half_pixel" && out == 1) return 0.0f;
  if (p.coordinates == "half_pixel_symmetric") {
    const float adjustment = static_cast<float>(out) / (scale * static_cast<float>(in));
    const float center = static_cast<float>(in) / 2;
    return center * (1 - adjustment) + (x + 0.5f) / scale - 0.5f;
  }
  return (x + 0.5f) / scale - 0.5f;  // half_pixel, pytorch_half_pixel.
}

// "simple" is Upsample's and Resize-10's rule (before nearest_mode), as
// ONNX Runtime keeps it: down when enlarging, up when shrinking.
int64_t NearestIndex(const std::string& mode, float x, float scale) {
  const float f = std::floor(x);
  if (mode == "floor" || (mode == "simple" && scale >= 1)) return static_cast<int64_t>(f);
  if (mode == "ceil" || mode == "simple") return static_cast<int64_t>(std::ceil(x));
  if (x - f == 0.5f) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

// Keys's cubic convolution weights of the four taps around x (t = x -
// floor(x)), as ONNX Runtime computes them.
std::vector<double> CubicWeights(double t, double a) {
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

std::vector<Tap> TapsOf(const ResizeParams& p, int64_t in, int64_t out, float scale) {
  const int count = p.mode == "nearest" ? 1 : p.mode == "linear" ? 2 : 4;
  std::vector<Tap> taps(count);
  auto clamp = [in](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    float x = SourceCoordinate(p, o, in, out, scale);
    if (p.mode == "nearest") {
      taps[0].index.push_back(clamp(NearestIndex(p.nearest_mode, x, scale)));
      taps[0].weight.push_back(1);
    } else if (p.mode == "linear") {
      x = std::max(0.0f, std::min(x, static_cast<float>(in - 1)));
      const int64_t x1 = std::min(static_cast<int64_t>(x), in - 1);
      const int64_t x2 = std::min(x1 + 1, in - 1);
      const double w2 = x1 == x2 ? 0.5 : x - static_cast<float>(x1);
      taps[0].index.push_back(x1);
      taps[0].weight.push_back(x1 == x2 ? 0.5 : 1 - w2);
      taps[1].index.push_back(x2);
      taps[1].weight.push_back(w2);
    } else {
      const float base = std::floor(x);
      std::vector<double> w = CubicWeights(x - base, p.cubic_a);
      double kept = 0;
      for (int t = 0; t < 4; ++t) {
        const int64_t i = static_cast<int64_t>(base) - 1 + t;
        if (p.exclude_outside && (i < 0 || i >= in)) w[t] = 0;
        kept += w[t];
        taps[t].index.push_back(clamp(i));
      }
      for (int t = 0; t < 4; ++t) {
        taps[t].weight.push_back(p.exclude_outside && kept != 0 ? w[t] / kept : w[t]);
      }
    }
  }
  return taps;
}

// The most taps an antialiased shrink may have per output position: each is
// an index_select of the whole value.
constexpr int64_t kMaxAntialiasTaps = 64;

// Linear's triangle and Keys's cubic kernel, as antialiasing scales them.
float AntialiasKernel(const ResizeParams& p, float x) {
  x = std::fabs(x);
  if (p.mode == "linear") return x < 1 ? 1 - x : 0;
  const float a = p.cubic_a;
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

// Shrinking with antialias=1 (opset 18), as ONNX Runtime does (after
// Pillow): the kernel stretched by in / out, so that each output averages
// every input it covers (linear reads about 2 in / out positions, cubic
// 4 in / out), over the window around the output's center; positions
// outside the input repeat its edge, or with exclude_outside are left out;
// the weights normalized to sum to 1. In f32, as ONNX Runtime.
absl::StatusOr<std::vector<Tap>> AntialiasTapsOf(const ResizeParams& p, int64_t in, int64_t out, float scale) {
  const float support = (p.mode == "linear" ? 1.0f : 2.0f) / scale;
  // Checked as a float first: a huge one does not convert.
  const int64_t width = support <= kMaxAntialiasTaps ? static_cast<int64_t>(std::ceil(support)) * 2 + 1
                                                     : kMaxAntialiasTaps + 1;
  if (width > kMaxAntialiasTaps) {
    return NodeContext::Unsupported(absl::StrCat("antialiased ", p.mode, " shrinking by ", 1 / scale,
                                                 " is not supported (at most ", kMaxAntialiasTaps,
                                                 " input positions an output)"));
  }
  if (width * out > kMaxResizeTaps) {
    return NodeContext::Unsupported(absl::StrCat("antialiased shrinking to ", out, " positions with ", width,
                                                 " taps each is not supported (at most ", kMaxResizeTaps,
                                                 " taps in all: they are tables made at import)"));
  }
  std::vector<Tap> taps(width);
  for (int64_t o = 0; o < out; ++o) {
    const float center = SourceCoordinate(p, o, in, out, scale) + 0.5f;
    int64_t lo = static_cast<int64_t>(std::floor(center - support + 0.5f));
    int64_t hi = static_cast<int64_t>(std::floor(center + support + 0.5f));
    hi = lo + std::clamp<int64_t>(hi - lo, 0, width);
    if (p.exclude_outside) {
      lo = std::clamp<int64_t>(lo, 0, in);
      hi = std::clamp<int64_t>(hi, 0, in);
    }
    std::vector<float> w(width, 0.0f);
    float total = 0;
    for (int64_t t = 0; t < hi - lo; ++t) {
      w[t] = static_cast<float>(AntialiasKernel(p, (static_cast<float>(t + lo) - center + 0.5f) * scale));
      total += w[t];
    }
    const float inverse = total == 0 ? 1.0f : 1.0f / total;
    for (int64_t t = 0; t < width; ++t) {
      taps[t].index.push_back(std::clamp<int64_t>(lo + t, 0, in - 1));
      taps[t].weight.push_back(w[t] * inverse);
    }
  }
  return taps;
}

// x resized along `axis` from `in` to `out`.
absl::StatusOr<Node*> ResizeDim(NodeContext& ctx, const ResizeParams& p, Node* x,
                                const TensorType& tx, int64_t axis, int64_t in, int64_t out,
                                float scale, bool antialias) {
  Node* sum = nullptr;
  std::vector<Tap> taps;
  if (antialias && p.mode != "nearest" && out < in) {
    ASSIGN_OR_RETURN(taps, AntialiasTapsOf(p, in, out, scale));
  } else {
    taps = TapsOf(p, in, out, scale);
  }
  for (const Tap& tap : taps) {
    bool all_zero = true, all_one = true;
    for (double w : tap.weight) {
      all_zero = all_zero && w == 0;
      all_one = all_one && w == 1;
    }
    if (all_zero) continue;
    ASSIGN_OR_RETURN(Node * index, I64Constant(ctx, {out}, tap.index, "index"));
    ASSIGN_OR_RETURN(Node * term, ctx.Call("index_select", {x, axis, index}));
    if (!all_one) {
      std::vector<int64_t> dims(tx.rank() - axis, 1);
      dims[0] = out;
      Tensor weight(tx.dtype, dims);
      for (int64_t o = 0; o < out; ++o) weight.SetFromDouble(o, tap.weight[o]);
      ASSIGN_OR_RETURN(Node * w, ctx.ConstantNode(std::move(weight), "weight"));
      ASSIGN_OR_RETURN(term, ctx.Call("mul", {term, w}));
    }
    if (sum == nullptr) {
      sum = term;
    } else {
      ASSIGN_OR_RETURN(sum, ctx.Call("add", {sum, term}));
    }
  }
  if (sum == nullptr) return NodeContext::Invalid("every weight of the resize is zero");
  return sum;
}

// Upsample (opsets 7 to 9) and Resize before opset 11: nearest or linear,
// from input positions x / scale, with no further attributes.
bool IsLegacyResize(NodeContext& ctx) { return ctx.op_type() == "Upsample" || ctx.opset() < 11; }

absl::StatusOr<ResizeParams> ReadParams(NodeContext& ctx) {
  ResizeParams p;
  ASSIGN_OR_RETURN(p.mode, ctx.attrs().String("mode", "nearest"));
  if (IsLegacyResize(ctx)) {
    if (p.mode != "nearest" && p.mode != "linear") {
      return NodeContext::Invalid(absl::StrCat("mode \"", p.mode, "\" is not nearest or linear"));
    }
    p.coordinates = "asymmetric";
    p.nearest_mode = "simple";
    return p;
  }
  ASSIGN_OR_RETURN(p.coordinates, ctx.attrs().String("coordinate_transformation_mode", "half_pixel"));
  ASSIGN_OR_RETURN(p.nearest_mode, ctx.attrs().String("nearest_mode", "round_prefer_floor"));
  ASSIGN_OR_RETURN(p.cubic_a, ctx.attrs().Float("cubic_coeff_a", -0.75f));
  ASSIGN_OR_RETURN(int64_t exclude, ctx.attrs().Int("exclude_outside", 0));
  ASSIGN_OR_RETURN(float extrapolation, ctx.attrs().Float("extrapolation_value", 0.0f));
  (void)extrapolation;  // Only tf_crop_and_resize reads it.
  p.exclude_outside = exclude != 0;
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic") {
    return NodeContext::Invalid(absl::StrCat("mode \"", p.mode, "\" is not nearest, linear or cubic"));
  }
  for (const char* known : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                            "align_corners", "asymmetric", "tf_half_pixel_for_nn"}) {
    if (p.coordinates == known) return p;
  }
  if (p.coordinates == "tf_crop_and_resize") {
    return NodeContext::Unsupported("coordinate_transformation_mode \"tf_crop_and_resize\" is not supported");
  }
  return NodeContext::Invalid(
      absl::StrCat("unknown coordinate_transformation_mode \"", p.coordinates, "\""));
}

absl::Status ConvertResize(NodeContext& ctx) {
  ASSIGN_OR_RETURN(ResizeParams p, ReadParams(ctx));
  if (p.nearest_mode != "round_prefer_floor" && p.nearest_mode != "round_prefer_ceil" &&
      p.nearest_mode != "floor" && p.nearest_mode != "ceil" &&
      !(p.nearest_mode == "simple" && IsLegacyResize(ctx))) {
    return NodeContext::Invalid(absl::StrCat("unknown nearest_mode \"", p.nearest_mode, "\""));
  }
  const bool legacy = IsLegacyResize(ctx);
  // Attributes of opset 18's Resize only (so unknown to the older ones).
  int64_t antialias = 0;
  std::string policy = "stretch";
  std::optional<std::vector<int64_t>> axes_attr;
  if (!legacy) {
    ASSIGN_OR_RETURN(antialias, ctx.attrs().Int("antialias", 0));
    ASSIGN_OR_RETURN(policy, ctx.attrs().String("keep_aspect_ratio_policy", "stretch"));
    ASSIGN_OR_RETURN(axes_attr, ctx.attrs().Ints("axes"));
  }
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, StaticDimsOf(tx, "Resize's input"));
  const int64_t rank = tx.rank();
  std::vector<int64_t> axes;
  if (axes_attr.has_value()) {
    for (int64_t a : *axes_attr) {
      ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, rank));
      axes.push_back(n);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  // Scales (input 2) or sizes (input 3), one per axis; before opset 11
  // scales only, input 1 (Upsample's attribute before opset 9).
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  const int scales_index = legacy ? 1 : 2;
  if (legacy && ctx.num_inputs() > 2) {
    return NodeContext::Invalid(absl::StrCat("takes X and scales only at opset ", ctx.opset()));
  }
  const Tensor* scale_input = ctx.HasInput(scales_index) ? ctx.Constant(scales_index) : nullptr;
  if (ctx.HasInput(scales_index) && scale_input == nullptr) {
    return NodeContext::Unsupported("scales computed at run time are not supported");
  }
  if (ctx.op_type() == "Upsample" && ctx.opset() < 9) {
    ASSIGN_OR_RETURN(std::optional<std::vector<float>> attr, ctx.attrs().Floats("scales"));
    if (!attr.has_value() || ctx.num_inputs() > 1) {
      return NodeContext::Invalid("Upsample takes the attribute scales before opset 9");
    }
    scales = *attr;
  } else if (scale_input != nullptr && scale_input->NumElements() > 0) {
    for (int64_t i = 0; i < scale_input->NumElements(); ++i) {
      scales.push_back(static_cast<float>(scale_input->GetAsDouble(i)));
    }
  } else if (legacy) {
    return NodeContext::Invalid("needs scales");
  }
  if (ctx.op_type() == "Upsample") {
    for (float scale : scales) {
      if (!(scale >= 1)) return NodeContext::Invalid(absl::StrCat("Upsample's scale ", scale, " is below 1"));
    }
  }
  if (!scales.empty()) {
    if (scales.size() != axes.size()) {
      return NodeContext::Invalid(absl::StrCat("scales has ", scales.size(), " values for ",
                                               axes.size(), " axes"));
    }
  } else {
    if (!ctx.HasInput(3)) return NodeContext::Invalid("needs scales or sizes");
    ASSIGN_OR_RETURN(sizes, ctx.ConstantInts(3, "the sizes input"));
    if (sizes.size() != axes.size()) {
      return NodeContext::Invalid(absl::StrCat("sizes has ", sizes.size(), " values for ",
                                               axes.size(), " axes"));
    }
    if (policy != "stretch") {
      // One scale for every axis, the smaller or larger of the asked ones.
      float common = policy == "not_larger" ? INFINITY : 0;
      for (size_t k = 0; k < axes.size(); ++k) {
        const float s = static_cast<float>(sizes[k]) / static_cast<float>(dims[axes[k]]);
        common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
      }
      for (size_t k = 0; k < axes.size(); ++k) {
        const float size = std::round(common * static_cast<float>(dims[axes[k]]));
        if (!(size >= 0 && size < static_cast<float>(kMaxImportTable))) {
          return NodeContext::Invalid(absl::StrCat("sizes ", IntsToString(sizes),
                                                   " give no usable common scale"));
        }
        sizes[k] = static_cast<int64_t>(size);
        scales.push_back(common);
      }
    }
  }
  // Without keep_aspect_ratio_policy, sizes give each axis its own scale.
  if (!sizes.empty() && scales.empty()) {
    for (size_t k = 0; k < axes.size(); ++k) {
      scales.push_back(static_cast<float>(sizes[k]) / static_cast<float>(dims[axes[k]]));
    }
  }
  ASSIGN_OR_RETURN(Node * y, ctx.Input(0, "X"));
  TensorType ty = tx;
  bool changed = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k], in = dims[a];
    const float scale = scales[k];
    // A scale from a malformed model may be huge, infinite or NaN: checked
    // before any conversion to an integer.
    const float scaled = static_cast<float>(in) * scale;
    if (sizes.empty() && !(scaled < static_cast<float>(kMaxImportTable))) {
      return NodeContext::Invalid(absl::StrCat("cannot resize dim ", a, " of ", tx.ToString(),
                                               " by scale ", scale));
    }
    const int64_t out = !sizes.empty() ? sizes[k] : static_cast<int64_t>(std::floor(scaled));
    if (out < 1 || out > kMaxImportTable || !(scale > 0) || in < 1) {
      return NodeContext::Invalid(absl::StrCat("cannot resize dim ", a, " of ", tx.ToString(),
                                               " to ", out, " (scale ", scale, ")"));
    }
    if (out == in && scale == 1) continue;
    const int64_t taps = p.mode == "nearest" ? 1 : p.mode == "linear" ? 2 : 4;
    if (out * taps > kMaxResizeTaps) {
      return NodeContext::Unsupported(absl::StrCat("resizing dim ", a, " of ", tx.ToString(), " to ", out,
                                                   " positions is not supported (at most ", kMaxResizeTaps / taps,
                                                   " in ", p.mode, " mode: its taps are tables made at import)"));
    }
    if (p.mode != "nearest" && !IsFloatingPoint(tx.dtype)) {
      return NodeContext::Unsupported(absl::StrCat(p.mode, " resizing of ", DTypeName(tx.dtype),
                                                   " values is not supported"));
    }
    ASSIGN_OR_RETURN(y, ResizeDim(ctx, p, y, ty, a, in, out, scale, antialias != 0));
    ASSIGN_OR_RETURN(ty, ctx.TypeOf(y));
    changed = true;
  }
  if (!changed) return ctx.AliasOutput(0, 0);
  return ctx.SetOutput(0, y);
}

}  // namespace

void AddResizeConverters(std::vector<OpConverter>& table) {
  // roi is read only by tf_crop_and_resize, which is refused.
  table.push_back({.op_type = "Resize", .convert = ConvertResize});
  // What Resize replaced: opsets 7 to 9 (deprecated from 10).
  table.push_back({.op_type = "Upsample", .convert = ConvertResize});
}

}  // namespace graft::onnx_import
