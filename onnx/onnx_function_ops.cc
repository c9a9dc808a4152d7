#include "onnx/onnx_function_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_expansion.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A float constant in the type of `like`.
std::string ConstantLike(NodeExpansion& e, float v, const std::string& like, const std::string& what) {
  return e.AddValue("CastLike", {e.Constant(v, what + "_f32"), like}, what);
}

// --- Attention ----------------------------------------------------------------

struct AttentionShape {
  bool three_d = false;      // [B, S, heads * size] rather than [B, heads, S, size].
  int64_t q_heads = 0, kv_heads = 0;
  int64_t head_size = 0, key_head_size = 0;
};

absl::StatusOr<AttentionShape> ReadAttentionShape(const NodeExpansion& e, const ValueTypeLookup& types) {
  AttentionShape s;
  const onnx::AttributeProto* qh = e.Typed("q_num_heads", onnx::AttributeProto::INT);
  const onnx::AttributeProto* kvh = e.Typed("kv_num_heads", onnx::AttributeProto::INT);
  ASSIGN_OR_RETURN(const int64_t rank, RankOf(types, e.In(0), "Q"));
  s.three_d = rank == 3;
  if ((rank != 3 && rank != 4) || (s.three_d && (qh == nullptr || kvh == nullptr))) {
    return absl::InvalidArgumentError(
        absl::StrCat("Q has rank ", rank, ": 3 with q_num_heads and kv_num_heads both given, or 4"));
  }
  if (s.three_d) {
    s.q_heads = qh->i();
    s.kv_heads = kvh->i();
    if (s.q_heads < 1 || s.kv_heads < 1) return absl::InvalidArgumentError("head counts must be at least 1");
    ASSIGN_OR_RETURN(const int64_t q_hidden, StaticDimOf(types, e.In(0), -1, "Q"));
    ASSIGN_OR_RETURN(const int64_t k_hidden, StaticDimOf(types, e.In(1), -1, "K"));
    if (q_hidden % s.q_heads != 0 || k_hidden % s.kv_heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat("Q's ", q_hidden, " and K's ", k_hidden,
                                                     " columns do not split into ", s.q_heads, " and ",
                                                     s.kv_heads, " heads"));
    }
    s.head_size = q_hidden / s.q_heads;
    s.key_head_size = k_hidden / s.kv_heads;
  } else {
    ASSIGN_OR_RETURN(s.q_heads, StaticDimOf(types, e.In(0), 1, "Q"));
    ASSIGN_OR_RETURN(s.kv_heads, StaticDimOf(types, e.In(1), 1, "K"));
    ASSIGN_OR_RETURN(s.head_size, StaticDimOf(types, e.In(0), 3, "Q"));
    ASSIGN_OR_RETURN(s.key_head_size, StaticDimOf(types, e.In(1), 3, "K"));
  }
  // Heads are repeated by a Concat of that many inputs; no model has more.
  constexpr int64_t kMaxHeads = 1 << 16;
  if (s.q_heads > kMaxHeads || s.kv_heads > kMaxHeads || s.q_heads / std::max<int64_t>(s.kv_heads, 1) > 1024) {
    return absl::InvalidArgumentError(absl::StrCat("head counts ", s.q_heads, " and ", s.kv_heads,
                                                   " are beyond what graft imports (at most 65536 heads, "
                                                   "1024 query heads a key head)"));
  }
  if (s.q_heads % s.kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.q_heads, " query heads are not a multiple of ", s.kv_heads, " key heads"));
  }
  return s;
}

// Each of `kv` [B, kv_heads, T, size]'s heads `repeat` times in place:
// [B, kv_heads * repeat, T, size] (grouped-query attention).
std::string RepeatHeads(NodeExpansion& e, const std::string& kv, int64_t repeat, int64_t q_heads, int64_t size,
                        const std::string& what) {
  const std::string wide = e.AddValue("Unsqueeze", {kv, e.ConstantInts({2}, what + "_axis")}, what + "_wide");
  std::vector<std::string> copies(repeat, wide);
  onnx::NodeProto& concat = e.Add("Concat", copies, e.Value(what + "_copies"));
  NodeExpansion::SetInt(concat, "axis", 2);
  return e.AddValue("Reshape", {e.Value(what + "_copies"), e.ConstantInts({0, q_heads, -1, size}, what + "_shape")},
                    what + "_repeated");
}

