#include "onnx/onnx_importer.h"

#include <exception>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "graph/verifier.h"
#include "onnx/onnx_contrib_ops.h"
#include "onnx/onnx_control_flow.h"
#include "onnx/onnx_expansion.h"
#include "onnx/onnx_function_ops.h"
#include "onnx/onnx_functions.h"
#include "onnx/onnx_names.h"
#include "onnx/onnx_node_context.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_qoperator.h"
#include "onnx/onnx_tensor.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

bool IsDefaultDomain(absl::string_view domain) {
  return domain.empty() || domain == "ai.onnx";
}

absl::Status WithPrefix(const absl::Status& status, absl::string_view prefix) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? absl::StrCat("#", index)
                             : absl::StrCat("'", node.name(), "'");
}

// "f32[2,batch,?]" for a declared ONNX tensor type.
std::string DeclaredType(const onnx::TypeProto_Tensor& tt) {
  absl::StatusOr<DType> dtype = DTypeFromOnnx(tt.elem_type());
  std::string out = dtype.ok() ? std::string(DTypeName(*dtype))
                               : OnnxTypeName(tt.elem_type());
  if (!tt.has_shape()) return out;
  std::vector<std::string> dims;
  for (const auto& d : tt.shape().dim()) {
    dims.push_back(d.has_dim_value()   ? absl::StrCat(d.dim_value())
                   : d.has_dim_param() ? d.dim_param()
                                       : "?");
  }
  return absl::StrCat(out, "[", absl::StrJoin(dims, ","), "]");
}

// The computed type of a graph output against the model's declaration,
// where both are known: a mismatch means the model contradicts itself, or
// the import went wrong; either way the result cannot be trusted.
absl::Status CheckDeclaredType(const onnx::ValueInfoProto& output,
                               const Node& node) {
  if (!output.has_type() || !output.type().has_tensor_type() ||
      !node.type().has_value()) {
    return absl::OkStatus();
  }
  const onnx::TypeProto_Tensor& tt = output.type().tensor_type();
  const TensorType& got = *node.type();
  absl::StatusOr<DType> declared = DTypeFromOnnx(tt.elem_type());
  bool mismatch =
      tt.elem_type() != 0 && (!declared.ok() || *declared != got.dtype);
  if (tt.has_shape()) {
    mismatch |= tt.shape().dim_size() != got.rank();
    for (int i = 0; !mismatch && i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      mismatch |= d.has_dim_value() && got.shape[i].is_constant() &&
                  d.dim_value() != got.shape[i].value();
    }
  }
  if (!mismatch) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "graph output '", output.name(), "' is computed as ", got.ToString(),
      ", but the model declares ", DeclaredType(tt)));
}

std::string QualifiedOpType(const onnx::NodeProto& node) {
  if (IsDefaultDomain(node.domain())) return node.op_type();
  return absl::StrCat(node.domain(), ".", node.op_type());
}

}  // namespace

OnnxImporter::OnnxImporter(const onnx::ModelProto& model, std::string source,
                           std::string base_dir,
                           const OnnxImportOptions& options)
    : model_(model),
      functions_(model),
      state_(std::move(source), std::move(base_dir), options) {}

absl::Status OnnxImporter::Error(const absl::Status& status) const {
  return WithPrefix(status, absl::StrCat(state_.source(), ": "));
}

absl::StatusOr<Module> OnnxImporter::Import() {
  if (!model_.has_graph()) {
    return Error(
        absl::InvalidArgumentError("not an ONNX model: it has no graph"));
  }
  // Each step runs only once the steps before it succeeded: a model with an
  // unsupported opset is refused before its initializers, which may be
  // gigabytes of external data, are read.
  if (absl::Status s = CheckOpset(); !s.ok()) return Error(s);
  if (absl::Status s = AddInitializers(); !s.ok()) return Error(s);
  if (absl::Status s = AddInputs(); !s.ok()) return Error(s);
  if (absl::Status s = ConvertNodes(); !s.ok()) return Error(s);
  if (absl::Status s = AddOutputs(); !s.ok()) return Error(s);
  Module& module = state_.module();
  if (absl::Status s = Verify(module); !s.ok()) {
    return Error(absl::InternalError(absl::StrCat(
        "the imported graph does not verify (a bug in graft's ONNX "
        "import): ",
        s.message())));
  }
  return std::move(module);
}

