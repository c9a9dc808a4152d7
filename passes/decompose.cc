#include "passes/decompose.h"

#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/op_registry.h"
#include "passes/node_util.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

// Creates the nodes of one decomposition through the rewriter, and removes
// them again if the result turns out to have another type than the op it
// was meant to replace.
class Expansion {
 public:
  Expansion(Node* root, Rewriter& rw) : root_(root), rw_(rw) {}

  Node* Call(absl::string_view op, std::vector<Argument> args) {
    Node* n = rw_.Call(op, std::move(args));
    created_.push_back(n);
    return n;
  }

  // Replaces the root with `result`; false (and the graph as before) if the
  // types differ where both are known.
  bool Finish(Node* result) {
    std::optional<TensorType> want = KnownType(*root_);
    if (want.has_value() && result->type().has_value() &&
        *want != *result->type()) {
      for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
        (void)rw_.graph().EraseNode(*it);
      }
      return false;
    }
    rw_.ReplaceNode(root_, result);
    return true;
  }

 private:
  Node* root_;
  Rewriter& rw_;
  std::vector<Node*> created_;
};

// False when x's type is known and not floating point: the decompositions
// compute in x's dtype, while the composite ops compute in f32.
bool FloatOrUnknown(const Node* x) {
  std::optional<TensorType> t = KnownType(*x);
  return !t.has_value() || IsFloatingPoint(t->dtype);
}

// A pattern for one op: Expand builds the replacement from the bound call.
class Decomposition : public RewritePattern {
 public:
  explicit Decomposition(std::string op)
      : RewritePattern(absl::StrCat("decompose-", op)), op_(std::move(op)) {}

  absl::StatusOr<bool> MatchAndRewrite(Node* root,
                                       Rewriter& rw) const override {
    if (!root->is_call(op_)) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(*root);
    if (!call.ok()) return false;
    Node* x = call->TensorNode("input");
    if (x == nullptr || !FloatOrUnknown(x)) return false;
    Expansion e(root, rw);
    Node* result = Expand(*call, x, e);
    return result != nullptr && e.Finish(result);
  }

 protected:
  // Builds the decomposition; null when it does not apply.
  virtual Node* Expand(const OpCall& call, Node* x, Expansion& e) const = 0;

 private:
  std::string op_;
};

// gelu, exact (erf) or tanh form.
class GeluDecomposition : public Decomposition {
 public:
  GeluDecomposition() : Decomposition("gelu") {}

 protected:
  Node* Expand(const OpCall& call, Node* x, Expansion& e) const override {
    const std::string& approximate = call.String("approximate");
    Node* inner;
    if (approximate == "none") {
      // erf(x / sqrt(2)).
      inner = e.Call("erf", {e.Call("mul", {x, M_SQRT1_2})});
    } else if (approximate == "tanh") {
      // tanh(sqrt(2/pi) * (x + 0.044715 * x^3)).
      Node* cube = e.Call("mul", {e.Call("mul", {x, x}), x});
      Node* sum = e.Call("add", {x, e.Call("mul", {cube, 0.044715})});
      inner = e.Call("tanh", {e.Call("mul", {sum, std::sqrt(2.0 / M_PI)})});
    } else {
      return nullptr;
    }
    Node* half_x = e.Call("mul", {x, 0.5});
    return e.Call("mul", {half_x, e.Call("add", {inner, 1.0})});
  }
};

// silu(x) = x * sigmoid(x).
class SiluDecomposition : public Decomposition {
 public:
  SiluDecomposition() : Decomposition("silu") {}

 protected:
  Node* Expand(const OpCall& call, Node* x, Expansion& e) const override {
    return e.Call("mul", {x, e.Call("sigmoid", {x})});
  }
};

// layer_norm over the last len(normalized_shape) dims.
class LayerNormDecomposition : public Decomposition {
 public:
  LayerNormDecomposition() : Decomposition("layer_norm") {}

 protected:
  Node* Expand(const OpCall& call, Node* x, Expansion& e) const override {
    const int64_t k =
        static_cast<int64_t>(call.Ints("normalized_shape").size());
    if (k == 0) return nullptr;
    std::vector<int64_t> dims;
    for (int64_t d = -k; d < 0; ++d) dims.push_back(d);
    Argument reduce = Argument::IntList(dims);
    Node* mean = e.Call("mean", {x, reduce, true});
    Node* centered = e.Call("sub", {x, mean});
    Node* var =
        e.Call("mean", {e.Call("mul", {centered, centered}), reduce, true});
    Node* inv_std = e.Call("rsqrt", {e.Call("add", {var, call.Float("eps")})});
    Node* y = e.Call("mul", {centered, inv_std});
    if (Node* w = call.TensorNode("weight")) y = e.Call("mul", {y, w});
    if (Node* b = call.TensorNode("bias")) y = e.Call("add", {y, b});
    return y;
  }
};

