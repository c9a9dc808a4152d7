#ifndef GRAFT_BACKENDS_ORC_ORC_EXECUTABLE_H_
#define GRAFT_BACKENDS_ORC_ORC_EXECUTABLE_H_

#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "backends/programs_by_shape.h"
#include "backends/orc/library_call_specs.h"
#include "backends/orc/llvm_jit.h"
#include "backends/orc/lowering.h"
#include "backends/orc/program.h"
#include "runtime/program_runner.h"

namespace graft::orc {

// A Program with its machine code loaded and its library calls prepared:
// everything one run needs.
class CompiledProgram {
 public:
  // What the disk cache gives besides the object: per library call, its
  // weights already packed (used in place where the layout is the one
  // oneDNN picks here), and what keeps their bytes alive.
  struct Prepacked {
    std::vector<std::optional<runtime::PackedWeights>> weights;
    std::shared_ptr<const void> keep_alive;
  };

  // Compiles `program` with LLVM, or loads `object` when it is given (from
  // the disk cache).
  static absl::StatusOr<std::unique_ptr<CompiledProgram>> Create(
      Program program, const std::string* object = nullptr,
      const Prepacked* prepacked = nullptr);

  ~CompiledProgram();

  const Program& program() const { return program_; }
  const std::string& object() const { return object_; }
  // What each library step (program().library_steps) asks of oneDNN.
  const std::vector<runtime::LibraryCallSpec>& library_specs() const {
    return specs_;
  }
  // The prepared calls, in the same order.
  const std::vector<std::unique_ptr<runtime::LibraryCall>>& library_calls() const {
    return calls_;
  }
  // Runs on `inputs` (checked by the caller) into fresh output tensors.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs,
                                          int threads) const;

 private:
  CompiledProgram() = default;

  Program program_;
  std::string object_;
  std::shared_ptr<const void> prepacked_alive_;  // Before the calls that use it.

  std::unique_ptr<LoadedObject> loaded_;
  std::vector<runtime::LibraryCallSpec> specs_;
  std::vector<std::unique_ptr<runtime::LibraryCall>> calls_;
  std::unique_ptr<runtime::ProgramRunner> runner_;
};

// The steps of `program` that can fail, by index: what a run reports.
std::map<int, runtime::StepFailure> StepFailures(const Program& program);

// The ORC backend's executable. A module whose inputs have fixed shapes is
// compiled by Compile; one with symbolic dims is compiled on its first run
// at each new set of sizes (each kept for later runs).
class OrcExecutable : public Executable {
 public:
  OrcExecutable(const Module& module, std::vector<ValueSignature> inputs,
                int threads, ProgramOptions options);
  // Compiles for the signature's types now; fails unless they are all
  // known and constant.
  absl::Status CompileNow(const std::string* object = nullptr,
                          const CompiledProgram::Prepacked* prepacked = nullptr);

  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) override;
  const std::vector<ValueSignature>& input_signature() const override {
    return inputs_;
  }
  const std::vector<ValueSignature>& output_signature() const override {
    return outputs_;
  }
  ExecutableInfo info() const override;
  // The one compiled program of a fixed-shape module, or null.
  const CompiledProgram* fixed() const;
  // The library threads runs use (0: all cores).
  int threads() const { return threads_; }

 private:
  absl::StatusOr<const CompiledProgram*> ProgramFor(
      const std::vector<TensorType>& types);

  std::unique_ptr<Module> module_;
  std::vector<ValueSignature> inputs_;
  std::vector<ValueSignature> outputs_;
  int threads_;
  ProgramOptions options_;
  absl::Status runs_here_;  // Whether code for options_.target_cpu runs here.
  ProgramsByShape<CompiledProgram> programs_;
};

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_ORC_EXECUTABLE_H_