absl::Status OnnxImporter::CheckOpset() {
  std::optional<int64_t> opset;
  for (const onnx::OperatorSetIdProto& id : model_.opset_import()) {
    if (IsDefaultDomain(id.domain()) && !opset.has_value())
      opset = id.version();
  }
  if (!opset.has_value()) {
    return absl::InvalidArgumentError(
        "the model imports no opset of the default ONNX domain");
  }
  if (*opset < kMinOpset || *opset > kMaxOpset) {
    return absl::UnimplementedError(absl::StrCat(
        "opset ", *opset, " is not supported: graft imports opsets ", kMinOpset,
        " to ", kMaxOpset,
        " (export with e.g. torch.onnx.export(..., opset_version=17), or "
        "convert the model with onnx.version_converter)"));
  }
  state_.set_opset(*opset);
  return absl::OkStatus();
}

absl::Status OnnxImporter::AddInitializers() {
  const onnx::GraphProto& graph = model_.graph();
  if (graph.sparse_initializer_size() > 0) {
    return absl::UnimplementedError(
        absl::StrCat("sparse initializers are not supported ('",
                     graph.sparse_initializer(0).values().name(), "')"));
  }
  for (const onnx::TensorProto& init : graph.initializer()) {
    if (init.name().empty()) {
      return absl::InvalidArgumentError("an initializer has no name");
    }
    ASSIGN_OR_RETURN(Tensor t, DecodeTensor(init, state_.external(),
                                            absl::StrCat("initializer '",
                                                         init.name(), "'")));
    ASSIGN_OR_RETURN(OnnxValue * v, state_.Define(init.name()));
    v->type = t.type();
    v->constant = std::move(t);
    v->initializer = init.name();
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> OnnxImporter::InputType(
    const onnx::ValueInfoProto& input) {
  const std::string& name = input.name();
  auto error = [&](absl::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name, "' ", message));
  };
  if (!input.has_type() || !input.type().has_tensor_type()) {
    return absl::UnimplementedError(absl::StrCat(
        "input '", name,
        "' is not a tensor (sequence, map and optional inputs are not "
        "supported)"));
  }
  const onnx::TypeProto_Tensor& tt = input.type().tensor_type();
  absl::StatusOr<DType> dtype = DTypeFromOnnx(tt.elem_type());
  if (!dtype.ok()) {
    return absl::Status(
        dtype.status().code(),
        absl::StrCat("input '", name, "': ", dtype.status().message()));
  }
  const OnnxImportOptions& options = state_.options();
  // By the ONNX name, or by graft's placeholder name for it.
  auto given = options.input_shapes.find(name);
  if (given == options.input_shapes.end()) {
    given = options.input_shapes.find(SanitizeName(name, "input"));
  }
  Shape shape;
  if (given != options.input_shapes.end()) {
    const std::vector<int64_t>& dims = given->second;
    if (tt.has_shape() &&
        tt.shape().dim_size() != static_cast<int>(dims.size())) {
      return error(absl::StrCat("has ", tt.shape().dim_size(),
                                " dims, but OnnxImportOptions::input_shapes "
                                "gives it [",
                                absl::StrJoin(dims, ","), "]"));
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0) {
        return error(absl::StrCat("gets the negative size ", dims[i],
                                  " from OnnxImportOptions::input_shapes"));
      }
      if (tt.has_shape() && tt.shape().dim(i).has_dim_value() &&
          tt.shape().dim(i).dim_value() != dims[i]) {
        return error(absl::StrCat("has size ", tt.shape().dim(i).dim_value(),
                                  " in dim ", i,
                                  ", but OnnxImportOptions::"
                                  "input_shapes gives ",
                                  dims[i]));
      }
      shape.push_back(Dim(dims[i]));
    }
    return TensorType{*dtype, std::move(shape)};
  }
  if (!tt.has_shape()) {
    return error("has no shape; give one with OnnxImportOptions::input_shapes");
  }
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto_Dimension& d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) {
        return error(absl::StrCat("has the negative size ", d.dim_value(),
                                  " in dim ", i));
      }
      shape.push_back(Dim(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      auto value = options.dim_values.find(d.dim_param());
      if (value == options.dim_values.end()) {
        value = options.dim_values.find(SanitizeName(d.dim_param(), "dim"));
      }
      if (value != options.dim_values.end()) {
        if (value->second < 0) {
          return error(absl::StrCat("gets the negative size ", value->second,
                                    " for '", d.dim_param(), "'"));
        }
        shape.push_back(Dim(value->second));
      } else {
        shape.push_back(Dim::Symbol(SanitizeName(d.dim_param(), "dim")));
      }
    } else {
      // An unnamed unknown size: a symbol of its own.
      shape.push_back(Dim::Symbol(
          SanitizeName(absl::StrCat(name, "_d", i), absl::StrCat("dim", i))));
    }
  }
  return TensorType{*dtype, std::move(shape)};
}

