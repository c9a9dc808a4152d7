#include "backends/interp/interp_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/interp/execution_plan.h"
#include "backends/interp/kernel.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

// Referenced by the link options of graft_interp (backends/CMakeLists.txt)
// so that this file, and the registration below, is linked into every
// program that links the library, even though nothing calls into it.
extern "C" {
int graft_link_interp_backend = 0;
}

namespace graft::interp {
namespace {

// A plan over the executable's own copy of the module. Everything is built
// in the constructor and only read afterwards, so Run needs no lock.
class InterpExecutable : public Executable {
 public:
  static absl::StatusOr<std::unique_ptr<Executable>> Create(
      const Module& module, std::vector<ValueSignature> inputs,
      std::shared_ptr<Communicator> communicator) {
    std::unique_ptr<InterpExecutable> e(new InterpExecutable(module.Clone()));
    ASSIGN_OR_RETURN(e->plan_, ExecutionPlan::Build(*e->module_, std::move(communicator)));
    e->inputs_ = std::move(inputs);
    e->outputs_ = OutputSignature(e->module_->graph());
    return std::unique_ptr<Executable>(std::move(e));
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      absl::Span<const Tensor> inputs) override {
    std::vector<Tensor> copies;
    ASSIGN_OR_RETURN(absl::Span<const Tensor> checked,
                     InputsOnHost(inputs, copies));
    RETURN_IF_ERROR(CheckInputs(inputs_, checked).status());
    ASSIGN_OR_RETURN(Value value, plan_->Run(checked));
    if (value.is_tensor()) return std::vector<Tensor>{value.tensor()};
    return value.tuple();
  }
  const std::vector<ValueSignature>& input_signature() const override {
    return inputs_;
  }
  const std::vector<ValueSignature>& output_signature() const override {
    return outputs_;
  }
  ExecutableInfo info() const override { return plan_->info(); }

 private:
  explicit InterpExecutable(Module module)
      : module_(std::make_unique<Module>(std::move(module))) {}

  std::unique_ptr<Module> module_;  // Stable address for the plan.
  std::unique_ptr<ExecutionPlan> plan_;
  std::vector<ValueSignature> inputs_;
  std::vector<ValueSignature> outputs_;
};

}  // namespace

absl::Status InterpBackend::CanRun(const Node& node,
                                   const CompileOptions& options) const {
  if (node.op() != OpCode::kCallFunction ||
      KernelTable::Global().Find(node.target()) != nullptr) {
    return absl::OkStatus();
  }
  return absl::UnimplementedError(absl::StrCat(
      "the interpreter has no kernel for op '", node.target(), "'"));
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
  std::vector<ValueSignature> inputs = PlaceholderSignature(module.graph());
  RETURN_IF_ERROR(NarrowSignature(inputs, options.input_types));
  return InterpExecutable::Create(module, std::move(inputs), options.communicator);
}

namespace {

[[maybe_unused]] const bool registered = [] {
  absl::Status s = RegisterBackend(
      "interp", [] { return std::make_unique<InterpBackend>(); });
  return s.ok();
}();

}  // namespace
}  // namespace graft::interp
