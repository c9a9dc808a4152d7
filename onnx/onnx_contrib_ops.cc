#include "onnx/onnx_contrib_ops.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_expansion.h"
#include "onnx/onnx_function_ops.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

// One expansion, with the model's opset for the nodes whose form changed
// between opsets (ReduceMean's axes).
class Contrib : public NodeExpansion {
 public:
  Contrib(const onnx::NodeProto& node, int64_t opset) : NodeExpansion(node), opset_(opset) {}

  int64_t opset() const { return opset_; }

  // The mean of x over its last dim, kept.
  std::string MeanOfLastDim(const std::string& x, const std::string& what) {
    const std::string out = Value(what);
    if (opset_ >= 18) {
      SetInt(Add("ReduceMean", {x, ConstantInts({-1}, what + "_axes")}, out), "keepdims", 1);
    } else {
      onnx::NodeProto& n = Add("ReduceMean", {x}, out);
      SetInts(n, "axes", {-1});
      SetInt(n, "keepdims", 1);
    }
    return out;
  }

  // x / sqrt(mean(x^2) + eps) * scale over the last dim (RMS norm, T5's
  // and Llama's layer norm); its 1 / sqrt(...) into `inv_std` when named.
  std::string RmsNorm(const std::string& x, const std::string& scale, float eps, const std::string& out,
                      const std::string& inv_std = "") {
    const std::string square = AddValue("Mul", {x, x}, "square");
    const std::string mean = MeanOfLastDim(square, "mean_square");
    const std::string rms = AddValue("Sqrt", {AddValue("Add", {mean, Constant(eps, "epsilon")}, "variance")}, "rms");
    if (!inv_std.empty()) Add("Reciprocal", {rms}, inv_std);
    Add("Mul", {AddValue("Div", {x, rms}, "normalized"), scale}, out);
    return out;
  }

  // A 2-D transpose of the last two dims of a value of `rank` dims.
  std::string TransposeLastTwo(const std::string& x, int64_t rank, const std::string& what) {
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
    std::swap(perm[rank - 1], perm[rank - 2]);
    const std::string out = Value(what);
    SetInts(Add("Transpose", {x}, out), "perm", perm);
    return out;
  }

 private:
  int64_t opset_;
};

// --- Activations ------------------------------------------------------------

absl::Status GeluExact(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({}));
  e.Add("Gelu", {e.In(0)}, e.Out(0));
  return absl::OkStatus();
}

// BiasGelu: Gelu(A + B).
absl::Status BiasGelu(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(2));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({}));
  e.Add("Gelu", {e.AddValue("Add", {e.In(0), e.In(1)}, "biased")}, e.Out(0));
  return absl::OkStatus();
}

// FastGelu: the tanh approximation of Gelu(X + bias), bias optional.
absl::Status FastGelu(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({}));
  const std::string x = e.Has(1) ? e.AddValue("Add", {e.In(0), e.In(1)}, "biased") : e.In(0);
  NodeExpansion::SetString(e.Add("Gelu", {x}, e.Out(0)), "approximate", "tanh");
  return absl::OkStatus();
}

// QuickGelu: x * sigmoid(alpha * x).
absl::Status QuickGelu(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(1));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"alpha"}));
  const float alpha = e.FloatAttribute("alpha", 1.702f);
  const std::string scaled = e.AddValue("Mul", {e.In(0), e.Constant(alpha, "alpha")}, "scaled");
  e.Add("Mul", {e.In(0), e.AddValue("Sigmoid", {scaled}, "gate")}, e.Out(0));
  return absl::OkStatus();
}

// --- Products ---------------------------------------------------------------