absl::Status OnnxImporter::AddInputs() {
  const onnx::GraphProto& graph = model_.graph();
  std::set<std::string> inputs;
  for (const onnx::ValueInfoProto& input : graph.input()) {
    // An input with an initializer is a constant with a default value
    // (models of IR version 3 list every weight as an input).
    if (state_.Find(input.name()) != nullptr) continue;
    if (input.name().empty()) {
      return absl::InvalidArgumentError("a graph input has no name");
    }
    inputs.insert(input.name());
    absl::StatusOr<TensorType> type = InputType(input);
    if (!type.ok()) return type.status();
    Graph& g = state_.module().graph();
    Node* node =
        g.Placeholder(g.UniqueName(SanitizeName(input.name(), "input")), *type);
    node->meta().entries[kOnnxValueKey] = input.name();
    ASSIGN_OR_RETURN(OnnxValue * v, state_.Define(input.name()));
    v->node = node;
    v->type = *type;
  }
  std::set<std::string> placeholder_names;
  for (const std::string& name : inputs) placeholder_names.insert(SanitizeName(name, "input"));
  for (const auto& [name, dims] : state_.options().input_shapes) {
    if (!inputs.contains(name) && !placeholder_names.contains(name)) {
      std::vector<std::string> names(inputs.begin(), inputs.end());
      return absl::InvalidArgumentError(absl::StrCat(
          "OnnxImportOptions::input_shapes names '", name,
          "', which is not an input of the model (inputs: ",
          names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status OnnxImporter::ConvertNodes() {
  const onnx::GraphProto& graph = model_.graph();
  MarkConsumed(graph);
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    absl::Status s;
    // A converter that throws (a defect, as a value of an unexpected kind
    // read as another) fails the import with the node named rather than
    // ending the process.
    try {
      s = ConvertAny(node, i, Expanded{});
    } catch (const std::exception& e) {
      s = absl::InternalError(absl::StrCat("the importer failed on this node: ", e.what()));
    }
    if (!s.ok()) {
      return WithPrefix(s, absl::StrCat("node ", NodeLabel(node, i), " (",
                                        QualifiedOpType(node), "): "));
    }
  }
  return absl::OkStatus();
}

namespace {
// Functions calling functions several times each multiply, and so do
// loops; a small file must not expand without end, in nodes or in bytes (a
// large constant in a body called many times). Functions are sized before
// they are inlined, so that such a file is refused at once.
constexpr int64_t kMaxExpandedNodes = int64_t{1} << 22;
constexpr int64_t kMaxExpandedBytes = int64_t{1} << 30;
// Loops unrolled at import run at most this many iterations.
constexpr int64_t kMaxLoopIterations = int64_t{1} << 16;
}  // namespace

// A node the model defines (a local function's call, an If on a known
// condition) or that stands for default-domain nodes (onnx_qoperator.h,
// onnx_contrib_ops.h, onnx_function_ops.h) is converted as those nodes;
// any other directly.
absl::Status OnnxImporter::ConvertAny(const onnx::NodeProto& node, int index, const Expanded& from) {
  // Function bodies may call functions; a model whose functions call
  // themselves would otherwise never end.
  constexpr int kMaxDepth = 64;
  if (from.depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expansions nest more than ", kMaxDepth, " deep (a local function that calls itself?)"));
  }
  std::vector<onnx::NodeProto> nodes;
  bool generated = true;  // Nodes graft made, not the model's own.
  // Nodes graft made are never the model's function calls.
  const onnx::FunctionProto* f = from.generated ? nullptr : functions_.Find(node);
  if (f != nullptr) {
    ASSIGN_OR_RETURN(const int64_t size, functions_.InlinedSize(*f, kMaxExpandedNodes + 1));
    if (expanded_nodes_ + size > kMaxExpandedNodes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the model's local functions expand into more than ", kMaxExpandedNodes, " nodes"));
    }
    ASSIGN_OR_RETURN(nodes, LocalFunctions::Inline(*f, node, CallId(node, *f)));
    generated = false;
  } else if (sequences_.Handles(node)) {
    ASSIGN_OR_RETURN(nodes, sequences_.Expand(node, state_.opset(), Types(), [this](const std::string& name) {
      const OnnxValue* v = state_.Find(name);
      return v != nullptr ? v->constant : std::nullopt;
    }));
  } else if (IsDefaultDomain(node.domain()) && node.op_type() == "If") {
    ASSIGN_OR_RETURN(nodes, ExpandKnownIf(node));
    generated = false;
  } else if (IsDefaultDomain(node.domain()) && node.op_type() == "Loop") {
    return ConvertKnownLoop(node, index, from);
  } else if (IsQOperator(node)) {
    ASSIGN_OR_RETURN(nodes, ExpandQOperator(node, state_.opset()));
  } else if (IsContribOp(node)) {
    ASSIGN_OR_RETURN(nodes, ExpandContribOp(node, state_.opset(), Types()));
  } else if (IsFunctionOp(node)) {
    ASSIGN_OR_RETURN(nodes, ExpandFunctionOp(node, state_.opset(), Types()));
  } else {
    RETURN_IF_ERROR(sequences_.RefuseSequenceInputs(node));
    return ConvertNode(node, index, from);
  }
  RETURN_IF_ERROR(ConvertExpansion(node, index, from, nodes, generated));
  return CheckOutputsMade(node);
}

// The nodes `node` stands for, converted in order; `generated` where graft
// made them rather than the model (a function body, a branch).
absl::Status OnnxImporter::ConvertExpansion(const onnx::NodeProto& node, int index, const Expanded& from,
                                            const std::vector<onnx::NodeProto>& nodes, bool generated) {
  expanded_nodes_ += static_cast<int64_t>(nodes.size());
  for (const onnx::NodeProto& n : nodes) expanded_bytes_ += static_cast<int64_t>(n.ByteSizeLong());
  if (expanded_nodes_ > kMaxExpandedNodes || expanded_bytes_ > kMaxExpandedBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the model's local functions, Ifs, Loops and fused operators expand into more than ", kMaxExpandedNodes,
        " nodes or ", kMaxExpandedBytes >> 20, " MB"));
  }
  for (const onnx::NodeProto& n : nodes) MarkConsumed(n);
  const Expanded inner{from.origin != nullptr ? from.origin : &node, generated, from.depth + 1};
  for (const onnx::NodeProto& n : nodes) {
    absl::Status s = ConvertAny(n, index, inner);
    if (!s.ok()) {
      // The model's own nodes (a body's, a branch's) by name too; the parts
      // of a fused operator are told apart by type.
      return WithPrefix(s, generated || n.name().empty()
                               ? absl::StrCat("its ", QualifiedOpType(n), ": ")
                               : absl::StrCat("its ", QualifiedOpType(n), " '", n.name(), "': "));
    }
  }
  return absl::OkStatus();
}

// An output of the node that is read but that its expansion did not make
// (SkipLayerNormalization's mean) is refused here, by name.
absl::Status OnnxImporter::CheckOutputsMade(const onnx::NodeProto& node) {
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& output = node.output(i);
    if (!output.empty() && state_.IsConsumed(output) && state_.Find(output) == nullptr &&
        !sequences_.IsSequence(output)) {
      return absl::UnimplementedError(absl::StrCat("output ", i, " '", output, "' is not supported"));
    }
  }
  return absl::OkStatus();
}

// The prefix of an inlined call's own values: its first output and the
// function, numbered when taken (calls without outputs; a nested call
// writing its caller's output).
std::string OnnxImporter::CallId(const onnx::NodeProto& call, const onnx::FunctionProto& f) {
  return UniqueExpansionId(absl::StrCat(
      !call.output().empty() && !call.output(0).empty() ? call.output(0) : "call", "::", f.name()));
}

// Every value `node` reads, in its subgraphs too (an If's branches read
// values of the graph around them).
void OnnxImporter::MarkConsumed(const onnx::NodeProto& node) {
  for (const std::string& input : node.input()) {
    if (!input.empty()) state_.MarkConsumed(input);
  }
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.has_g()) MarkConsumed(a.g());
    for (const onnx::GraphProto& g : a.graphs()) MarkConsumed(g);
  }
}

