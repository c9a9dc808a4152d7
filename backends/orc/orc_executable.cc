#include "backends/orc/orc_executable.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/orc/compiled_model_writer.h"
#include "runtime/compiled_model.h"
#include "runtime/cpu_features.h"
#include "runtime/parallel_steps.h"
#include "support/status_macros.h"

namespace graft::orc {

absl::StatusOr<std::unique_ptr<CompiledProgram>> CompiledProgram::Create(
    Program program, const std::string* object, const Prepacked* prepacked) {
  std::unique_ptr<CompiledProgram> c(new CompiledProgram());
  if (prepacked != nullptr) c->prepacked_alive_ = prepacked->keep_alive;
  c->program_ = std::move(program);
  const Program& p = c->program_;
  if (object != nullptr) {
    c->object_ = *object;
  } else {
    ASSIGN_OR_RETURN(c->object_, CompileToObject(p));
  }
  std::vector<runtime::ConstantBuffer> constants;
  std::vector<void*> state;
  for (const Tensor* t : p.tensors) {
    state.push_back(t->raw_data());
    constants.push_back({t->raw_data(), t->NumBytes()});
  }
  // oneDNN plans how a primitive splits its work among threads when it is
  // made, by the OpenMP setting of the thread that makes it: make them
  // with the threads the runs will have.
  runtime::ScopedLibraryThreads library_threads(p.options.threads);
  for (size_t i = 0; i < p.library_steps.size(); ++i) {
    const Step& step = p.steps[p.library_steps[i]];
    const Node* node = step.node;
    absl::StatusOr<runtime::LibraryCallSpec> spec = LibraryCallSpecOf(p, step);
    std::vector<runtime::PackedWeights> packed;
    if (spec.ok() && prepacked != nullptr && i < prepacked->weights.size() &&
        prepacked->weights[i].has_value()) {
      packed.push_back(*prepacked->weights[i]);
      spec->packed_index = 0;
    }
    absl::StatusOr<std::unique_ptr<runtime::LibraryCall>> call =
        spec.ok() ? runtime::PrepareLibraryCall(*spec, constants, packed)
                  : absl::StatusOr<std::unique_ptr<runtime::LibraryCall>>(spec.status());
    if (spec.ok()) spec->packed_index = -1;  // The spec as compiled, for model files.
    if (!call.ok()) {
      return absl::Status(call.status().code(),
                          absl::StrCat("%", node->name(), " (", node->target(),
                                       "): ", call.status().message()));
    }
    state.push_back(call->get());
    c->specs_.push_back(*std::move(spec));
    c->calls_.push_back(*std::move(call));
  }
  ASSIGN_OR_RETURN(
      c->loaded_,
      LoadedObject::Load(c->object_,
                         {{kLibraryCallName,
                           reinterpret_cast<void*>(&runtime::graft_orc_run_library)},
                          {runtime::kParallelForSymbol,
                           reinterpret_cast<void*>(&runtime::graft_orc_parallel_for)}}));
  ASSIGN_OR_RETURN(void* entry, c->loaded_->Lookup(kEntryName));
  c->runner_ = std::make_unique<runtime::ProgramRunner>(
      reinterpret_cast<EntryFunction>(entry), std::move(state), p.arena_bytes,
      p.output_types, StepFailures(p));
  return c;
}

CompiledProgram::~CompiledProgram() = default;

absl::StatusOr<std::vector<Tensor>> CompiledProgram::Run(
    absl::Span<const Tensor> inputs, int threads) const {
  return runner_->Run(inputs, threads);
}

std::map<int, runtime::StepFailure> StepFailures(const Program& program) {
  std::map<int, runtime::StepFailure> failures;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    if (!step.can_fail) continue;
    failures[static_cast<int>(i)] = {
        step.kind == StepKind::kLibrary,
        absl::StrCat("%", step.node->name(), " (", step.node->target(), ")")};
  }
  return failures;
}

// Whether code for `target_cpu` can run on this CPU: it must have every
// feature the code may use.
absl::Status RunsHere(const std::string& target_cpu) {
  if (target_cpu.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const HostCpu cpu, TargetCpu(target_cpu));
  absl::Status runs =
      runtime::CheckCpuFeatures(CheckableCpuFeatures(cpu), runtime::HostCpuFeatures());
  if (runs.ok()) return runs;
  return absl::FailedPreconditionError(absl::StrCat(
      "code compiled for CPU ", target_cpu, " does not run here: ", runs.message()));
}

OrcExecutable::OrcExecutable(const Module& module,
                             std::vector<ValueSignature> inputs, int threads,
                             ProgramOptions options)
    : module_(std::make_unique<Module>(module.Clone())),
      inputs_(std::move(inputs)),
      outputs_(OutputSignature(module_->graph())),
      threads_(threads),
      options_(options),
      runs_here_(RunsHere(options.target_cpu)) {}

absl::Status OrcExecutable::CompileNow(const std::string* object,
                                       const CompiledProgram::Prepacked* prepacked) {
  if (!AllConcrete(inputs_)) {
    return absl::FailedPreconditionError("the inputs' shapes are not all fixed");
  }
  std::vector<TensorType> types;
  for (const ValueSignature& s : inputs_) types.push_back(*s.type);
  ASSIGN_OR_RETURN(Program program, BuildProgram(*module_, types, options_));
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledProgram> compiled,
                   CompiledProgram::Create(std::move(program), object, prepacked));
  programs_.Put(types, std::move(compiled));
  return absl::OkStatus();
}

const CompiledProgram* OrcExecutable::fixed() const {
  return AllConcrete(inputs_) ? programs_.only() : nullptr;
}

absl::StatusOr<const CompiledProgram*> OrcExecutable::ProgramFor(
    const std::vector<TensorType>& types) {
  return programs_.Get(types, [&](const std::vector<TensorType>& t)
                                  -> absl::StatusOr<std::unique_ptr<CompiledProgram>> {
    ASSIGN_OR_RETURN(Program program, BuildProgram(*module_, t, options_));
    return CompiledProgram::Create(std::move(program));
  });
}

absl::StatusOr<std::vector<Tensor>> OrcExecutable::Run(
    absl::Span<const Tensor> inputs) {
  RETURN_IF_ERROR(runs_here_);
  std::vector<Tensor> copies;
  ASSIGN_OR_RETURN(absl::Span<const Tensor> checked, InputsOnHost(inputs, copies));
  RETURN_IF_ERROR(CheckInputs(inputs_, checked).status());
  std::vector<TensorType> types;
  types.reserve(checked.size());
  for (const Tensor& t : checked) types.push_back(t.type());
  ASSIGN_OR_RETURN(const CompiledProgram* program, ProgramFor(types));
  return program->Run(checked, threads_);
}

ExecutableInfo OrcExecutable::info() const {
  const CompiledProgram* p = fixed();
  if (p == nullptr) return {};
  return {.arena_bytes = p->program().arena_bytes,
          .intermediate_bytes = p->program().intermediate_bytes};
}

}  // namespace graft::orc
