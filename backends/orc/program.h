#ifndef GRAFT_BACKENDS_ORC_PROGRAM_H_
#define GRAFT_BACKENDS_ORC_PROGRAM_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/step_program.h"
#include "graph/module.h"
#include "graph/node.h"
#include "graph/tensor_type.h"

namespace graft::orc {

using ::graft::BufferRef;
using ::graft::Step;
using ::graft::StepKind;

// How to compile, from CompileOptions (orc_backend.h lists the keys).
struct ProgramOptions {
  // Matrix products by constant weights in bf16 (f32 accumulation and
  // results), as torch.set_float32_matmul_precision("medium") allows.
  bool bf16_matmuls = false;
  // The threads a run uses (the threads option, 0 resolved to the cores):
  // library calls plan how to split their work by it.
  int threads = 1;
  // The CPU the code is for (LLVM's name, the target_cpu option); empty:
  // this machine's. Code for another CPU is only written to files.
  std::string target_cpu;
};

// The steps of a module for the ORC backend: the generated entry function
// gets three pointer arrays, the inputs and outputs, the arena, and the
// state table (module tensors, then oneDNN's prepared calls).
struct Program : StepProgram {
  ProgramOptions options;
};

// Why the ORC backend cannot run `node`, or OK.
absl::Status CanLower(const Node& node);

// BuildStepProgram for the ORC backend: oneDNN library calls, channels-last
// convolutions.
absl::StatusOr<Program> BuildProgram(const Module& module,
                                     const std::vector<TensorType>& input_types,
                                     const ProgramOptions& options = {});

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_PROGRAM_H_