void OnnxImporter::MarkConsumed(const onnx::GraphProto& graph) {
  for (const onnx::NodeProto& n : graph.node()) MarkConsumed(n);
  for (const onnx::ValueInfoProto& output : graph.output()) state_.MarkConsumed(output.name());
}

ValueTypeLookup OnnxImporter::Types() {
  return [this](const std::string& name) -> std::optional<TensorType> {
    const OnnxValue* v = state_.Find(name);
    return v != nullptr ? v->type : std::nullopt;
  };
}

// An If whose condition is known at import, as the branch it takes.
absl::StatusOr<std::vector<onnx::NodeProto>> OnnxImporter::ExpandKnownIf(const onnx::NodeProto& node) {
  if (node.input_size() < 1 || node.input(0).empty()) {
    return absl::InvalidArgumentError("needs a condition input");
  }
  const OnnxValue* cond = state_.Find(node.input(0));
  if (cond == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("input 0 '", node.input(0), "' is not defined"));
  }
  if (!cond->constant.has_value()) {
    return absl::UnimplementedError(
        "the condition is computed at run time: graft imports an If only when its condition is known at "
        "import (graft's graphs have no control flow)");
  }
  return ExpandIf(node, *cond->constant);
}

// Nodes in `graph` and the subgraphs of its nodes, at any depth.
static int64_t SubgraphNodeCount(const onnx::GraphProto& graph) {
  int64_t n = graph.node_size() + graph.initializer_size();
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) n += SubgraphNodeCount(a.g());
      for (const onnx::GraphProto& g : a.graphs()) n += SubgraphNodeCount(g);
    }
  }
  return n;
}

