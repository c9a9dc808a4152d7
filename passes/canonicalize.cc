#include "passes/canonicalize.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "graph/op_registry.h"
#include "passes/matcher.h"
#include "passes/node_util.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

// True when both types are known and equal: replacing `a` by `b` then
// changes neither dtype nor shape.
bool SameKnownType(const Node& a, const Node& b) {
  std::optional<TensorType> ta = KnownType(a);
  if (!ta.has_value()) return false;
  std::optional<TensorType> tb = KnownType(b);
  return tb.has_value() && *ta == *tb;
}

std::optional<int64_t> KnownRank(const Node& node) {
  std::optional<TensorType> t = KnownType(node);
  if (!t.has_value()) return std::nullopt;
  return t->rank();
}

// Creates `op(operands)` to replace `root`, unless the new node's type would
// differ from the type recorded on `root` (a reshape whose -1 gets a fresh
// symbol, say): users typed against the old value would stop verifying.
Node* CreateReplacement(Rewriter& rw, const Node& root, absl::string_view op,
                        CallOperands operands) {
  Node* n = rw.Call(op, std::move(operands.args), std::move(operands.kwargs));
  if (root.type().has_value() && n->type().has_value() &&
      *root.type() != *n->type()) {
    (void)rw.graph().EraseNode(n);
    return nullptr;
  }
  return n;
}

// op(x, c) -> x where c is the op's neutral literal (and op(c, x) -> x for
// commutative ops).
class NeutralLiteral : public RewritePattern {
 public:
  NeutralLiteral(std::string name, std::string op, double neutral,
                 bool commutative)
      : RewritePattern(std::move(name)),
        op_(std::move(op)),
        neutral_(neutral),
        commutative_(commutative) {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call(op_)) return false;
    Node* x = nullptr;
    m::Pattern p =
        commutative_ ? m::CommutativeCall(op_, m::Any(&x), m::Literal(neutral_))
                     : m::Call(op_, m::Any(&x), m::Literal(neutral_));
    if (!p.Match(root) || !SameKnownType(*root, *x)) return false;
    rw.ReplaceNode(root, x);
    return true;
  }

 private:
  std::string op_;
  double neutral_;
  bool commutative_;
};

// transpose(transpose(x, a, b), a, b) -> x (either order of a and b).
class DoubleTranspose : public RewritePattern {
 public:
  DoubleTranspose() : RewritePattern("double-transpose") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call("transpose")) return false;
    absl::StatusOr<OpCall> outer = OpCall::Bind(*root);
    if (!outer.ok()) return false;
    Node* inner_node = outer->TensorNode("input");
    if (inner_node == nullptr || !inner_node->is_call("transpose")) {
      return false;
    }
    absl::StatusOr<OpCall> inner = OpCall::Bind(*inner_node);
    if (!inner.ok()) return false;
    Node* x = inner->TensorNode("input");
    if (x == nullptr) return false;
    int64_t a = inner->Int("dim0"), b = inner->Int("dim1");
    int64_t c = outer->Int("dim0"), d = outer->Int("dim1");
    if (std::optional<int64_t> rank = KnownRank(*x)) {
      a = WrapDim(a, *rank);
      b = WrapDim(b, *rank);
      c = WrapDim(c, *rank);
      d = WrapDim(d, *rank);
    }
    if (!((a == c && b == d) || (a == d && b == c))) return false;
    rw.ReplaceNode(root, x);
    return true;
  }
};

// The dims of a permute, wrapped into [0, n); nullopt if they are not a
// permutation (the verifier reports that, not us).
std::optional<std::vector<int64_t>> Permutation(const OpCall& call) {
  std::vector<int64_t> dims = call.Ints("dims");
  const int64_t n = static_cast<int64_t>(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (int64_t& d : dims) {
    d = WrapDim(d, n);
    if (d < 0 || d >= n || seen[d]) return std::nullopt;
    seen[d] = true;
  }
  return dims;
}

bool IsIdentityPermutation(const std::vector<int64_t>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// permute(x, identity) -> x.
class IdentityPermute : public RewritePattern {
 public:
  IdentityPermute() : RewritePattern("identity-permute") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call("permute")) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(*root);
    if (!call.ok()) return false;
    Node* x = call->TensorNode("input");
    std::optional<std::vector<int64_t>> dims = Permutation(*call);
    if (x == nullptr || !dims.has_value() || !IsIdentityPermutation(*dims)) {
      return false;
    }
    rw.ReplaceNode(root, x);
    return true;
  }
};

