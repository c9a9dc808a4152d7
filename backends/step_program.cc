#include "backends/step_program.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/memory_plan.h"
#include "backends/quantize_constants.h"
#include "backends/strided_view.h"
#include "graph/quant_ops.h"
#include "backends/bias_into_linear.h"
#include "backends/fold_dequantized_weights.h"
#include "backends/unpack_int4_constants.h"
#include "passes/recognize_composites.h"
#include "backends/inline_submodules.h"
#include "graph/collective_ops.h"
#include "graph/dtype.h"
#include "graph/fused_ops.h"
#include "graph/op_registry.h"
#include "graph/op_traits.h"
#include "passes/fold_batchnorm.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_elementwise.h"
#include "passes/pass_context.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft {

TensorType ResultType(const Step& step) {
  TensorType type = *step.node->type();
  if (step.result_dtype) type.dtype = *step.result_dtype;
  return type;
}

// Ops whose result is the input's bytes unchanged: one buffer for both.
bool IsAliasOp(const Node& node) {
  return node.is_call("reshape") || node.is_call("flatten") ||
         node.is_call("squeeze") || node.is_call("unsqueeze") ||
         node.is_call("identity") || node.is_call("dropout");
}

bool IsViewCopyOp(const Node& node) {
  return node.is_call("permute") || node.is_call("transpose") ||
         node.is_call("expand") || node.is_call("slice") ||
         node.is_call("getitem");
}

bool IsQuantizeOp(const Node& node) {
  return node.is_call("quantize_per_tensor") ||
         node.is_call("quantize_per_channel") || node.is_call("dequantize");
}

bool IsIndexOp(const Node& node) {
  return node.is_call("gather") || node.is_call("index_select") ||
         node.is_call("embedding");
}

bool IsCreateOp(const Node& node) {
  return node.is_call("zeros") || node.is_call("full") || node.is_call("arange");
}

