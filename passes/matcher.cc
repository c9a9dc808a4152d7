#include "passes/matcher.h"

#include "graph/op_registry.h"

namespace graft::passes::m {

Pattern Any(Node** capture) {
  return Pattern([capture](const Argument& a) {
    if (!a.is_node()) return false;
    if (capture != nullptr) *capture = a.node();
    return true;
  });
}

Pattern AnyArgument(const Argument** capture) {
  // Arguments handed to patterns may be temporaries; capture only nodes'
  // operands, which live in the graph.
  return Pattern([capture](const Argument& a) {
    if (capture != nullptr) *capture = &a;
    return true;
  });
}

Pattern ConstantScalar(double* capture) {
  return Pattern([capture](const Argument& a) {
    if (!a.is_number()) return false;
    if (capture != nullptr) *capture = a.number();
    return true;
  });
}

Pattern Literal(double value) {
  return Pattern([value](const Argument& a) { return a.is_number() && a.number() == value; });
}

Pattern Call(std::string op, std::vector<Pattern> operands, Node** capture) {
  return Pattern([op = std::move(op), operands = std::move(operands),
                  capture](const Argument& a) {
    if (!a.is_node() || !a.node()->is_call(op)) return false;
    Node* n = a.node();
    if (n->num_args() != operands.size()) return false;
    for (size_t i = 0; i < operands.size(); ++i) {
      if (!operands[i].Match(n->arg(i))) return false;
    }
    if (capture != nullptr) *capture = n;
    return true;
  });
}

Pattern CommutativeCall(std::string op, Pattern a, Pattern b, Node** capture) {
  Pattern straight = Call(op, {a, b}, capture);
  Pattern swapped = Call(op, {b, a}, capture);
  return Pattern([straight, swapped](const Argument& arg) {
    return straight.Match(arg) || swapped.Match(arg);
  });
}

Pattern OneUse(Pattern p) {
  return Pattern([p](const Argument& a) {
    return a.is_node() && a.node()->num_uses() == 1 && p.Match(a);
  });
}

Pattern Where(Pattern p, std::function<bool(const Node&)> pred) {
  return Pattern([p, pred = std::move(pred)](const Argument& a) {
    return a.is_node() && pred(*a.node()) && p.Match(a);
  });
}

Pattern WithParam(Pattern p, std::string param, Argument value) {
  return Pattern([p, param = std::move(param), value = std::move(value)](const Argument& a) {
    if (!a.is_node() || !p.Match(a)) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(*a.node());
    if (!call.ok() || call->schema().ParamIndex(param) < 0) return false;
    const Argument& got = call->Get(param);
    if (got.is_number() && value.is_number()) return got.number() == value.number();
    return got == value;
  });
}

}  // namespace graft::passes::m
