// A plugin for tests/passes/plugin_loader_test.cc: a pass, a pattern and an
// op, each with a way to make its code throw, so the test can check that
// exceptions from plugin code become errors naming the plugin.

#include <memory>
#include <stdexcept>
#include <vector>

#include "graph/op_registry.h"
#include "graph/parser.h"
#include "passes/plugin_api.h"

namespace {

using graft::passes::Pass;
using graft::passes::PassContext;
using graft::passes::PassInfo;
using graft::passes::PassOptions;

// test_plugin::twice(input): 2 * input. Its type rule throws for bool
// input.
absl::StatusOr<std::vector<graft::TensorType>> TwiceType(
    const graft::InferContext& ctx) {
  graft::TensorType type = ctx.Type("input");
  if (type.dtype == graft::DType::kBool) {
    throw std::logic_error("twice of a bool");
  }
  return std::vector<graft::TensorType>{type};
}

// Throws from Run.
class ThrowingPass : public Pass {
 public:
  absl::string_view name() const override { return "test-plugin-throw"; }
  absl::StatusOr<bool> Run(graft::Module&, PassContext&) override {
    throw std::runtime_error("thrown from Run");
  }
};

constexpr char kPattern[] = R"(
graph():
    %x = placeholder[target=x]
    %relu = call_function[target=relu](args = (%x,), kwargs = {})
    return relu
)";

constexpr char kReplacement[] = R"(
graph():
    %x = placeholder[target=x]
    %twice = call_function[target=test_plugin::twice](args = (%x,), kwargs = {})
    return twice
)";

absl::Status Register(graft::passes::PluginRegistrar& registrar) {
  graft::OpSchema twice;
  twice.name = "test_plugin::twice";
  twice.params = {{.name = "input", .kind = graft::ParamKind::kTensor}};
  twice.infer = TwiceType;
  twice.summary = "elementwise 2 * input";
  if (absl::Status s = registrar.RegisterOp(std::move(twice)); !s.ok())
    return s;

  PassInfo throwing;
  throwing.name = "test-plugin-throw";
  throwing.description = "Throws from Run.";
  throwing.factory =
      [](const PassOptions&) -> absl::StatusOr<std::unique_ptr<Pass>> {
    return std::make_unique<ThrowingPass>();
  };
  if (absl::Status s = registrar.RegisterPass(std::move(throwing)); !s.ok())
    return s;

  PassInfo bad_factory;
  bad_factory.name = "test-plugin-throwing-factory";
  bad_factory.description = "Throws while being created.";
  bad_factory.factory =
      [](const PassOptions&) -> absl::StatusOr<std::unique_ptr<Pass>> {
    throw std::out_of_range("thrown from the factory");
  };
  if (absl::Status s = registrar.RegisterPass(std::move(bad_factory)); !s.ok())
    return s;

  absl::StatusOr<graft::Module> pattern =
      graft::ParseModule(kPattern, "pattern");
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<graft::Module> replacement =
      graft::ParseModule(kReplacement, "replacement");
  if (!replacement.ok()) return replacement.status();
  graft::passes::PatternInfo info;
  info.name = "test_plugin.relu_to_twice";
  info.description =
      "relu(x) -> test_plugin::twice(x); throws on a relu named %boom";
  info.pattern = *std::move(pattern);
  info.replacement = *std::move(replacement);
  info.options.filters.push_back([](const graft::passes::PatternMatch& match,
                                    const graft::Graph&) -> bool {
    if (match.anchors[0]->name() == "boom") throw 42;
    return true;
  });
  return registrar.RegisterPattern(std::move(info));
}

}  // namespace

GRAFT_PLUGIN("test_plugin", "Plugin of the loader's tests", Register)