namespace {

// Every node of a fused group must be a pointwise op with a formula that
// the target runs.
absl::Status CanLowerFusedGroup(const Module& group, const StepTarget& target) {
  for (const Node* n : group.graph().nodes()) {
    if (n->op() == OpCode::kPlaceholder || n->op() == OpCode::kOutput) continue;
    if (n->op() != OpCode::kCallFunction || !PointwiseFormulaOf(*n)) {
      return absl::UnimplementedError(absl::StrCat(
          "submodule node %", n->name(), " is not a pointwise op with a formula"));
    }
    RETURN_IF_ERROR(target.can_lower(*n));
  }
  return absl::OkStatus();
}

StepKind KindOfStep(const Node& node, const StepTarget& target) {
  if (node.op() == OpCode::kCallModule) return StepKind::kPointwise;
  if (IsCollectiveOp(node.target())) return StepKind::kCollective;
  if (node.is_call(kAttentionOp)) return StepKind::kAttention;
  if (IsViewCopyOp(node)) return StepKind::kView;
  if (node.is_call("concat")) return StepKind::kConcat;
  if (node.is_call("pad")) return StepKind::kPad;
  if (node.is_call("softmax") || node.is_call("log_softmax")) {
    return StepKind::kSoftmax;
  }
  if (node.is_call("layer_norm")) return StepKind::kLayerNorm;
  if (node.is_call("batch_norm")) return StepKind::kBatchNorm;
  if (target.is_library_call(node)) return StepKind::kLibrary;
  if (node.is_call("matmul") || node.is_call("linear") ||
      node.is_call("graft::linear_activation")) {
    return StepKind::kMatmul;
  }
  if (IsQuantizeOp(node)) return StepKind::kQuantize;
  if (IsIndexOp(node)) return StepKind::kIndex;
  if (IsCreateOp(node)) return StepKind::kCreate;
  if (node.is_call("argmax")) return StepKind::kArgmax;
  if (node.is_call("cumsum")) return StepKind::kScan;
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

bool Is4D(const Node& node) { return node.type()->rank() == 4; }

// A 4-D value with one channel or one pixel has the same bytes in NCHW and
// NHWC: either layout reads it without a conversion.
bool LayoutFree(const Node& node) {
  const auto& s = node.type()->shape;
  return s.size() == 4 && (s[1].value() == 1 || s[2].value() * s[3].value() == 1);
}

// Where a value comes from: the result of a step, or a buffer of the
// caller's (input, module tensor).
struct ValueSource {
  int step = -1;
  BufferRef external;
  bool channels_last = false;
};

// Builds a StepProgram: the steps in order with each operand's source (and the
// layout conversions the operands need), then the outputs, then the arena.
class ProgramBuilder {
 public:
  ProgramBuilder(StepProgram& program, const StepTarget& target)
      : p_(program), target_(target) {}

  absl::Status Build() {
    Graph& graph = p_.module->graph();
    for (const Node* node : graph.nodes()) {
      RETURN_IF_ERROR(Visit(*node));
    }
    RETURN_IF_ERROR(AssignOutputs(*graph.output()));
    ElideUnreadViews();
    PlanArena();
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      Step& step = p_.steps[i];
      step.result = results_[i];
      for (const ValueSource& source : sources_[i]) {
        step.operands.push_back(source.step < 0 ? source.external
                                                : results_[source.step]);
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
        values_[&node] = {.external = {BufferRef::Where::kInput, num_inputs_++, 0}};
        return absl::OkStatus();
      case OpCode::kGetAttr: {
        const Tensor* tensor = p_.module->FindTensor(node.target());
        if (tensor == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "%", node.name(), " reads tensor '", node.target(),
              "', which the module does not have"));
        }
        values_[&node] = {.external = {BufferRef::Where::kState,
                                       static_cast<int>(p_.tensors.size()), 0}};
        p_.tensors.push_back(tensor);
        return absl::OkStatus();
      }
      case OpCode::kOutput:
        return absl::OkStatus();
      default:
        break;
    }
    RETURN_IF_ERROR(target_.can_lower(node));
    if (node.is_call("split")) return absl::OkStatus();  // getitem reads it.
    RETURN_IF_ERROR(CheckConcrete(node));
    for (const Node* input : node.inputs()) {
      if (!values_.contains(input) && !input->is_call("split")) {
        return absl::InvalidArgumentError(absl::StrCat(
            "%", node.name(), " reads %", input->name(), " before it is computed"));
      }
    }
    if (IsAliasOp(node)) {
      // Same bytes, new shape: only an NCHW value can be reinterpreted.
      values_[&node] = Use(node.inputs()[0], false, false);
      return absl::OkStatus();
    }
    if (AbsorbActivation(node)) return absl::OkStatus();
    if (AbsorbResidual(node)) return absl::OkStatus();
    if (AbsorbResidualGroup(node)) return absl::OkStatus();
    if (AbsorbOutputPermute(node)) return absl::OkStatus();
    if (AbsorbResultCast(node)) return absl::OkStatus();
    Step step{.kind = KindOfStep(node, target_), .node = &node};
    if (node.is_call("getitem")) {
      step.inputs.push_back(node.arg(0).node()->inputs()[0]);
    } else {
      for (const Node* input : node.unique_inputs()) step.inputs.push_back(input);
    }
    const bool conv = target_.channels_last_conv &&
                      (node.is_call("conv2d") || node.is_call(kQuantizedConv2dOp)) &&
                      Is4D(*node.inputs()[0]) && target_.channels_last_conv(node);
    const bool any_layout = step.kind == StepKind::kPointwise ||
                            step.kind == StepKind::kBatchNorm ||
                            step.kind == StepKind::kPool;
    std::vector<ValueSource> sources;
    for (const Node* input : step.inputs) {
      const bool data = conv && input == node.inputs()[0];
      sources.push_back(Use(input, any_layout || data, data));
      step.operand_channels_last.push_back(sources.back().channels_last);
    }
    if (conv) {
      step.channels_last = true;
    } else if (any_layout && Is4D(node)) {
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        step.channels_last |= sources[i].channels_last && Is4D(*step.inputs[i]);
      }
    }
    if (step.kind == StepKind::kLibrary) {
      AbsorbInputCast(step, sources);
      step.state = static_cast<int>(p_.library_steps.size());
      p_.library_steps.push_back(static_cast<int>(p_.steps.size()));
    }
    step.can_fail = step.kind == StepKind::kLibrary || step.kind == StepKind::kIndex;
    if (step.kind == StepKind::kView) ComposeView(step, sources);
    if (step.kind == StepKind::kAttention) ReadViewsInPlace(step, sources);
    const bool channels_last = step.channels_last && !LayoutFree(node);
    values_[&node] = {.step = Push(std::move(step), std::move(sources)),
                      .channels_last = channels_last};
    return absl::OkStatus();
  }

  // A view of a view (through reshapes and the like) reads the first
  // view's input directly, with the strides of both composed: q, k and v
  // split from one product and permuted per head become one copy each,
  // not two or three. The first view's step, if nothing else reads it, is
  // marked elided. Only where the reshapes between keep the elements
  // strided (PyTorch's rule for Tensor.view).
  void ComposeView(Step& step, std::vector<ValueSource>& sources) {
    const Node* u = step.inputs[0];
    const Node* w = u;
    while (IsAliasOp(*w)) w = w->inputs()[0];
    auto found = values_.find(w);
    if (found == values_.end() || found->second.step < 0) return;
    const int j = found->second.step;
    const Step& first = p_.steps[j];
    if (first.kind != StepKind::kView || first.node != w) return;
    absl::StatusOr<StridedSource> upstream =
        first.view_source.has_value() ? absl::StatusOr<StridedSource>(*first.view_source)
                                      : ViewSource(*w);
    if (!upstream.ok()) return;
    const std::optional<std::vector<int64_t>> strides =
        ReshapeStrides(DimsOf(*w), upstream->strides, DimsOf(*u));
    if (!strides.has_value()) return;
    absl::StatusOr<StridedSource> composed =
        ViewSourceOver(*step.node, StridedSource{upstream->offset, *strides});
    if (!composed.ok()) return;
    step.inputs = first.inputs;
    step.operand_channels_last = first.operand_channels_last;
    step.view_source = *composed;
    sources = sources_[j];
    composed_away_.insert(j);
  }

  // q, k and v of an attention step read where their views point (the
  // split of one product, per head), so that the views need not run; the
  // mask (the last input, where there is one) is read as it is.
  void ReadViewsInPlace(Step& step, std::vector<ValueSource>& sources) {
    step.operand_views.assign(step.inputs.size(), std::nullopt);
    const int64_t align = target_.strided_attention_operands;
    if (align <= 0) return;
    absl::StatusOr<OpCall> call = OpCall::Bind(*step.node);
    if (!call.ok()) return;
    for (const char* param : {"query", "key", "value"}) {
      const Node* operand = call->TensorNode(param);
      const auto at = std::find(step.inputs.begin(), step.inputs.end(), operand);
      if (at == step.inputs.end()) continue;
      const size_t i = static_cast<size_t>(at - step.inputs.begin());
      if (step.operand_views[i].has_value() || sources[i].step < 0) continue;
      const int j = sources[i].step;
      const Step& view = p_.steps[j];
      if (view.kind != StepKind::kView || view.node != operand) continue;
      absl::StatusOr<StridedSource> source =
          view.view_source.has_value() ? absl::StatusOr<StridedSource>(*view.view_source)
                                       : ViewSource(*operand);
      if (!source.ok() || source->strides.empty() || source->strides.back() != 1 ||
          source->offset % align != 0) {
        continue;
      }
      bool aligned = true;
      for (size_t d = 0; d + 1 < source->strides.size(); ++d) {
        aligned &= source->strides[d] % align == 0;
      }
      if (!aligned) continue;
      // inputs[i] stays the view (its type is the operand's); its buffer
      // is the view's input's.
      step.operand_views[i] = *source;
      sources[i] = sources_[j][0];
      composed_away_.insert(j);
    }
  }

  // Composed-away view steps that no step reads and whose result is not an
  // output: their kernels need not run, and they take no arena space.
  void ElideUnreadViews() {
    absl::flat_hash_set<int> read;
    for (const std::vector<ValueSource>& step_sources : sources_) {
      for (const ValueSource& source : step_sources) read.insert(source.step);
    }
    for (int j : composed_away_) {
      if (!read.contains(j) && !is_output_[j]) p_.steps[j].elided = true;
    }
  }

  // The source of `input` for a step that reads channels-last values when
  // `accept_channels_last`, and wants them when `want_channels_last`;
  // adds the conversion step when the layouts disagree (once per value
  // and layout).
  ValueSource Use(const Node* input, bool accept_channels_last,
                  bool want_channels_last) {
    ValueSource source = values_.at(input);
    if (LayoutFree(*input)) {  // The same bytes either way.
      source.channels_last = want_channels_last;
      return source;
    }
    if (source.channels_last ? accept_channels_last || want_channels_last
                             : !want_channels_last) {
      return source;
    }
    auto& cache = want_channels_last ? channels_last_copy_ : nchw_copy_;
    auto it = cache.find(input);
    if (it != cache.end()) return {.step = it->second, .channels_last = want_channels_last};
    Step copy{.kind = StepKind::kCopy, .node = input, .inputs = {input}};
    copy.channels_last = want_channels_last;
    copy.operand_channels_last = {source.channels_last};
    const int index = Push(std::move(copy), {source});
    cache[input] = index;
    return {.step = index, .channels_last = want_channels_last};
  }

  int Push(Step step, std::vector<ValueSource> sources) {
    const int index = static_cast<int>(p_.steps.size());
    for (const ValueSource& s : sources) {
      if (s.step >= 0) last_use_[s.step] = index;
    }
    p_.steps.push_back(std::move(step));
    sources_.push_back(std::move(sources));
    return index;
  }

  // relu or gelu right after a library call that nothing else reads
  // becomes the call's post-op: one pass over the result instead of two.
  // Also after the residual add the call absorbed (relu(conv(x) + r), as
  // ResNet's blocks end): the post-op then applies to the sum.
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
    auto value = values_.find(input);
    if (value == values_.end() || value->second.step < 0 ||
        input->num_uses() != 1 || input->type() != node.type()) {
      return false;
    }
    Step& step = p_.steps[value->second.step];
    const auto residual_add = residual_adds_.find(value->second.step);
    const bool after_residual = residual_add != residual_adds_.end() && residual_add->second == input;
    if (step.kind != StepKind::kLibrary || (step.node != input && !after_residual) ||
        !step.activation.empty() || step.node->is_call("graft::linear_activation") ||
        !target_.absorbs_activation(*step.node, activation)) {
      return false;
    }
    step.activation = activation;
    const ValueSource source = value->second;  // Inserting may rehash.
    values_[&node] = source;
    return true;
  }

  // add(product, r) where the product is a library call's result that
  // nothing else reads and r, of the same type and layout, is computed
  // before it:
  // the call adds r as it writes (Step::residual), one pass instead of
  // two. Either operand order. Not where r is a program input, or r or the
  // sum a program output (or an alias of one): a generated kernel reads
  // and writes those where the caller has them, a library call only
  // through a copy.
  bool AbsorbResidual(const Node& node) {
    if (!target_.absorbs_residual || !node.is_call("add") || node.inputs().size() != 2 ||
        node.args().size() != 2 || !node.arg(0).is_node() || !node.arg(1).is_node()) {
      return false;
    }
    return AbsorbSum(node, node.arg(0).node(), node.arg(1).node(), "");
  }

  // relu(add(a, b)) that FuseElementwisePass made one group (as every
  // ResNet block ends) absorbs as the add alone would, the ReLU becoming
  // the call's post-op after the sum: both or neither.
  bool AbsorbResidualGroup(const Node& node) {
    if (!target_.absorbs_residual || node.op() != OpCode::kCallModule || node.num_args() != 2 ||
        !node.arg(0).is_node() || !node.arg(1).is_node()) {
      return false;
    }
    const Module* group = p_.module->FindSubmodule(node.target());
    if (group == nullptr) return false;
    const std::vector<Node*> placeholders = group->graph().placeholders();
    const Node* add = nullptr;
    const Node* relu = nullptr;
    for (const Node* n : group->graph().nodes()) {
      if (n->op() == OpCode::kPlaceholder || n->op() == OpCode::kOutput) continue;
      if (n->is_call("add") && add == nullptr && n->args().size() == 2 && n->arg(0).is_node() &&
          n->arg(1).is_node() && n->arg(0).node() != n->arg(1).node() &&
          n->arg(0).node()->op() == OpCode::kPlaceholder &&
          n->arg(1).node()->op() == OpCode::kPlaceholder) {
        add = n;
      } else if (n->is_call("relu") && add != nullptr && relu == nullptr && n->inputs()[0] == add) {
        relu = n;
      } else {
        return false;
      }
    }
    if (relu == nullptr || placeholders.size() != 2 || group->graph().output()->inputs().size() != 1 ||
        group->graph().output()->inputs()[0] != relu || add->type() != relu->type()) {
      return false;
    }
    return AbsorbSum(node, node.arg(0).node(), node.arg(1).node(), "relu");
  }

  // `sum` = a + b (then `activation`, "" for none) absorbed into the
  // library call that computes a or b, as AbsorbResidual says.
  bool AbsorbSum(const Node& sum, const Node* a, const Node* b, const std::string& activation) {
    if (SharesAnOutput(&sum)) return false;
    for (int first : {0, 1}) {
      const Node* product = first == 0 ? a : b;
      const Node* residual = first == 0 ? b : a;
      auto value = values_.find(product);
      auto added = values_.find(residual);
      if (product == residual || value == values_.end() || added == values_.end() ||
          SharesAnOutput(residual) ||
          value->second.step < 0 || product->num_uses() != 1 ||
          product->type() != sum.type() || residual->type() != sum.type() ||
          added->second.step >= value->second.step ||
          (added->second.step < 0 && added->second.external.where == BufferRef::Where::kInput)) {
        continue;
      }
      const int index = value->second.step;
      Step& step = p_.steps[index];
      if (step.kind != StepKind::kLibrary || step.node != product || !step.activation.empty() ||
          step.residual >= 0 || step.casts_input || step.result_dtype ||
          step.channels_last != added->second.channels_last ||
          !target_.absorbs_residual(*product) ||
          (!activation.empty() && !target_.absorbs_activation(*product, activation))) {
        continue;
      }
      auto known = std::find(step.inputs.begin(), step.inputs.end(), residual);
      // An input the step already reads must be read as the residual is
      // laid out: not where the step reads a converted copy (a
      // convolution's weight is read NCHW, whatever its value's layout).
      if (known != step.inputs.end()) {
        const ValueSource& read = sources_[index][known - step.inputs.begin()];
        if (read.step != added->second.step || read.channels_last != added->second.channels_last ||
            read.external.where != added->second.external.where ||
            read.external.index != added->second.external.index) {
          continue;
        }
      }
      step.residual = static_cast<int>(known - step.inputs.begin());
      if (known == step.inputs.end()) {
        step.inputs.push_back(residual);
        step.operand_channels_last.push_back(added->second.channels_last);
        sources_[index].push_back(added->second);
      }
      step.activation = activation;
      if (activation.empty()) residual_adds_[index] = &sum;
      if (added->second.step >= 0) {
        int& last = last_use_[added->second.step];
        last = std::max(last, index);
      }
      const ValueSource source = value->second;  // Inserting may rehash.
      values_[&sum] = source;
      return true;
    }
    return false;
  }

  // A saturating cast (CastFormula): a library call's own rounding of its
  // input would not saturate.
  static bool Saturates(const Node& cast) {
    absl::StatusOr<OpCall> call = OpCall::Bind(cast);
    return call.ok() && call->Bool("saturate");
  }

  // A library call whose input is a cast (a call of its own, from f32 to
  // the call's dtype) that nothing else reads: the call reads the cast's
  // input and rounds it itself (Step::casts_input), and the cast's step
  // is elided. A model cast to bf16 or f16 casts its f32 inputs so.
  void AbsorbInputCast(Step& step, std::vector<ValueSource>& sources) {
    if (!target_.absorbs_casts || step.inputs.empty()) return;
    const Node* cast = step.inputs[0];
    auto value = values_.find(cast);
    if (!cast->is_call("cast") || cast->num_uses() != 1 || cast->users().size() != 1 ||
        value == values_.end() || value->second.step < 0 || value->second.channels_last) {
      return;
    }
    const int index = value->second.step;
    Step& cast_step = p_.steps[index];
    const Node* source = cast->inputs()[0];
    absl::StatusOr<OpCall> call = OpCall::Bind(*step.node);
    if (cast_step.node != cast || cast_step.kind != StepKind::kPointwise ||
        sources_[index].size() != 1 || sources_[index][0].channels_last ||
        source->type()->dtype != DType::kF32 || cast->type()->dtype != step.node->type()->dtype ||
        !call.ok() || call->TensorNode("input") != cast || !target_.absorbs_casts(*step.node) ||
        Saturates(*cast)) {
      return;
    }
    cast_step.elided = true;
    step.inputs[0] = source;
    sources[0] = sources_[index][0];
    step.casts_input = true;
  }

  // A cast to f32 that alone reads a library call's result (through the
  // activation the call absorbed): the call writes f32 (Step::result_dtype).
  // A model cast to bf16 or f16 casts its outputs back so.
  bool AbsorbResultCast(const Node& node) {
    if (!target_.absorbs_casts || !node.is_call("cast") || node.inputs().size() != 1 ||
        node.type()->dtype != DType::kF32) {
      return false;
    }
    const Node* input = node.inputs()[0];
    auto value = values_.find(input);
    if (value == values_.end() || value->second.step < 0 || value->second.channels_last) {
      return false;
    }
    Step& step = p_.steps[value->second.step];
    if (step.kind != StepKind::kLibrary || step.result_dtype || step.residual >= 0 ||
        input->type()->shape != node.type()->shape) {
      return false;
    }
    // Every value between the call and the cast is read once, by the next.
    for (const Node* n = input;; n = n->inputs()[0]) {
      if (n->num_uses() != 1 || n->users().size() != 1) return false;
      if (n == step.node) break;
      if (n->inputs().empty() || values_.find(n->inputs()[0]) == values_.end() ||
          values_.at(n->inputs()[0]).step != value->second.step) {
        return false;
      }
    }
    if (!target_.absorbs_casts(*step.node)) return false;
    step.result_dtype = DType::kF32;
    const ValueSource source = value->second;  // Inserting may rehash.
    values_[&node] = source;
    return true;
  }

  // Whether `node`'s bytes are (through alias ops, either way) a program
  // output's.
  static bool SharesAnOutput(const Node* node) {
    while (IsAliasOp(*node)) node = node->inputs()[0];
    std::vector<const Node*> pending = {node};
    while (!pending.empty()) {
      const Node* n = pending.back();
      pending.pop_back();
      for (const Node* user : n->users()) {
        if (user->op() == OpCode::kOutput) return true;
        if (IsAliasOp(*user)) pending.push_back(user);
      }
    }
    return false;
  }

  // A permute (or transpose) that alone reads an attention step's result
  // and keeps its last dim last: the attention writes the permute's value
  // directly (Step::result_view), and the permute does not run.
  bool AbsorbOutputPermute(const Node& node) {
    if (!node.is_call("permute") && !node.is_call("transpose")) return false;
    const Node* input = node.inputs()[0];
    auto value = values_.find(input);
    if (value == values_.end() || value->second.step < 0 || input->num_uses() != 1) {
      return false;
    }
    Step& step = p_.steps[value->second.step];
    if (step.kind != StepKind::kAttention || step.node != input || step.result_view) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(node);
    if (!call.ok()) return false;
    const int64_t rank = static_cast<int64_t>(DimsOf(*input).size());
    std::vector<int64_t> perm(rank);
    for (int64_t k = 0; k < rank; ++k) perm[k] = k;
    if (node.is_call("permute")) {
      const std::vector<int64_t> dims = call->Ints("dims");
      if (static_cast<int64_t>(dims.size()) != rank) return false;
      for (int64_t k = 0; k < rank; ++k) perm[k] = dims[k] < 0 ? dims[k] + rank : dims[k];
    } else {
      int64_t a = call->Int("dim0"), b = call->Int("dim1");
      a = a < 0 ? a + rank : a;
      b = b < 0 ? b + rank : b;
      if (a < 0 || b < 0 || a >= rank || b >= rank) return false;
      std::swap(perm[a], perm[b]);
    }
    if (perm.back() != rank - 1) return false;  // The kernel writes rows of Dv.
    // Element a of the attention lands where the permute puts it: input
    // dim perm[k] steps by the permute's contiguous stride k.
    const std::vector<int64_t> view_strides = ContiguousStrides(DimsOf(node));
    std::vector<int64_t> strides(rank, 0);
    for (int64_t k = 0; k < rank; ++k) {
      if (perm[k] < 0 || perm[k] >= rank) return false;
      strides[perm[k]] = view_strides[k];
    }
    step.result_view = StridedSource{0, strides};
    const ValueSource source = value->second;  // Inserting may rehash.
    values_[&node] = source;
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
    results_.assign(p_.steps.size(), BufferRef{});
    is_output_.assign(p_.steps.size(), false);
    for (size_t j = 0; j < values.size(); ++j) {
      const Node* value = values[j];
      RETURN_IF_ERROR(CheckConcrete(*value));
      p_.output_types.push_back(*value->type());
      const BufferRef out{BufferRef::Where::kOutput, static_cast<int>(j), 0};
      const ValueSource source = values_.at(value);
      if (source.step >= 0 && !source.channels_last && !is_output_[source.step]) {
        results_[source.step] = out;
        is_output_[source.step] = true;
        continue;
      }
      // An input, a module tensor, a value already written to another
      // output or one in channels-last layout: copy into the output.
      Step copy{.kind = StepKind::kCopy, .node = value, .inputs = {value}};
      copy.operand_channels_last = {source.channels_last};
      Push(std::move(copy), {source});
      results_.push_back(out);
      is_output_.push_back(true);
    }
    return absl::OkStatus();
  }

  void PlanArena() {
    std::vector<BufferLifetime> lifetimes;
    std::vector<int> owners;
    for (int i = 0; i < static_cast<int>(p_.steps.size()); ++i) {
      if (is_output_[i] || p_.steps[i].elided) continue;
      auto last = last_use_.find(i);
      lifetimes.push_back({i, last == last_use_.end() ? i : std::max(i, last->second),
                           BytesOf(ResultType(p_.steps[i]))});
      owners.push_back(i);
    }
    MemoryPlan plan = PlanMemory(lifetimes);
    for (size_t k = 0; k < owners.size(); ++k) {
      results_[owners[k]] = {BufferRef::Where::kArena, 0, plan.offsets[k]};
    }
    p_.arena_bytes = plan.arena_bytes;
    p_.intermediate_bytes = plan.total_bytes;
  }

  StepProgram& p_;
  const StepTarget& target_;
  int num_inputs_ = 0;
  absl::flat_hash_map<const Node*, ValueSource> values_;
  absl::flat_hash_map<const Node*, int> channels_last_copy_, nchw_copy_;
  // The add each library step absorbed as its residual (AbsorbResidual).
  absl::flat_hash_map<int, const Node*> residual_adds_;
  std::vector<std::vector<ValueSource>> sources_;  // Per step.
  absl::flat_hash_map<int, int> last_use_;         // Step -> last reader.
  absl::flat_hash_set<int> composed_away_;          // View steps read through.
  std::vector<BufferRef> results_;                 // Per step.
  std::vector<bool> is_output_;                    // Per step.
};

