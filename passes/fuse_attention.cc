#include "passes/fuse_attention.h"

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "graph/float_limits.h"
#include "graph/fused_ops.h"
#include "graph/op_registry.h"
#include "passes/node_util.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

bool OnlyUsedBy(const Node* n, const Node* user) {
  return n->num_uses() == 1 && n->uses()[0].user == user;
}

std::optional<std::vector<int64_t>> StaticDims(const Node& n) {
  std::optional<TensorType> t = KnownType(n);
  if (!t.has_value()) return std::nullopt;
  std::vector<int64_t> dims;
  for (Dim d : t->shape) {
    if (!d.is_constant()) return std::nullopt;
    dims.push_back(d.value());
  }
  return dims;
}

// What the pattern binds, from the softmax's input back to the product.
struct Match {
  Node* q = nullptr;
  Node* kt = nullptr;
  Node* v = nullptr;
  Node* mask = nullptr;
  bool mask_keeps = false;  // where(mask, scores, fill): true keeps the score.
  double scale = 1.0;
  double fill = -std::numeric_limits<double>::infinity();
  Node* last = nullptr;       // The mask's or scale's node nearest the product.
  int64_t t = 0, s = 0;       // The scores' last two dims.
  DType dtype = DType::kF32;  // The scores'.
};

// A call whose argument `i` is a number: that number.
std::optional<double> NumberArg(const Node& n, size_t i) {
  if (n.num_args() <= i || !n.arg(i).is_number() || !n.kwargs().empty())
    return std::nullopt;
  return n.arg(i).number();
}

// mul(s, c), mul(c, s), div(s, c): s and the scale; else `n` itself and 1.
Node* StripScale(Node* n, const Node* user, Match& m) {
  if (!OnlyUsedBy(n, user) || n->num_args() != 2) return n;
  for (int side = 0; side < 2; ++side) {
    std::optional<double> c = NumberArg(*n, 1 - side);
    if (!c.has_value() || !n->arg(side).is_node()) continue;
    if (n->is_call("mul")) {
      m.scale = *c;
    } else if (n->is_call("div") && side == 0 && *c != 0) {
      m.scale = 1.0 / *c;
    } else {
      continue;
    }
    m.last = n;
    return n->arg(side).node();
  }
  return n;
}

// where(mask, fill, s) or where(mask, s, fill): s, with the mask recorded.
Node* StripMask(Node* n, const Node* user, Match& m) {
  if (!n->is_call("where") || !OnlyUsedBy(n, user) || n->num_args() != 3 ||
      !n->kwargs().empty() || !n->arg(0).is_node()) {
    return n;
  }
  for (int side = 1; side <= 2; ++side) {
    std::optional<double> fill = NumberArg(*n, side);
    const size_t other = side == 1 ? 2 : 1;
    if (!fill.has_value() || !n->arg(other).is_node()) continue;
    std::optional<TensorType> mt = KnownType(*n->arg(0).node());
    if (!mt.has_value() || mt->dtype != DType::kBool) return n;
    m.mask = n->arg(0).node();
    m.mask_keeps = side == 2;
    m.fill = *fill;
    m.last = n;
    return n->arg(other).node();
  }
  return n;
}

// The pattern ending in `out` (matmul(softmax(...), v)), or nullopt.
std::optional<Match> MatchAttention(Node* out) {
  if (!out->is_call("matmul") || out->num_args() != 2 ||
      !out->kwargs().empty() || !out->arg(0).is_node() ||
      !out->arg(1).is_node()) {
    return std::nullopt;
  }
  Node* softmax = out->arg(0).node();
  if (!softmax->is_call("softmax") || !OnlyUsedBy(softmax, out))
    return std::nullopt;
  absl::StatusOr<OpCall> call = OpCall::Bind(*softmax);
  std::optional<TensorType> st = KnownType(*softmax);
  if (!call.ok() || !st.has_value() || st->rank() < 2 ||
      (call->Int("dim") != -1 &&
       call->Int("dim") != static_cast<int64_t>(st->rank()) - 1)) {
    return std::nullopt;
  }
  Match m;
  m.v = out->arg(1).node();
  Node* x = call->TensorNode("input");
  if (x == nullptr) return std::nullopt;
  Node* s = StripMask(x, softmax, m);
  s = StripScale(s, m.last == nullptr ? softmax : m.last, m);
  const Node* product_user = m.last == nullptr ? softmax : m.last;
  if (!s->is_call("matmul") || !OnlyUsedBy(s, product_user) ||
      s->num_args() != 2 || !s->kwargs().empty() || !s->arg(0).is_node() ||
      !s->arg(1).is_node()) {
    return std::nullopt;
  }
  m.q = s->arg(0).node();
  m.kt = s->arg(1).node();
  // The same leading dims everywhere, and the scores' shape unchanged by
  // the mask and scale (no broadcasting up).
  std::optional<std::vector<int64_t>> q = StaticDims(*m.q),
                                      kt = StaticDims(*m.kt),
                                      v = StaticDims(*m.v),
                                      scores = StaticDims(*s),
                                      probs = StaticDims(*softmax);
  if (!q || !kt || !v || !scores || !probs || q->size() < 2 ||
      kt->size() != q->size() || v->size() != q->size() || scores != probs) {
    return std::nullopt;
  }
  const size_t r = q->size();
  for (size_t i = 0; i + 2 < r; ++i) {
    if ((*kt)[i] != (*q)[i] || (*v)[i] != (*q)[i]) return std::nullopt;
  }
  if ((*kt)[r - 1] == 0) return std::nullopt;  // No keys: nothing to normalize.
  m.t = (*scores)[r - 2];
  m.s = (*scores)[r - 1];
  m.dtype = KnownType(*s)->dtype;
  return m;
}