// Q, K, V (3-D with q_num_heads and kv_num_heads, else 4-D), attn_mask
// (bool: true attends; else added), past_key and past_value ->
// softmax(scale * Q K^T (softcapped) + masks) V, and the keys and values
// with the past as outputs 1 and 2.
absl::Status Attention(NodeExpansion& e, const ValueTypeLookup& types, int64_t) {
  RETURN_IF_ERROR(e.RequireInputs(3));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode",
                                           "scale", "softcap", "softmax_precision"}));
  if (!e.Out(3).empty()) return absl::UnimplementedError("output 3 (qk_matmul_output) is not supported");
  if (e.Has(6)) return absl::UnimplementedError("input 6 (nonpad_kv_seqlen) is not supported");
  if (e.Has(4) != e.Has(5)) return absl::InvalidArgumentError("past_key and past_value come together");
  ASSIGN_OR_RETURN(const AttentionShape s, ReadAttentionShape(e, types));
  const std::string q0 = e.In(0);
  std::string q = s.three_d ? e.SplitHeads(q0, s.q_heads, "q") : q0;
  std::string k = s.three_d ? e.SplitHeads(e.In(1), s.kv_heads, "k") : e.In(1);
  std::string v = s.three_d ? e.SplitHeads(e.In(2), s.kv_heads, "v") : e.In(2);
  const bool past = e.Has(4);
  for (auto [value, input, output] : {std::tuple{&k, 4, 1}, std::tuple{&v, 5, 2}}) {
    const bool named = !e.Out(output).empty();
    if (past) {
      const std::string all = named ? e.Out(output) : e.Value(absl::StrCat("present", output));
      NodeExpansion::SetInt(e.Add("Concat", {e.In(input), *value}, all), "axis", 2);
      *value = all;
    } else if (named) {
      e.Add("Identity", {*value}, e.Out(output));
    }
  }
  const std::string keys = k;  // [B, kv_heads, T, size], for the causal mask's length.
  if (s.q_heads != s.kv_heads) {
    const int64_t repeat = s.q_heads / s.kv_heads;
    ASSIGN_OR_RETURN(const int64_t value_size,
                     s.three_d ? StaticDimOf(types, e.In(2), -1, "V") : StaticDimOf(types, e.In(2), 3, "V"));
    k = RepeatHeads(e, k, repeat, s.q_heads, s.key_head_size, "k_grouped");
    v = RepeatHeads(e, v, repeat, s.q_heads, s.three_d ? value_size / s.kv_heads : value_size, "v_grouped");
  }
  const onnx::AttributeProto* scale_attr = e.Typed("scale", onnx::AttributeProto::FLOAT);
  if (scale_attr != nullptr && !(scale_attr->f() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("scale ", scale_attr->f(), " is not positive"));
  }
  const float scale = scale_attr != nullptr ? scale_attr->f() : 1.0f / std::sqrt(static_cast<float>(s.head_size));
  std::string scores = e.AddValue("MatMul", {q, e.Permute(k, {0, 1, 3, 2}, "k_transposed")}, "qk");
  scores = e.AddValue("Mul", {scores, ConstantLike(e, scale, q0, "scale")}, "scores");
  const float softcap = e.FloatAttribute("softcap", 0.0f);
  if (softcap > 0) {  // As the specification's reference: only a positive one caps.
    const std::string cap = ConstantLike(e, softcap, q0, "softcap");
    const std::string tanh = e.AddValue("Tanh", {e.AddValue("Div", {scores, cap}, "capped_in")}, "capped_tanh");
    scores = e.AddValue("Mul", {tanh, cap}, "capped");
  }
  // The additive bias: the mask's, then the causal one.
  std::string bias;
  if (e.Has(3)) {
    std::optional<TensorType> mt = types(e.In(3));
    if (!mt.has_value()) return absl::InvalidArgumentError("attn_mask has no known type");
    // Opset 24 pads a mask shorter than the keys with masked keys; graft
    // refuses one it knows is shorter (broadcasting would read it wrong).
    std::optional<TensorType> kt = types(e.In(1));
    std::optional<TensorType> pt = past ? types(e.In(4)) : std::nullopt;
    if (mt->rank() > 0 && mt->shape.back().is_constant() && kt.has_value() && kt->rank() == (s.three_d ? 3 : 4) &&
        kt->shape[s.three_d ? 1 : 2].is_constant() &&
        (!past || (pt.has_value() && pt->rank() == 4 && pt->shape[2].is_constant()))) {
      const int64_t total =
          kt->shape[s.three_d ? 1 : 2].value() + (past ? pt->shape[2].value() : 0);
      if (mt->shape.back().value() != total) {
        return absl::UnimplementedError(absl::StrCat("an attn_mask of ", mt->shape.back().value(),
                                                     " keys for ", total,
                                                     " is not supported (opset 24 pads a shorter one)"));
      }
    }
    if (mt->dtype == DType::kBool) {
      bias = e.AddValue("Where", {e.In(3), e.Constant(0, "attend"), e.Constant(kNegInf, "masked")}, "mask_bias");
      bias = e.AddValue("CastLike", {bias, q0}, "mask_bias_typed");
    } else {
      bias = e.AddValue("CastLike", {e.In(3), q0}, "mask_bias_typed");
    }
  }
  if (e.IntAttribute("is_causal", 0) != 0) {
    // Query i attends key j where j <= i + (the past's length).
    std::string rows = e.Arange(e.DimLength(q, 2, "queries"), "query_positions");
    if (past) rows = e.AddValue("Add", {rows, e.DimLength(e.In(4), 2, "past")}, "query_positions_after_past");
    rows = e.AddValue("Unsqueeze", {rows, e.ConstantInts({1}, "rows_axis")}, "query_rows");
    const std::string cols = e.Arange(e.DimLength(keys, 2, "keys"), "key_positions");
    const std::string later = e.AddValue("Less", {rows, cols}, "later_keys");
    const std::string minus_infinity = ConstantLike(e, kNegInf, q0, "causal_minus_infinity");
    if (bias.empty()) {
      // Without a mask, the later keys' scores replaced by -inf (the same
      // as adding it): the form graft fuses into one attention op, the
      // mask a constant of the causal pattern where the lengths are static.
      scores = e.AddValue("Where", {later, minus_infinity, scores}, "scores_causal");
    } else {
      const std::string causal =
          e.AddValue("Where", {later, minus_infinity, ConstantLike(e, 0, q0, "causal_zero")}, "causal");
      bias = e.AddValue("Add", {bias, causal}, "bias");
    }
  }
  if (!bias.empty()) scores = e.AddValue("Add", {scores, bias}, "scores_masked");
  onnx::NodeProto& softmax = e.Add("Softmax", {scores}, e.Value("probabilities"));
  NodeExpansion::SetInt(softmax, "axis", -1);
  std::string probabilities = e.Value("probabilities");
  if (e.Has(3)) {
    // A row whose every key is masked gives zeros, not NaN.
    onnx::NodeProto& row_max = e.Add("ReduceMax", {bias, e.ConstantInts({-1}, "row_axis")}, e.Value("row_max"));
    NodeExpansion::SetInt(row_max, "keepdims", 1);
    const std::string none =
        e.AddValue("Equal", {e.Value("row_max"), ConstantLike(e, kNegInf, q0, "minus_infinity")}, "row_masked");
    probabilities =
        e.AddValue("Where", {none, ConstantLike(e, 0, q0, "zero"), probabilities}, "probabilities_guarded");
  }
  if (!s.three_d) {
    e.Add("MatMul", {probabilities, v}, e.Out(0));
    return absl::OkStatus();
  }
  const std::string context = e.Permute(e.AddValue("MatMul", {probabilities, v}, "context"), {0, 2, 1, 3},
                                        "context_bshd");
  e.Add("Reshape", {context, e.ConstantInts({0, 0, -1}, "output_shape")}, e.Out(0));
  return absl::OkStatus();
}

