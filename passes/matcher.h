#ifndef GRAFT_PASSES_MATCHER_H_
#define GRAFT_PASSES_MATCHER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/node.h"

// A small combinator DSL for hand-written patterns, in the spirit of LLVM's
// PatternMatch and MLIR's m_Op:
//
//   Node* x; double c;
//   auto p = m::Call("relu", m::Call("add", m::Any(&x), m::ConstantScalar(&c)));
//   if (p.Match(node)) ...
//
// A pattern matches an Argument (a node reference or a literal), so literal
// operands can be matched as easily as nodes. Captures are written as the
// match proceeds; read them only after Match returned true.
namespace graft::passes::m {

class Pattern {
 public:
  using Fn = std::function<bool(const Argument&)>;
  explicit Pattern(Fn fn) : fn_(std::make_shared<Fn>(std::move(fn))) {}

  bool Match(const Argument& a) const { return (*fn_)(a); }
  bool Match(Node* n) const { return (*fn_)(Argument(n)); }

 private:
  std::shared_ptr<Fn> fn_;
};

// Any node; `capture` (optional) receives it.
Pattern Any(Node** capture = nullptr);
// Any argument at all, node or literal.
Pattern AnyArgument(const Argument** capture = nullptr);
// An int or float literal; `capture` receives its value.
Pattern ConstantScalar(double* capture = nullptr);
// The literal `value` (ints and floats compare numerically).
Pattern Literal(double value);
// A call_function of `op` whose positional arguments match `operands`
// (exactly that many positional arguments).
Pattern Call(std::string op, std::vector<Pattern> operands,
             Node** capture = nullptr);
template <typename... P>
Pattern Call(std::string op, P... operands) {
  return Call(std::move(op), std::vector<Pattern>{operands...});
}
// Like Call, for a two-operand commutative op: also tries the operands swapped.
Pattern CommutativeCall(std::string op, Pattern a, Pattern b, Node** capture = nullptr);
// `p`, and the node has exactly one use.
Pattern OneUse(Pattern p);
// `p`, and the node satisfies `pred` (types, kwargs, anything).
Pattern Where(Pattern p, std::function<bool(const Node&)> pred);
// `p`, and the call's parameter `param` (by schema name, positional or
// keyword, defaults included) equals `value`.
Pattern WithParam(Pattern p, std::string param, Argument value);

}  // namespace graft::passes::m

#endif  // GRAFT_PASSES_MATCHER_H_
