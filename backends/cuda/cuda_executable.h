#ifndef GRAFT_BACKENDS_CUDA_CUDA_EXECUTABLE_H_
#define GRAFT_BACKENDS_CUDA_CUDA_EXECUTABLE_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/cuda/compile_phases.h"
#include "backends/cuda/cuda_artifact_format.h"
#include "backends/programs_by_shape.h"
#include "backends/step_program.h"

namespace graft::cuda {

// The device memory and CUDA graph of one run in flight. Runs of one
// program take a free context each, so concurrent runs never share
// buffers.
struct RunContext;

// A StepProgram compiled for one GPU: the kernels loaded from their CUBIN,
// the GEMM plans, the weights on the device.
class CompiledCudaProgram {
 public:
  // `phases` (optional) is told when each phase ends.
  static absl::StatusOr<std::unique_ptr<CompiledCudaProgram>> Create(
      StepProgram program, const CudaOptions& options, const GpuInfo& gpu,
      const CudaArtifact* artifact = nullptr, CompilePhases* phases = nullptr);
  ~CompiledCudaProgram();

  const StepProgram& program() const { return program_; }
  CudaArtifact Artifact() const;
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs,
                                          bool keep_outputs_on_device) const;

 private:
  struct Launch {
    cudaKernel_t kernel = nullptr;
    KernelLaunch spec;
  };
  CompiledCudaProgram() = default;
  absl::Status UploadWeights();
  // The cuBLASLt plan of each product cuBLASLt runs (algorithms from
  // `artifact` where it has them).
  absl::Status PlanGemms(const CudaArtifact* artifact);
  // Loads cubins_ and finds each launch's kernel (moved out of `source`).
  absl::Status LoadKernels(KernelSource& source);
  absl::StatusOr<std::unique_ptr<RunContext>> NewContext() const;
  void* Resolve(const BufferRef& ref, const RunContext& context) const;
  // Every step on the context's stream; with `after_step`, records event
  // i + 1 after step i.
  absl::Status Enqueue(RunContext& context,
                       const std::vector<cudaEvent_t>* after_step = nullptr) const;
  absl::Status EnqueueCollective(const Step& step, RunContext& context) const;
  absl::Status Profile(RunContext& context) const;
  absl::Status Capture(RunContext& context) const;
  // `launch`'s kernel arguments in `context` (pointers, then the pointers'
  // addresses in `args`).
  absl::Status EnqueueLaunch(const Launch& launch, RunContext& context) const;
  void LaunchArguments(const Launch& launch, RunContext& context,
                       absl::InlinedVector<void*, 8>& pointers,
                       absl::InlinedVector<void*, 8>& args) const;
  // Whether `launch` reads an input or writes an output that graph runs
  // bind in place (bound_inputs_, bound_outputs_).
  bool BindsIo(const Launch& launch) const;
  // Which inputs and outputs graph runs read and write where the caller
  // has them, instead of copying them through io: those that only
  // generated kernels touch (their graph nodes get the run's pointers),
  // none that cuBLASLt or NCCL reads or writes.
  void FindBindableIo();
  std::vector<bool> bound_inputs_, bound_outputs_;
  // Sets the kernel nodes of the graph's bound launches to the run's
  // pointers.
  absl::Status BindIo(RunContext& context) const;
  // NCCL collectives among the steps: their capture waits for other ranks.
  bool has_collectives_ = false;
  // Some launch is a split-K skinny product (workspace and tile counters).
  bool uses_split_k_ = false;
  // The largest column buffer a convolution's product needs (conv_gemm.h).
  size_t column_bytes_ = 0;
  // Few launches: runs go without the graph (RunDirect).
  bool direct_ = false;
  bool direct_error_flag_ = false;  // Some launch reports a bad index.
  std::shared_ptr<DeviceAllocator> allocator_;  // For outputs kept on the device.
  // graft_copy_in (`in`) or graft_copy_out on the context's stream.
  absl::Status LaunchCopy(RunContext& context, bool in, void** args) const;
  absl::Status FailedStep(int failed_step) const;
  // Whether a run waits for the GPU before it returns: its outputs go to
  // the host, an input came from the host (the next run refills the pinned
  // staging it is read from), a bad index must fail this very
  // run, or the program has collectives (a rank that fails aborts the
  // world: no other rank's collectives may still be queued then). Else it
  // returns once queued on the device's stream (DeviceStream).
  bool MustWait(absl::Span<const Tensor> inputs, bool keep_outputs_on_device) const;
  absl::StatusOr<std::vector<Tensor>> Finish(RunContext& context, std::vector<Tensor> outputs,
                                             bool keep_outputs_on_device, bool wait) const;
  absl::StatusOr<std::vector<Tensor>> RunDirect(RunContext& context,
                                                absl::Span<const Tensor> inputs,
                                                bool keep_outputs_on_device) const;
  absl::StatusOr<std::vector<Tensor>> RunIn(RunContext& context,
                                            absl::Span<const Tensor> inputs,
                                            bool keep_outputs_on_device) const;