// --- Normalization and rotary embeddings --------------------------------------

// X / sqrt(mean(X^2 over the dims from `axis` on) + epsilon) * scale, in
// f32 (stash_type 1) for narrower inputs.
absl::Status RmsNormalization(NodeExpansion& e, const ValueTypeLookup& types, int64_t) {
  RETURN_IF_ERROR(e.RequireInputs(2));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"axis", "epsilon", "stash_type"}));
  ASSIGN_OR_RETURN(const int64_t rank, RankOf(types, e.In(0), "X"));
  int64_t axis = e.IntAttribute("axis", -1);
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is outside X's ", rank, " dims"));
  }
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  std::string x = e.In(0);
  const int64_t stash = e.IntAttribute("stash_type", onnx::TensorProto::FLOAT);
  if (stash != onnx::TensorProto::FLOAT && stash != onnx::TensorProto::DOUBLE) {
    return absl::UnimplementedError(absl::StrCat("stash_type ", stash, " is not supported (1, float, or 11, double)"));
  }
  x = e.Cast(x, static_cast<int32_t>(stash), "stashed");
  const std::string square = e.AddValue("Mul", {x, x}, "square");
  onnx::NodeProto& mean = e.Add("ReduceMean", {square, e.ConstantInts(axes, "axes")}, e.Value("mean_square"));
  NodeExpansion::SetInt(mean, "keepdims", 1);
  const std::string eps = ConstantLike(e, e.FloatAttribute("epsilon", 1e-5f), x, "epsilon");
  const std::string rms = e.AddValue("Sqrt", {e.AddValue("Add", {e.Value("mean_square"), eps}, "variance")}, "rms");
  const std::string normalized = e.AddValue("Div", {x, rms}, "normalized");
  const std::string typed = e.AddValue("CastLike", {normalized, e.In(0)}, "normalized_typed");
  e.Add("Mul", {typed, e.In(1)}, e.Out(0));
  return absl::OkStatus();
}

}  // namespace

