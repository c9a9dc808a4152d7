#include "backends/orc/program.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/memory_plan.h"
#include "graph/dtype.h"
#include "graph/op_registry.h"
#include "graph/op_traits.h"
#include "passes/fuse_elementwise.h"
#include "passes/pass_context.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::orc {
namespace {

// Ops whose result is the input's bytes unchanged: one buffer for both.
bool IsAlias(const Node& node) {
  return node.is_call("reshape") || node.is_call("flatten") ||
         node.is_call("squeeze") || node.is_call("unsqueeze") ||
         node.is_call("identity") || node.is_call("dropout");
}

bool IsViewCopy(const Node& node) {
  return node.is_call("permute") || node.is_call("transpose") ||
         node.is_call("expand") || node.is_call("slice") ||
         node.is_call("getitem");
}

bool IsQuantize(const Node& node) {
  return node.is_call("quantize_per_tensor") ||
         node.is_call("quantize_per_channel") || node.is_call("dequantize");
}

bool IsIndex(const Node& node) {
  return node.is_call("gather") || node.is_call("index_select") ||
         node.is_call("embedding");
}

bool IsCreate(const Node& node) {
  return node.is_call("zeros") || node.is_call("full") || node.is_call("arange");
}

bool IsLibraryCall(const Node& node) {
  return node.is_call("linear") || node.is_call("matmul") ||
         node.is_call("graft::linear_activation") || node.is_call("conv2d");
}

absl::Status CheckDType(const Node& node, DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
      return absl::UnimplementedError(
          absl::StrCat(DTypeName(dtype), " tensors are not supported yet"));
    default:
      return absl::OkStatus();
  }
}

absl::Status CheckTypes(const Node& node) {
  if (node.type().has_value()) {
    RETURN_IF_ERROR(CheckDType(node, node.type()->dtype));
  }
  for (const Node* input : node.inputs()) {
    if (input->type().has_value()) {
      RETURN_IF_ERROR(CheckDType(*input, input->type()->dtype));
    }
  }
  return absl::OkStatus();
}

absl::Status CanLowerFusedGroup(const Module& group) {
  for (const Node* n : group.graph().nodes()) {
    if (n->op() == OpCode::kPlaceholder || n->op() == OpCode::kOutput) continue;
    if (n->op() != OpCode::kCallFunction || !PointwiseFormulaOf(*n)) {
      return absl::UnimplementedError(absl::StrCat(
          "submodule node %", n->name(), " is not a pointwise op with a formula"));
    }
    RETURN_IF_ERROR(CheckTypes(*n));
  }
  return absl::OkStatus();
}

absl::Status CanLowerCall(const Node& node) {
  const std::string& op = node.target();
  if (PointwiseFormulaOf(node).has_value() || IsAlias(node) ||
      node.is_call("permute") || node.is_call("transpose") ||
      node.is_call("expand") || node.is_call("concat") ||
      node.is_call("sum") || node.is_call("mean") || node.is_call("amax") ||
      node.is_call("amin") || node.is_call("softmax") ||
      node.is_call("log_softmax") || node.is_call("layer_norm") ||
      node.is_call("batch_norm") || node.is_call("max_pool2d") ||
      node.is_call("avg_pool2d") || node.is_call("adaptive_avg_pool2d") ||
      IsQuantize(node) || IsIndex(node) || IsCreate(node) ||
      node.is_call("argmax")) {
    // Checked below for the ops with conditions.
  } else if (IsLibraryCall(node)) {
#ifndef GRAFT_ORC_WITH_DNNL
    return absl::UnimplementedError(absl::StrCat(
        op, " needs oneDNN, which this graft was built without"));
#endif
    // The oneDNN calls take f32 only (library_calls.cc): refuse the rest
    // here, so that they fall back instead of failing the compile.
    for (const Node* n : node.inputs()) {
      if (n->type().has_value() && n->type()->dtype != DType::kF32) {
        return absl::UnimplementedError(absl::StrCat(
            op, " on ", DTypeName(n->type()->dtype), " tensors (oneDNN calls take f32)"));
      }
    }
  } else if (node.is_call("slice")) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
    if (call.Int("step") <= 0) {
      return absl::UnimplementedError("slice with a step below 1");
    }
  } else if (node.is_call("pad")) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
    if (call.String("mode") != "constant") {
      return absl::UnimplementedError(
          absl::StrCat("pad mode '", call.String("mode"), "'"));
    }
  } else if (node.is_call("split")) {
    for (const Node* user : node.users()) {
      if (!user->is_call("getitem")) {
        return absl::UnimplementedError(
            "split whose tuple is used other than by getitem");
      }
    }
  } else if (node.is_call("getitem")) {
    if (node.num_args() == 0 || !node.arg(0).is_node() ||
        !node.arg(0).node()->is_call("split")) {
      return absl::UnimplementedError("getitem of anything but split");
    }
  } else {
    return absl::UnimplementedError(
        absl::StrCat("the orc backend has no code for op '", op, "' yet"));
  }
  if (node.is_call("dropout")) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
    if (call.Bool("training")) {
      return absl::UnimplementedError("dropout in training mode");
    }
  }
  return CheckTypes(node);
}