// linear(x, w, b) = matmul(x, w^T) + b.
class LinearDecomposition : public Decomposition {
 public:
  LinearDecomposition() : Decomposition("linear") {}

 protected:
  Node* Expand(const OpCall& call, Node* x, Expansion& e) const override {
    Node* w = call.TensorNode("weight");
    if (w == nullptr) return nullptr;
    std::optional<TensorType> wt = KnownType(*w);
    if (!wt.has_value() || (wt->rank() != 1 && wt->rank() != 2)) return nullptr;
    // linear's weight is [out, in]; matmul wants [in, out]. A 1-D weight
    // is one output feature, which matmul's vector rule drops as linear does.
    Node* rhs = wt->rank() == 2 ? e.Call("transpose", {w, 0, 1}) : w;
    Node* y = e.Call("matmul", {x, rhs});
    if (Node* b = call.TensorNode("bias")) y = e.Call("add", {y, b});
    return y;
  }
};

// softmax and log_softmax, shifted by the maximum.
class SoftmaxDecomposition : public Decomposition {
 public:
  explicit SoftmaxDecomposition(bool log)
      : Decomposition(log ? "log_softmax" : "softmax"), log_(log) {}

 protected:
  Node* Expand(const OpCall& call, Node* x, Expansion& e) const override {
    Argument dim = Argument::IntList({call.Int("dim")});
    // Subtracting the maximum keeps exp from overflowing.
    Node* shifted = e.Call("sub", {x, e.Call("amax", {x, dim, true})});
    Node* exp = e.Call("exp", {shifted});
    Node* total = e.Call("sum", {exp, dim, true});
    if (log_) return e.Call("sub", {shifted, e.Call("log", {total})});
    return e.Call("div", {exp, total});
  }

 private:
  bool log_;
};

}  // namespace

const std::vector<std::string>& DecomposableOps() {
  static const auto* ops = new std::vector<std::string>{
      "gelu", "layer_norm", "linear", "log_softmax", "silu", "softmax"};
  return *ops;
}

std::unique_ptr<RewritePattern> DecompositionPattern(absl::string_view op) {
  if (op == "gelu") return std::make_unique<GeluDecomposition>();
  if (op == "silu") return std::make_unique<SiluDecomposition>();
  if (op == "layer_norm") return std::make_unique<LayerNormDecomposition>();
  if (op == "linear") return std::make_unique<LinearDecomposition>();
  if (op == "softmax") return std::make_unique<SoftmaxDecomposition>(false);
  if (op == "log_softmax") return std::make_unique<SoftmaxDecomposition>(true);
  return nullptr;
}

DecomposePass::DecomposePass() : ops_(DecomposableOps()) {}

absl::StatusOr<std::unique_ptr<DecomposePass>> DecomposePass::FromOptions(
    const PassOptions& options) {
  std::string list = options.GetString("ops", "");
  if (list.empty()) return std::make_unique<DecomposePass>();
  std::vector<std::string> ops;
  for (absl::string_view op : absl::StrSplit(list, ';', absl::SkipEmpty())) {
    if (DecompositionPattern(op) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot decompose '", op,
          "'; decomposable ops: ", absl::StrJoin(DecomposableOps(), ", ")));
    }
    ops.emplace_back(op);
  }
  return std::make_unique<DecomposePass>(std::move(ops));
}

absl::StatusOr<bool> DecomposePass::Run(Module& module, PassContext& ctx) {
  std::vector<std::unique_ptr<RewritePattern>> patterns;
  for (const std::string& op : ops_) {
    std::unique_ptr<RewritePattern> p = DecompositionPattern(op);
    if (p == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot decompose '", op, "'"));
    }
    patterns.push_back(std::move(p));
  }
  ASSIGN_OR_RETURN(GreedyReport report,
                   ApplyPatternsGreedily(module, patterns, &ctx));
  return report.rewrites > 0;
}

}  // namespace graft::passes