// FusedMatMul: alpha * op(A) @ op(B), op transposing the last two dims
// where transA / transB.
absl::Status FusedMatMul(Contrib& e, int64_t rank_a, int64_t rank_b) {
  RETURN_IF_ERROR(e.RequireInputs(2));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"alpha", "transA", "transB", "transBatchA", "transBatchB"}));
  if (e.IntAttribute("transBatchA", 0) != 0 || e.IntAttribute("transBatchB", 0) != 0) {
    return absl::UnimplementedError("transBatchA and transBatchB other than 0 are not supported");
  }
  std::string a = e.In(0), b = e.In(1);
  // ONNX Runtime ignores transA and transB on a 1-D operand.
  if (e.IntAttribute("transA", 0) != 0 && rank_a >= 2) a = e.TransposeLastTwo(a, rank_a, "a_transposed");
  if (e.IntAttribute("transB", 0) != 0 && rank_b >= 2) b = e.TransposeLastTwo(b, rank_b, "b_transposed");
  const float alpha = e.FloatAttribute("alpha", 1.0f);
  if (alpha == 1.0f) {
    e.Add("MatMul", {a, b}, e.Out(0));
  } else {
    e.Add("Mul", {e.AddValue("MatMul", {a, b}, "product"), e.Constant(alpha, "alpha")}, e.Out(0));
  }
  return absl::OkStatus();
}

// --- Normalization ----------------------------------------------------------

// input + skip (+ bias), into output 3 when it is read.
std::string SkipSum(Contrib& e, int bias_input) {
  const bool named = !e.Out(3).empty();
  std::string sum = e.Value("skip_sum");
  const std::string first = e.Has(bias_input) ? e.Value("input_skip") : (named ? e.Out(3) : sum);
  e.Add("Add", {e.In(0), e.In(1)}, first);
  if (!e.Has(bias_input)) return first;
  const std::string total = named ? e.Out(3) : sum;
  e.Add("Add", {first, e.In(bias_input)}, total);
  return total;
}

// SkipLayerNormalization: LayerNormalization over the last dim of
// input + skip + bias, scaled by gamma, shifted by beta; the sum is output 3.
absl::Status SkipLayerNormalization(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(3));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"epsilon"}));
  const std::string sum = SkipSum(e, 4);
  std::vector<std::string> inputs = {sum, e.In(2)};
  if (e.Has(3)) inputs.push_back(e.In(3));
  onnx::NodeProto& ln = e.Add("LayerNormalization", inputs, e.Out(0));
  NodeExpansion::SetInt(ln, "axis", -1);
  NodeExpansion::SetFloat(ln, "epsilon", e.FloatAttribute("epsilon", 1e-12f));
  return absl::OkStatus();
}

// SkipSimplifiedLayerNormalization: the RMS norm of input + skip + bias.
absl::Status SkipSimplifiedLayerNormalization(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(3));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"epsilon"}));
  const std::string sum = SkipSum(e, 3);
  e.RmsNorm(sum, e.In(2), e.FloatAttribute("epsilon", 1e-12f), e.Out(0));
  return absl::OkStatus();
}

// SimplifiedLayerNormalization (default domain): the RMS norm over the
// last dim; its inverse RMS as output 1 when read.
absl::Status SimplifiedLayerNormalization(Contrib& e, const ValueTypeLookup& types) {
  RETURN_IF_ERROR(e.RequireInputs(2));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"axis", "epsilon", "stash_type"}));
  const int64_t axis = e.IntAttribute("axis", -1);
  std::optional<TensorType> type = types(e.In(0));
  if (axis != -1 && !(type.has_value() && axis == type->rank() - 1)) {
    return absl::UnimplementedError(absl::StrCat("axis ", axis, " is not supported (the last dim only)"));
  }
  e.RmsNorm(e.In(0), e.In(1), e.FloatAttribute("epsilon", 1e-5f), e.Out(0), e.Out(1));
  return absl::OkStatus();
}

// BiasAdd: X + bias + skip.
absl::Status BiasAdd(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(3));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({}));
  e.Add("Add", {e.AddValue("Add", {e.In(0), e.In(1)}, "biased"), e.In(2)}, e.Out(0));
  return absl::OkStatus();
}

