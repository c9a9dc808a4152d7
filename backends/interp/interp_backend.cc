#include "backends/interp/interp_backend.h"

#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/interp/interpreter.h"
#include "backends/interp/kernel.h"
#include "graph/graph.h"
#include "graph/op_registry.h"

// Referenced by the link options of graft_interp (backends/CMakeLists.txt)
// so that this file, and the registration below, is linked into every
// program that links the library, even though nothing calls into it.
extern "C" {
int graft_link_interp_backend = 0;
}

namespace graft::interp {
namespace {

// An interpreter over its own copy of the module.
class InterpExecutable : public Executable {
 public:
  InterpExecutable(Module module, std::vector<ValueSignature> inputs)
      : module_(std::make_unique<Module>(std::move(module))),
        interpreter_(*module_),
        outputs_(OutputSignature(module_->graph())) {
    interpreter_.set_input_signature(std::move(inputs));
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      absl::Span<const Tensor> inputs) override {
    std::lock_guard<std::mutex> lock(mu_);
    return interpreter_.Run(inputs);
  }
  const std::vector<ValueSignature>& input_signature() const override {
    return interpreter_.input_signature();
  }
  const std::vector<ValueSignature>& output_signature() const override {
    return outputs_;
  }

 private:
  std::unique_ptr<Module> module_;  // Stable address for the interpreter.
  Interpreter interpreter_;
  std::vector<ValueSignature> outputs_;
  std::mutex mu_;
};

// Checks that every node of `module` can run, so errors surface at compile
// time rather than halfway through a run.
absl::Status CheckRunnable(const Module& module) {
  const Graph& graph = module.graph();
  bool has_output = false;
  for (const Node* node : graph.nodes()) {
    switch (node->op()) {
      case OpCode::kCallFunction: {
        absl::StatusOr<OpCall> call = OpCall::Bind(*node);
        if (!call.ok()) {
          return absl::Status(
              call.status().code(),
              absl::StrCat("node ", node->Ref(), " (", node->target(),
                           "): ", call.status().message()));
        }
        if (KernelTable::Global().Find(node->target()) == nullptr) {
          return absl::UnimplementedError(
              absl::StrCat("node ", node->Ref(),
                           ": the interpreter has no "
                           "kernel for op '",
                           node->target(), "'"));
        }
        break;
      }
      case OpCode::kGetAttr:
        if (module.FindTensor(node->target()) == nullptr) {
          return absl::NotFoundError(absl::StrCat("node ", node->Ref(),
                                                  ": the module has no tensor "
                                                  "named '",
                                                  node->target(), "'"));
        }
        break;
      case OpCode::kCallModule:
        if (module.FindSubmodule(node->target()) == nullptr) {
          return absl::NotFoundError(absl::StrCat("node ", node->Ref(),
                                                  ": the module has no "
                                                  "submodule named '",
                                                  node->target(), "'"));
        }
        break;
      case OpCode::kOutput:
        has_output = true;
        break;
      case OpCode::kPlaceholder:
        break;
    }
  }
  if (!has_output) {
    return absl::InvalidArgumentError("the graph has no output node");
  }
  return absl::OkStatus();
}

}  // namespace

bool InterpBackend::Supports(const Node& node) const {
  return node.op() != OpCode::kCallFunction ||
         KernelTable::Global().Find(node.target()) != nullptr;
}

absl::StatusOr<std::unique_ptr<Executable>> InterpBackend::Compile(
    const Module& module, const CompileOptions& options) {
  if (!options.options.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the interp backend takes no options, got '",
                     options.options.begin()->first, "'"));
  }
  if (options.device_index != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the interp backend runs on the CPU only (device 0), "
                     "got device ",
                     options.device_index));
  }
  if (absl::Status s = CheckRunnable(module); !s.ok()) return s;
  std::vector<ValueSignature> inputs = PlaceholderSignature(module.graph());
  if (absl::Status s = NarrowSignature(inputs, options.input_types); !s.ok()) {
    return s;
  }
  return std::unique_ptr<Executable>(
      new InterpExecutable(module.Clone(), std::move(inputs)));
}

namespace {

[[maybe_unused]] const bool registered = [] {
  absl::Status s = RegisterBackend(
      "interp", [] { return std::make_unique<InterpBackend>(); });
  return s.ok();
}();

}  // namespace
}  // namespace graft::interp