// `base`, numbered when taken: the prefix of an expansion's own values.
std::string OnnxImporter::UniqueExpansionId(const std::string& base) {
  int& taken = call_ids_[base];
  ++taken;
  return taken == 1 ? base : absl::StrCat(base, "#", taken);
}

// The contents of `name`, which the Loop needs known at import (its
// `what`).
absl::StatusOr<Tensor> OnnxImporter::KnownLoopValue(const std::string& name, const std::string& what) {
  const OnnxValue* v = state_.Find(name);
  if (v == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, " '", name, "' is not defined"));
  if (!v->constant.has_value()) {
    return absl::UnimplementedError(absl::StrCat(
        what, " is computed at run time: graft imports a Loop only when its trip count and condition are known "
              "at import (graft's graphs have no control flow)"));
  }
  if (v->constant->NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", v->constant->NumElements(), " elements, not one"));
  }
  return *v->constant;
}

// A Loop whose trip count and condition are known at import (PyTorch's
// export of EmbeddingBag, of a loop over a static length), as its body once
// per iteration: the iteration number a constant, each iteration's
// loop-carried values the next one's inputs, and each scan output the
// iterations' values stacked along a new first dim.
absl::Status OnnxImporter::ConvertKnownLoop(const onnx::NodeProto& node, int index, const Expanded& from) {
  const onnx::GraphProto* body = nullptr;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() != "body") return absl::UnimplementedError(absl::StrCat("attribute '", a.name(), "' is not supported"));
    if (a.has_g()) body = &a.g();
  }
  if (body == nullptr) return absl::InvalidArgumentError("has no body");
  if (node.input_size() < 2) {
    return absl::InvalidArgumentError("needs a trip count and a condition input (either may be \"\")");
  }
  const int carried = node.input_size() - 2;
  if (body->input_size() != carried + 2 || body->output_size() < carried + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "its body has ", body->input_size(), " inputs and ", body->output_size(), " outputs; with ", carried,
        " loop-carried values it needs ", carried + 2, " inputs and at least ", carried + 1, " outputs"));
  }
  const int scans = body->output_size() - 1 - carried;
  if (node.output_size() > carried + scans) {
    return absl::InvalidArgumentError(absl::StrCat("has ", node.output_size(), " outputs, but its body makes ",
                                                   carried, " loop-carried values and ", scans, " scan outputs"));
  }
  const auto too_many = [] {
    return absl::ResourceExhaustedError(
        absl::StrCat("runs more than ", kMaxLoopIterations, " iterations (graft unrolls a Loop at import)"));
  };
  // No trip count: until the condition is false (or past the limit).
  int64_t trips = kMaxLoopIterations + 1;
  if (!node.input(0).empty()) {
    ASSIGN_OR_RETURN(const Tensor m, KnownLoopValue(node.input(0), "the trip count"));
    if (!IsInteger(m.dtype())) {
      return absl::InvalidArgumentError(absl::StrCat("the trip count is ", DTypeName(m.dtype()), ", not an integer"));
    }
    const double d = m.GetAsDouble(0);
    trips = d <= 0 ? 0 : d > static_cast<double>(kMaxLoopIterations) ? kMaxLoopIterations + 1 : static_cast<int64_t>(d);
  }
  std::string condition = node.input(1);  // "": true.
  if (condition.empty() && trips > kMaxLoopIterations) return too_many();
  // Sized before it is unrolled, where the trip count alone says how often
  // (a condition may end it sooner: each iteration is counted as made).
  const int64_t body_nodes = SubgraphNodeCount(*body) + 2;
  if (condition.empty() && trips <= kMaxLoopIterations && body_nodes * trips > kMaxExpandedNodes - expanded_nodes_) {
    return absl::ResourceExhaustedError(absl::StrCat("its ", trips, " iterations of ", body_nodes,
                                                     " nodes expand into more than ", kMaxExpandedNodes, " nodes"));
  }
  // The Loop's own names: after its first output, numbered when taken.
  const std::string id = UniqueExpansionId(
      !node.output().empty() && !node.output(0).empty() ? node.output(0) : "loop");
  onnx::NodeProto named = node;  // Names its generated values after `id`.
  if (named.output_size() == 0) named.add_output();
  named.set_output(0, id);
  NodeExpansion made(named);
  // The body's initializers, the same in every iteration, made once.
  const std::string initializers = id + "::body::";
  std::vector<onnx::NodeProto> constants;
  for (const onnx::TensorProto& init : body->initializer()) {
    onnx::NodeProto& c = constants.emplace_back();
    c.set_op_type("Constant");
    c.set_name(initializers + init.name());
    c.add_output(initializers + init.name());
    onnx::AttributeProto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = init;
  }
  RETURN_IF_ERROR(ConvertExpansion(node, index, from, constants, /*generated=*/false));
  // Without a condition the body reads true, a 0-D bool.
  std::string always_true;
  if (condition.empty()) {
    const std::string one = made.Value("one");
    made.Add("Constant", {}, one) = ScalarInt64Constant(one, 1);
    always_true = made.Cast(one, onnx::TensorProto::BOOL, "true");
  }
  std::vector<onnx::NodeProto> prologue = made.Take();
  RETURN_IF_ERROR(ConvertExpansion(node, index, from, prologue, /*generated=*/true));
  std::vector<std::string> values(node.input().begin() + 2, node.input().end());
  std::vector<std::vector<std::string>> scanned(scans);
  int64_t i = 0;
  for (; i < trips; ++i) {
    if (!condition.empty()) {
      ASSIGN_OR_RETURN(const Tensor c, KnownLoopValue(condition, i == 0 ? "the condition" : "the body's condition"));
      if (c.dtype() != DType::kBool) {
        return absl::InvalidArgumentError(absl::StrCat("the condition is ", DTypeName(c.dtype()), ", not bool"));
      }
      if (c.GetAsDouble(0) == 0) break;
    }
    if (i == kMaxLoopIterations) return too_many();
    const std::string counter = absl::StrCat(id, "::counter", i);
    std::vector<onnx::NodeProto> nodes = {ScalarInt64Constant(counter, i)};
    std::vector<std::string> inputs = {counter, condition.empty() ? always_true : condition};
    inputs.insert(inputs.end(), values.begin(), values.end());
    ASSIGN_OR_RETURN(InlinedGraph inlined,
                     InlineSubgraph(*body, absl::StrCat(id, "::iteration", i, "::"), node.name(), inputs, initializers));
    nodes.insert(nodes.end(), inlined.nodes.begin(), inlined.nodes.end());
    // What the next iteration or the Loop's outputs read counts as read.
    for (int k = 0; k < 1 + carried; ++k) state_.MarkConsumed(inlined.outputs[k]);
    for (int k = 0; k < scans; ++k) {
      if (carried + k < node.output_size() && state_.IsConsumed(node.output(carried + k))) {
        state_.MarkConsumed(inlined.outputs[1 + carried + k]);
      }
    }
    absl::Status s = ConvertExpansion(node, index, from, nodes, /*generated=*/false);
    if (!s.ok()) return WithPrefix(s, absl::StrCat("iteration ", i, ": "));
    condition = inlined.outputs[0];
    values.assign(inlined.outputs.begin() + 1, inlined.outputs.begin() + 1 + carried);
    for (int k = 0; k < scans; ++k) scanned[k].push_back(inlined.outputs[1 + carried + k]);
  }
  for (int j = 0; j < carried && j < node.output_size(); ++j) {
    if (!node.output(j).empty()) made.Add("Identity", {values[j]}, node.output(j));
  }
  for (int k = 0; k < scans && carried + k < node.output_size(); ++k) {
    const std::string& output = node.output(carried + k);
    if (output.empty() || !state_.IsConsumed(output)) continue;
    if (i == 0) {
      return absl::UnimplementedError(absl::StrCat(
          "runs no iteration, so the shape of its scan output '", output, "' is unknown"));
    }
    std::vector<std::string> parts;
    for (size_t t = 0; t < scanned[k].size(); ++t) {
      parts.push_back(made.Unsqueeze(scanned[k][t], {0}, state_.opset(), absl::StrCat("scan", k, "_", t)));
    }
    NodeExpansion::SetInt(made.Add("Concat", parts, output), "axis", 0);
  }
  RETURN_IF_ERROR(made.status());
  RETURN_IF_ERROR(ConvertExpansion(node, index, from, made.Take(), /*generated=*/true));
  return CheckOutputsMade(node);
}

