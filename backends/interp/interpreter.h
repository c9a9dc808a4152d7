#ifndef GRAFT_BACKENDS_INTERP_INTERPRETER_H_
#define GRAFT_BACKENDS_INTERP_INTERPRETER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/backend.h"
#include "backends/interp/value.h"
#include "graph/module.h"
#include "graph/node.h"
#include "graph/tensor.h"

namespace graft::interp {

// Runs a module's graph node by node with plain reference kernels, like
// torch.fx.Interpreter: the numerical oracle every other backend is tested
// against. Every node goes through RunNode, which dispatches to one virtual
// per opcode, so a subclass can observe or replace any value (profilers,
// calibration observers, debugging). Intermediate values are freed after
// their last use, so a subclass that wants to keep values must copy them
// in its hook.
//
// Not thread-safe: one Run at a time per Interpreter.
class Interpreter {
 public:
  // `module` must outlive the interpreter and not change while it exists.
  explicit Interpreter(const Module& module);
  virtual ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs the graph on `inputs`, given in placeholder order. Returns the
  // outputs in the order of the output node's value; a tuple-valued output
  // contributes each of its elements.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs);
  // As Run, but returns the output node's value itself: a tensor for a
  // single output node, a tuple for a list (or a tuple-valued node).
  absl::StatusOr<Value> RunToValue(absl::Span<const Tensor> inputs);

  const Module& module() const { return module_; }
  // The signature inputs are checked against; by default the placeholders'
  // own (possibly symbolic) types. Backends may narrow it.
  const std::vector<ValueSignature>& input_signature() const {
    return input_signature_;
  }
  void set_input_signature(std::vector<ValueSignature> signature) {
    input_signature_ = std::move(signature);
  }

 protected:
  // Computes one node. The default dispatches on the opcode to the hooks
  // below; errors need not name the node (Run adds that).
  virtual absl::StatusOr<Value> RunNode(const Node& node);

  // Per-opcode hooks. `input` is the run's tensor for this placeholder.
  virtual absl::StatusOr<Value> Placeholder(const Node& node,
                                            const Tensor& input);
  virtual absl::StatusOr<Value> GetAttr(const Node& node);
  virtual absl::StatusOr<Value> CallFunction(const Node& node);
  // Runs the submodule named by the node's target with a nested
  // interpreter (see CreateNested); positional args fill its placeholders
  // in order, kwargs by placeholder name.
  virtual absl::StatusOr<Value> CallModule(const Node& node);
  // The value of the graph: the output node's argument.
  virtual absl::StatusOr<Value> Output(const Node& node);

  // The interpreter that runs `submodule` for CallModule. Override to
  // observe inside submodules too.
  virtual std::unique_ptr<Interpreter> CreateNested(const Module& submodule);

  // The value `node` has in the current run; null if it was not computed
  // yet or was already freed.
  const Value* ValueOf(const Node* node) const;
  // The tensor of a node argument, or an error saying why there is none.
  absl::StatusOr<Tensor> TensorOf(const Node* node) const;

 private:
  absl::Status Prepare();
  absl::StatusOr<Value> RunGraph();
  // Frees values whose last use was the node at `position`.
  void FreeAfter(int64_t position);

  const Module& module_;
  bool prepared_ = false;
  std::vector<const Node*> order_;                      // Graph order.
  absl::flat_hash_map<const Node*, int64_t> position_;  // Node -> order_.
  std::vector<std::vector<int64_t>> frees_;  // Per position: values dead after.
  std::vector<int64_t> input_index_;  // Per position: placeholder number or -1.
  std::vector<ValueSignature> input_signature_;
  std::vector<Value> env_;  // Per position; the current run's values.
  absl::Span<const Tensor> inputs_;
  absl::flat_hash_map<const Module*, std::unique_ptr<Interpreter>> nested_;
};

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_INTERPRETER_H_