  StepProgram program_;
  CudaOptions options_;
  GpuInfo gpu_;
  std::vector<std::string> cubins_;          // One per KernelSource unit.
  std::vector<cudaLibrary_t> libraries_;     // Loaded from them.
  // graft_copy_in and graft_copy_out (KernelSource) and their grids.
  cudaKernel_t copy_in_ = nullptr, copy_out_ = nullptr;
  unsigned copy_in_grid_ = 1, copy_out_grid_ = 1;
  cublasLtHandle_t blas_ = nullptr;  // SharedCublasLt, where a product needs it.
  std::vector<std::vector<Launch>> launches_;            // Per step.
  std::map<int, std::unique_ptr<GemmPlan>> gemms_;        // By step.
  void* weights_ = nullptr;                               // Device memory.
  std::vector<size_t> weight_offsets_;                    // Per module tensor.
  std::vector<size_t> input_offsets_, output_offsets_;    // In a context's io.
  size_t io_bytes_ = 0;
  mutable std::mutex contexts_mu_, capture_mu_;
  mutable std::atomic<bool> profiled_{false};
  mutable std::vector<std::unique_ptr<RunContext>> free_contexts_;
};

// The CUDA backend's executable: one compiled program per set of input
// shapes (a module with symbolic dims compiles at each new size).
class CudaExecutable : public Executable {
 public:
  CudaExecutable(const Module& module, std::vector<ValueSignature> inputs,
                 CudaOptions options, GpuInfo gpu, bool keep_outputs_on_device);
  // Compiles for the signature's types now; fails (FailedPrecondition)
  // unless they are all known and constant. `program`, when given, is the
  // module's step program for those types, already built (a disk cache
  // entry's check builds it).
  absl::Status CompileNow(const CudaArtifact* artifact = nullptr,
                          std::optional<StepProgram> program = std::nullopt);

  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) override;
  const std::vector<ValueSignature>& input_signature() const override { return inputs_; }
  const std::vector<ValueSignature>& output_signature() const override { return outputs_; }
  ExecutableInfo info() const override;
  // The one program of a fixed-shape module, or null.
  const CompiledCudaProgram* fixed() const;

 private:
  absl::StatusOr<std::unique_ptr<CompiledCudaProgram>> Build(
      const std::vector<TensorType>& types, const CudaArtifact* artifact,
      std::optional<StepProgram> program = std::nullopt) const;

  std::unique_ptr<Module> module_;
  std::vector<ValueSignature> inputs_, outputs_;
  CudaOptions options_;
  GpuInfo gpu_;
  bool keep_outputs_on_device_;
  ProgramsByShape<CompiledCudaProgram> programs_;
};

}  // namespace graft::cuda

#endif  // GRAFT_BACKENDS_CUDA_CUDA_EXECUTABLE_H_