bool IsComputed(const Node& node) {
  return node.op() == OpCode::kCallFunction || node.op() == OpCode::kCallModule;
}

StepKind KindOfStep(const Node& node) {
  if (node.op() == OpCode::kCallModule) return StepKind::kPointwise;
  if (IsViewCopy(node)) return StepKind::kView;
  if (node.is_call("concat")) return StepKind::kConcat;
  if (node.is_call("pad")) return StepKind::kPad;
  if (node.is_call("softmax") || node.is_call("log_softmax")) {
    return StepKind::kSoftmax;
  }
  if (node.is_call("layer_norm")) return StepKind::kLayerNorm;
  if (node.is_call("batch_norm")) return StepKind::kBatchNorm;
  if (IsLibraryCall(node)) return StepKind::kLibrary;
  if (IsQuantize(node)) return StepKind::kQuantize;
  if (IsIndex(node)) return StepKind::kIndex;
  if (IsCreate(node)) return StepKind::kCreate;
  if (node.is_call("argmax")) return StepKind::kArgmax;
  if (node.is_call("max_pool2d") || node.is_call("avg_pool2d") ||
      node.is_call("adaptive_avg_pool2d")) {
    return StepKind::kPool;
  }
  if (KindOf(node) == OpKind::kReduction) return StepKind::kReduce;
  return StepKind::kPointwise;
}

size_t BytesOf(const TensorType& type) {
  int64_t n = 1;
  for (Dim d : type.shape) n *= d.value();
  return static_cast<size_t>(n) * DTypeSize(type.dtype);
}

absl::Status CheckConcrete(const Node& node) {
  if (!node.type().has_value()) {
    return absl::InternalError(
        absl::StrCat("%", node.name(), " has no type after shape propagation"));
  }
  for (Dim d : node.type()->shape) {
    if (d.is_symbolic()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "%", node.name(), " has symbolic type ", node.type()->ToString(),
          " after specializing the inputs"));
    }
  }
  return absl::OkStatus();
}