// BiasSoftmax: Softmax(data + bias) over the last dim (ONNX Runtime's
// softmax of the flattened dims from `axis` on, which is the last one in
// the attention scores its fusion makes it from; other axes are refused).
absl::Status BiasSoftmax(Contrib& e, const ValueTypeLookup& types) {
  RETURN_IF_ERROR(e.RequireInputs(2));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"axis", "is_inner_broadcast"}));
  const int64_t axis = e.IntAttribute("axis", 1);
  std::optional<TensorType> t = types(e.In(0));
  if (axis != -1 && !(t.has_value() && axis == t->rank() - 1)) {
    return absl::UnimplementedError(absl::StrCat("axis ", axis, " is not supported (the last dim only)"));
  }
  // Both broadcast forms (is_inner_broadcast 0 and 1) are numpy's.
  NodeExpansion::SetInt(e.Add("Softmax", {e.AddValue("Add", {e.In(0), e.In(1)}, "biased")}, e.Out(0)), "axis", -1);
  return absl::OkStatus();
}

// --- Fused activations --------------------------------------------------------

// `activation` of x into `out`; its parameters in order (FusedConv's
// activation_params; FusedGemm's activation_alpha and activation_beta),
// absent ones at the activation's defaults.
absl::Status Activation(Contrib& e, const std::string& activation,
                        const std::vector<std::optional<float>>& params, const std::string& x,
                        const std::string& out) {
  auto param = [&](size_t i, float fallback) {
    return i < params.size() && params[i].has_value() ? *params[i] : fallback;
  };
  if (activation.empty() || activation == "Identity") {
    e.Add("Identity", {x}, out);
  } else if (activation == "Relu" || activation == "Tanh" || activation == "Sigmoid") {
    e.Add(activation, {x}, out);
  } else if (activation == "LeakyRelu") {
    NodeExpansion::SetFloat(e.Add("LeakyRelu", {x}, out), "alpha", param(0, 0.01f));
  } else if (activation == "HardSigmoid") {
    onnx::NodeProto& n = e.Add("HardSigmoid", {x}, out);
    NodeExpansion::SetFloat(n, "alpha", param(0, 0.2f));
    NodeExpansion::SetFloat(n, "beta", param(1, 0.5f));
  } else if (activation == "Clip") {
    if (params.size() < 2 || !params[0].has_value() || !params[1].has_value()) {
      return absl::InvalidArgumentError("activation Clip needs two parameters, min and max");
    }
    if (e.opset() < 11) {  // Clip's bounds were attributes then.
      onnx::NodeProto& clip = e.Add("Clip", {x}, out);
      NodeExpansion::SetFloat(clip, "min", *params[0]);
      NodeExpansion::SetFloat(clip, "max", *params[1]);
    } else {
      e.Add("Clip", {x, e.Constant(*params[0], "clip_min"), e.Constant(*params[1], "clip_max")}, out);
    }
  } else {
    return absl::UnimplementedError(absl::StrCat("activation '", activation, "' is not supported"));
  }
  return absl::OkStatus();
}

// FusedConv: activation(Conv(X, W, B) + Z), Z optional.
absl::Status FusedConv(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(2));
  std::vector<std::string> inputs = {e.In(0), e.In(1)};
  if (e.Has(2)) inputs.push_back(e.In(2));
  std::string y = e.Value("conv");
  e.CopyAttributes(e.Add("Conv", inputs, y), {"activation", "activation_params"});
  if (e.Has(3)) y = e.AddValue("Add", {y, e.In(3)}, "sum");
  std::vector<std::optional<float>> params;
  if (const onnx::AttributeProto* a = e.Typed("activation_params", onnx::AttributeProto::FLOATS)) {
    params.assign(a->floats().begin(), a->floats().end());
  }
  return Activation(e, e.StringAttribute("activation"), params, y, e.Out(0));
}

