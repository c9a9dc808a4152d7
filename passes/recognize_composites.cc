#include "passes/recognize_composites.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "graph/op_registry.h"
#include "passes/node_util.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

// Literals as exporters write them (f32 roundings of the exact values).
bool Near(double value, double want) {
  return std::abs(value - want) <= 1e-4 * std::abs(want);
}

bool FloatTyped(const Node* n) {
  std::optional<TensorType> t = KnownType(*n);
  return t.has_value() && IsFloatingPoint(t->dtype);
}

// A call of `op` with `num_args` positional arguments and no keywords.
bool IsPlainCall(const Node* n, absl::string_view op, size_t num_args) {
  return n->is_call(op) && n->num_args() == num_args && n->kwargs().empty();
}

// The factors of a product, through the mul nodes (and divisions by a
// literal) that only the product reads: its other factors, with repeats,
// and the product of its literal factors.
struct Factors {
  std::vector<Node*> nodes;
  double constant = 1;
};

void CollectFactors(Node* n, const Node* user, Factors& f) {
  const bool inner = user == nullptr || AllUsesBy(n, user);
  if (inner && IsPlainCall(n, "mul", 2)) {
    const Argument& a = n->arg(0);
    const Argument& b = n->arg(1);
    if ((a.is_node() || a.is_number()) && (b.is_node() || b.is_number())) {
      for (const Argument* arg : {&a, &b}) {
        if (arg->is_number()) {
          f.constant *= arg->number();
        } else {
          CollectFactors(arg->node(), n, f);
        }
      }
      return;
    }
  }
  if (inner && IsPlainCall(n, "div", 2) && n->arg(0).is_node() && n->arg(1).is_number() &&
      n->arg(1).number() != 0) {
    f.constant /= n->arg(1).number();
    CollectFactors(n->arg(0).node(), n, f);
    return;
  }
  f.nodes.push_back(n);
}

// add(n, c) or add(c, n) with a literal c: n, or null.
Node* PlusLiteral(Node* add, double* c) {
  if (!IsPlainCall(add, "add", 2)) return nullptr;
  for (int side = 0; side < 2; ++side) {
    if (add->arg(side).is_node() && add->arg(1 - side).is_number()) {
      *c = add->arg(1 - side).number();
      return add->arg(side).node();
    }
  }
  return nullptr;
}

// The single-use operand of a one-operand call of `op`, or null.
Node* OnlyOperandOf(Node* call, absl::string_view op) {
  if (!IsPlainCall(call, op, 1) || !call->arg(0).is_node()) return nullptr;
  return call->arg(0).node();
}

// sqrt(2/pi) * (x + 0.044715 * x^3), the cube as x * x * x or pow(x, 3).
bool IsTanhGeluArgument(Node* u, const Node* tanh, const Node* x) {
  Factors outer;
  CollectFactors(u, tanh, outer);
  if (outer.nodes.size() != 1 || !Near(outer.constant, std::sqrt(2.0 / M_PI))) return false;
  Node* sum = outer.nodes[0];
  if (sum->num_uses() != 1 || !IsPlainCall(sum, "add", 2) || !sum->arg(0).is_node() ||
      !sum->arg(1).is_node()) {
    return false;
  }
  for (int side = 0; side < 2; ++side) {
    if (sum->arg(side).node() != x) continue;
    Factors cube;
    CollectFactors(sum->arg(1 - side).node(), sum, cube);
    if (!Near(cube.constant, 0.044715)) continue;
    const bool product = cube.nodes.size() == 3 && cube.nodes[0] == x &&
                         cube.nodes[1] == x && cube.nodes[2] == x;
    const bool power = cube.nodes.size() == 1 && cube.nodes[0]->num_uses() == 1 &&
                       IsPlainCall(cube.nodes[0], "pow", 2) &&
                       cube.nodes[0]->arg(0).is_node() && cube.nodes[0]->arg(0).node() == x &&
                       cube.nodes[0]->arg(1).is_number() && cube.nodes[0]->arg(1).number() == 3;
    if (product || power) return true;
  }
  return false;
}

