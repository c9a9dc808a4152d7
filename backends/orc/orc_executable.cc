#include "backends/orc/orc_executable.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft::orc {

absl::StatusOr<std::unique_ptr<CompiledProgram>> CompiledProgram::Create(
    Program program, const std::string* object) {
  std::unique_ptr<CompiledProgram> c(new CompiledProgram());
  c->program_ = std::move(program);
  const Program& p = c->program_;
  if (object != nullptr) {
    c->object_ = *object;
  } else {
    ASSIGN_OR_RETURN(c->object_, CompileToObject(p));
  }
  for (const Tensor* t : p.tensors) c->state_.push_back(t->raw_data());
  // oneDNN plans how a primitive splits its work among threads when it is
  // made, by the OpenMP setting of the thread that makes it: make them
  // with the threads the runs will have.
  SetLibraryThreads(p.options.threads);
  for (int index : p.library_steps) {
    const Step* step = &p.steps[index];
    const Node* node = step->node;
    absl::StatusOr<std::unique_ptr<LibraryCall>> call =
        PrepareLibraryCall(p, *step);
    if (!call.ok()) {
      return absl::Status(call.status().code(),
                          absl::StrCat("%", node->name(), " (", node->target(),
                                       "): ", call.status().message()));
    }
    c->state_.push_back(call->get());
    c->calls_.push_back(*std::move(call));
  }
  ASSIGN_OR_RETURN(
      c->loaded_,
      LoadedObject::Load(c->object_,
                         {{kLibraryCallName,
                           reinterpret_cast<void*>(&graft_orc_run_library)}}));
  ASSIGN_OR_RETURN(void* entry, c->loaded_->Lookup(kEntryName));
  c->entry_ = reinterpret_cast<EntryFunction>(entry);
  return c;
}

CompiledProgram::~CompiledProgram() {
  for (char* arena : arenas_) std::free(arena);
}

char* CompiledProgram::TakeArena() const {
  {
    std::lock_guard<std::mutex> lock(arenas_mu_);
    if (!arenas_.empty()) {
      char* arena = arenas_.back();
      arenas_.pop_back();
      return arena;
    }
  }
  const size_t bytes = (program_.arena_bytes + 63) / 64 * 64;
  return static_cast<char*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes));
}

void CompiledProgram::ReturnArena(char* arena) const {
  std::lock_guard<std::mutex> lock(arenas_mu_);
  arenas_.push_back(arena);
}

absl::StatusOr<std::vector<Tensor>> CompiledProgram::Run(
    absl::Span<const Tensor> inputs, int threads) const {
  std::vector<Tensor> outputs;
  outputs.reserve(program_.output_types.size());
  std::vector<void*> io;
  io.reserve(inputs.size() + program_.output_types.size());
  for (const Tensor& t : inputs) io.push_back(t.raw_data());
  for (const TensorType& type : program_.output_types) {
    std::vector<int64_t> dims;
    for (Dim d : type.shape) dims.push_back(d.value());
    outputs.emplace_back(type.dtype, std::move(dims));
    io.push_back(outputs.back().raw_data());
  }
  char* arena = TakeArena();
  if (arena == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate the ", program_.arena_bytes, "-byte arena"));
  }
  if (!program_.library_steps.empty()) SetLibraryThreads(threads);
  const int rc = entry_(io.data(), arena, state_.data());
  ReturnArena(arena);
  if (rc != 0) {
    const Step& step = program_.steps[rc - 1];
    const Node& node = *step.node;
    absl::Status error =
        step.kind == StepKind::kLibrary
            ? TakeLibraryError()
            : absl::InvalidArgumentError(
                  "an index is out of range for the dim it selects from");
    return absl::Status(error.code(), absl::StrCat("%", node.name(), " (",
                                                   node.target(), "): ",
                                                   error.message()));
  }
  return outputs;
}

OrcExecutable::OrcExecutable(const Module& module,
                             std::vector<ValueSignature> inputs, int threads,
                             ProgramOptions options)
    : module_(std::make_unique<Module>(module.Clone())),
      inputs_(std::move(inputs)),
      outputs_(OutputSignature(module_->graph())),
      threads_(threads),
      options_(options) {}

absl::Status OrcExecutable::CompileNow(const std::string* object) {
  if (!AllConcrete(inputs_)) {
    return absl::FailedPreconditionError("the inputs' shapes are not all fixed");
  }
  std::vector<TensorType> types;
  for (const ValueSignature& s : inputs_) types.push_back(*s.type);
  ASSIGN_OR_RETURN(Program program, BuildProgram(*module_, types, options_));
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledProgram> compiled,
                   CompiledProgram::Create(std::move(program), object));
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