// FusedGemm: activation(Gemm(A, B, C)).
absl::Status FusedGemm(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(2));
  std::vector<std::string> inputs = {e.In(0), e.In(1)};
  if (e.Has(2)) inputs.push_back(e.In(2));
  const std::string y = e.Value("gemm");
  e.CopyAttributes(e.Add("Gemm", inputs, y),
                   {"activation", "activation_alpha", "activation_beta", "activation_gamma"});
  if (e.Attribute("activation_gamma") != nullptr) {
    return absl::UnimplementedError("attribute 'activation_gamma' is not supported");
  }
  std::vector<std::optional<float>> params;
  for (const char* name : {"activation_alpha", "activation_beta"}) {
    const onnx::AttributeProto* a = e.Typed(name, onnx::AttributeProto::FLOAT);
    params.push_back(a != nullptr ? std::optional<float>(a->f()) : std::nullopt);
  }
  return Activation(e, e.StringAttribute("activation"), params, y, e.Out(0));
}

// --- Attention ----------------------------------------------------------------

// Attention's and MultiHeadAttention's core on [B, S, hidden] values:
// heads split, softmax(scale * q k^T + additive masks) v, heads joined
// into `out` [B, S, heads * value head size]. ONNX Runtime adds
// mask_filter_value where a mask excludes a key (it does not use -inf), as
// here.
struct AttentionParts {
  std::string q, k, v;  // [B, S, D], [B, T, D], [B, T, Dv].
  int64_t heads = 0;
  float scale = 0;      // 0: 1 / sqrt(head size).
  int64_t head_size = 0;
  std::vector<std::string> additive;  // Each broadcasting to [B, heads, S, T].
  bool causal = false;
  float mask_filter_value = -10000.0f;
};

class AttentionBuilder {
 public:
  AttentionBuilder(Contrib& e, const ValueTypeLookup& types) : e_(e), types_(types) {}

  // (1 - keep) * filter for a boolean or 0/1 `keep`, with new dims of 1
  // at `axes` (opset 13's Unsqueeze).
  std::string Additive(const std::string& keep, const std::vector<int64_t>& axes, float filter,
                       const std::string& what) {
    const std::string kept = e_.Cast(keep, onnx::TensorProto::FLOAT, what + "_kept");
    const std::string dropped = e_.AddValue("Sub", {e_.Constant(1, what + "_one"), kept}, what + "_dropped");
    const std::string scaled =
        e_.AddValue("Mul", {dropped, e_.Constant(filter, what + "_filter")}, what + "_scaled");
    if (axes.empty()) return scaled;
    return e_.AddValue("Unsqueeze", {scaled, e_.ConstantInts(axes, what + "_axes")}, what);
  }

  // Where a mask keeps a key: ONNX Runtime's test is mask > 0.
  std::string Kept(const std::string& mask) {
    const std::string values = e_.Cast(mask, onnx::TensorProto::FLOAT, "mask_values");
    return e_.AddValue("Greater", {values, e_.Constant(0, "mask_zero")}, "mask_kept");
  }

  // The additive mask of ONNX Runtime's mask_index / key_padding_mask
  // forms: [B] key lengths, [B, T] or [B, S, T] 0/1 masks.
  absl::Status AddKeyMask(AttentionParts& a, const std::string& mask, const std::optional<TensorType>& type) {
    if (!type.has_value()) return absl::InvalidArgumentError("the mask has no known rank");
    switch (type->rank()) {
      case 1: {
        // Key lengths: key j counts while j < length[b]. ([2B] adds start
        // positions, and MultiHeadAttention's [3B + 2] more: refused where
        // the batch is known to differ from the length.)
        std::optional<TensorType> qt = types_(e_.In(0));  // The query: [B, S, ...].
        if (type->shape[0].is_constant() && qt.has_value() && qt->rank() > 0 && qt->shape[0].is_constant() &&
            type->shape[0].value() != qt->shape[0].value()) {
          return absl::UnimplementedError(absl::StrCat("a 1-D mask of ", type->shape[0].value(),
                                                       " entries for a batch of ", qt->shape[0].value(),
                                                       " is not supported (key lengths, one per batch entry)"));
        }
        const std::string positions = e_.Arange(e_.DimLength(a.k, 1, "key"), "key_positions");
        const std::string lengths = e_.AddValue(
            "Reshape",
            {e_.Cast(mask, onnx::TensorProto::INT64, "key_lengths_i64"), e_.ConstantInts({-1, 1}, "column")},
            "key_lengths");
        const std::string keep = e_.AddValue("Less", {positions, lengths}, "key_kept");
        a.additive.push_back(Additive(keep, {1, 2}, a.mask_filter_value, "key_mask"));
        return absl::OkStatus();
      }
      case 2:
        a.additive.push_back(Additive(Kept(mask), {1, 2}, a.mask_filter_value, "key_mask"));
        return absl::OkStatus();
      case 3:
        a.additive.push_back(Additive(Kept(mask), {1}, a.mask_filter_value, "key_mask"));
        return absl::OkStatus();
      default:
        return absl::UnimplementedError(
            absl::StrCat("a mask of shape ", type->ToString(), " is not supported ([B], [B, T] or [B, S, T])"));
    }
  }