// X (4-D [B, heads, S, D], or 3-D [B, S, heads * D] with num_heads)
// rotated by position: the first rotary_embedding_dim (default D) of each
// head's D values as pairs (the two halves, or neighbours when
// interleaved) turned by the angle whose cos and sin the caches give (at
// the positions, else [B, S, dim / 2] directly); the rest pass through.
absl::Status ExpandRotaryEmbedding(NodeExpansion& e, const ValueTypeLookup& types, const RotaryOperands& o) {
  ASSIGN_OR_RETURN(const int64_t rank, RankOf(types, e.In(o.x), "X"));
  int64_t d = 0;
  std::string x;  // [B, S, heads, D].
  if (rank == 4) {
    ASSIGN_OR_RETURN(d, StaticDimOf(types, e.In(o.x), 3, "X"));
    x = e.Permute(e.In(o.x), {0, 2, 1, 3}, "bshd");
  } else if (rank == 3) {
    int64_t heads = e.IntAttribute("num_heads", 0);
    ASSIGN_OR_RETURN(const int64_t hidden, StaticDimOf(types, e.In(o.x), -1, "X"));
    if (heads < 1 && o.head_size_from_cache && e.IntAttribute("rotary_embedding_dim", 0) == 0) {
      // ONNX Runtime's: the head size is the cache's rotated width.
      ASSIGN_OR_RETURN(const int64_t half_width, StaticDimOf(types, e.In(o.cos), -1, "cos_cache"));
      if (half_width > 0 && hidden % (2 * half_width) == 0) heads = hidden / (2 * half_width);
    }
    if (heads < 1) return absl::InvalidArgumentError("a 3-D X needs num_heads");
    if (hidden % heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat(hidden, " columns do not split into ", heads, " heads"));
    }
    d = hidden / heads;
    x = e.AddValue("Reshape", {e.In(o.x), e.ConstantInts({0, 0, heads, -1}, "heads_shape")}, "bshd");
  } else {
    return absl::InvalidArgumentError(absl::StrCat("X has rank ", rank, " (3 or 4)"));
  }
  const int64_t rotary_dim = e.IntAttribute("rotary_embedding_dim", 0);
  if (rotary_dim < 0) return absl::InvalidArgumentError(absl::StrCat("rotary_embedding_dim ", rotary_dim, " is negative"));
  const int64_t rd = rotary_dim > 0 ? rotary_dim : d;
  if (rd > d || rd % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("rotary_embedding_dim ", rd, " must be even and at most ", d));
  }
  const int64_t half = rd / 2;
  std::string positions = o.positions >= 0 ? e.In(o.positions) : "";
  if (!positions.empty() && o.offset_positions) {
    // ONNX Runtime's [1] (or 0-D) form: an offset, the positions offset +
    // 0..S-1; else [B, S].
    std::optional<TensorType> t = types(positions);
    if (!t.has_value()) return absl::InvalidArgumentError("position_ids has no known rank");
    if (t->rank() <= 1) {
      const std::string offset =
          e.AddValue("Reshape", {positions, e.ConstantInts({1}, "offset_shape")}, "offset");
      positions = e.AddValue("Add", {e.Arange(e.DimLength(x, 1, "sequence"), "sequence_positions"), offset},
                             "positions");
    }
  }
  std::string angles[2];  // cos, sin: [B, S, 1, rd / 2] (or [S, 1, rd / 2]).
  for (int i = 0; i < 2; ++i) {
    const std::string what = i == 0 ? "cos" : "sin";
    std::string c = e.SliceOf(e.In(i == 0 ? o.cos : o.sin), -1, 0, half, what + "_used");
    if (!positions.empty()) c = e.AddValue("Gather", {c, positions}, what + "_at_positions");
    angles[i] = e.AddValue("Unsqueeze", {c, e.ConstantInts({-2}, what + "_axis")}, what);
  }
  const bool interleaved = e.IntAttribute("interleaved", 0) != 0;
  const std::string x1 = interleaved ? e.SliceOf(x, -1, 0, rd, "x1", 2) : e.SliceOf(x, -1, 0, half, "x1");
  const std::string x2 = interleaved ? e.SliceOf(x, -1, 1, rd, "x2", 2) : e.SliceOf(x, -1, half, rd, "x2");
  auto product = [&](const std::string& a, const std::string& b, const std::string& what) {
    return e.AddValue("Mul", {a, b}, what);
  };
  const std::string real = e.AddValue(
      "Sub", {product(angles[0], x1, "cos_x1"), product(angles[1], x2, "sin_x2")}, "real");
  const std::string imag = e.AddValue(
      "Add", {product(angles[1], x1, "sin_x1"), product(angles[0], x2, "cos_x2")}, "imag");
  std::string rotated;
  if (interleaved) {
    const std::string r = e.AddValue("Unsqueeze", {real, e.ConstantInts({-1}, "real_axis")}, "real_pairs");
    const std::string i = e.AddValue("Unsqueeze", {imag, e.ConstantInts({-1}, "imag_axis")}, "imag_pairs");
    NodeExpansion::SetInt(e.Add("Concat", {r, i}, e.Value("pairs")), "axis", -1);
    rotated = e.AddValue("Reshape", {e.Value("pairs"), e.ConstantInts({0, 0, 0, rd}, "pairs_shape")}, "rotated");
  } else {
    NodeExpansion::SetInt(e.Add("Concat", {real, imag}, e.Value("rotated")), "axis", -1);
    rotated = e.Value("rotated");
  }
  std::string y = rotated;
  if (rd < d) {
    NodeExpansion::SetInt(e.Add("Concat", {rotated, e.SliceOf(x, -1, rd, d, "passed")}, e.Value("joined")), "axis",
                          -1);
    y = e.Value("joined");
  }
  if (rank == 4) {
    NodeExpansion::SetInts(e.Add("Transpose", {y}, e.Out(0)), "perm", {0, 2, 1, 3});
  } else {
    e.Add("Reshape", {y, e.ConstantInts({0, 0, -1}, "output_shape")}, e.Out(0));
  }
  return absl::OkStatus();
}