absl::Status OnnxImporter::ConvertNode(const onnx::NodeProto& node, int index, const Expanded& from) {
  const onnx::NodeProto& named = from.origin != nullptr ? *from.origin : node;
  state_.set_origin(OnnxNodeOrigin{
      named.name().empty() ? absl::StrCat("#", index) : named.name(),
      QualifiedOpType(named), index});
  // Operators of other domains graft converts directly are in the table
  // by their qualified type (com.microsoft.MatMulNBits).
  // (A default-domain op type with a dot in it is no operator.)
  const OpConverter* converter =
      !IsDefaultDomain(node.domain())            ? FindOpConverter(QualifiedOpType(node))
      : absl::StrContains(node.op_type(), '.') ? nullptr
                                                 : FindOpConverter(node.op_type());
  if (converter == nullptr && !IsDefaultDomain(node.domain())) {
    return absl::UnimplementedError(absl::StrCat(
        "op type '", node.op_type(), "' of the domain '", node.domain(),
        "' is not supported (graft imports the default ONNX domain, the "
        "model's local functions, and the com.microsoft operators "
        "docs/onnx.md lists)"));
  }
  if (converter == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "op type '", node.op_type(),
        "' is not supported by graft's ONNX import (docs/onnx.md lists the "
        "supported operators)"));
  }
  // Nodes graft made stand for an operator the model's opset has,
  // whatever their own type's first opset (LayerNormalization in
  // SkipLayerNormalization's). The model's own (function bodies, If
  // branches) are checked as the rest of the model.
  if (!from.generated && state_.opset() < converter->since_opset) {
    return absl::InvalidArgumentError(absl::StrCat(
        node.op_type(), " needs opset ", converter->since_opset,
        " or later, but the model imports opset ", state_.opset()));
  }
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string& input = node.input(i);
    if (!input.empty() && state_.Find(input) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " '", input,
          "' is not defined: no graph input, initializer or earlier node "
          "output has that name"));
    }
  }
  NodeContext ctx(state_, node);
  for (const std::string& name : converter->ignored_attributes) {
    ctx.attrs().Ignore(name);
  }
  bool done = false;
  if (converter->fold != nullptr) {
    absl::StatusOr<bool> folded = converter->fold(ctx);
    const bool fall_back =
        !folded.ok() &&
        (folded.status().code() == absl::StatusCode::kResourceExhausted ||
         folded.status().code() == absl::StatusCode::kUnimplemented) &&
        converter->convert != nullptr;
    if (!folded.ok() && !fall_back) return folded.status();
    done = folded.ok() && *folded;
  }
  if (!done) {
    if (converter->convert == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          node.op_type(),
          " is only supported on values known at import time (graft has no "
          "op for it), and its input is computed at run time"));
    }
    RETURN_IF_ERROR(converter->convert(ctx));
  }
  std::vector<std::string> unread = ctx.attrs().Unread();
  if (!unread.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("attribute '", unread[0], "' is not supported"));
  }
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& output = node.output(i);
    if (!output.empty() && state_.IsConsumed(output) &&
        state_.Find(output) == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("output ", i, " '", output, "' is not supported"));
    }
  }
  return absl::OkStatus();
}

