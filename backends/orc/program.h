#ifndef GRAFT_BACKENDS_ORC_PROGRAM_H_
#define GRAFT_BACKENDS_ORC_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "graph/module.h"
#include "graph/node.h"
#include "graph/tensor_type.h"

namespace graft::orc {

// Where a value's elements live during a run. The generated entry function
// gets three pointer arrays: the inputs and outputs, the arena, and the
// state table (module tensors, then the library calls' prepared state).
struct BufferRef {
  enum class Where : unsigned char { kInput, kOutput, kState, kArena };
  Where where = Where::kArena;
  int index = 0;      // kInput, kOutput (after the inputs), kState.
  size_t offset = 0;  // kArena: bytes from the arena's start.
};

// What code a step becomes (lowering.h emits it).
enum class StepKind : unsigned char {
  kPointwise,  // A pointwise call, or a call_module of a fused group.
  kView,       // permute, transpose, expand, slice, getitem of split.
  kConcat,
  kPad,
  kReduce,     // sum, mean, amax, amin.
  kSoftmax,    // softmax, log_softmax.
  kLayerNorm,
  kBatchNorm,
  kLibrary,    // A oneDNN call (matmul, linear, linear_activation, conv2d).
  kPool,       // max_pool2d, avg_pool2d, adaptive_avg_pool2d.
  kQuantize,   // quantize_per_tensor, quantize_per_channel, dequantize.
  kIndex,      // gather, index_select, embedding: may fail (an index out
               // of range), reported by Step::failure.
  kArgmax,
  kCreate,     // zeros, full, arange.
  kCopy,       // A value copied into another buffer and layout: an output
               // that must be its own buffer, or a 4-D value converted
               // between NCHW and channels-last (NHWC).
};

struct Step {
  StepKind kind;
  const Node* node;  // In Program::module; kCopy: the value copied.
  BufferRef result;
  // The node's tensor inputs in Node::inputs() order (each once); for a
  // fused group, the call_module's arguments.
  std::vector<const Node*> inputs;
  std::vector<BufferRef> operands;
  int state = -1;  // kLibrary: the state table slot of its prepared call.
  // kLibrary: an activation applied to the result by the library call
  // ("relu", "gelu", "gelu_tanh"), absorbed from the op that followed.
  std::string activation;
  // Steps that can fail at run time (library calls, index lookups) return
  // non-zero; for the others the entry function does not check.
  bool can_fail = false;
  // Layouts of 4-D values: NCHW (false) or channels-last, NHWC (true),
  // which the convolutions run fastest on. Pointwise steps, batch_norm and
  // pooling work in either; every other step reads NCHW, with kCopy steps
  // converting where needed.
  bool channels_last = false;  // The result's layout.
  std::vector<bool> operand_channels_last;
};

// How to compile, from CompileOptions (orc_backend.h lists the keys).
struct ProgramOptions {
  // Matrix products by constant weights in bf16 (f32 accumulation and
  // results), as torch.set_float32_matmul_precision("medium") allows.
  bool bf16_matmuls = false;
  // The threads a run uses (the threads option, 0 resolved to the cores):
  // library calls plan how to split their work by it.
  int threads = 1;
};

// A module lowered for fixed input shapes: the steps in run order and the
// buffer of every value. Building it runs no LLVM, so a new process that
// finds the compiled object in the disk cache only builds this.
struct Program {
  std::unique_ptr<Module> module;  // Specialized, typed, fused.
  ProgramOptions options;
  std::vector<Step> steps;
  std::vector<TensorType> input_types;
  std::vector<TensorType> output_types;
  // State slots [0, tensors.size()) point at module tensors; the rest at
  // the library calls (steps[library_steps[i]] gets slot tensors.size() + i).
  std::vector<const Tensor*> tensors;
  // The indices of the kLibrary steps, in state slot order.
  std::vector<int> library_steps;
  size_t arena_bytes = 0;
  size_t intermediate_bytes = 0;

  // One line per step and buffer: equal programs compile to equal code.
  std::string Describe() const;
};

// Why the ORC backend cannot run `node`, or OK.
absl::Status CanLower(const Node& node);

// Specializes `module` to concrete `input_types`, propagates types, fuses
// pointwise groups and plans every buffer.
absl::StatusOr<Program> BuildProgram(const Module& module,
                                     const std::vector<TensorType>& input_types,
                                     const ProgramOptions& options = {});

}  // namespace graft::orc

#endif  // GRAFT_BACKENDS_ORC_PROGRAM_H_