// Whether `mask` is a module tensor [1, ..., 1, t, s] that is true exactly
// where the key comes after the query (j > i): torch's causal mask, of the
// scores' own t and s (one that broadcasts along them is not).
bool IsCausalMask(const Module& module, const Node& mask, int64_t t,
                  int64_t s) {
  if (mask.op() != OpCode::kGetAttr) return false;
  const Tensor* tensor = module.FindTensor(mask.target());
  if (tensor == nullptr || tensor->dtype() != DType::kBool ||
      tensor->rank() < 2)
    return false;
  const int r = static_cast<int>(tensor->rank());
  for (int i = 0; i + 2 < r; ++i) {
    if (tensor->dim(i) != 1) return false;
  }
  const int64_t rows = tensor->dim(r - 2), cols = tensor->dim(r - 1);
  if (rows != t || cols != s) return false;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      if ((tensor->GetAsDouble(i * cols + j) != 0) != (j > i)) return false;
    }
  }
  return true;
}

// The keys from kT: the input of a transpose of the last two dims, or a
// new transpose (`created`).
Node* KeysOf(Graph& graph, Node* kt, size_t rank, bool& created) {
  created = false;
  if (kt->is_call("transpose") && kt->num_args() == 3 && kt->arg(0).is_node() &&
      kt->arg(1).is_int() && kt->arg(2).is_int() && kt->kwargs().empty()) {
    auto norm = [&](int64_t d) {
      return d < 0 ? d + static_cast<int64_t>(rank) : d;
    };
    const int64_t a = norm(kt->arg(1).int_value()),
                  b = norm(kt->arg(2).int_value());
    const int64_t last = static_cast<int64_t>(rank) - 1;
    if ((a == last && b == last - 1) || (a == last - 1 && b == last))
      return kt->arg(0).node();
  }
  Node* k = graph.CallFunction("transpose", {kt, int64_t{-2}, int64_t{-1}});
  InferAndSetType(k);
  created = true;
  return k;
}

}  // namespace

absl::StatusOr<int> FuseAttention(
    Module& module, const std::function<bool(const Node& fused)>& accept) {
  Graph& graph = module.graph();
  std::vector<Node*> products;
  for (Node* n : graph.nodes()) {
    if (n->is_call("matmul")) products.push_back(n);
  }
  int fused_count = 0;
  for (Node* out : products) {
    std::optional<Match> m = MatchAttention(out);
    if (!m.has_value()) continue;
    const std::optional<TensorType> want = KnownType(*out);
    auto guard = graph.InsertingBefore(out);
    std::vector<Node*> added;
    bool created = false;
    Node* k = KeysOf(graph, m->kt, KnownType(*m->q)->rank(), created);
    if (created) added.push_back(k);
    Argument mask;
    bool causal = false;
    // The fill as where stores it, in the scores' dtype (f32's lowest is
    // -inf in bf16).
    m->fill = Tensor::Scalar(m->dtype, m->fill).GetAsDouble(0);
    // -inf, or the dtype's lowest (torch.finfo's min, which a model cast
    // to bf16 keeps finite): behind a causal mask, which keeps each row's
    // diagonal, both weigh exactly 0 next to a finite score.
    const bool lowest_fill = (std::isinf(m->fill) && m->fill < 0) ||
                             m->fill <= -LargestFinite(m->dtype);
    if (m->mask != nullptr) {
      if (!m->mask_keeps && lowest_fill && IsCausalMask(module, *m->mask, m->t, m->s)) {
        causal = true;
      } else if (m->mask_keeps) {
        Node* flipped = graph.CallFunction("logical_not", {m->mask});
        InferAndSetType(flipped);
        added.push_back(flipped);
        mask = flipped;
      } else {
        mask = m->mask;
      }
    }
    Node* fused = graph.CallFunction(
        kAttentionOp, {m->q, k, m->v, mask, m->scale, m->fill, causal});
    InferAndSetType(fused);
    if (fused->type() != want || !accept(*fused)) {
      RETURN_IF_ERROR(graph.EraseNode(fused));
      for (auto it = added.rbegin(); it != added.rend(); ++it)
        EraseIfDead(graph, *it);
      continue;
    }
    out->ReplaceAllUsesWith(fused);
    EraseIfDead(graph, out);
    ++fused_count;
  }
  return fused_count;
}

}  // namespace graft::passes