  void Build(const AttentionParts& a, const std::string& out) {
    const std::string q = e_.SplitHeads(a.q, a.heads, "q"), kt = e_.SplitHeads(a.k, a.heads, "k", {0, 2, 3, 1});
    const std::string v = e_.SplitHeads(a.v, a.heads, "v");
    const float scale = a.scale != 0 ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_size));
    std::string scores = e_.AddValue("Mul", {e_.AddValue("MatMul", {q, kt}, "qk"), e_.Constant(scale, "scale")},
                                     "scores");
    for (size_t i = 0; i < a.additive.size(); ++i) {
      scores = e_.AddValue("Add", {scores, a.additive[i]}, absl::StrCat("scores_masked", i));
    }
    if (a.causal) {
      // Key j of query s is excluded for j > s (no past keys).
      const std::string s = e_.Arange(e_.DimLength(a.q, 1, "query"), "query_positions");
      const std::string t = e_.Arange(e_.DimLength(a.k, 1, "keys"), "causal_key_positions");
      const std::string rows =
          e_.AddValue("Reshape", {s, e_.ConstantInts({-1, 1}, "rows_shape")}, "query_rows");
      const std::string later = e_.AddValue("Greater", {t, rows}, "later_keys");
      const std::string keep = e_.AddValue("Not", {later}, "causal_kept");
      scores = e_.AddValue("Add", {scores, Additive(keep, {}, a.mask_filter_value, "causal_mask")},
                           "scores_causal");
    }
    onnx::NodeProto& softmax = e_.Add("Softmax", {scores}, e_.Value("probabilities"));
    NodeExpansion::SetInt(softmax, "axis", -1);
    const std::string context = e_.AddValue("MatMul", {e_.Value("probabilities"), v}, "context");
    const std::string joined = e_.Value("context_bshd");
    NodeExpansion::SetInts(e_.Add("Transpose", {context}, joined), "perm", {0, 2, 1, 3});
    e_.Add("Reshape", {joined, e_.ConstantInts({0, 0, -1}, "output_shape")}, out);
  }

 private:
  Contrib& e_;
  const ValueTypeLookup& types_;
};

// num_heads, scale, unidirectional and mask_filter_value, for Q and K of
// `d` and V of `dv` columns.
absl::Status ReadAttentionOptions(const Contrib& e, int64_t d, int64_t dv, AttentionParts& a) {
  a.heads = e.IntAttribute("num_heads", 0);
  if (a.heads < 1) return absl::InvalidArgumentError("needs num_heads of at least 1");
  if (d % a.heads != 0 || dv % a.heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("hidden sizes ", d, " and ", dv, " are not multiples of ",
                                                   a.heads, " heads"));
  }
  a.head_size = d / a.heads;
  a.scale = e.FloatAttribute("scale", 0);
  a.causal = e.IntAttribute("unidirectional", 0) != 0;
  a.mask_filter_value = e.FloatAttribute("mask_filter_value", -10000.0f);
  return absl::OkStatus();
}