// Which gelu `x * one_plus` (times 0.5) is: "tanh", "none" (erf), or none.
std::optional<std::string> GeluForm(Node* x, Node* one_plus) {
  double one = 0;
  Node* t = PlusLiteral(one_plus, &one);
  if (t == nullptr || one != 1 || one_plus->num_uses() != 1 || t->num_uses() != 1) {
    return std::nullopt;
  }
  if (Node* u = OnlyOperandOf(t, "erf")) {
    Factors scaled;
    CollectFactors(u, t, scaled);
    if (scaled.nodes.size() == 1 && scaled.nodes[0] == x && Near(scaled.constant, M_SQRT1_2)) {
      return std::string("none");
    }
    return std::nullopt;
  }
  if (Node* u = OnlyOperandOf(t, "tanh")) {
    if (IsTanhGeluArgument(u, t, x)) return std::string("tanh");
  }
  return std::nullopt;
}

class RecognizeGelu : public RewritePattern {
 public:
  RecognizeGelu() : RewritePattern("recognize-gelu") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root, Rewriter& rw) const override {
    const bool product = IsPlainCall(root, "mul", 2) ||
                         (IsPlainCall(root, "div", 2) && root->arg(1).is_number());
    if (!product || !FloatTyped(root)) return false;
    Factors f;
    CollectFactors(root, nullptr, f);
    if (f.nodes.size() != 2 || !Near(f.constant, 0.5)) return false;
    for (int i = 0; i < 2; ++i) {
      Node* x = f.nodes[i];
      std::optional<std::string> form = GeluForm(x, f.nodes[1 - i]);
      if (!form.has_value() || KnownType(*x) != KnownType(*root)) continue;
      rw.ReplaceNode(root, rw.Call("gelu", {x, *form}));
      return true;
    }
    return false;
  }
};

// mean(x, dims, keepdim=True) over the trailing dims of x: how many, or 0.
int64_t TrailingMeanDims(const Node* mean, const Node* x) {
  if (!mean->is_call("mean")) return 0;
  absl::StatusOr<OpCall> call = OpCall::Bind(*mean);
  std::optional<TensorType> t = KnownType(*x);
  if (!call.ok() || !t.has_value() || call->TensorNode("input") != x ||
      !call->Bool("keepdim")) {
    return 0;
  }
  const int64_t rank = t->rank();
  if (call->IsNone("dim")) return rank;
  std::vector<int64_t> dims = call->Ints("dim");
  for (int64_t& d : dims) d = WrapDim(d, rank);
  std::sort(dims.begin(), dims.end());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(i)) {
      return 0;
    }
  }
  return static_cast<int64_t>(dims.size());
}

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), or the centered value
// times rsqrt(...), over the trailing dims.
class RecognizeLayerNorm : public RewritePattern {
 public:
  RecognizeLayerNorm() : RewritePattern("recognize-layer-norm") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root, Rewriter& rw) const override {
    if (!FloatTyped(root) || root->num_args() != 2 || !root->kwargs().empty() ||
        !root->arg(0).is_node() || !root->arg(1).is_node()) {
      return false;
    }
    for (int side = 0; side < 2; ++side) {
      Node* centered = root->arg(side).node();
      Node* scale = root->arg(1 - side).node();
      Node* plus_eps = nullptr;
      if (root->is_call("div") && side == 0) {
        plus_eps = OnlyOperandOf(scale, "sqrt");
      } else if (root->is_call("mul")) {
        plus_eps = OnlyOperandOf(scale, "rsqrt");
      }
      if (plus_eps == nullptr || scale->num_uses() != 1 || plus_eps->num_uses() != 1) continue;
      double eps = 0;
      Node* var = PlusLiteral(plus_eps, &eps);
      if (var == nullptr || var->num_uses() != 1 || !var->is_call("mean")) continue;
      Node* x = CenteredInput(centered);
      if (x == nullptr) continue;
      Node* square = var->num_args() > 0 && var->arg(0).is_node() ? var->arg(0).node() : nullptr;
      if (square == nullptr || !IsSquareOf(square, centered) ||
          !AllUsesBy(square, var)) {
        continue;
      }
      // The centered value feeds only the square and the root.
      bool private_use = true;
      for (const Use& use : centered->uses()) {
        private_use &= use.user == square || use.user == root;
      }
      const int64_t k = TrailingMeanDims(var, square);
      const Node* mean = centered->arg(1).node();
      if (!private_use || k == 0 || TrailingMeanDims(mean, x) != k ||
          KnownType(*x) != KnownType(*root)) {
        continue;
      }
      const Shape shape = KnownType(*x)->shape;
      std::vector<int64_t> normalized;
      for (size_t d = shape.size() - k; d < shape.size(); ++d) {
        if (!shape[d].is_constant()) return false;
        normalized.push_back(shape[d].value());
      }
      rw.ReplaceNode(root, rw.Call("layer_norm", {x, Argument::IntList(normalized)},
                                   {{"eps", Argument(eps)}}));
      return true;
    }
    return false;
  }

 private:
  // x of sub(x, mean(x, ...)) whose mean only the sub reads; or null.
  static Node* CenteredInput(Node* centered) {
    if (!IsPlainCall(centered, "sub", 2) || !centered->arg(0).is_node() ||
        !centered->arg(1).is_node()) {
      return nullptr;
    }
    Node* x = centered->arg(0).node();
    Node* mean = centered->arg(1).node();
    return mean->is_call("mean") && AllUsesBy(mean, centered) ? x : nullptr;
  }

  static bool IsSquareOf(const Node* square, const Node* c) {
    if (IsPlainCall(square, "mul", 2)) {
      return square->arg(0).is_node() && square->arg(0).node() == c &&
             square->arg(1).is_node() && square->arg(1).node() == c;
    }
    return IsPlainCall(square, "pow", 2) && square->arg(0).is_node() &&
           square->arg(0).node() == c && square->arg(1).is_number() &&
           square->arg(1).number() == 2;
  }
};