// Builds a Program in three walks: the steps and which value each buffer
// belongs to, which computed values become outputs in place, and the arena.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(Program& program) : p_(program) {}

  absl::Status Build() {
    Graph& graph = p_.module->graph();
    for (const Node* node : graph.nodes()) {
      RETURN_IF_ERROR(Visit(*node));
    }
    RETURN_IF_ERROR(AssignOutputs(*graph.output()));
    PlanArena();
    for (Step& step : p_.steps) {
      if (step.kind != StepKind::kCopy) step.result = refs_[step.node];
      for (const Node* input : step.inputs) {
        step.operands.push_back(refs_[root_[input]]);
      }
      if (step.kind == StepKind::kLibrary) {
        step.state += static_cast<int>(p_.tensors.size());
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Visit(const Node& node) {
    switch (node.op()) {
      case OpCode::kPlaceholder:
        RETURN_IF_ERROR(CheckConcrete(node));
        root_[&node] = &node;
        refs_[&node] = {BufferRef::Where::kInput, num_inputs_++, 0};
        return absl::OkStatus();
      case OpCode::kGetAttr: {
        const Tensor* tensor = p_.module->FindTensor(node.target());
        if (tensor == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "%", node.name(), " reads tensor '", node.target(),
              "', which the module does not have"));
        }
        root_[&node] = &node;
        refs_[&node] = {BufferRef::Where::kState,
                        static_cast<int>(p_.tensors.size()), 0};
        p_.tensors.push_back(tensor);
        return absl::OkStatus();
      }
      case OpCode::kOutput:
        return absl::OkStatus();
      default:
        break;
    }
    RETURN_IF_ERROR(CanLower(node));
    if (node.is_call("split")) return absl::OkStatus();  // getitem reads it.
    RETURN_IF_ERROR(CheckConcrete(node));
    if (IsAlias(node)) {
      root_[&node] = root_[node.inputs()[0]];
      return absl::OkStatus();
    }
    if (AbsorbActivation(node)) return absl::OkStatus();
    Step step{.kind = KindOfStep(node), .node = &node};
    if (node.is_call("getitem")) {
      step.inputs.push_back(node.arg(0).node()->inputs()[0]);
    } else {
      for (const Node* input : node.unique_inputs()) step.inputs.push_back(input);
    }
    for (const Node* input : step.inputs) {
      if (!root_.contains(input)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "%", node.name(), " reads %", input->name(), " before it is computed"));
      }
      last_use_[root_[input]] = static_cast<int64_t>(p_.steps.size());
    }
    if (step.kind == StepKind::kLibrary) {
      step.state = static_cast<int>(p_.library_nodes.size());
      p_.library_nodes.push_back(&node);
    }
    step.can_fail = step.kind == StepKind::kLibrary || step.kind == StepKind::kIndex;
    root_[&node] = &node;
    producer_[&node] = static_cast<int64_t>(p_.steps.size());
    p_.steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  // relu or gelu right after a library call that nothing else reads
  // becomes the call's post-op: one pass over the result instead of two.
  bool AbsorbActivation(const Node& node) {
    std::string activation;
    if (node.is_call("relu")) {
      activation = "relu";
    } else if (node.is_call("gelu")) {
      absl::StatusOr<OpCall> call = OpCall::Bind(node);
      if (!call.ok()) return false;
      activation = call->String("approximate") == "tanh" ? "gelu_tanh" : "gelu";
    } else {
      return false;
    }
    const Node* input = node.inputs()[0];
    auto producer = producer_.find(input);
    if (producer == producer_.end() || input->num_uses() != 1 ||
        input->type() != node.type()) {
      return false;
    }
    Step& step = p_.steps[producer->second];
    if (step.kind != StepKind::kLibrary || !step.activation.empty() ||
        input->is_call("graft::linear_activation") ||
        input->type()->dtype != DType::kF32) {
      return false;
    }
    step.activation = activation;
    root_[&node] = root_[input];
    return true;
  }

  absl::Status AssignOutputs(const Node& output) {
    std::vector<const Node*> values;
    if (output.num_args() == 1 && output.arg(0).is_node()) {
      values.push_back(output.arg(0).node());
    } else if (output.num_args() == 1 && output.arg(0).is_list()) {
      for (const Argument& a : output.arg(0).list()) {
        if (!a.is_node()) {
          return absl::UnimplementedError("an output that is not a tensor");
        }
        values.push_back(a.node());
      }
    } else {
      return absl::UnimplementedError("the output node's value has an unexpected form");
    }
    absl::flat_hash_set<const Node*> claimed;
    for (size_t j = 0; j < values.size(); ++j) {
      const Node* value = values[j];
      RETURN_IF_ERROR(CheckConcrete(*value));
      p_.output_types.push_back(*value->type());
      const Node* root = root_[value];
      const BufferRef out{BufferRef::Where::kOutput, static_cast<int>(j), 0};
      if (IsComputed(*root) && claimed.insert(root).second) {
        refs_[root] = out;
        continue;
      }
      // An input, a module tensor or a value already written to another
      // output: each output gets its own buffer, so copy.
      p_.steps.push_back(Step{.kind = StepKind::kCopy, .node = value,
                              .result = out, .inputs = {value}});
      last_use_[root] = static_cast<int64_t>(p_.steps.size()) - 1;
    }
    return absl::OkStatus();
  }

  void PlanArena() {
    std::vector<BufferLifetime> lifetimes;
    std::vector<const Node*> owners;
    for (const Step& step : p_.steps) {
      if (step.kind == StepKind::kCopy || refs_.contains(step.node)) continue;
      const int64_t first = producer_[step.node];
      auto last = last_use_.find(step.node);
      lifetimes.push_back(
          {first, last == last_use_.end() ? first : std::max(first, last->second),
           BytesOf(*step.node->type())});
      owners.push_back(step.node);
    }
    MemoryPlan plan = PlanMemory(lifetimes);
    for (size_t i = 0; i < owners.size(); ++i) {
      refs_[owners[i]] = {BufferRef::Where::kArena, 0, plan.offsets[i]};
    }
    p_.arena_bytes = plan.arena_bytes;
    p_.intermediate_bytes = plan.total_bytes;
  }

  Program& p_;
  int num_inputs_ = 0;
  absl::flat_hash_map<const Node*, const Node*> root_;  // Alias -> owner.
  absl::flat_hash_map<const Node*, BufferRef> refs_;    // Owner -> buffer.
  absl::flat_hash_map<const Node*, int64_t> producer_;
  absl::flat_hash_map<const Node*, int64_t> last_use_;
};