// `op`(Q, K, V, part) for each of a's values and its columns of the packed
// input `packed` (Q's and K's `d`, V's `dv`): Attention's weights and bias,
// MultiHeadAttention's bias.
void EachPart(Contrib& e, AttentionParts& a, const std::string& op, const std::string& packed, int64_t d,
              int64_t dv, const std::string& what) {
  const int64_t bounds[] = {0, d, 2 * d, 2 * d + dv};
  const char* names[] = {"q", "k", "v"};
  std::string* parts[] = {&a.q, &a.k, &a.v};
  for (int i = 0; i < 3; ++i) {
    const std::string name = absl::StrCat(names[i], "_", what);
    *parts[i] = e.AddValue(op, {*parts[i], e.SliceOf(packed, -1, bounds[i], bounds[i + 1], name)}, name + "_applied");
  }
}

// Attention: input [B, S, hidden] times weights [hidden, D + D + Dv] (Q, K,
// V column blocks) plus bias, then attention per head; mask_index
// ([B] key lengths, [B, T] or [B, S, T] 0/1), attention_bias added to the
// scores, unidirectional (causal). Past keys and values are not
// supported.
absl::Status Attention(Contrib& e, const ValueTypeLookup& types) {
  RETURN_IF_ERROR(e.RequireInputs(2));
  RETURN_IF_ERROR(e.RefuseOtherAttributes(
      {"num_heads", "unidirectional", "qkv_hidden_sizes", "mask_filter_value", "scale", "do_rotary",
       "past_present_share_buffer", "rotary_embedding_dim"}));
  if (e.Has(4) || e.Has(6) || !e.Out(1).empty()) {
    return absl::UnimplementedError("past keys and values (inputs 4 and 6, output 1) are not supported");
  }
  if (e.IntAttribute("do_rotary", 0) != 0) return absl::UnimplementedError("do_rotary=1 is not supported");
  if (e.opset() < 13) return absl::UnimplementedError("needs opset 13 or later");
  ASSIGN_OR_RETURN(const int64_t width, StaticDimOf(types, e.In(1), -1, "input 1"));
  int64_t d = width / 3, dv = width / 3;
  if (const onnx::AttributeProto* sizes = e.Typed("qkv_hidden_sizes", onnx::AttributeProto::INTS)) {
    bool valid = sizes->ints_size() == 3 && sizes->ints(0) == sizes->ints(1);
    for (int i = 0; valid && i < 3; ++i) valid = sizes->ints(i) > 0 && sizes->ints(i) <= width;
    if (!valid || sizes->ints(0) + sizes->ints(1) + sizes->ints(2) != width) {
      return absl::InvalidArgumentError(absl::StrCat("qkv_hidden_sizes must be 3 sizes, Q's and K's equal, adding to ",
                                                     width, " (the weights' columns)"));
    }
    d = sizes->ints(0);
    dv = sizes->ints(2);
  } else if (width % 3 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("weights of ", width, " columns are not three equal blocks"));
  }
  AttentionParts a;
  RETURN_IF_ERROR(ReadAttentionOptions(e, d, dv, a));
  a.q = a.k = a.v = e.In(0);
  EachPart(e, a, "MatMul", e.In(1), d, dv, "weights");
  if (e.Has(2)) EachPart(e, a, "Add", e.In(2), d, dv, "bias");
  AttentionBuilder b(e, types);
  if (e.Has(3)) RETURN_IF_ERROR(b.AddKeyMask(a, e.In(3), types(e.In(3))));
  if (e.Has(5)) a.additive.push_back(e.In(5));
  b.Build(a, e.Out(0));
  return absl::OkStatus();
}

