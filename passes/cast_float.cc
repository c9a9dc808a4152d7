#include "passes/cast_float.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/float_limits.h"
#include "graph/graph.h"
#include "graph/int4_ops.h"
#include "graph/op_traits.h"
#include "graph/tensor.h"
#include "passes/shape_prop.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace graft::passes {

uint16_t SaturatedBFloat16(float f) {
  const uint16_t b = FloatToBFloat16(f);
  return std::isfinite(f) && (b & 0x7fffu) == 0x7f80u ? static_cast<uint16_t>(b - 1) : b;
}

uint16_t SaturatedHalf(float f) {
  return FloatToHalf(std::isfinite(f) ? std::clamp(f, -65504.0f, 65504.0f) : f);
}

namespace {

// SaturatedBFloat16, written out so that the loop vectorizes: a model's
// weights are 100s of MB.
__attribute__((always_inline)) inline void RoundLoop(const float* src, uint16_t* dst,
                                                     int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t x = std::bit_cast<uint32_t>(src[i]);
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const uint32_t overflow =
        static_cast<uint32_t>((x & 0x7fffffffu) < 0x7f800000u) & ((rounded & 0x7fffu) == 0x7f80u);
    dst[i] = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? (x >> 16) | 0x40u
                                                                  : rounded - overflow);
  }
}

// The same loop for the widest vectors the CPU has, chosen at run time:
// AVX-512 or AVX2 halve the time of the baseline's SSE2 (25M weights on two
// cores of the development machine, AVX-512: 15 to 17 ms instead of 28).
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512bw,avx512vl"))) void RoundAvx512(const float* src,
                                                                     uint16_t* dst,
                                                                     int64_t begin, int64_t end) {
  RoundLoop(src, dst, begin, end);
}
__attribute__((target("avx2"))) void RoundAvx2(const float* src, uint16_t* dst, int64_t begin,
                                               int64_t end) {
  RoundLoop(src, dst, begin, end);
}
#endif

void RoundBaseline(const float* src, uint16_t* dst, int64_t begin, int64_t end) {
  RoundLoop(src, dst, begin, end);
}

using RoundFn = void (*)(const float*, uint16_t*, int64_t, int64_t);

RoundFn WidestRound() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) return RoundAvx512;
  if (__builtin_cpu_supports("avx2")) return RoundAvx2;
#endif
  return RoundBaseline;
}

void HalfBaseline(const float* src, uint16_t* dst, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) dst[i] = SaturatedHalf(src[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
// f16 by the CPU's own conversion (F16C), 8 at a time, rounded to nearest
// even as FloatToHalf rounds; NaNs, whose payload the CPU keeps, and
// finite values past f16's range (which it makes infinite) are written as
// SaturatedHalf writes them.
__attribute__((target("avx,f16c"))) void HalfF16c(const float* src, uint16_t* dst,
                                                  int64_t begin, int64_t end) {
  const __m256 sign = _mm256_set1_ps(-0.0f), beyond = _mm256_set1_ps(65520.0f);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // |x| >= 65520 (infinities too, kept by SaturatedHalf) or NaN.
    const __m256 rare = _mm256_cmp_ps(_mm256_andnot_ps(sign, x), beyond, _CMP_NLT_UQ);
    if (_mm256_movemask_ps(rare) != 0) {
      for (int64_t j = i; j < i + 8; ++j) dst[j] = SaturatedHalf(src[j]);
    }
  }
  HalfBaseline(src, dst, i, end);
}
#endif

RoundFn FastestHalf() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c")) return HalfF16c;
#endif
  return HalfBaseline;
}

Tensor Narrowed(const Tensor& t, DType dtype) {
  Tensor out = UninitializedTensor(dtype, t.dims());
  const int64_t n = t.NumElements();
  const float* src = t.data<float>();
  uint16_t* dst = out.data<uint16_t>();
  constexpr int64_t kGrain = int64_t{1} << 20;
  if (dtype == DType::kBF16) {
    static const RoundFn round = WidestRound();
    ParallelFor(n, kGrain, [&](int64_t begin, int64_t end) { round(src, dst, begin, end); });
    return out;
  }
  static const RoundFn half = FastestHalf();
  ParallelFor(n, kGrain, [&](int64_t begin, int64_t end) { half(src, dst, begin, end); });
  return out;
}

bool IsF32(const Node* n) { return n->type().has_value() && n->type()->dtype == DType::kF32; }

// A module tensor's node, or an unpack of one's 4-bit values.
bool IsConstant(const Node* n) {
  return n->op() == OpCode::kGetAttr || IsInt4ConstantUnpack(*n);
}

