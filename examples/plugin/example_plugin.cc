// An example graft pass plugin (docs/plugins.md), built out of tree against
// an installed graft by the CMakeLists.txt next to it. It adds:
//
//   - an op, example::scaled_tanh(input: Tensor, scale: float = 1.0), which
//     computes scale * tanh(input), with a type rule;
//   - a pass, example-swap-relu{slope=F}, which replaces relu(x) with
//     leaky_relu(x, slope);
//   - a pattern, example.tanh_times_two, for the built-in apply-patterns
//     pass: tanh(x) * 2.0 becomes example::scaled_tanh(x, 2.0).

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/op_registry.h"
#include "graph/tracer.h"
#include "graph/type_rules.h"
#include "passes/node_util.h"
#include "passes/pass.h"
#include "passes/plugin_api.h"

namespace example_plugin {
namespace {

// example::scaled_tanh keeps the shape; like tanh, float dtypes are kept
// and integers compute in f32. A zero scale is refused: the result would be
// a constant zero, which is almost certainly a mistake.
absl::StatusOr<std::vector<graft::TensorType>> ScaledTanhType(
    const graft::InferContext& ctx) {
  if (ctx.call().Float("scale") == 0.0) {
    return ctx.Error("scale must not be 0");
  }
  graft::TensorType type = ctx.Type("input");
  type.dtype = graft::rules::FloatResult(type.dtype);
  return std::vector<graft::TensorType>{type};
}

graft::OpSchema ScaledTanhSchema() {
  graft::OpSchema schema;
  schema.name = "example::scaled_tanh";
  schema.params = {
      {.name = "input", .kind = graft::ParamKind::kTensor},
      {.name = "scale",
       .kind = graft::ParamKind::kFloat,
       .default_value = graft::Argument(1.0)},
  };
  schema.infer = ScaledTanhType;
  schema.summary = "elementwise scale * tanh(input)";
  return schema;
}

// Replaces every relu(x) with leaky_relu(x, slope), in one walk over the
// graph. The graph's iterator steps ahead before the loop body runs, so the
// body may erase the node it stands on.
class SwapReluPass : public graft::passes::Pass {
 public:
  explicit SwapReluPass(double slope) : slope_(slope) {}

  absl::string_view name() const override { return "example-swap-relu"; }

  absl::StatusOr<bool> Run(graft::Module& module,
                           graft::passes::PassContext& ctx) override {
    graft::Graph& graph = module.graph();
    bool changed = false;
    for (graft::Node* relu : graph.nodes()) {
      if (!relu->is_call("relu")) continue;
      absl::StatusOr<graft::OpCall> call = graft::OpCall::Bind(*relu);
      if (!call.ok()) return call.status();
      graft::Node* leaky;
      {
        auto at = graph.InsertingBefore(relu);
        leaky = graph.CallFunction("leaky_relu",
                                   {call->TensorNode("input"), slope_});
      }
      graft::passes::InferAndSetType(leaky);
      ctx.RecordProvenance(leaky, {relu});
      relu->ReplaceAllUsesWith(leaky);
      if (absl::Status s = graph.EraseNode(relu); !s.ok()) return s;
      changed = true;
    }
    return changed;
  }

 private:
  double slope_;
};

graft::passes::PassInfo SwapReluInfo() {
  graft::passes::PassInfo info;
  info.name = "example-swap-relu";
  info.description = "Replaces relu(x) with leaky_relu(x, slope).";
  info.options = "slope=F (default 0.01)";
  info.factory = [](const graft::passes::PassOptions& options)
      -> absl::StatusOr<std::unique_ptr<graft::passes::Pass>> {
    absl::StatusOr<double> slope = options.GetDouble("slope", 0.01);
    if (!slope.ok()) return slope.status();
    return std::make_unique<SwapReluPass>(*slope);
  };
  return info;
}

// tanh(x) * 2.0 -> example::scaled_tanh(x, 2.0), both traced: the pattern's
// input is a wildcard (its type unknown), the literal 2.0 must match.
absl::StatusOr<graft::passes::PatternInfo> TanhTimesTwo() {
  absl::StatusOr<graft::Module> pattern =
      graft::Trace([](graft::Proxy x) { return tanh(x) * 2.0; }, std::nullopt);
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<graft::Module> replacement = graft::Trace(
      [](graft::Proxy x) {
        return x.tracer()->Call("example::scaled_tanh", {x, 2.0});
      },
      std::nullopt);
  if (!replacement.ok()) return replacement.status();
  graft::passes::PatternInfo info;
  info.name = "example.tanh_times_two";
  info.description = "tanh(x) * 2.0 -> example::scaled_tanh(x, 2.0)";
  info.pattern = *std::move(pattern);
  info.replacement = *std::move(replacement);
  return info;
}

// The op first: the pattern's replacement calls it, and tracing needs its
// type rule.
absl::Status Register(graft::passes::PluginRegistrar& registrar) {
  if (absl::Status s = registrar.RegisterOp(ScaledTanhSchema()); !s.ok()) {
    return s;
  }
  if (absl::Status s = registrar.RegisterPass(SwapReluInfo()); !s.ok()) {
    return s;
  }
  absl::StatusOr<graft::passes::PatternInfo> pattern = TanhTimesTwo();
  if (!pattern.ok()) return pattern.status();
  return registrar.RegisterPattern(*std::move(pattern));
}

}  // namespace
}  // namespace example_plugin

GRAFT_PLUGIN(
    "example",
    "The example plugin of docs/plugins.md: a pass, a pattern and an op",
    example_plugin::Register)