std::string RefText(const BufferRef& r) {
  static constexpr const char* kNames[] = {"in", "out", "state", "arena"};
  return absl::StrCat(kNames[static_cast<int>(r.where)], r.index, "+", r.offset);
}

}  // namespace

absl::Status CanLower(const Node& node) {
  switch (node.op()) {
    case OpCode::kPlaceholder:
    case OpCode::kGetAttr:
    case OpCode::kOutput:
      return CheckTypes(node);
    case OpCode::kCallModule:
      // Only the node is known here; BuildProgram checks that the
      // submodule is a pointwise group (fused groups always are).
      return CheckTypes(node);
    case OpCode::kCallFunction:
      return CanLowerCall(node);
  }
  return absl::UnimplementedError("unknown node kind");
}

absl::StatusOr<Program> BuildProgram(const Module& module,
                                     const std::vector<TensorType>& input_types) {
  Program p;
  p.module = std::make_unique<Module>(module.Clone());
  Graph& graph = p.module->graph();
  std::vector<Node*> placeholders = graph.placeholders();
  if (placeholders.size() != input_types.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the module has ", placeholders.size(), " inputs, ",
                     input_types.size(), " input types were given"));
  }
  for (size_t i = 0; i < placeholders.size(); ++i) {
    placeholders[i]->set_type(input_types[i]);
  }
  p.input_types = input_types;
  RETURN_IF_ERROR(passes::PropagateShapes(*p.module).status());
  passes::PassContext context;
  passes::FuseElementwisePass fuse;
  RETURN_IF_ERROR(fuse.Run(*p.module, context).status());
  RETURN_IF_ERROR(passes::PropagateShapes(*p.module).status());
  for (const Node* node : graph.nodes()) {
    if (node->op() != OpCode::kCallModule) continue;
    const Module* group = p.module->FindSubmodule(node->target());
    if (group == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "%", node->name(), " calls submodule '", node->target(),
          "', which the module does not have"));
    }
    absl::Status s = CanLowerFusedGroup(*group);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("%", node->name(), ": ", s.message()));
    }
  }
  ProgramBuilder builder(p);
  RETURN_IF_ERROR(builder.Build());
  return p;
}

std::string Program::Describe() const {
  std::string text;
  for (const TensorType& t : input_types) absl::StrAppend(&text, "in ", t.ToString(), "\n");
  for (const TensorType& t : output_types) absl::StrAppend(&text, "out ", t.ToString(), "\n");
  for (const Tensor* t : tensors) absl::StrAppend(&text, "tensor ", t->TypeString(), "\n");
  absl::StrAppend(&text, "arena ", arena_bytes, "\n");
  for (const Step& s : steps) {
    absl::StrAppend(&text, static_cast<int>(s.kind), " %", s.node->name(), " ",
                    s.node->target(), " ", s.node->type()->ToString(), " -> ",
                    RefText(s.result), " <-");
    for (const BufferRef& r : s.operands) absl::StrAppend(&text, " ", RefText(r));
    absl::StrAppend(&text, " state ", s.state, " ", s.activation,
                    s.can_fail ? " can-fail" : "", "\n");
  }
  return text;
}

}  // namespace graft::orc
