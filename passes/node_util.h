#ifndef GRAFT_PASSES_NODE_UTIL_H_
#define GRAFT_PASSES_NODE_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/argument.h"
#include "graph/module.h"
#include "graph/node.h"
#include "graph/op_registry.h"
#include "graph/tensor_type.h"

// Small helpers the built-in passes share: reading a node's type, rebuilding
// a call with one parameter changed, and purity.
namespace graft::passes {

// The node's recorded type, or the one its op's type rule gives when every
// input type is known; nullopt otherwise (and for tuple-valued nodes).
std::optional<TensorType> KnownType(const Node& node);

// Records on `node` the type(s) its op's type rule gives, when known.
void InferAndSetType(Node* node);
// Records `types`, a type rule's result for `node`: its type, or its tuple
// types for an op that returns a tuple. Nothing when `types` is empty.
void SetInferredTypes(Node* node, const std::vector<TensorType>& types);


// A call's operands, positional and keyword, ready for Graph::CallFunction.
struct CallOperands {
  std::vector<Argument> args;
  Kwargs kwargs;
};

// The node's own operands, copied.
CallOperands OperandsOf(const Node& node);

// Sets parameter `param` (a name of `schema`) among `operands`: a positional
// argument is replaced in place, a keyword one is replaced or added.
void SetParam(const OpSchema& schema, CallOperands& operands,
              absl::string_view param, Argument value);

// The operands of call `node` with parameter `param` set to `value`. The
// node's op must be registered.
CallOperands WithParam(const Node& node, absl::string_view param,
                       Argument value);

// The tensor a get_attr node reads; null for other nodes, null nodes and
// missing tensors.
const Tensor* AttrTensor(const Module& module, const Node* node);

// The tensor a get_attr node reads when nothing else reads it: the node has
// one use and no other get_attr reads the same tensor; else null. A pass
// may then change the tensor in place of that one use.
const Tensor* PrivateConstant(const Module& module, const Node* node);

// The only user of `node` when it has exactly one use, else null.
Node* SoleUser(const Node& node);

// Whether `node` has uses and every one is by `user` (a product of a value
// by itself uses it twice).
bool AllUsesBy(const Node* node, const Node* user);

// Removes the module's tensors that no get_attr reads; returns whether any
// went.
bool RemoveUnreadTensors(Module& module);

// Erases `node` if it is pure and unused, then whichever of its inputs that
// leaves pure and unused, and so on (a worklist, no recursion).
void EraseIfDead(Graph& graph, Node* node);

// `dim` wrapped into [0, rank) when negative (PyTorch style); no check.
inline int64_t WrapDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + rank : dim;
}

}  // namespace graft::passes

#endif  // GRAFT_PASSES_NODE_UTIL_H_
