#ifndef GRAFT_BACKENDS_STEP_PROGRAM_H_
#define GRAFT_BACKENDS_STEP_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/backend.h"
#include "backends/strided_view.h"
#include "graph/module.h"
#include "graph/node.h"
#include "graph/tensor_type.h"

namespace graft {

// Where a value's elements live during a run: the inputs and outputs, the
// arena, or the state table (module tensors, then the library calls'
// prepared state).
struct BufferRef {
  enum class Where : unsigned char { kInput, kOutput, kState, kArena };
  Where where = Where::kArena;
  int index = 0;      // kInput, kOutput (after the inputs), kState.
  size_t offset = 0;  // kArena: bytes from the arena's start.
};

// What code a step becomes (each backend has its own code for each kind).
enum class StepKind : unsigned char {
  kPointwise,  // A pointwise call, or a call_module of a fused group.
  kView,       // permute, transpose, expand, slice, getitem of split.
  kConcat,
  kPad,
  kReduce,     // sum, mean, amax, amin.
  kSoftmax,    // softmax, log_softmax.
  kLayerNorm,
  kBatchNorm,
  kLibrary,    // A library call (matmul, linear, linear_activation, conv2d).
  kMatmul,     // A matmul or linear layer the backend generates code for (small or f64).
  kPool,       // max_pool2d, avg_pool2d, adaptive_avg_pool2d.
  kQuantize,   // quantize_per_tensor, quantize_per_channel, dequantize.
  kIndex,      // gather, index_select, embedding: may fail (an index out
               // of range), reported by Step::failure.
  kArgmax,
  kScan,       // cumsum: a running sum along a dim.
  kCreate,     // zeros, full, arange.
  kCopy,       // A value copied into another buffer and layout: an output
               // that must be its own buffer, or a 4-D value converted
               // between NCHW and channels-last (NHWC).
  kCollective,  // graft::all_reduce, graft::all_gather: through the
                // executable's communicator, no generated code.
  kAttention,   // graft::attention, where the target fuses it.
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
  // kLibrary: the index in `inputs` (and `operands`) of a tensor of the
  // result's type added to the product as it is written (the add that
  // followed, absorbed: StepTarget::absorbs_residual); -1: none.
  int residual = -1;
  // kLibrary: inputs[0] is the value a cast to the product's dtype read,
  // the cast absorbed (StepTarget::absorbs_casts): the call rounds its
  // input as it reads it, as the cast would have, and the cast does not
  // run.
  bool casts_input = false;
  // kLibrary: the dtype the result is written in, where a cast that alone
  // read the result was absorbed (the value is rounded to the node's
  // dtype first, as the cast would have seen it); unset: the node's.
  std::optional<DType> result_dtype;
  // Steps that can fail at run time (library calls, index lookups) return
  // non-zero; for the others the entry function does not check.
  bool can_fail = false;
  // Layouts of 4-D values: NCHW (false) or channels-last, NHWC (true),
  // which the convolutions run fastest on. Pointwise steps, batch_norm and
  // pooling work in either; every other step reads NCHW, with kCopy steps
  // converting where needed.
  bool channels_last = false;  // The result's layout.
  std::vector<bool> operand_channels_last;
  // kView: where each element is in inputs[0], when the view was composed
  // with the views before it (else ViewSource(*node)).
  std::optional<StridedSource> view_source;
  // kAttention: for each input, the view it is read through in place (its
  // operand is then the buffer of the view's input, read at these
  // strides), where the target reads operands strided
  // (StepTarget::strided_attention_operands).
  std::vector<std::optional<StridedSource>> operand_views;
  // kAttention: where each element of the result goes in its buffer, when
  // the permute that alone read it (heads merged back, as transformers
  // do) was absorbed: the buffer holds the permute's value.
  std::optional<StridedSource> result_view;
  // kView: a view that later views read through and nothing else reads;
  // backends run nothing for it.
  bool elided = false;
};

// The type of the value a step writes: its node's, in Step::result_dtype
// where that is set.
TensorType ResultType(const Step& step);

// The ops of each step kind that every backend lowers the same way.
// Ops whose result is the input's bytes unchanged (reshape, flatten,
// squeeze, unsqueeze, identity, dropout): one buffer for both.
bool IsAliasOp(const Node& node);
// permute, transpose, expand, slice, getitem.
bool IsViewCopyOp(const Node& node);
bool IsQuantizeOp(const Node& node);
// gather, index_select, embedding.
bool IsIndexOp(const Node& node);
// zeros, full, arange.
bool IsCreateOp(const Node& node);

// What a backend can run and how, for BuildStepProgram.
struct StepTarget {
  // Why the backend cannot run `node`, or OK.
  std::function<absl::Status(const Node&)> can_lower;
  // Which calls become kLibrary steps (matrix products, convolutions).
  std::function<bool(const Node&)> is_library_call;
  // Whether the library call `call` can apply `activation` ("relu",
  // "gelu", "gelu_tanh") to its result as it writes it.
  std::function<bool(const Node& call, absl::string_view activation)>
      absorbs_activation;
  // Whether the library call `call` (nothing absorbed into it yet) can add
  // a tensor of its result's type as it writes the result: add(call, r)
  // then runs as the call alone (a residual connection in a GEMM's
  // epilogue). Null: never.
  std::function<bool(const Node& call)> absorbs_residual;
  // Whether the library call `call`, of a 16-bit float dtype, can read its
  // input in f32 (rounding to its own dtype as it reads) and write its
  // result in f32 (after rounding it to its own dtype): the casts around a
  // product in a model cast to bf16 or f16 then run inside it. Null: never.
  std::function<bool(const Node& call)> absorbs_casts;
  // Which graft::attention nodes (passes/fuse_attention.h) the backend
  // runs; null: attention stays written out.
  std::function<bool(const Node& attention)> accepts_attention;
  // Whether graft::attention reads a view operand (a permute of a split,
  // as q, k and v are) in place: `aligned` elements is the alignment it
  // needs of the view's offset and strides; 0 reads only whole buffers.
  int64_t strided_attention_operands = 0;
  // Whether the convolution `conv` (conv2d, graft::quantized_conv2d, typed)
  // reads and writes channels-last (NHWC) values, with kCopy steps
  // converting around it. Null: none does.
  std::function<bool(const Node& conv)> channels_last_conv;
  // Whether dequantized constant weights become constants
  // (fold_dequantized_weights.h): for a backend that prepacks constant
  // weights and runs products over computed ones slowly.
  bool fold_dequantized_weights = false;
  // The backend's own settings, part of Describe().
  std::string options_key;
};

// A module lowered for fixed input shapes: the steps in run order and the
// buffer of every value. Building it runs no code generator, so a new
// process that finds the compiled code in the disk cache only builds this.
struct StepProgram {
  std::unique_ptr<Module> module;  // Specialized, typed, fused.
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
  std::string options_key;  // StepTarget::options_key.

  // One line per step and buffer: equal programs compile to equal code.
  std::string Describe() const;
};

// Specializes `module` to concrete `input_types`, propagates types, folds
// batch norms and biases, fuses pointwise groups and plans every buffer.
// Fails on a node `target` cannot lower.
absl::StatusOr<StepProgram> BuildStepProgram(
    const Module& module, const std::vector<TensorType>& input_types,
    const StepTarget& target);

}  // namespace graft

#endif  // GRAFT_BACKENDS_STEP_PROGRAM_H_