// permute(permute(x, p), q) -> permute(x, p[q[i]]), or x when that is the
// identity.
class PermutePermute : public RewritePattern {
 public:
  PermutePermute() : RewritePattern("permute-permute") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call("permute")) return false;
    absl::StatusOr<OpCall> outer = OpCall::Bind(*root);
    if (!outer.ok()) return false;
    Node* inner_node = outer->TensorNode("input");
    if (inner_node == nullptr || !inner_node->is_call("permute")) return false;
    absl::StatusOr<OpCall> inner = OpCall::Bind(*inner_node);
    if (!inner.ok()) return false;
    Node* x = inner->TensorNode("input");
    std::optional<std::vector<int64_t>> p = Permutation(*inner);
    std::optional<std::vector<int64_t>> q = Permutation(*outer);
    if (x == nullptr || !p.has_value() || !q.has_value() ||
        p->size() != q->size()) {
      return false;
    }
    // Result dim i is the inner result's dim q[i], which is x's dim p[q[i]].
    std::vector<int64_t> composed(q->size());
    for (size_t i = 0; i < q->size(); ++i) composed[i] = (*p)[(*q)[i]];
    if (IsIdentityPermutation(composed)) {
      rw.ReplaceNode(root, x);
      return true;
    }
    Node* n = CreateReplacement(
        rw, *root, "permute", {{Argument(x), Argument::IntList(composed)}, {}});
    if (n == nullptr) return false;
    rw.ReplaceNode(root, n);
    return true;
  }
};

// reshape(reshape(x, s1), s2) -> reshape(x, s2).
class ReshapeReshape : public RewritePattern {
 public:
  ReshapeReshape() : RewritePattern("reshape-reshape") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call("reshape")) return false;
    absl::StatusOr<OpCall> outer = OpCall::Bind(*root);
    if (!outer.ok()) return false;
    Node* inner_node = outer->TensorNode("input");
    if (inner_node == nullptr || !inner_node->is_call("reshape")) return false;
    absl::StatusOr<OpCall> inner = OpCall::Bind(*inner_node);
    if (!inner.ok() || inner->TensorNode("input") == nullptr) return false;
    Node* x = inner->TensorNode("input");
    Node* n = CreateReplacement(rw, *root, "reshape",
                                WithParam(*root, "input", Argument(x)));
    if (n == nullptr) return false;
    rw.ReplaceNode(root, n);
    return true;
  }
};

// op(x, ...) -> x for a shape-only op (reshape, unsqueeze of a squeeze)
// whose result has x's own type: the elements, in order, are x's.
class SameTypeShapeOp : public RewritePattern {
 public:
  // `input_op`: if set, x must be produced by this op, and the rewrite
  // skips over it (unsqueeze(squeeze(x)) -> x).
  SameTypeShapeOp(std::string name, std::string op, std::string input_op)
      : RewritePattern(std::move(name)),
        op_(std::move(op)),
        input_op_(std::move(input_op)) {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call(op_)) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(*root);
    if (!call.ok()) return false;
    Node* x = call->TensorNode("input");
    if (x == nullptr) return false;
    if (!input_op_.empty()) {
      if (!x->is_call(input_op_)) return false;
      absl::StatusOr<OpCall> inner = OpCall::Bind(*x);
      if (!inner.ok()) return false;
      x = inner->TensorNode("input");
      if (x == nullptr) return false;
    }
    if (!SameKnownType(*root, *x)) return false;
    rw.ReplaceNode(root, x);
    return true;
  }

 private:
  std::string op_;
  std::string input_op_;
};