namespace {

// ONNX's RotaryEmbedding: X, cos_cache, sin_cache, position_ids.
absl::Status RotaryEmbedding(NodeExpansion& e, const ValueTypeLookup& types, int64_t) {
  RETURN_IF_ERROR(e.RequireInputs(3));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"interleaved", "num_heads", "rotary_embedding_dim"}));
  return ExpandRotaryEmbedding(e, types, RotaryOperands{.x = 0, .cos = 1, .sin = 2, .positions = e.Has(3) ? 3 : -1});
}

// Swish (opset 24): x * sigmoid(alpha * x).
absl::Status Swish(NodeExpansion& e, const ValueTypeLookup&, int64_t) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"alpha"}));
  const std::string scaled =
      e.AddValue("Mul", {e.In(0), ConstantLike(e, e.FloatAttribute("alpha", 1.0f), e.In(0), "alpha")}, "scaled");
  e.Add("Mul", {e.In(0), e.AddValue("Sigmoid", {scaled}, "gate")}, e.Out(0));
  return absl::OkStatus();
}

// --- Operators of older opsets that others define ---------------------------

// A reduction over `axes` keeping them, in `opset`'s form (the axes an
// input from opset 18, ReduceSum's from 13; an attribute before).
std::string Reduce(NodeExpansion& e, const std::string& op, const std::string& x, const std::vector<int64_t>& axes,
                   int64_t opset, const std::string& what) {
  const bool as_input = opset >= (op == "ReduceSum" ? 13 : 18);
  onnx::NodeProto& n = as_input ? e.Add(op, {x, e.ConstantInts(axes, what + "_axes")}, e.Value(what))
                                : e.Add(op, {x}, e.Value(what));
  if (!as_input) NodeExpansion::SetInts(n, "axes", axes);
  NodeExpansion::SetInt(n, "keepdims", 1);
  return e.Value(what);
}

