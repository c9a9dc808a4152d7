#include "backends/interp/execution_plan.h"

#include <new>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/interp/node_status.h"
#include "backends/interp/value_binding.h"
#include "backends/interp/value_lifetimes.h"
#include "backends/memory_plan.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft::interp {

absl::StatusOr<std::unique_ptr<ExecutionPlan>> ExecutionPlan::Build(
    const Module& module, std::shared_ptr<Communicator> communicator) {
  std::unique_ptr<ExecutionPlan> plan(new ExecutionPlan());
  plan->communicator_ = std::move(communicator);
  plan->signature_ = PlaceholderSignature(module.graph());
  int64_t placeholders = 0;
  bool has_output = false;
  for (const Node* node : module.graph().nodes()) {
    plan->slot_.emplace(node, static_cast<int64_t>(plan->steps_.size()));
    RETURN_IF_ERROR(plan->AddStep(module, *node, placeholders));
    has_output = has_output || node->op() == OpCode::kOutput;
  }
  if (!has_output) {
    return absl::InvalidArgumentError("the graph has no output node");
  }
  RETURN_IF_ERROR(plan->PlanLifetimes());
  return plan;
}

absl::Status ExecutionPlan::AddStep(const Module& module, const Node& node,
                                    int64_t& placeholders) {
  Step step;
  step.node = &node;
  switch (node.op()) {
    case OpCode::kPlaceholder:
      step.input_index = placeholders++;
      break;
    case OpCode::kGetAttr:
      step.attr = module.FindTensor(node.target());
      if (step.attr == nullptr) {
        return AnnotateNode(node, absl::NotFoundError(absl::StrCat(
                                      "the module has no tensor named '",
                                      node.target(), "'")));
      }
      if (node.type().has_value() && IsStatic(node.type()->shape) &&
          *node.type() != step.attr->type()) {
        return AnnotateNode(
            node, absl::InvalidArgumentError(absl::StrCat(
                      "tensor '", node.target(), "' is ",
                      step.attr->TypeString(), ", but the node's type is ",
                      node.type()->ToString())));
      }
      break;
    case OpCode::kCallFunction: {
      absl::StatusOr<OpCall> call = OpCall::Bind(node);
      if (!call.ok()) return AnnotateNode(node, call.status());
      step.call.emplace(*std::move(call));
      step.kernel = KernelTable::Global().Find(node.target());
      if (step.kernel == nullptr) {
        return AnnotateNode(node, absl::UnimplementedError(absl::StrCat(
                                      "the interpreter has no kernel for op '",
                                      node.target(), "'")));
      }
      break;
    }
    case OpCode::kCallModule: {
      const Module* sub = module.FindSubmodule(node.target());
      if (sub == nullptr) {
        return AnnotateNode(node, absl::NotFoundError(absl::StrCat(
                                      "the module has no submodule named '",
                                      node.target(), "'")));
      }
      std::unique_ptr<ExecutionPlan>& nested = nested_[sub];
      if (nested == nullptr) {
        absl::StatusOr<std::unique_ptr<ExecutionPlan>> built = Build(*sub, communicator_);
        if (!built.ok()) return AnnotateNode(node, built.status());
        nested = *std::move(built);
      }
      step.submodule = nested.get();
      step.sub_module = sub;
      break;
    }
    case OpCode::kOutput:
      if (node.num_args() != 1) {
        return AnnotateNode(node, absl::InvalidArgumentError(absl::StrCat(
                                      "the output node takes one argument, "
                                      "got ",
                                      node.num_args())));
      }
      break;
  }
  steps_.push_back(std::move(step));
  return absl::OkStatus();
}

absl::Status ExecutionPlan::PlanLifetimes() {
  const int64_t n = static_cast<int64_t>(steps_.size());
  std::vector<const Node*> order;
  order.reserve(n);
  for (const Step& step : steps_) order.push_back(step.node);
  ASSIGN_OR_RETURN(std::vector<int64_t> last_use, LastUses(order, slot_));
  std::vector<BufferLifetime> buffers;
  for (int64_t i = 0; i < n; ++i) {
    steps_[last_use[i]].frees.push_back(i);
    const Node& node = *steps_[i].node;
    if (node.op() != OpCode::kCallFunction || !node.type().has_value() ||
        !IsStatic(node.type()->shape)) {
      continue;
    }
    int64_t elements = 1;
    for (const Dim& d : node.type()->shape) elements *= d.value();
    buffers.push_back({i, last_use[i],
                       static_cast<size_t>(elements) *
                           DTypeSize(node.type()->dtype)});
  }
  const MemoryPlan memory = PlanMemory(buffers);
  info_.arena_bytes = memory.arena_bytes;
  info_.intermediate_bytes = memory.total_bytes;
  return absl::OkStatus();
}

absl::StatusOr<Value> ExecutionPlan::Run(
    absl::Span<const Tensor> inputs) const {
  std::vector<Value> env(steps_.size());
  for (const Step& step : steps_) {
    absl::StatusOr<Value> value;
    try {
      value = RunStep(step, inputs, env);
    } catch (const std::bad_alloc&) {
      value = absl::ResourceExhaustedError("out of memory");
    }
    if (!value.ok()) return AnnotateNode(*step.node, value.status());
    if (value->empty()) {
      return AnnotateNode(*step.node, absl::InternalError("produced no value"));
    }
    if (step.node->op() == OpCode::kOutput) return *std::move(value);
    env[slot_.at(step.node)] = *std::move(value);
    for (int64_t dead : step.frees) env[dead].Reset();
  }
  return absl::InvalidArgumentError("the graph has no output node");
}

absl::StatusOr<Value> ExecutionPlan::RunStep(const Step& step,
                                             absl::Span<const Tensor> inputs,
                                             std::vector<Value>& env) const {
  auto value_of = [this, &env](const Node* n) -> const Value* {
    auto it = slot_.find(n);
    if (it == slot_.end()) return nullptr;
    const Value& v = env[it->second];
    return v.empty() ? nullptr : &v;
  };
  const Node& node = *step.node;
  switch (node.op()) {
    case OpCode::kPlaceholder:
      return Value(inputs[step.input_index]);
    case OpCode::kGetAttr:
      return Value(*step.attr);
    case OpCode::kCallFunction: {
      KernelContext ctx(node, *step.call, value_of, communicator_.get());
      return (*step.kernel)(ctx);
    }
    case OpCode::kCallModule: {
      ASSIGN_OR_RETURN(std::vector<Tensor> sub_inputs,
                       SubmoduleInputs(node, *step.sub_module, value_of));
      RETURN_IF_ERROR(
          CheckInputs(step.submodule->signature_, sub_inputs).status());
      return step.submodule->Run(sub_inputs);
    }
    case OpCode::kOutput: {
      const Argument& arg = node.arg(0);
      if (arg.is_node()) {
        const Value* v = value_of(arg.node());
        if (v == nullptr) {
          return absl::InternalError(
              absl::StrCat("output ", arg.node()->Ref(), " has no value"));
        }
        return *v;
      }
      std::vector<Tensor> tensors;
      RETURN_IF_ERROR(CollectOutputTensors(arg, value_of, tensors));
      return Value::Tuple(std::move(tensors));
    }
  }
  return absl::InternalError("unknown opcode");
}

}  // namespace graft::interp