// MultiHeadAttention on separate query [B, S, D], key [B, T, D] and value
// [B, T, Dv], with an optional bias [D + D + Dv] added to them,
// key_padding_mask as Attention's mask_index, attention_bias, and
// unidirectional. Packed and per-head ([B, N, T, H]) keys and past keys
// are not supported.
absl::Status MultiHeadAttention(Contrib& e, const ValueTypeLookup& types) {
  RETURN_IF_ERROR(e.RequireInputs(3));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"num_heads", "unidirectional", "mask_filter_value", "scale"}));
  for (int i = 6; i < e.node().input_size(); ++i) {
    if (e.Has(i)) return absl::UnimplementedError("past keys and values (inputs 6 on) are not supported");
  }
  for (int i = 1; i < e.node().output_size(); ++i) {
    if (!e.Out(i).empty()) return absl::UnimplementedError("outputs other than the first are not supported");
  }
  if (e.opset() < 13) return absl::UnimplementedError("needs opset 13 or later");
  for (int i = 0; i < 3; ++i) {
    std::optional<TensorType> t = types(e.In(i));
    if (!t.has_value() || t->rank() != 3) {
      return absl::UnimplementedError(
          "query, key and value must be separate [batch, sequence, hidden] values (packed and per-head forms are "
          "not supported)");
    }
  }
  ASSIGN_OR_RETURN(const int64_t d, StaticDimOf(types, e.In(0), -1, "input 0"));
  ASSIGN_OR_RETURN(const int64_t dv, StaticDimOf(types, e.In(2), -1, "input 2"));
  AttentionParts a;
  RETURN_IF_ERROR(ReadAttentionOptions(e, d, dv, a));
  a.q = e.In(0);
  a.k = e.In(1);
  a.v = e.In(2);
  if (e.Has(3)) EachPart(e, a, "Add", e.In(3), d, dv, "bias");
  AttentionBuilder b(e, types);
  if (e.Has(4)) RETURN_IF_ERROR(b.AddKeyMask(a, e.In(4), types(e.In(4))));
  if (e.Has(5)) a.additive.push_back(e.In(5));
  b.Build(a, e.Out(0));
  return absl::OkStatus();
}

// EmbedLayerNormalization: LayerNormalization (epsilon 1e-12) of the word,
// position and segment embeddings' sum; mask_index, the count of ones in
// each row of the mask (0 without one); embedding_sum, the sum.
absl::Status EmbedLayerNormalization(Contrib& e) {
  RETURN_IF_ERROR(e.RequireInputs(7));
  RETURN_IF_ERROR(e.RefuseOtherAttributes({"epsilon", "mask_index_type"}));
  if (e.opset() < 13) return absl::UnimplementedError("needs opset 13 or later");
  const std::string ids = e.In(0);
  std::string sum = e.AddValue("Gather", {e.In(2), ids}, "words");
  std::string positions = e.In(8);
  if (positions.empty()) {
    positions = e.Arange(e.DimLength(ids, 1, "sequence"), "positions");
  }
  sum = e.AddValue("Add", {sum, e.AddValue("Gather", {e.In(3), positions}, "position_embeddings")},
                   "with_positions");
  if (e.Has(1) && e.Has(4)) {
    const std::string total = e.Out(2).empty() ? e.Value("embedding_sum") : e.Out(2);
    e.Add("Add", {sum, e.AddValue("Gather", {e.In(4), e.In(1)}, "segment_embeddings")}, total);
    sum = total;
  } else if (!e.Out(2).empty()) {
    e.Add("Identity", {sum}, e.Out(2));
  }
  onnx::NodeProto& ln = e.Add("LayerNormalization", {sum, e.In(5), e.In(6)}, e.Out(0));
  NodeExpansion::SetInt(ln, "axis", -1);
  NodeExpansion::SetFloat(ln, "epsilon", e.FloatAttribute("epsilon", 1e-12f));
  if (!e.Out(1).empty()) {
    std::string ones;
    if (e.Has(7)) {
      const std::string one = e.Cast(e.Constant(1, "one_f"), onnx::TensorProto::INT32, "one");
      ones = e.Cast(e.AddValue("Equal", {e.Cast(e.In(7), onnx::TensorProto::INT32, "mask_i32"), one}, "ones"),
                    onnx::TensorProto::INT32, "ones_i32");
    } else {
      ones = e.AddValue("Mul", {e.Cast(ids, onnx::TensorProto::INT32, "ids_i32"),
                                e.Cast(e.Constant(0, "zero_f"), onnx::TensorProto::INT32, "zero")},
                        "ones_i32");
    }
    NodeExpansion::SetInt(e.Add("ReduceSum", {ones, e.ConstantInts({1}, "row_axis")}, e.Out(1)), "keepdims", 0);
  }
  return absl::OkStatus();
}