// An axis attribute of X's `rank` dims, made non-negative.
absl::StatusOr<int64_t> AxisOf(const NodeExpansion& e, int64_t fallback, int64_t rank) {
  const int64_t axis = e.IntAttribute("axis", fallback);
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is outside the input's ", rank, " dims"));
  }
  return axis < 0 ? axis + rank : axis;
}

// x + bias where x < -lambd, x - bias where x > lambd, else 0.
absl::Status Shrink(NodeExpansion& e, const ValueTypeLookup&, int64_t) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"bias", "lambd"}));
  const std::string x = e.In(0);
  const float lambd = e.FloatAttribute("lambd", 0.5f), bias = e.FloatAttribute("bias", 0.0f);
  const std::string b = ConstantLike(e, bias, x, "bias");
  const std::string zero = ConstantLike(e, 0.0f, x, "zero");
  const std::string below = e.AddValue("Less", {x, ConstantLike(e, -lambd, x, "low")}, "below");
  const std::string above = e.AddValue("Greater", {x, ConstantLike(e, lambd, x, "high")}, "above");
  const std::string upper = e.AddValue("Where", {above, e.AddValue("Sub", {x, b}, "lowered"), zero}, "upper");
  e.Add("Where", {below, e.AddValue("Add", {x, b}, "raised"), upper}, e.Out(0));
  return absl::OkStatus();
}

// x where x > alpha, else 0.
absl::Status ThresholdedRelu(NodeExpansion& e, const ValueTypeLookup&, int64_t) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"alpha"}));
  const std::string x = e.In(0);
  const std::string above = e.AddValue("Greater", {x, ConstantLike(e, e.FloatAttribute("alpha", 1.0f), x, "alpha")},
                                       "above");
  e.Add("Where", {above, x, ConstantLike(e, 0.0f, x, "zero")}, e.Out(0));
  return absl::OkStatus();
}

// 1 at the first largest value along `axis` (opset 13's meaning), else 0.
absl::Status Hardmax(NodeExpansion& e, const ValueTypeLookup& types, int64_t) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"axis"}));
  ASSIGN_OR_RETURN(const int64_t rank, RankOf(types, e.In(0), "the input"));
  ASSIGN_OR_RETURN(const int64_t axis, AxisOf(e, -1, rank));
  onnx::NodeProto& arg = e.Add("ArgMax", {e.In(0)}, e.Value("first_largest"));
  NodeExpansion::SetInt(arg, "axis", axis);
  NodeExpansion::SetInt(arg, "keepdims", 1);
  // 0..n-1 along the axis, shaped [n, 1, ...] to broadcast against it.
  std::vector<int64_t> shape(static_cast<size_t>(rank - axis), 1);
  shape[0] = -1;
  const std::string positions = e.AddValue(
      "Reshape", {e.Arange(e.DimLength(e.In(0), axis, "length"), "positions"), e.ConstantInts(shape, "shape")},
      "positions_along");
  const std::string hit = e.AddValue("Equal", {positions, e.Value("first_largest")}, "hit");
  e.Add("CastLike", {hit, e.In(0)}, e.Out(0));
  return absl::OkStatus();
}