std::string RefText(const BufferRef& r) {
  static constexpr const char* kNames[] = {"in", "out", "state", "arena"};
  return absl::StrCat(kNames[static_cast<int>(r.where)], r.index, "+", r.offset);
}

}  // namespace

absl::StatusOr<StepProgram> BuildStepProgram(
    const Module& module, const std::vector<TensorType>& input_types,
    const StepTarget& target) {
  StepProgram p;
  p.options_key = target.options_key;
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
  RETURN_IF_ERROR(InlineSubmodules(*p.module));
  RETURN_IF_ERROR(UnpackInt4Constants(*p.module).status());
  RETURN_IF_ERROR(passes::PropagateShapes(*p.module).status());
  RETURN_IF_ERROR(CheckQuantizeConstants(*p.module));
  if (target.fold_dequantized_weights) {
    RETURN_IF_ERROR(FoldDequantizedWeights(*p.module).status());
  }
  // Inference rewrites every compiled program wants: spelled-out layer
  // norms and GELUs made ops again (a GELU can then ride in the product
  // before it), batch norms folded into the convolution or linear before
  // them, then pointwise groups fused into one loop each.
  passes::PassContext context;
  RETURN_IF_ERROR(passes::RecognizeCompositesPass().Run(*p.module, context).status());
  RETURN_IF_ERROR(passes::FoldBatchNormPass().Run(*p.module, context).status());
  RETURN_IF_ERROR(passes::PropagateShapes(*p.module).status());
  if (target.accepts_attention) {
    RETURN_IF_ERROR(passes::FuseAttention(*p.module, target.accepts_attention).status());
  }
  RETURN_IF_ERROR(FoldBiasIntoLinear(*p.module).status());
  RETURN_IF_ERROR(passes::FuseElementwisePass().Run(*p.module, context).status());
  RETURN_IF_ERROR(passes::PropagateShapes(*p.module).status());
  for (const Node* node : graph.nodes()) {
    if (node->op() != OpCode::kCallModule) continue;
    const Module* group = p.module->FindSubmodule(node->target());
    if (group == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "%", node->name(), " calls submodule '", node->target(),
          "', which the module does not have"));
    }
    absl::Status s = CanLowerFusedGroup(*group, target);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("%", node->name(), ": ", s.message()));
    }
  }
  ProgramBuilder builder(p, target);
  RETURN_IF_ERROR(builder.Build());
  return p;
}