// squeeze(unsqueeze(x, d), d) -> x: the squeeze removes exactly the dim the
// unsqueeze inserted. Works without types when both dims are non-negative.
class UnsqueezeSqueeze : public RewritePattern {
 public:
  UnsqueezeSqueeze() : RewritePattern("unsqueeze-squeeze") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call("squeeze")) return false;
    absl::StatusOr<OpCall> outer = OpCall::Bind(*root);
    if (!outer.ok()) return false;
    Node* inner_node = outer->TensorNode("input");
    if (inner_node == nullptr || !inner_node->is_call("unsqueeze")) {
      return false;
    }
    absl::StatusOr<OpCall> inner = OpCall::Bind(*inner_node);
    if (!inner.ok()) return false;
    Node* x = inner->TensorNode("input");
    if (x == nullptr || outer->IsNone("dim")) return false;
    std::vector<int64_t> dims = outer->Ints("dim");
    if (dims.size() != 1) return false;
    int64_t inserted = inner->Int("dim");
    int64_t removed = dims[0];
    if (inserted < 0 || removed < 0) {
      std::optional<int64_t> rank = KnownRank(*x);
      if (!rank.has_value()) return false;
      // Both index the unsqueezed tensor, of rank + 1 dims.
      inserted = WrapDim(inserted, *rank + 1);
      removed = WrapDim(removed, *rank + 1);
    }
    if (inserted != removed) return false;
    rw.ReplaceNode(root, x);
    return true;
  }
};

// identity(x) -> x; dropout(x, training=False) -> x.
class NoOp : public RewritePattern {
 public:
  NoOp() : RewritePattern("no-op") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call("identity") && !root->is_call("dropout")) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(*root);
    if (!call.ok()) return false;
    Node* x = call->TensorNode("input");
    if (x == nullptr) return false;
    if (root->is_call("dropout") && call->Bool("training")) return false;
    rw.ReplaceNode(root, x);
    return true;
  }
};

// cast(x, dtype) -> x when x already has that dtype.
class CastToSameDType : public RewritePattern {
 public:
  CastToSameDType() : RewritePattern("cast-same-dtype") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call("cast")) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(*root);
    if (!call.ok()) return false;
    Node* x = call->TensorNode("input");
    if (x == nullptr) return false;
    std::optional<TensorType> type = KnownType(*x);
    if (!type.has_value() || type->dtype != call->GetDType("dtype")) {
      return false;
    }
    rw.ReplaceNode(root, x);
    return true;
  }
};

// neg(neg(x)) -> x.
class DoubleNegation : public RewritePattern {
 public:
  DoubleNegation() : RewritePattern("double-negation") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call("neg")) return false;
    Node* x = nullptr;
    if (!m::Call("neg", m::Call("neg", m::Any(&x))).Match(root)) return false;
    rw.ReplaceNode(root, x);
    return true;
  }
};

}  // namespace

std::vector<std::unique_ptr<RewritePattern>> CanonicalizationPatterns() {
  std::vector<std::unique_ptr<RewritePattern>> p;
  p.push_back(std::make_unique<NeutralLiteral>("add-zero", "add", 0.0, true));
  p.push_back(std::make_unique<NeutralLiteral>("sub-zero", "sub", 0.0, false));
  p.push_back(std::make_unique<NeutralLiteral>("mul-one", "mul", 1.0, true));
  p.push_back(std::make_unique<NeutralLiteral>("div-one", "div", 1.0, false));
  p.push_back(std::make_unique<DoubleTranspose>());
  p.push_back(std::make_unique<IdentityPermute>());
  p.push_back(std::make_unique<PermutePermute>());
  p.push_back(std::make_unique<ReshapeReshape>());
  p.push_back(
      std::make_unique<SameTypeShapeOp>("reshape-to-same-type", "reshape", ""));
  p.push_back(std::make_unique<UnsqueezeSqueeze>());
  p.push_back(std::make_unique<SameTypeShapeOp>("squeeze-to-same-type",
                                                "squeeze", "unsqueeze"));
  p.push_back(std::make_unique<SameTypeShapeOp>("squeeze-unsqueeze",
                                                "unsqueeze", "squeeze"));
  p.push_back(std::make_unique<NoOp>());
  p.push_back(std::make_unique<CastToSameDType>());
  p.push_back(std::make_unique<DoubleNegation>());
  return p;
}

absl::StatusOr<bool> CanonicalizePass::Run(Module& module, PassContext& ctx) {
  // The driver notes a run that did not converge in `ctx`.
  ASSIGN_OR_RETURN(
      GreedyReport report,
      ApplyPatternsGreedily(module, CanonicalizationPatterns(), &ctx));
  return report.rewrites > 0;
}

}  // namespace graft::passes