// x / its L1 or L2 norm along `axis`; 0 where the norm is 0 (ONNX's
// reference and ONNX Runtime).
absl::Status LpNormalization(NodeExpansion& e, const ValueTypeLookup& types, int64_t opset) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"axis", "p"}));
  ASSIGN_OR_RETURN(const int64_t rank, RankOf(types, e.In(0), "the input"));
  ASSIGN_OR_RETURN(const int64_t axis, AxisOf(e, -1, rank));
  const int64_t p = e.IntAttribute("p", 2);
  if (p != 1 && p != 2) return absl::InvalidArgumentError(absl::StrCat("p is ", p, ", not 1 or 2"));
  const std::string norm = Reduce(e, p == 1 ? "ReduceL1" : "ReduceL2", e.In(0), {axis}, opset, "norm");
  const std::string zero = ConstantLike(e, 0.0f, e.In(0), "zero");
  const std::string none = e.AddValue("Equal", {norm, zero}, "zero_norm");
  e.Add("Where", {none, zero, e.AddValue("Div", {e.In(0), norm}, "normalized")}, e.Out(0));
  return absl::OkStatus();
}

// (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9) over `axes`, as ONNX's
// function body computes it.
absl::Status MeanVarianceNormalization(NodeExpansion& e, const ValueTypeLookup& types, int64_t opset) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"axes"}));
  ASSIGN_OR_RETURN(const int64_t rank, RankOf(types, e.In(0), "the input"));
  std::vector<int64_t> axes = {0, 2, 3};
  if (const onnx::AttributeProto* a = e.Typed("axes", onnx::AttributeProto::INTS)) {
    axes.assign(a->ints().begin(), a->ints().end());
  }
  RETURN_IF_ERROR(e.status());  // axes of another type.
  std::vector<bool> taken(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is outside the input's ", rank, " dims"));
    }
    if (a < 0) a += rank;
    if (taken[a]) return absl::InvalidArgumentError(absl::StrCat("axis ", a, " is named twice"));
    taken[a] = true;
  }
  const std::string x = e.In(0);
  const std::string mean = Reduce(e, "ReduceMean", x, axes, opset, "mean");
  const std::string mean_square = Reduce(e, "ReduceMean", e.AddValue("Mul", {x, x}, "square"), axes, opset,
                                         "mean_square");
  const std::string variance =
      e.AddValue("Sub", {mean_square, e.AddValue("Mul", {mean, mean}, "squared_mean")}, "variance");
  const std::string deviation = e.AddValue(
      "Add", {e.AddValue("Sqrt", {variance}, "std"), ConstantLike(e, 1e-9f, x, "epsilon")}, "std_epsilon");
  e.Add("Div", {e.AddValue("Sub", {x, mean}, "centered"), deviation}, e.Out(0));
  return absl::OkStatus();
}

// A 2-D identity of the input's shape, its ones on diagonal `k`, of
// `dtype` (the input's by default).
absl::Status EyeLike(NodeExpansion& e, const ValueTypeLookup& types, int64_t) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"dtype", "k"}));
  ASSIGN_OR_RETURN(const int64_t rank, RankOf(types, e.In(0), "the input"));
  if (rank != 2) return absl::InvalidArgumentError(absl::StrCat("the input has ", rank, " dims, not 2"));
  const std::string rows = e.Arange(e.DimLength(e.In(0), 0, "rows"), "row");
  const std::string columns = e.Arange(e.DimLength(e.In(0), 1, "columns"), "column");
  const std::string shifted = e.AddValue(
      "Add", {e.AddValue("Reshape", {rows, e.ConstantInts({-1, 1}, "as_column")}, "row_column"),
              e.ConstantInts({e.IntAttribute("k", 0)}, "k")},
      "diagonal");
  const std::string hit = e.AddValue("Equal", {shifted, columns}, "hit");
  if (e.Attribute("dtype") != nullptr) {
    NodeExpansion::SetInt(e.Add("Cast", {hit}, e.Out(0)), "to", e.IntAttribute("dtype", 1));
  } else {
    e.Add("CastLike", {hit, e.In(0)}, e.Out(0));
  }
  return absl::OkStatus();
}