// Weight-only quantization's dequantization, mul(cast(q, f32), scales)
// with q and scales module tensors: its cast made a cast to `dtype`, as
// the scales become `dtype`. Other casts to f32 (positions, masks, an
// explicit precision) stay, as torch's model.to(dtype) leaves forward's.
bool NarrowDequantizationCasts(Graph& graph, DType dtype) {
  bool changed = false;
  for (Node* n : graph.nodes()) {
    if (!n->is_call("cast") || n->num_args() != 2 || !n->arg(0).is_node() ||
        !n->arg(1).is_dtype() || n->arg(1).dtype_value() != DType::kF32 ||
        !n->kwargs().empty()) {
      continue;
    }
    const Node* q = n->arg(0).node();
    if (!q->type().has_value() || IsFloatingPoint(q->type()->dtype) || !IsConstant(q) ||
        n->num_uses() == 0) {
      continue;
    }
    bool scaled = true;
    for (const Node* user : n->users()) {
      const bool by_constant = user->is_call("mul") && user->num_args() == 2 &&
                               user->arg(0).is_node() && user->arg(1).is_node() &&
                               IsConstant(user->arg(user->arg(0).node() == n ? 1 : 0).node());
      scaled &= by_constant;
    }
    if (!scaled) continue;
    n->SetArg(1, Argument(dtype));
    changed = true;
  }
  return changed;
}

// What CastWhereF32MeetsNarrow knows of each value, filled in graph order
// (values it adds are neither).
struct Lineage {
  // Module tensors, and what views and elementwise ops make of module
  // tensors alone (inv_freq[None, :, None], a reshaped table).
  absl::flat_hash_set<const Node*> constant;
  // Values that views and elementwise ops make of a cast from an integer
  // or bool value to a float (positions, position ids, a mask).
  absl::flat_hash_set<const Node*> from_integers;

  void Add(const Node* n) {
    if (IsConstant(n)) {
      constant.insert(n);
      return;
    }
    if (n->op() != OpCode::kCallFunction || n->inputs().empty()) return;
    const OpKind kind = KindOf(*n);
    if (kind != OpKind::kView && kind != OpKind::kPointwise) return;
    bool all_constant = true, any_integers = false;
    for (const Node* in : n->inputs()) {
      all_constant &= constant.contains(in);
      any_integers |= from_integers.contains(in) ||
                      (n->is_call("cast") && in->type().has_value() &&
                       !IsFloatingPoint(in->type()->dtype));
    }
    if (all_constant) constant.insert(n);
    if (any_integers) from_integers.insert(n);
  }
};

// `value` (narrowed, constant-derived) again in f32: a module tensor's
// get_attr reads an f32 copy of the tensor's original values (one copy a
// tensor, in `copies`), a cast reads its input widened, views and
// elementwise ops of such values are made again from their f32 inputs,
// and anything else is cast to f32. Once per value (`widened`).
struct Widening {
  const absl::flat_hash_map<std::string, Tensor>& originals;
  absl::flat_hash_map<Node*, Node*> widened;
  absl::flat_hash_map<std::string, std::string> copies;  // Tensor, its f32 copy.
};
absl::StatusOr<Node*> WidenConstant(Module& module, Node* value, DType dtype, Widening& w) {
  if (auto done = w.widened.find(value); done != w.widened.end()) return done->second;
  Graph& graph = module.graph();
  auto narrow = [&](const Node* n) { return n->type().has_value() && n->type()->dtype == dtype; };
  Node* f32 = nullptr;
  auto original = value->op() == OpCode::kGetAttr ? w.originals.find(value->target())
                                                  : w.originals.end();
  if (original != w.originals.end()) {
    auto [copy, fresh] = w.copies.try_emplace(value->target());
    if (fresh) {
      copy->second = module.UniqueTensorName(absl::StrCat(value->target(), "_f32"));
      module.SetTensor(copy->second, original->second);
    }
    auto at = graph.InsertingAfter(value);
    f32 = graph.GetAttr(copy->second);
  } else if (value->is_call("cast") && value->inputs().size() == 1) {
    Node* in = value->inputs()[0];
    if (narrow(in)) {
      ASSIGN_OR_RETURN(in, WidenConstant(module, in, dtype, w));
    }
    auto at = graph.InsertingAfter(value);
    f32 = graph.CallFunction("cast", {in, Argument(DType::kF32)});
  } else if (value->op() == OpCode::kCallFunction && !IsConstant(value)) {
    absl::flat_hash_map<const Node*, Node*> map;
    for (Node* in : value->unique_inputs()) {
      map[in] = in;
      if (narrow(in)) {
        ASSIGN_OR_RETURN(map[in], WidenConstant(module, in, dtype, w));
      }
    }
    auto at = graph.InsertingAfter(value);
    f32 = graph.CopyNode(*value, map);
    RETURN_IF_ERROR(PropagateNodeShapes(module, f32).status());
    if (!f32->type().has_value() || f32->type()->dtype != DType::kF32) {
      // Still narrow (an input without a type of its own, as a split's):
      // the value cast as it is.
      RETURN_IF_ERROR(graph.EraseNode(f32));
      auto after = graph.InsertingAfter(value);
      f32 = graph.CallFunction("cast", {value, Argument(DType::kF32)});
    }
  } else {
    auto at = graph.InsertingAfter(value);
    f32 = graph.CallFunction("cast", {value, Argument(DType::kF32)});
  }
  RETURN_IF_ERROR(PropagateNodeShapes(module, f32).status());
  w.widened[value] = f32;
  return f32;
}

