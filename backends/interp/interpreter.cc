#include "backends/interp/interpreter.h"

#include <new>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/interp/kernel.h"
#include "backends/interp/node_status.h"
#include "backends/interp/value_lifetimes.h"
#include "backends/interp/value_binding.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft::interp {

Interpreter::Interpreter(const Module& module) : module_(module) {}

Interpreter::~Interpreter() = default;

absl::Status Interpreter::Prepare() {
  if (prepared_) return absl::OkStatus();
  const Graph& graph = module_.graph();
  order_.clear();
  position_.clear();
  input_index_.clear();
  int64_t placeholders = 0;
  for (const Node* node : graph.nodes()) {
    position_[node] = static_cast<int64_t>(order_.size());
    order_.push_back(node);
    input_index_.push_back(node->op() == OpCode::kPlaceholder ? placeholders++
                                                              : -1);
  }
  const int64_t n = static_cast<int64_t>(order_.size());
  ASSIGN_OR_RETURN(std::vector<int64_t> last_use, LastUses(order_, position_));
  frees_.assign(n, {});
  for (int64_t i = 0; i < n; ++i) frees_[last_use[i]].push_back(i);
  if (input_signature_.empty()) input_signature_ = PlaceholderSignature(graph);
  prepared_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Interpreter::Run(
    absl::Span<const Tensor> inputs) {
  ASSIGN_OR_RETURN(Value value, RunToValue(inputs));
  if (value.is_tensor()) return std::vector<Tensor>{value.tensor()};
  return value.tuple();
}

absl::StatusOr<Value> Interpreter::RunToValue(absl::Span<const Tensor> inputs) {
  RETURN_IF_ERROR(Prepare());
  ASSIGN_OR_RETURN(SymbolBindings bindings,
                   CheckInputs(input_signature_, inputs));
  inputs_ = inputs;
  env_.assign(order_.size(), Value());
  absl::StatusOr<Value> result = RunGraph();
  // Drop everything this run computed, also on errors.
  env_.clear();
  inputs_ = {};
  return result;
}

absl::StatusOr<Value> Interpreter::RunGraph() {
  for (int64_t i = 0; i < static_cast<int64_t>(order_.size()); ++i) {
    const Node& node = *order_[i];
    absl::StatusOr<Value> value;
    try {
      value = RunNode(node);
    } catch (const std::bad_alloc&) {
      value = absl::ResourceExhaustedError("out of memory");
    }
    if (!value.ok()) return AnnotateNode(node, value.status());
    if (value->empty()) {
      return AnnotateNode(node, absl::InternalError("produced no value"));
    }
    if (node.op() == OpCode::kOutput) return *std::move(value);
    env_[i] = *std::move(value);
    FreeAfter(i);
  }
  return absl::InvalidArgumentError("the graph has no output node");
}

void Interpreter::FreeAfter(int64_t position) {
  for (int64_t dead : frees_[position]) env_[dead].Reset();
}

const Value* Interpreter::ValueOf(const Node* node) const {
  auto it = position_.find(node);
  if (it == position_.end() ||
      it->second >= static_cast<int64_t>(env_.size())) {
    return nullptr;
  }
  const Value& v = env_[it->second];
  return v.empty() ? nullptr : &v;
}

absl::StatusOr<Tensor> Interpreter::TensorOf(const Node* node) const {
  const Value* v = ValueOf(node);
  if (v == nullptr) {
    return absl::InternalError(absl::StrCat(node->Ref(), " has no value"));
  }
  if (!v->is_tensor()) {
    return absl::InvalidArgumentError(absl::StrCat(
        node->Ref(), " is a tuple; read one element with getitem"));
  }
  return v->tensor();
}

absl::StatusOr<Value> Interpreter::RunNode(const Node& node) {
  switch (node.op()) {
    case OpCode::kPlaceholder: {
      const int64_t index = input_index_[position_.at(&node)];
      return Placeholder(node, inputs_[index]);
    }
    case OpCode::kGetAttr:
      return GetAttr(node);
    case OpCode::kCallFunction:
      return CallFunction(node);
    case OpCode::kCallModule:
      return CallModule(node);
    case OpCode::kOutput:
      return Output(node);
  }
  return absl::InternalError("unknown opcode");
}

absl::StatusOr<Value> Interpreter::Placeholder(const Node& node,
                                               const Tensor& input) {
  return Value(input);
}

absl::StatusOr<Value> Interpreter::GetAttr(const Node& node) {
  const Tensor* t = module_.FindTensor(node.target());
  if (t == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("the module has no tensor named '", node.target(), "'"));
  }
  if (node.type().has_value() && IsStatic(node.type()->shape) &&
      *node.type() != t->type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", node.target(), "' is ", t->TypeString(),
                     ", but the node's type is ", node.type()->ToString()));
  }
  return Value(*t);
}

absl::StatusOr<Value> Interpreter::CallFunction(const Node& node) {
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  const Kernel* kernel = KernelTable::Global().Find(node.target());
  if (kernel == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "the interpreter has no kernel for op '", node.target(), "'"));
  }
  KernelContext ctx(node, call, [this](const Node* n) { return ValueOf(n); });
  return (*kernel)(ctx);
}

std::unique_ptr<Interpreter> Interpreter::CreateNested(
    const Module& submodule) {
  return std::make_unique<Interpreter>(submodule);
}

absl::StatusOr<Value> Interpreter::CallModule(const Node& node) {
  const Module* sub = module_.FindSubmodule(node.target());
  if (sub == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "the module has no submodule named '", node.target(), "'"));
  }
  ASSIGN_OR_RETURN(std::vector<Tensor> inputs,
                   SubmoduleInputs(node, *sub, [this](const Node* n) {
                     return ValueOf(n);
                   }));
  std::unique_ptr<Interpreter>& nested = nested_[sub];
  if (nested == nullptr) nested = CreateNested(*sub);
  return nested->RunToValue(inputs);
}

absl::StatusOr<Value> Interpreter::Output(const Node& node) {
  if (node.num_args() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the output node takes one argument, got ", node.num_args()));
  }
  const Argument& arg = node.arg(0);
  std::vector<Tensor> tensors;
  absl::Status s = CollectOutputTensors(
      arg, [this](const Node* n) { return ValueOf(n); }, tensors);
  if (!s.ok()) return s;
  if (arg.is_node()) return *ValueOf(arg.node());
  return Value::Tuple(std::move(tensors));
}

}  // namespace graft::interp