// (sum over the spatial dims of |x|^p)^(1/p), the dims kept.
absl::Status GlobalLpPool(NodeExpansion& e, const ValueTypeLookup& types, int64_t opset) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"p"}));
  ASSIGN_OR_RETURN(const int64_t rank, RankOf(types, e.In(0), "the input"));
  if (rank < 3) return absl::InvalidArgumentError(absl::StrCat("the input has ", rank, " dims, fewer than 3"));
  if (std::optional<TensorType> t = types(e.In(0)); t.has_value() && !IsFloatingPoint(t->dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("the input is ", DTypeName(t->dtype), ", not a float type"));
  }
  std::vector<int64_t> spatial;
  for (int64_t d = 2; d < rank; ++d) spatial.push_back(d);
  const int64_t p = e.IntAttribute("p", 2);
  if (p < 1) return absl::InvalidArgumentError(absl::StrCat("p is ", p, ", not positive"));
  const std::string x = e.In(0);
  const std::string powered = e.AddValue(
      "Pow", {e.AddValue("Abs", {x}, "magnitude"), ConstantLike(e, static_cast<float>(p), x, "p")}, "powered");
  const std::string sum = Reduce(e, "ReduceSum", powered, spatial, opset, "sum");
  e.Add("Pow", {sum, ConstantLike(e, 1.0f / static_cast<float>(p), x, "inverse_p")}, e.Out(0));
  return absl::OkStatus();
}

struct FunctionOp {
  int64_t since_opset;
  std::function<absl::Status(NodeExpansion&, const ValueTypeLookup&, int64_t opset)> expand;
};

const std::map<std::string, FunctionOp>& Table() {
  static const auto* table = new std::map<std::string, FunctionOp>{
      {"Attention", {23, Attention}},
      {"RMSNormalization", {23, RmsNormalization}},
      {"RotaryEmbedding", {23, RotaryEmbedding}},
      {"Swish", {24, Swish}},
      {"Shrink", {9, Shrink}},
      {"ThresholdedRelu", {10, ThresholdedRelu}},
      {"Hardmax", {13, Hardmax}},
      {"LpNormalization", {1, LpNormalization}},
      {"MeanVarianceNormalization", {9, MeanVarianceNormalization}},
      {"EyeLike", {9, EyeLike}},
      {"GlobalLpPool", {2, GlobalLpPool}},
  };
  return *table;
}

bool IsDefault(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

}  // namespace

bool IsFunctionOp(const onnx::NodeProto& node) {
  return IsDefault(node.domain()) && Table().contains(node.op_type());
}

std::vector<std::string> FunctionOpTypes() {
  std::vector<std::string> out;
  for (const auto& [name, op] : Table()) out.push_back(name);
  return out;
}

absl::StatusOr<std::vector<onnx::NodeProto>> ExpandFunctionOp(const onnx::NodeProto& node, int64_t model_opset,
                                                              const ValueTypeLookup& types) {
  auto it = Table().find(node.op_type());
  if (it == Table().end() || !IsDefault(node.domain())) {
    return absl::InternalError(absl::StrCat(node.op_type(), " is not an operator graft expands"));
  }
  if (model_opset < it->second.since_opset) {
    return absl::InvalidArgumentError(absl::StrCat(node.op_type(), " needs opset ", it->second.since_opset,
                                                   " or later, but the model imports opset ", model_opset));
  }
  NodeExpansion e(node);
  RETURN_IF_ERROR(it->second.expand(e, types, model_opset));
  RETURN_IF_ERROR(e.status());
  return e.Take();
}

}  // namespace graft::onnx_import