// Values the model makes in f32 itself (a cast to f32, a `full` of dtype
// f32: positions, a mask, a recurrent state's zeros) stay f32 where they
// are computed. Where one meets a narrowed value at an op whose result is
// a float (a product, whose operands must share a dtype; an elementwise
// op, which would promote the result and everything after it back to
// f32), it is cast to `dtype`, once per value, right after it is made: the
// model's values keep the narrow type. An elementwise op or a product
// where values made from integers (positions) meet no narrowed values but
// module tensors (inv_freq times positions, in a rotary embedding computed
// in the graph, as an outer product or Hugging Face's matmul) stays f32
// instead, on those tensors' f32 values (`originals`), as such models
// compute their positions' arithmetic in f32: bf16 positions past 256 are
// not even integers, and a bf16 inv_freq turns position 2000 by up to a
// radian. A comparison or another op with a non-float result
// takes its operands as they are (it promotes them), so that positions
// compare exactly. Walks the graph in order, so each op sees its
// operands' types after the casts before it.
absl::StatusOr<bool> CastWhereF32MeetsNarrow(
    Module& module, DType dtype, const absl::flat_hash_map<std::string, Tensor>& originals) {
  Graph& graph = module.graph();
  std::vector<Node*> order;
  for (Node* n : graph.nodes()) order.push_back(n);
  absl::flat_hash_map<Node*, Node*> narrowed;  // An f32 value, and its cast.
  Widening widening{originals, {}, {}};
  Lineage lineage;
  for (Node* node : order) {
    lineage.Add(node);
    if (node->op() == OpCode::kCallFunction && !node->is_call("cast")) {
      std::vector<Node*> wide, narrow_inputs;
      for (Node* in : node->unique_inputs()) {
        if (!in->type().has_value()) continue;
        if (in->type()->dtype == DType::kF32) wide.push_back(in);
        if (in->type()->dtype == dtype) narrow_inputs.push_back(in);
      }
      const bool narrow = !narrow_inputs.empty();
      if (narrow && !wide.empty()) {
        const absl::StatusOr<bool> as_is = PropagateNodeShapes(module, node);
        if (as_is.ok() && node->type().has_value() && !IsFloatingPoint(node->type()->dtype)) {
          wide.clear();  // A comparison: it promotes its operands.
        }
      }
      const OpKind kind = KindOf(*node);
      const bool positions_meet_constants =
          narrow && (kind == OpKind::kPointwise || kind == OpKind::kContraction) &&
          std::any_of(wide.begin(), wide.end(),
                      [&](const Node* in) {
                        return lineage.from_integers.contains(in) &&
                               !lineage.constant.contains(in);
                      }) &&
          std::all_of(narrow_inputs.begin(), narrow_inputs.end(),
                      [&](const Node* in) { return lineage.constant.contains(in); });
      if (positions_meet_constants) {
        for (Node* in : narrow_inputs) {
          ASSIGN_OR_RETURN(Node* f32, WidenConstant(module, in, dtype, widening));
          node->ReplaceInputWith(in, f32);
        }
        wide.clear();
      }
      for (Node* in : narrow ? wide : std::vector<Node*>{}) {
        Node*& cast = narrowed[in];
        if (cast == nullptr) {
          auto at = graph.InsertingAfter(in);
          cast = graph.CallFunction("cast", {in, Argument(dtype)}, {{"saturate", true}});
          RETURN_IF_ERROR(PropagateNodeShapes(module, cast).status());
        }
        node->ReplaceInputWith(in, cast);
      }
    }
    RETURN_IF_ERROR(PropagateNodeShapes(module, node).status());
  }
  return !narrowed.empty() || !widening.widened.empty();
}