// RotaryEmbedding (ONNX Runtime's): input, position_ids ([1]: an offset,
// or [B, S]), cos_cache, sin_cache, as ONNX's RotaryEmbedding.
absl::Status MicrosoftRotaryEmbedding(Contrib& e, const ValueTypeLookup& types) {
  RETURN_IF_ERROR(e.RequireInputs(4));
  if (e.opset() < 13) return absl::UnimplementedError("needs opset 13 or later");
  RETURN_IF_ERROR(
      e.RefuseOtherAttributes({"interleaved", "num_heads", "rotary_embedding_dim", "scale", "is_packed_batching"}));
  if (e.IntAttribute("is_packed_batching", 0) != 0) {
    return absl::UnimplementedError("is_packed_batching=1 is not supported");
  }
  return ExpandRotaryEmbedding(e, types,
                               RotaryOperands{.x = 0, .cos = 2, .sin = 3, .positions = 1,
                                              .offset_positions = true, .head_size_from_cache = true});
}

using ExpandFn = std::function<absl::Status(Contrib&, const ValueTypeLookup&)>;

ExpandFn Plain(absl::Status (*f)(Contrib&)) {
  return [f](Contrib& e, const ValueTypeLookup&) { return f(e); };
}

// Keyed by "domain/op_type" ("" for ONNX's own).
const std::map<std::string, ExpandFn>& Expanders() {
  static const auto* table = new std::map<std::string, ExpandFn>{
      {"com.microsoft/Gelu", Plain(GeluExact)},
      {"com.microsoft/BiasGelu", Plain(BiasGelu)},
      {"com.microsoft/FastGelu", Plain(FastGelu)},
      {"com.microsoft/QuickGelu", Plain(QuickGelu)},
      {"com.microsoft/FusedMatMul",
       [](Contrib& e, const ValueTypeLookup& types) -> absl::Status {
         RETURN_IF_ERROR(e.RequireInputs(2));
         ASSIGN_OR_RETURN(int64_t rank_a, RankOf(types, e.In(0), "input 0"));
         ASSIGN_OR_RETURN(int64_t rank_b, RankOf(types, e.In(1), "input 1"));
         return FusedMatMul(e, rank_a, rank_b);
       }},
      {"com.microsoft/SkipLayerNormalization", Plain(SkipLayerNormalization)},
      {"com.microsoft/SkipSimplifiedLayerNormalization", Plain(SkipSimplifiedLayerNormalization)},
      {"/SimplifiedLayerNormalization", SimplifiedLayerNormalization},
      {"com.microsoft/BiasAdd", Plain(BiasAdd)},
      {"com.microsoft/BiasSoftmax", BiasSoftmax},
      {"com.microsoft/FusedConv", Plain(FusedConv)},
      {"com.microsoft/FusedGemm", Plain(FusedGemm)},
      {"com.microsoft/Attention", Attention},
      {"com.microsoft/MultiHeadAttention", MultiHeadAttention},
      {"com.microsoft/EmbedLayerNormalization", Plain(EmbedLayerNormalization)},
      {"com.microsoft/RotaryEmbedding", MicrosoftRotaryEmbedding},
  };
  return *table;
}

}  // namespace

bool IsContribOp(const onnx::NodeProto& node) { return Expanders().contains(ExpansionKey(node)); }

std::vector<std::string> ContribOpTypes() {
  std::vector<std::string> out;
  for (const auto& [key, fn] : Expanders()) out.push_back(OpTypeOfExpansionKey(key));
  return out;
}

absl::StatusOr<std::vector<onnx::NodeProto>> ExpandContribOp(const onnx::NodeProto& node, int64_t model_opset,
                                                             const ValueTypeLookup& types) {
  auto it = Expanders().find(ExpansionKey(node));
  if (it == Expanders().end()) {
    return absl::InternalError(absl::StrCat(node.op_type(), " is not a contrib operator graft expands"));
  }
  Contrib e(node, model_opset);
  RETURN_IF_ERROR(it->second(e, types));
  RETURN_IF_ERROR(e.status());
  return e.Take();
}

}  // namespace graft::onnx_import