absl::Status OnnxImporter::AddOutputs() {
  const onnx::GraphProto& graph = model_.graph();
  if (graph.output_size() == 0) {
    return absl::InvalidArgumentError("the graph has no outputs");
  }
  state_.set_origin(OnnxNodeOrigin{"graph outputs", "", graph.node_size()});
  Graph& g = state_.module().graph();
  std::vector<Node*> nodes;
  std::set<Node*> renamed;
  for (const onnx::ValueInfoProto& output : graph.output()) {
    const std::string& name = output.name();
    OnnxValue* v = state_.Find(name);
    if (v == nullptr && sequences_.IsSequence(name)) {
      return absl::UnimplementedError(absl::StrCat(
          "graph output '", name, "' is a sequence: graft's outputs are tensors (ConcatFromSequence makes one)"));
    }
    if (v == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output '", name, "' is not computed by any node"));
    }
    absl::StatusOr<Node*> node = state_.Materialize(name, *v);
    if (!node.ok()) {
      return WithPrefix(node.status(),
                        absl::StrCat("graph output '", name, "': "));
    }
    RETURN_IF_ERROR(CheckDeclaredType(output, **node));
    // Name the value after the output, when that name is free.
    if ((*node)->op() == OpCode::kCallFunction &&
        renamed.insert(*node).second) {
      std::string wanted = SanitizeName(name, "");
      if (!wanted.empty() && wanted != (*node)->name() &&
          g.FindNode(wanted) == nullptr) {
        (void)g.Rename(*node, wanted);
      }
    }
    nodes.push_back(*node);
  }
  if (nodes.size() == 1) {
    g.Output(nodes[0]);
  } else {
    ArgumentList list(nodes.begin(), nodes.end());
    g.Output(Argument(std::move(list)));
  }
  return absl::OkStatus();
}

}  // namespace graft::onnx_import