// A float literal that `where` selects into a narrow result (a
// masked_fill with f32's lowest, or -1e9 in f16) saturates as a narrowed
// weight does, rather than rounding to -inf there.
bool SaturateSelectedLiterals(Graph& graph, DType dtype) {
  const double limit = LargestFinite(dtype);
  auto saturated = [&](const Argument& a) -> std::optional<Argument> {
    if (!a.is_double()) return std::nullopt;
    const double v = a.number();
    if (!std::isfinite(v) || std::fabs(v) <= limit ||
        std::fabs(v) > std::numeric_limits<float>::max()) {
      return std::nullopt;
    }
    return Argument(std::copysign(limit, v));
  };
  bool changed = false;
  for (Node* n : graph.nodes()) {
    if (!n->is_call("where") || !n->type().has_value() || n->type()->dtype != dtype) continue;
    for (size_t i = 1; i < n->num_args(); ++i) {
      if (std::optional<Argument> a = saturated(n->arg(i))) {
        n->SetArg(i, *a);
        changed = true;
      }
    }
    for (const auto& [name, value] : Kwargs(n->kwargs())) {
      if (std::optional<Argument> a = saturated(value)) {
        n->SetKwarg(name, *a);
        changed = true;
      }
    }
  }
  return changed;
}

// Whether every use of `value` is a product's operand (linear, matmul,
// conv). A product rounds such an input as it reads it (step_program.cc
// absorbs its cast), which a saturating cast would prevent: a model input
// past the narrow type's range that only products read is left to that
// rounding, as torch's x.to(dtype) would round it.
bool ReadOnlyByProducts(const Node& value) {
  for (const Node* user : value.users()) {
    if (KindOf(*user) != OpKind::kContraction) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<bool> CastFloatModule(Module& module, DType dtype) {
  if (dtype != DType::kBF16 && dtype != DType::kF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("a float model can be cast to f16 or bf16, not ", DTypeName(dtype)));
  }
  RETURN_IF_ERROR(PropagateShapes(module).status());
  bool changed = false;
  Graph& graph = module.graph();
  // Which outputs are f32 now: they stay f32.
  Node* output = graph.output();
  std::vector<Node*> values;
  if (output != nullptr && output->num_args() == 1) {
    const Argument& value = output->arg(0);
    if (value.is_node()) {
      values.push_back(value.node());
    } else if (value.is_list()) {
      for (const Argument& a : value.list()) {
        if (a.is_node()) values.push_back(a.node());
      }
    }
  }
  std::vector<bool> f32_output;
  for (Node* v : values) f32_output.push_back(IsF32(v));
  std::vector<std::pair<std::string, Tensor>> narrowed;
  absl::flat_hash_map<std::string, Tensor> originals;  // Shares their storage.
  for (const auto& [name, tensor] : module.tensors()) {
    if (tensor.value.dtype() == DType::kF32 && tensor.value.on_host()) {
      narrowed.emplace_back(name, Narrowed(tensor.value, dtype));
      originals.emplace(name, tensor.value);
    }
  }
  for (auto& [name, tensor] : narrowed) {
    module.SetTensor(name, std::move(tensor), module.tensors().at(name).init);
    changed = true;
  }
  changed |= NarrowDequantizationCasts(graph, dtype);
  for (Node* p : graph.placeholders()) {
    if (!IsF32(p) || p->num_uses() == 0) continue;
    Node* cast;
    {
      auto at = graph.InsertingAfter(p);
      cast = ReadOnlyByProducts(*p)
                 ? graph.CallFunction("cast", {Argument(), Argument(dtype)})
                 : graph.CallFunction("cast", {Argument(), Argument(dtype)}, {{"saturate", true}});
    }
    p->ReplaceAllUsesWith(cast);
    cast->SetArg(0, p);
    changed = true;
  }
  ASSIGN_OR_RETURN(const bool met, CastWhereF32MeetsNarrow(module, dtype, originals));
  changed |= met;
  changed |= SaturateSelectedLiterals(graph, dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    // The output's operand as it is now (a placeholder's use became a cast).
    Node* v = output->inputs()[i];
    if (!f32_output[i] || IsF32(v)) continue;
    auto at = graph.InsertingBefore(output);
    Node* cast = graph.CallFunction("cast", {v, Argument(DType::kF32)});
    output->ReplaceInputWith(v, cast);
  }
  RETURN_IF_ERROR(PropagateShapes(module).status());
  return changed;
}

}  // namespace graft::passes
