#ifndef GRAFT_BACKENDS_CUDA_KERNEL_EMITTER_H_
#define GRAFT_BACKENDS_CUDA_KERNEL_EMITTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/cuda_program.h"
#include "backends/step_program.h"

namespace graft::cuda {

// One launch of a generated kernel. Its arguments are device pointers: the
// buffers in order, then the run's error flag when `error_flag` is set.
struct KernelLaunch {
  std::string name;
  int64_t grid = 1;
  int block = 256;
  std::vector<BufferRef> buffers;
  bool error_flag = false;
  // Then the run's GEMM workspace and its zeroed split-K tile counters
  // (a skinny product, skinny_gemm.h).
  bool split_k_scratch = false;
  // Then the run's column buffer, which this kernel fills with a
  // convolution's patches (conv_gemm.h): it runs before the step's
  // product, which reads them.
  bool writes_columns = false;
  // Launched as a programmatic dependent of the kernel before it: the
  // kernel waits (griddepcontrol.wait) before it reads what that one wrote.
  bool programmatic = false;
  // Dynamic shared memory, in bytes (past 48 KB: the kernel's limit is
  // raised when it is loaded).
  int shared_bytes = 0;
  // The translation unit (KernelSource::units) that defines `name`.
  int unit = 0;
};

// Where a run context's device buffer keeps each input and output.
struct IoLayout {
  std::vector<size_t> inputs, outputs;  // Byte offsets.
  size_t bytes = 0;
};
IoLayout LayoutIo(const StepProgram& program);

// The generated CUDA C++ of a program, as translation units that NVRTC
// compiles side by side (each whole: the preamble, then its kernels), and
// the launches of each step (none for the steps that cuBLASLt runs and for
// empty results). A kernel whose text another step already generated (a
// repeated layer) is defined once and launched by both. Each product of
// few rows is a unit of its own: it costs NVRTC about as much as dozens of
// generated kernels, which share units.
struct KernelSource {
  std::vector<std::string> units;  // units[0] holds the copy kernels.
  std::vector<std::vector<KernelLaunch>> launches;  // Per step.
  // graft_copy_in(g_inputs sources, char* io, int* err) copies each input
  // from where the caller has it into io (and clears the error flag);
  // graft_copy_out(g_outputs destinations, const char* io, const int* err)
  // copies each output and the flag out. The pointers are kernel
  // arguments, so they change from run to run outside the CUDA graph.
  int64_t copy_in_grid = 1, copy_out_grid = 1;
};

// `v` as a hexadecimal floating literal ("%a"), which NVRTC reads back to
// the same double: constants of the int8 epilogues, computed in double
// as the interpreter does. `v` is finite.
std::string ExactDoubleLiteral(double v);

// Whether a step runs as a cuBLASLt matrix product rather than a kernel.
bool IsGemmStep(const Step& step);

// How elements of a dtype are stored in generated code ("g_bfloat", "float", ...).
std::string StorageType(DType t);

// Generates a kernel for every step but the GEMMs: pointwise and fused
// groups from the registry's scalar formulas (with broadcasting), views
// and copies, concat, pad, reductions, softmax, layer_norm, batch_norm,
// pooling, gather/index_select/embedding, argmax, creation ops and a
// direct convolution; and the linear layers of few rows (skinny_gemm.h).
// Every shape is a constant in the source, so index arithmetic divides by
// constants. `multiprocessors` caps grid sizes.
// `compute_capability` (90 for 9.0) picks what the kernels may use.
absl::StatusOr<KernelSource> GenerateKernels(const StepProgram& program,
                                             const CudaOptions& options, int multiprocessors,
                                             int compute_capability = 90);

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_KERNEL_EMITTER_H_