// layer_norm(...) * weight and layer_norm(...) + bias, with a weight or
// bias of exactly the normalized shape and dtype, become its weight and
// bias.
class LayerNormAffine : public RewritePattern {
 public:
  LayerNormAffine() : RewritePattern("layer-norm-affine") {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root, Rewriter& rw) const override {
    const bool is_mul = IsPlainCall(root, "mul", 2);
    if ((!is_mul && !IsPlainCall(root, "add", 2)) || !root->arg(0).is_node() ||
        !root->arg(1).is_node()) {
      return false;
    }
    const char* slot = is_mul ? "weight" : "bias";
    for (int side = 0; side < 2; ++side) {
      Node* norm = root->arg(side).node();
      Node* param = root->arg(1 - side).node();
      if (!norm->is_call("layer_norm") || norm->num_uses() != 1 || norm == param) continue;
      absl::StatusOr<OpCall> call = OpCall::Bind(*norm);
      if (!call.ok() || !call->IsNone(slot) || (is_mul && !call->IsNone("bias"))) continue;
      std::optional<TensorType> norm_type = KnownType(*norm);
      std::optional<TensorType> param_type = KnownType(*param);
      const std::vector<int64_t> normalized = call->Ints("normalized_shape");
      if (!norm_type.has_value() || !param_type.has_value() ||
          param_type->dtype != norm_type->dtype ||
          param_type->rank() != static_cast<int64_t>(normalized.size()) ||
          KnownType(*root) != norm_type) {
        continue;
      }
      bool same_shape = true;
      for (size_t d = 0; d < normalized.size(); ++d) {
        same_shape &= param_type->shape[d].is_constant() &&
                      param_type->shape[d].value() == normalized[d];
      }
      if (!same_shape) continue;
      Kwargs kwargs = {{"eps", Argument(call->Float("eps"))}};
      if (Node* w = call->TensorNode("weight")) kwargs.push_back({"weight", w});
      kwargs.push_back({slot, param});
      rw.ReplaceNode(root, rw.Call("layer_norm",
                                   {call->TensorNode("input"), Argument::IntList(normalized)},
                                   std::move(kwargs)));
      return true;
    }
    return false;
  }
};

}  // namespace

std::vector<std::unique_ptr<RewritePattern>> CompositeRecognitionPatterns() {
  std::vector<std::unique_ptr<RewritePattern>> p;
  p.push_back(std::make_unique<RecognizeGelu>());
  p.push_back(std::make_unique<RecognizeLayerNorm>());
  p.push_back(std::make_unique<LayerNormAffine>());
  return p;
}

absl::StatusOr<bool> RecognizeCompositesPass::Run(Module& module, PassContext& ctx) {
  ASSIGN_OR_RETURN(GreedyReport report,
                   ApplyPatternsGreedily(module, CompositeRecognitionPatterns(), &ctx));
  return report.rewrites > 0;
}

}  // namespace graft::passes