std::string StepProgram::Describe() const {
  std::string text;
  for (const TensorType& t : input_types) absl::StrAppend(&text, "in ", t.ToString(), "\n");
  for (const TensorType& t : output_types) absl::StrAppend(&text, "out ", t.ToString(), "\n");
  for (const Tensor* t : tensors) absl::StrAppend(&text, "tensor ", t->TypeString(), "\n");
  absl::StrAppend(&text, "arena ", arena_bytes, "\n");
  absl::StrAppend(&text, options_key, "\n");
  for (const Step& s : steps) {
    absl::StrAppend(&text, static_cast<int>(s.kind), " %", s.node->name(), " ",
                    s.node->target(), " ", s.node->type()->ToString(), " -> ",
                    RefText(s.result), " <-");
    for (const BufferRef& r : s.operands) absl::StrAppend(&text, " ", RefText(r));
    if (s.residual >= 0) absl::StrAppend(&text, " +residual ", s.residual);
    if (s.casts_input) absl::StrAppend(&text, " casts-input");
    if (s.result_dtype) absl::StrAppend(&text, " writes ", DTypeName(*s.result_dtype));
    absl::StrAppend(&text, " state ", s.state, " ", s.activation,
                    s.can_fail ? " can-fail" : "", s.channels_last ? " nhwc" : "",
                    " <");
    for (bool cl : s.operand_channels_last) absl::StrAppend(&text, cl ? "n" : "p");
    if (s.view_source.has_value()) {
      absl::StrAppend(&text, " view ", s.view_source->offset, " [",
                      absl::StrJoin(s.view_source->strides, ","), "]");
    }
    if (s.result_view.has_value()) {
      absl::StrAppend(&text, " writes [", absl::StrJoin(s.result_view->strides, ","), "]");
    }
    for (const std::optional<StridedSource>& v : s.operand_views) {
      if (v.has_value()) absl::StrAppend(&text, " in-place ", v->offset, " [", absl::StrJoin(v->strides, ","), "]");
    }
    absl::StrAppend(&text, s.elided ? " elided" : "", "\n");
  }
  return text;
}

}  // namespace graft
