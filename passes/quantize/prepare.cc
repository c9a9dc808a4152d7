#include "passes/quantize/prepare.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/quant_ops.h"
#include "passes/node_util.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::passes::quantize {
namespace {

// The tensor operands of a quantized call that can be activations.
constexpr const char* kOperands[] = {"input", "other", "weight"};

bool IsOpOfConfig(const Node& n, const QuantConfig& config) {
  return n.op() == OpCode::kCallFunction &&
         std::find(config.ops.begin(), config.ops.end(), n.target()) != config.ops.end();
}

absl::Status CheckSkipGlobs(const Graph& graph, const QuantConfig& config) {
  for (const std::string& glob : config.skip) {
    bool matched = false;
    for (const Node* n : graph.nodes()) {
      matched = matched || (IsOpOfConfig(*n, config) && GlobMatches(glob, n->name()));
    }
    if (!matched) {
      return absl::InvalidArgumentError(absl::StrCat("skip glob '", glob,
                                                     "' matches no call of ",
                                                     absl::StrJoin(config.ops, ", ")));
    }
  }
  return absl::OkStatus();
}

class Preparer {
 public:
  Preparer(Module& module, const QuantConfig& config) : module_(module), config_(config) {}

  absl::StatusOr<PrepareReport> Run() {
    RETURN_IF_ERROR(config_.Validate());
    RETURN_IF_ERROR(PropagateShapes(module_).status());
    RETURN_IF_ERROR(CheckSkipGlobs(module_.graph(), config_));
    std::vector<Node*> targets;
    for (Node* n : module_.graph().nodes()) {
      if (config_.Quantizes(*n)) {
        targets.push_back(n);
      } else if (IsOpOfConfig(*n, config_)) {
        report_.skipped.push_back(n->name());
      }
    }
    for (Node* n : targets) RETURN_IF_ERROR(Observe(n));
    return report_;
  }

 private:
  absl::Status Observe(Node* call) {
    ASSIGN_OR_RETURN(OpCall bound, OpCall::Bind(*call));
    for (const char* param : kOperands) {
      if (bound.schema().ParamIndex(param) < 0) continue;
      Node* value = bound.TensorNode(param);
      // A value read twice (matmul(x, x)) is observed once.
      if (value == nullptr || value->op() == OpCode::kGetAttr || value->is_call(kObserveOp)) {
        continue;
      }
      ASSIGN_OR_RETURN(Node * observer, ObserverOf(value, *call));
      call->ReplaceInputWith(value, observer);
    }
    report_.quantized.push_back(call->name());
    return absl::OkStatus();
  }

  // The observer of `value` (made on first use, just after the value).
  absl::StatusOr<Node*> ObserverOf(Node* value, const Node& call) {
    auto it = observers_.find(value);
    if (it != observers_.end()) return it->second;
    Graph& graph = module_.graph();
    Node* observer;
    {
      auto at = graph.InsertingAfter(value);
      observer = graph.CallFunction(kObserveOp, {Argument(value)},
                                    {{"dtype", Argument(config_.activation_dtype)}});
    }
    RETURN_IF_ERROR(TypeObserver(observer, *value, call));
    observers_[value] = observer;
    ++report_.observers;
    return observer;
  }

  // Types the observer; a value that cannot be observed (not floating
  // point) is the user's error, named by call and value.
  absl::Status TypeObserver(Node* observer, const Node& value, const Node& call) {
    absl::StatusOr<std::optional<std::vector<TensorType>>> types = InferNodeTypes(*observer);
    if (types.ok() && !types->has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot quantize ", call.Ref(), " (", call.target(), "): the type of ", value.Ref(),
          " is unknown; give the model's inputs types"));
    }
    if (!types.ok()) {
      const std::string type =
          value.type().has_value() ? value.type()->ToString() : std::string("of unknown type");
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot quantize ", call.Ref(), " (", call.target(), "): it reads ", value.Ref(), " ",
          type, ", and only floating-point values are observed and quantized"));
    }
    SetInferredTypes(observer, **types);
    return absl::OkStatus();
  }

  Module& module_;
  const QuantConfig& config_;
  PrepareReport report_;
  absl::flat_hash_map<Node*, Node*> observers_;
};

}  // namespace

absl::StatusOr<PrepareReport> Prepare(Module& module, const QuantConfig& config) {
  return Preparer(module, config).Run();
}

absl::StatusOr<std::unique_ptr<PreparePass>> PreparePass::FromOptions(const PassOptions& options) {
  QuantConfig config;
  ReadOpsAndSkip(options, config);
  const std::string dtype = options.GetString("dtype", "i8");
  if (dtype != "i8" && dtype != "u8" && dtype != "f8e4m3") {
    return absl::InvalidArgumentError(
        absl::StrCat("quantize-prepare{dtype=", dtype, "}: dtype is i8, u8 or f8e4m3"));
  }
  config.activation_dtype = dtype == "u8"       ? DType::kU8
                            : dtype == "f8e4m3" ? DType::kF8E4M3
                                                : DType::kI8;
  config.symmetric_activations = dtype != "u8";
  RETURN_IF_ERROR(config.Validate());
  return std::make_unique<PreparePass>(std::move(config));
}

absl::StatusOr<bool> PreparePass::Run(Module& module, PassContext&) {
  ASSIGN_OR_RETURN(PrepareReport report, Prepare(module, config_));
  return report.observers > 0;
}

}  // namespace graft::passes::quantize
