#include "backends/cuda/cuda_executable.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/implicit_conv.h"
#include "backends/cuda/nccl_world.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "backends/cuda/skinny_gemm.h"
#include "backends/run_failure.h"
#include "graph/collective_ops.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

constexpr size_t kAlign = 256;  // cuBLASLt's fastest kernels want 16; keep a margin.

// Programs of at most this many launches run without a CUDA graph, their
// kernels reading the caller's device tensors in place: a graph launch and
// the two copy kernels around the steps cost more than such a program.
constexpr size_t kDirectLaunches = 2;

// A caller's device tensor is read in place when it is aligned like the
// buffers the kernels were planned for.
constexpr uintptr_t kDirectAlign = 256;

// Host transfers from this size on use cudaMemcpyAsync rather than the copy
// kernels.
constexpr size_t kCopyEngineBytes = 256 << 10;

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

size_t BytesOf(const TensorType& t) {
  int64_t n = 1;
  for (Dim d : t.shape) n *= d.value();
  return static_cast<size_t>(n) * DTypeSize(t.dtype);
}

std::vector<int64_t> DimsOfType(const TensorType& t) {
  std::vector<int64_t> dims;
  for (Dim d : t.shape) dims.push_back(d.value());
  return dims;
}

// Makes a GPU the calling thread's current device.
struct GpuScope {
  explicit GpuScope(int index) : index(index) {}
  absl::Status Use() const {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == index) return absl::OkStatus();
    return GRAFT_CUDA(cudaSetDevice(index));
  }
  int index;
};

}  // namespace

struct RunContext {
  // Where runs are launched: the device's stream (DeviceStream), or
  // `own_stream` while the run is captured as a graph. Programs with
  // collectives run on `own_stream` throughout, after the work queued on
  // the device's stream (`queued`, recorded there at each run's start):
  // a collective waits for the other ranks, so it must never sit on the
  // device's stream, where a copy of an unrelated tensor (the caller's,
  // between runs) would wait for it.
  cudaStream_t stream = nullptr;
  cudaStream_t own_stream = nullptr;
  cudaEvent_t queued = nullptr;
  void* memory = nullptr;  // io, then the arena, the error flag, the workspace.
  char* io = nullptr;
  char* arena = nullptr;
  int* error = nullptr;
  void* workspace = nullptr;
  int* tile_counters = nullptr;  // Zeroed once; each skinny product leaves them zero.
  void* columns = nullptr;  // Convolutions' patches (conv_gemm.h), where any needs them.
  // Pinned host memory: host staging in io's layout, then the error flag's
  // copy. Kernels read and write it directly.
  char* pinned = nullptr;
  char* staging = nullptr;
  int* host_error = nullptr;
  cudaGraphExec_t graph = nullptr;
  // The captured graph, kept for its nodes (bound_nodes) that each run
  // re-points.
  cudaGraph_t graph_def = nullptr;
  // A direct run (RunDirect) reads each input and writes each output
  // where these point; a graph run reads and writes io.
  bool direct = false;
  std::vector<const void*> direct_inputs;
  std::vector<void*> direct_outputs;
  // Graph runs: the kernel nodes of the launches that read or write the
  // inputs and outputs bound in place (CompiledCudaProgram::BindsIo), with
  // their launch, found while capturing (`record_bound`).
  struct BoundNode {
    cudaGraphNode_t node;
    const void* launch;
  };
  bool record_bound = false;
  std::vector<BoundNode> bound_nodes;
  // Whether setting those nodes worked once: else every input and output
  // goes through io.
  bool binds_io = false;
  std::string bind_error;  // Why not, for GRAFT_CUDA_PROFILE.

  ~RunContext() {
    // Runs that returned early may still use the memory (a context whose
    // run failed is dropped while earlier runs on it are queued).
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);
    std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
    if (graph != nullptr) cudaGraphExecDestroy(graph);
    if (graph_def != nullptr) cudaGraphDestroy(graph_def);
    if (pinned != nullptr) cudaFreeHost(pinned);
    if (memory != nullptr) cudaFree(memory);
    if (own_stream != nullptr) cudaStreamDestroy(own_stream);
    if (queued != nullptr) cudaEventDestroy(queued);
  }
};

// Points the context's launches at its own stream while it is captured.
class CaptureOnOwnStream {
 public:
  explicit CaptureOnOwnStream(RunContext& context) : context_(context), queue_(context.stream) {
    context_.stream = context_.own_stream;
  }
  ~CaptureOnOwnStream() { context_.stream = queue_; }
  CaptureOnOwnStream(const CaptureOnOwnStream&) = delete;
  CaptureOnOwnStream& operator=(const CaptureOnOwnStream&) = delete;

 private:
  RunContext& context_;
  cudaStream_t queue_;
};

absl::StatusOr<std::unique_ptr<CompiledCudaProgram>> CompiledCudaProgram::Create(
    StepProgram program, const CudaOptions& options, const GpuInfo& gpu,
    const CudaArtifact* artifact, CompilePhases* phases) {
  CompilePhases unreported;
  if (phases == nullptr) phases = &unreported;
  std::unique_ptr<CompiledCudaProgram> c(new CompiledCudaProgram());
  c->program_ = std::move(program);
  c->options_ = options;
  c->gpu_ = gpu;
  const StepProgram& p = c->program_;
  for (const Step& step : p.steps) {
    c->has_collectives_ |= step.kind == StepKind::kCollective;
    if (step.kind == StepKind::kCollective && options.communicator == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "%", step.node->name(), " (", step.node->target(),
          "): a collective needs every rank running: compile the unsharded module with "
          "CompileSharded (`graft run --gpus N`)"));
    }
  }
  RETURN_IF_ERROR(GpuScope(gpu.index).Use());
  ASSIGN_OR_RETURN(KernelSource source, GenerateKernels(p, options, gpu.multiprocessors,
                                                             gpu.major * 10 + gpu.minor));
  phases->Mark("kernels generated");
  // NVRTC runs on other threads while this one plans the cuBLASLt products
  // and uploads the weights: neither needs the kernels, and cuBLASLt's
  // first use in a process takes about 100 ms.
  std::future<absl::StatusOr<std::vector<std::string>>> compiling;
  if (artifact == nullptr) {
    compiling = std::async(std::launch::async, [&source, arch = gpu.Arch()] {
      return CompileUnitsToCubins(source.units, arch);
    });
  } else if (artifact->cubins.size() != source.units.size()) {
    return absl::DataLossError(absl::StrCat("the cached code has ", artifact->cubins.size(),
                                            " CUBINs for ", source.units.size(), " units"));
  } else {
    c->cubins_ = artifact->cubins;
  }
  RETURN_IF_ERROR(c->PlanGemms(artifact));
  phases->Mark(absl::StrCat("cublasLt plans (", c->gemms_.size(), ")"));
  RETURN_IF_ERROR(c->UploadWeights());
  phases->Mark("weights uploaded");
  if (compiling.valid()) {
    ASSIGN_OR_RETURN(c->cubins_, compiling.get());
    phases->Mark(absl::StrCat("nvrtc, the rest (", source.units.size(), " units)"));
  }
  RETURN_IF_ERROR(c->LoadKernels(source));
  phases->Mark("modules loaded");
  size_t launches = c->gemms_.size();
  for (const auto& step : c->launches_) launches += step.size();
  for (const auto& step : c->launches_) {
    for (const Launch& launch : step) c->direct_error_flag_ |= launch.spec.error_flag;
  }
  c->direct_ = !c->has_collectives_ && launches <= kDirectLaunches;
  c->allocator_ = GpuAllocator(gpu.index);
  const IoLayout io = LayoutIo(p);
  c->input_offsets_ = io.inputs;
  c->output_offsets_ = io.outputs;
  c->io_bytes_ = io.bytes;
  c->FindBindableIo();
  return c;
}

void CompiledCudaProgram::FindBindableIo() {
  bound_inputs_.assign(program_.input_types.size(), true);
  bound_outputs_.assign(program_.output_types.size(), true);
  auto refuse = [&](const BufferRef& ref) {
    if (ref.where == BufferRef::Where::kInput) bound_inputs_[ref.index] = false;
    if (ref.where == BufferRef::Where::kOutput) bound_outputs_[ref.index] = false;
  };
  for (size_t i = 0; i < program_.steps.size(); ++i) {
    const Step& step = program_.steps[i];
    if (gemms_.contains(static_cast<int>(i)) || step.kind == StepKind::kCollective) {
      refuse(step.result);
      for (const BufferRef& ref : step.operands) refuse(ref);
    }
  }
  // Each bound launch's node is set on every run: a few at most.
  constexpr int kMostBoundLaunches = 16;
  int bound = 0;
  for (const std::vector<Launch>& step : launches_) {
    for (const Launch& launch : step) bound += BindsIo(launch);
  }
  if (bound > kMostBoundLaunches) {
    bound_inputs_.assign(bound_inputs_.size(), false);
    bound_outputs_.assign(bound_outputs_.size(), false);
  }
}

bool CompiledCudaProgram::BindsIo(const Launch& launch) const {
  for (const BufferRef& ref : launch.spec.buffers) {
    if (ref.where == BufferRef::Where::kInput && bound_inputs_[ref.index]) return true;
    if (ref.where == BufferRef::Where::kOutput && bound_outputs_[ref.index]) return true;
  }
  return false;
}

absl::Status CompiledCudaProgram::LoadKernels(KernelSource& source) {
  for (const std::string& cubin : cubins_) {
    libraries_.push_back(nullptr);
    RETURN_IF_ERROR(GRAFT_CUDA(cudaLibraryLoadData(&libraries_.back(), cubin.data(), nullptr,
                                                   nullptr, 0, nullptr, nullptr, 0)));
  }
  launches_.resize(program_.steps.size());
  for (size_t i = 0; i < program_.steps.size(); ++i) {
    for (KernelLaunch& spec : source.launches[i]) {
      Launch launch;
      RETURN_IF_ERROR(GRAFT_CUDA(
          cudaLibraryGetKernel(&launch.kernel, libraries_[spec.unit], spec.name.c_str())));
      launch.spec = std::move(spec);
      if (launch.spec.shared_bytes > 0) {
        // A GPU with less shared memory a block than the kernel's tile
        // refuses here, naming the step.
        const absl::Status raised = GRAFT_CUDA(cudaKernelSetAttributeForDevice(
            launch.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, launch.spec.shared_bytes,
            gpu_.index));
        if (!raised.ok()) {
          const Node& node = *program_.steps[i].node;
          return absl::Status(raised.code(),
                              absl::StrCat("%", node.name(), " (", node.target(), "): ",
                                           launch.spec.shared_bytes, " B of shared memory: ",
                                           raised.message()));
        }
      }
      uses_split_k_ |= launch.spec.split_k_scratch;
      launches_[i].push_back(std::move(launch));
    }
  }
  RETURN_IF_ERROR(GRAFT_CUDA(cudaLibraryGetKernel(&copy_in_, libraries_[0], "graft_copy_in")));
  RETURN_IF_ERROR(GRAFT_CUDA(cudaLibraryGetKernel(&copy_out_, libraries_[0], "graft_copy_out")));
  copy_in_grid_ = static_cast<unsigned>(source.copy_in_grid);
  copy_out_grid_ = static_cast<unsigned>(source.copy_out_grid);
  return absl::OkStatus();
}

absl::Status CompiledCudaProgram::PlanGemms(const CudaArtifact* artifact) {
  const int cc = gpu_.major * 10 + gpu_.minor;
  for (size_t i = 0; i < program_.steps.size(); ++i) {
    const Step& step = program_.steps[i];
    if (!IsGemmStep(step) || SkinnyGemmFor(step, options_, gpu_.multiprocessors, cc, &program_) ||
        ImplicitConvFor(step, program_, options_, std::max(gpu_.multiprocessors, 1), cc)) {
      continue;  // graft's own kernels.
    }
    if (blas_ == nullptr) {
      ASSIGN_OR_RETURN(blas_, SharedCublasLt(gpu_.index));  // Only where a product needs it.
    }
    if (step.casts_input || step.result_dtype) {
      return absl::InternalError(absl::StrCat("%", step.node->name(),
                                              ": absorbed casts, but cuBLASLt would run it"));
    }
    absl::StatusOr<GemmShape> shape = GemmShapeOf(*step.node);
    if (IsConvGemmStep(step)) {
      absl::StatusOr<ConvGemm> conv = ConvGemmFor(step, program_);
      shape = conv.ok() ? absl::StatusOr<GemmShape>(conv->gemm) : conv.status();
      if (conv.ok()) column_bytes_ = std::max(column_bytes_, AlignUp(static_cast<size_t>(conv->column_bytes)));
    }
    if (shape.ok() && shape->m * shape->n * shape->batch == 0) continue;  // Empty.
    absl::StatusOr<std::unique_ptr<GemmPlan>> plan = absl::InternalError("no GEMM shape");
    if (!shape.ok()) {
      plan = shape.status();
    } else {
      std::string activation = GemmActivation(step);
      shape->activation = activation == "gelu" ? "" : activation;
      shape->tf32 = options_.precision == "tf32";
      shape->residual = step.residual >= 0;
      std::string algo;
      if (artifact != nullptr) {
        auto it = artifact->gemm_algos.find(static_cast<int>(i));
        if (it != artifact->gemm_algos.end()) algo = it->second;
      }
      plan = GemmPlan::Create(blas_, *shape, options_.autotune, algo);
    }
    if (!plan.ok()) {
      return absl::Status(plan.status().code(),
                          absl::StrCat("%", step.node->name(), " (", step.node->target(),
                                       "): ", plan.status().message()));
    }
    gemms_[static_cast<int>(i)] = *std::move(plan);
  }
  return absl::OkStatus();
}

CompiledCudaProgram::~CompiledCudaProgram() {
  if (!GpuScope(gpu_.index).Use().ok()) return;
  // Runs still queued use the contexts' memory and the weights. (Waited
  // for before CaptureExclusion is taken: a rank's queued collective may
  // need another rank's thread, which may need the lock, to finish.)
  if (absl::StatusOr<cudaStream_t> queue = DeviceStream(gpu_.index); queue.ok()) {
    (void)cudaStreamSynchronize(*queue);
  }
  free_contexts_.clear();  // Each takes CaptureExclusion itself.
  std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
  gemms_.clear();
  for (cudaLibrary_t library : libraries_) {
    if (library != nullptr) cudaLibraryUnload(library);
  }
  if (weights_ != nullptr) cudaFree(weights_);
}

CudaArtifact CompiledCudaProgram::Artifact() const {
  CudaArtifact a{cubins_, {}};
  for (const auto& [step, plan] : gemms_) a.gemm_algos[step] = plan->AlgoBytes();
  return a;
}

absl::Status CompiledCudaProgram::UploadWeights() {
  // Host copies of weights on a device first: such a copy waits for that
  // device's stream, which must not happen under CaptureExclusion. The
  // weights of tf32 products run as f16 (mode 5) are converted for them.
  const std::vector<int> halves =
      HalfWeightSlots(program_, options_, gpu_.major * 10 + gpu_.minor);
  // Convolution weights in the order their products take K (conv_gemm.h).
  const std::map<int, int64_t> taps = TapsOuterWeightSlots(program_);
  std::vector<Tensor> hosts;
  for (size_t i = 0; i < program_.tensors.size(); ++i) {
    ASSIGN_OR_RETURN(Tensor host, CopyToHost(*program_.tensors[i]));
    if (std::find(halves.begin(), halves.end(), static_cast<int>(i)) != halves.end()) {
      host = ScaledHalfWeights(host);
    }
    if (auto padded = taps.find(static_cast<int>(i)); padded != taps.end()) {
      host = TapsOuterWeights(host, padded->second);
    }
    hosts.push_back(std::move(host));
  }
  size_t total = 0;
  for (const Tensor& t : hosts) {
    weight_offsets_.push_back(total);
    total += AlignUp(t.NumBytes());
  }
  if (total == 0) return absl::OkStatus();
  RETURN_IF_ERROR(GpuScope(gpu_.index).Use());
  std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
  RETURN_IF_ERROR(GRAFT_CUDA(cudaMalloc(&weights_, total)));
  for (size_t i = 0; i < hosts.size(); ++i) {
    const Tensor& host = hosts[i];
    RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpy(static_cast<char*>(weights_) + weight_offsets_[i],
                                          host.raw_data(), host.NumBytes(),
                                          cudaMemcpyHostToDevice)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RunContext>> CompiledCudaProgram::NewContext() const {
  auto context = std::make_unique<RunContext>();
  // Before CaptureExclusion: DeviceStream may take it to create the stream.
  ASSIGN_OR_RETURN(cudaStream_t queue, DeviceStream(gpu_.index));
  std::lock_guard<std::recursive_mutex> exclusion(CaptureExclusion());
  RETURN_IF_ERROR(
      GRAFT_CUDA(cudaStreamCreateWithFlags(&context->own_stream, cudaStreamNonBlocking)));
  context->stream = has_collectives_ ? context->own_stream : queue;
  if (has_collectives_) {
    RETURN_IF_ERROR(
        GRAFT_CUDA(cudaEventCreateWithFlags(&context->queued, cudaEventDisableTiming)));
  }
  const bool gemms = !gemms_.empty() || uses_split_k_;
  const size_t arena = AlignUp(program_.arena_bytes);
  const size_t counters = uses_split_k_ ? kSkinnyCounters * sizeof(int) : 0;
  const size_t total = io_bytes_ + arena + kAlign + (gemms ? kGemmWorkspaceBytes : 0) +
                       AlignUp(counters) + column_bytes_;
  RETURN_IF_ERROR(GRAFT_CUDA(cudaMalloc(&context->memory, total)));
  context->io = static_cast<char*>(context->memory);
  context->arena = context->io + io_bytes_;
  context->error = reinterpret_cast<int*>(context->arena + arena);
  context->workspace = gemms ? context->arena + arena + kAlign : nullptr;
  // No bad index yet (the memory may hold an earlier allocation's bytes).
  RETURN_IF_ERROR(GRAFT_CUDA(cudaMemsetAsync(context->error, 0, sizeof(int), context->stream)));
  if (uses_split_k_) {
    context->tile_counters = reinterpret_cast<int*>(context->arena + arena + kAlign +
                                                    kGemmWorkspaceBytes);
    RETURN_IF_ERROR(GRAFT_CUDA(
        cudaMemsetAsync(context->tile_counters, 0, counters, context->stream)));
  }
  if (column_bytes_ > 0) {
    context->columns = context->arena + arena + kAlign + (gemms ? kGemmWorkspaceBytes : 0) +
                       AlignUp(counters);
  }
  RETURN_IF_ERROR(GRAFT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&context->pinned),
                                            io_bytes_ + kAlign)));
  context->staging = context->pinned;
  context->host_error = reinterpret_cast<int*>(context->staging + io_bytes_);
  return context;
}

void* CompiledCudaProgram::Resolve(const BufferRef& ref, const RunContext& context) const {
  switch (ref.where) {
    case BufferRef::Where::kInput:
      if (context.direct) return const_cast<void*>(context.direct_inputs[ref.index]);
      return context.io + input_offsets_[ref.index];
    case BufferRef::Where::kOutput:
      if (context.direct) return context.direct_outputs[ref.index];
      return context.io + output_offsets_[ref.index];
    case BufferRef::Where::kState:
      return static_cast<char*>(weights_) + weight_offsets_[ref.index];
    case BufferRef::Where::kArena:
      return context.arena + ref.offset;
  }
  return nullptr;
}

void CompiledCudaProgram::LaunchArguments(const Launch& launch, RunContext& context,
                                          absl::InlinedVector<void*, 8>& pointers,
                                          absl::InlinedVector<void*, 8>& args) const {
  for (const BufferRef& ref : launch.spec.buffers) pointers.push_back(Resolve(ref, context));
  if (launch.spec.error_flag) pointers.push_back(context.error);
  if (launch.spec.split_k_scratch) {
    pointers.push_back(context.workspace);
    pointers.push_back(context.tile_counters);
  }
  if (launch.spec.writes_columns) pointers.push_back(context.columns);
  // `pointers` is complete: its elements stay where they are.
  for (void*& p : pointers) args.push_back(&p);
}

// One generated kernel's launch on the context's stream; while a graph is
// recorded, the node of a launch that reads or writes the caller's
// buffers in place is kept, to be re-pointed each run.
absl::Status CompiledCudaProgram::EnqueueLaunch(const Launch& launch, RunContext& context) const {
  absl::Status status;
  absl::InlinedVector<void*, 8> pointers, args;
  LaunchArguments(launch, context, pointers, args);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(launch.spec.grid));
  config.blockDim = dim3(launch.spec.block);
  config.dynamicSmemBytes = static_cast<size_t>(launch.spec.shared_bytes);
  config.stream = context.stream;
  cudaLaunchAttribute attribute{};
  if (launch.spec.programmatic && !has_collectives_) {
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  status = GRAFT_CUDA(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(launch.kernel),
                                          args.data()));
  if (status.ok() && context.record_bound && BindsIo(launch)) {
    // The node this launch just added: the capture's one dependency.
    cudaStreamCaptureStatus capturing;
    const cudaGraphNode_t* last = nullptr;
    size_t count = 0;
    status = GRAFT_CUDA(cudaStreamGetCaptureInfo(context.stream, &capturing, nullptr, nullptr,
                                                 &last, nullptr, &count));
    if (status.ok() && count != 1) {
      status = absl::InternalError("a captured launch is not the capture's one dependency");
    }
    if (status.ok()) context.bound_nodes.push_back({last[0], &launch});
  }
  return status;
}

// Every step's work on the context's stream, in order.
absl::Status CompiledCudaProgram::Enqueue(RunContext& context,
                                          const std::vector<cudaEvent_t>* after_step) const {
  for (size_t i = 0; i < program_.steps.size(); ++i) {
    const Step& step = program_.steps[i];
    absl::Status status;
    if (step.kind == StepKind::kCollective) status = EnqueueCollective(step, context);
    auto gemm = gemms_.find(static_cast<int>(i));
    if (gemm != gemms_.end()) {
      // linear(input, weight, bias): operands in the node's order; the
      // step lists unique inputs, so look each one up.
      ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(*step.node));
      auto operand = [&](absl::string_view name) -> const void* {
        const Node* n = call.TensorNode(name);
        for (size_t k = 0; k < step.inputs.size(); ++k) {
          if (step.inputs[k] == n) return Resolve(step.operands[k], context);
        }
        return nullptr;
      };
      const bool matmul = step.node->is_call("matmul");
      // A convolution's product reads the patches its column kernel wrote
      // (the step's first launches), or a 1x1 one its NHWC input itself.
      const void* a = operand("input");
      for (const Launch& launch : launches_[i]) {
        if (!status.ok() || !launch.spec.writes_columns) continue;
        status = EnqueueLaunch(launch, context);
        a = context.columns;
      }
      if (status.ok()) status = gemm->second->Run(context.stream, a,
                                 operand(matmul ? "other" : "weight"),
                                 gemm->second->shape().has_bias ? operand("bias") : nullptr,
                                 step.residual >= 0
                                     ? Resolve(step.operands[step.residual], context)
                                     : nullptr,
                                 Resolve(step.result, context), context.workspace);
    }
    for (const Launch& launch : launches_[i]) {
      if (!status.ok()) break;
      if (!launch.spec.writes_columns) status = EnqueueLaunch(launch, context);
    }
    if (status.ok() && after_step != nullptr) {
      status = GRAFT_CUDA(cudaEventRecord((*after_step)[i + 1], context.stream));
    }
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("%", step.node->name(), " (",
                                                      step.node->target(), "): ",
                                                      status.message()));
    }
  }
  return absl::OkStatus();
}

// A collective on the context's stream: NCCL reads the step's operand and
// writes its result (in place is fine).
absl::Status CompiledCudaProgram::EnqueueCollective(const Step& step, RunContext& context) const {
  const TensorType& in = *step.inputs[0]->type();
  const size_t count = static_cast<size_t>(NumElements(in.shape));
  const void* src = Resolve(step.operands[0], context);
  void* dst = Resolve(step.result, context);
  if (step.node->is_call(kAllGatherOp)) {
    return options_.communicator->AllGather(src, dst, count, in.dtype, context.stream);
  }
  return options_.communicator->AllReduceSum(src, dst, count, in.dtype, context.stream);
}

// GRAFT_CUDA_PROFILE=1: runs the steps ten times without the graph, with an
// event after each, and prints where the time goes (to stderr, once per
// program), the slowest steps first.
absl::Status CompiledCudaProgram::Profile(RunContext& context) const {
  std::lock_guard<std::mutex> lock(capture_mu_);
  std::vector<cudaEvent_t> events(program_.steps.size() + 1, nullptr);
  for (cudaEvent_t& e : events) RETURN_IF_ERROR(GRAFT_CUDA(cudaEventCreate(&e)));
  std::vector<double> us(program_.steps.size(), 0);
  constexpr int kRounds = 10;
  absl::Status status;
  for (int round = 0; round < kRounds && status.ok(); ++round) {
    status = GRAFT_CUDA(cudaEventRecord(events[0], context.stream));
    if (status.ok()) status = Enqueue(context, &events);
    if (status.ok()) status = GRAFT_CUDA(cudaStreamSynchronize(context.stream));
    for (size_t i = 0; i < us.size() && status.ok(); ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, events[i], events[i + 1]);
      us[i] += ms * 1000.0 / kRounds;
    }
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  RETURN_IF_ERROR(status);
  // Elided steps run nothing: what their events measure is the events'.
  std::vector<size_t> order;
  double total = 0;
  for (size_t i = 0; i < us.size(); ++i) {
    if (program_.steps[i].elided) continue;
    order.push_back(i);
    total += us[i];
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return us[a] > us[b]; });
  std::fprintf(stderr, "graft cuda profile: %zu steps, %.1f us without the graph\n", order.size(),
               total);
  int bound_inputs = 0, bound_outputs = 0;
  for (bool b : bound_inputs_) bound_inputs += b;
  for (bool b : bound_outputs_) bound_outputs += b;
  std::fprintf(stderr,
               "  graph runs read %d of %zu inputs and write %d of %zu outputs in place (%zu "
               "kernel nodes set per run)%s%s\n",
               context.binds_io ? bound_inputs : 0, bound_inputs_.size(),
               context.binds_io ? bound_outputs : 0, bound_outputs_.size(),
               context.bound_nodes.size(), context.binds_io ? "" : ": ",
               context.binds_io ? "" : context.bind_error.c_str());
  for (size_t i : order) {
    const Step& step = program_.steps[i];
    std::fprintf(stderr, "  %8.1f us %5.1f%%  %%%s (%s) %s%s\n", us[i], 100 * us[i] / total,
                 step.node->name().c_str(), step.node->target().c_str(),
                 step.node->type()->ToString().c_str(),
                 gemms_.contains(static_cast<int>(i)) ? " [cuBLASLt]" : "");
  }
  return absl::OkStatus();
}

// Records the steps once as a CUDA graph; later runs replay it with one
// launch, between the copy kernels where a run needs them (their pointer
// arguments change every run).
absl::Status CompiledCudaProgram::Capture(RunContext& context) const {
  std::lock_guard<std::mutex> lock(capture_mu_);  // GEMM plans set their bias per call.
  // A rank's capture of NCCL calls may wait for the other ranks' threads,
  // which must not wait for this lock meanwhile.
  std::unique_lock<std::recursive_mutex> exclusion(CaptureExclusion(), std::defer_lock);
  if (!has_collectives_) exclusion.lock();
  CaptureOnOwnStream capturing(context);
  RETURN_IF_ERROR(
      GRAFT_CUDA(cudaStreamBeginCapture(context.stream, cudaStreamCaptureModeThreadLocal)));
  context.bound_nodes.clear();
  context.record_bound = true;
  const absl::Status enqueued = Enqueue(context);
  context.record_bound = false;
  cudaGraph_t graph = nullptr;
  const absl::Status ended = GRAFT_CUDA(cudaStreamEndCapture(context.stream, &graph));
  if (!enqueued.ok() || !ended.ok()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    return enqueued.ok() ? ended : enqueued;
  }
  absl::Status made = GRAFT_CUDA(cudaGraphInstantiate(&context.graph, graph, 0));
  if (!made.ok()) {
    cudaGraphDestroy(graph);
    return made;
  }
  context.graph_def = graph;
  // The bound nodes set once to io, as captured: where the driver
  // refuses, runs copy every input and output instead.
  context.direct_inputs.clear();
  for (size_t offset : input_offsets_) context.direct_inputs.push_back(context.io + offset);
  context.direct_outputs.clear();
  for (size_t offset : output_offsets_) context.direct_outputs.push_back(context.io + offset);
  const absl::Status bound = context.bound_nodes.empty()
                                 ? absl::NotFoundError("no launch reads them alone")
                                 : BindIo(context);
  context.binds_io = bound.ok();
  context.bind_error = std::string(bound.message());
  if (!context.binds_io) {
    cudaGetLastError();
    context.bound_nodes.clear();
  }
  return absl::OkStatus();
}

absl::Status CompiledCudaProgram::LaunchCopy(RunContext& context, bool in, void** args) const {
  return GRAFT_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(in ? copy_in_ : copy_out_),
                                     dim3(in ? copy_in_grid_ : copy_out_grid_), dim3(256), args,
                                     0, context.stream));
}

absl::Status CompiledCudaProgram::FailedStep(int failed_step) const {
  if (failed_step <= 0 || failed_step > static_cast<int>(program_.steps.size())) {
    return absl::OkStatus();
  }
  const Node& node = *program_.steps[failed_step - 1].node;
  // Read after the run's wait: every step, collectives included, has run.
  return MarkRanToEnd(absl::InvalidArgumentError(
      absl::StrCat("%", node.name(), " (", node.target(),
                   "): an index is out of range for the dim it selects from")));
}

bool CompiledCudaProgram::MustWait(absl::Span<const Tensor> inputs,
                                   bool keep_outputs_on_device) const {
  return !keep_outputs_on_device || direct_error_flag_ || has_collectives_ ||
         std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.on_host(); });
}

// The run's one wait, where it has one (MustWait); then a bad index found
// on the device fails it, and host outputs are copied out of the pinned
// staging.
absl::StatusOr<std::vector<Tensor>> CompiledCudaProgram::Finish(
    RunContext& context, std::vector<Tensor> outputs, bool keep_outputs_on_device,
    bool wait) const {
  if (!wait) return outputs;
  RETURN_IF_ERROR(GRAFT_CUDA(cudaStreamSynchronize(context.stream)));
  RETURN_IF_ERROR(FailedStep(*context.host_error));
  if (!keep_outputs_on_device) {
    for (size_t j = 0; j < program_.output_types.size(); ++j) {
      const TensorType& type = program_.output_types[j];
      outputs.emplace_back(type.dtype, DimsOfType(type));
      if (outputs.back().NumBytes() > 0) {
        std::memcpy(outputs.back().raw_data(), context.staging + output_offsets_[j],
                    outputs.back().NumBytes());
      }
    }
  }
  return outputs;
}

// The steps launched one by one on the context's stream, reading each
// input where the caller has it (host inputs and unaligned tensors go
// through io) and writing each output where it is kept, then
// one wait.
absl::StatusOr<std::vector<Tensor>> CompiledCudaProgram::RunDirect(
    RunContext& context, absl::Span<const Tensor> inputs, bool keep_outputs_on_device) const {
  context.direct_inputs.assign(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    char* io = context.io + input_offsets_[i];
    const bool here = !t.on_host() && t.device().index == gpu_.index;
    if (here && reinterpret_cast<uintptr_t>(t.raw_data()) % kDirectAlign == 0) {
      context.direct_inputs[i] = t.raw_data();
      continue;
    }
    context.direct_inputs[i] = io;
    if (t.NumBytes() == 0) continue;
    if (t.on_host()) {
      std::memcpy(context.staging + input_offsets_[i], t.raw_data(), t.NumBytes());
      RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpyAsync(io, context.staging + input_offsets_[i],
                                                 t.NumBytes(), cudaMemcpyHostToDevice,
                                                 context.stream)));
    } else {
      RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpyAsync(io, t.raw_data(), t.NumBytes(),
                                                 cudaMemcpyDeviceToDevice, context.stream)));
    }
  }
  std::vector<Tensor> outputs;
  context.direct_outputs.clear();
  for (size_t j = 0; j < program_.output_types.size(); ++j) {
    const TensorType& type = program_.output_types[j];
    if (keep_outputs_on_device) {
      ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                       Storage::AllocateOn(allocator_, BytesOf(type)));
      outputs.emplace_back(type.dtype, DimsOfType(type), std::move(storage));
      context.direct_outputs.push_back(outputs.back().raw_data());
    } else {
      context.direct_outputs.push_back(context.io + output_offsets_[j]);
    }
  }
  if (direct_error_flag_) {
    RETURN_IF_ERROR(GRAFT_CUDA(cudaMemsetAsync(context.error, 0, sizeof(int), context.stream)));
  }
  absl::Status enqueued;
  {
    std::lock_guard<std::mutex> lock(capture_mu_);  // GEMM plans set their bias per call.
    context.direct = true;
    enqueued = Enqueue(context);
    context.direct = false;
  }
  RETURN_IF_ERROR(enqueued);
  *context.host_error = 0;
  if (direct_error_flag_) {
    RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpyAsync(context.host_error, context.error, sizeof(int),
                                               cudaMemcpyDeviceToHost, context.stream)));
  }
  if (!keep_outputs_on_device) {
    for (size_t j = 0; j < program_.output_types.size(); ++j) {
      const size_t bytes = BytesOf(program_.output_types[j]);
      if (bytes == 0) continue;
      RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpyAsync(context.staging + output_offsets_[j],
                                                 context.io + output_offsets_[j], bytes,
                                                 cudaMemcpyDeviceToHost, context.stream)));
    }
  }
  return Finish(context, std::move(outputs), keep_outputs_on_device,
                MustWait(inputs, keep_outputs_on_device));
}

// Copy in, the graph, copy out, one wait. Host inputs go through pinned
// staging, device inputs are read where they are; outputs land in staging
// (then in host tensors) or in fresh device tensors.
absl::StatusOr<std::vector<Tensor>> CompiledCudaProgram::RunIn(
    RunContext& context, absl::Span<const Tensor> inputs, bool keep_outputs_on_device) const {
  if (context.graph == nullptr) {
    RETURN_IF_ERROR(Capture(context));
    const char* profile = std::getenv("GRAFT_CUDA_PROFILE");
    if (profile != nullptr && *profile != '\0' && *profile != '0' && !profiled_.exchange(true)) {
      RETURN_IF_ERROR(Profile(context));
    }
  }
  std::vector<const void*> sources(std::max<size_t>(inputs.size(), 1), nullptr);
  context.direct_inputs.assign(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const bool here = !t.on_host() && t.device().index == gpu_.index;
    if (context.binds_io && bound_inputs_[i] && here &&
        reinterpret_cast<uintptr_t>(t.raw_data()) % kDirectAlign == 0) {
      context.direct_inputs[i] = t.raw_data();  // Read in place; no copy.
      continue;
    }
    context.direct_inputs[i] = context.io + input_offsets_[i];
    sources[i] = t.raw_data();
    if (t.on_host()) {
      if (t.NumBytes() > 0) std::memcpy(context.staging + input_offsets_[i], sources[i], t.NumBytes());
      sources[i] = context.staging + input_offsets_[i];
      // Large transfers go through the copy engine; the copy kernel reads
      // host memory well only in small amounts.
      if (t.NumBytes() >= kCopyEngineBytes) {
        RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpyAsync(context.io + input_offsets_[i], sources[i],
                                                   t.NumBytes(), cudaMemcpyHostToDevice,
                                                   context.stream)));
        sources[i] = nullptr;
      }
    }
  }
  std::vector<Tensor> outputs;
  std::vector<void*> destinations;
  context.direct_outputs.clear();
  const std::shared_ptr<DeviceAllocator> allocator = GpuAllocator(gpu_.index);
  for (size_t j = 0; j < program_.output_types.size(); ++j) {
    const TensorType& type = program_.output_types[j];
    void* dst = context.staging + output_offsets_[j];
    context.direct_outputs.push_back(context.io + output_offsets_[j]);
    if (keep_outputs_on_device) {
      ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                       Storage::AllocateOn(allocator, BytesOf(type)));
      outputs.emplace_back(type.dtype, DimsOfType(type), std::move(storage));
      dst = outputs.back().raw_data();
      if (context.binds_io && bound_outputs_[j]) {
        context.direct_outputs.back() = dst;  // Written in place; no copy.
        dst = nullptr;
      }
    }
    destinations.push_back(!keep_outputs_on_device && BytesOf(type) >= kCopyEngineBytes
                               ? nullptr
                               : dst);
  }
  destinations.push_back(context.host_error);
  char* io = context.io;
  int* error = context.error;
  void* in_args[] = {sources.data(), &io, &error};
  void* out_args[] = {destinations.data(), &io, &error};
  if (context.binds_io) RETURN_IF_ERROR(BindIo(context));
  // Copy kernels with nothing to copy (every input and output bound in
  // place, no bad index to report) are not launched.
  const bool copy_in = std::any_of(sources.begin(), sources.end(),
                                   [](const void* p) { return p != nullptr; });
  const bool copy_out =
      direct_error_flag_ || std::any_of(destinations.begin(), destinations.end() - 1,
                                        [](const void* p) { return p != nullptr; });
  *context.host_error = 0;
  if (copy_in) {
    RETURN_IF_ERROR(LaunchCopy(context, true, in_args));
  } else if (direct_error_flag_) {
    // graft_copy_in clears the device's error flag: without it, clear it
    // here, or a bad index of an earlier run fails every later one.
    RETURN_IF_ERROR(GRAFT_CUDA(cudaMemsetAsync(context.error, 0, sizeof(int), context.stream)));
  }
  RETURN_IF_ERROR(GRAFT_CUDA(cudaGraphLaunch(context.graph, context.stream)));
  if (copy_out) RETURN_IF_ERROR(LaunchCopy(context, false, out_args));
  for (size_t j = 0; j + 1 < destinations.size() && !keep_outputs_on_device; ++j) {
    if (destinations[j] != nullptr) continue;
    RETURN_IF_ERROR(GRAFT_CUDA(cudaMemcpyAsync(
        context.staging + output_offsets_[j], context.io + output_offsets_[j],
        BytesOf(program_.output_types[j]), cudaMemcpyDeviceToHost, context.stream)));
  }
  return Finish(context, std::move(outputs), keep_outputs_on_device,
                MustWait(inputs, keep_outputs_on_device));
}

// Points the graph's bound launches at this run's inputs and outputs
// (context.direct_inputs and direct_outputs: the caller's, or io).
absl::Status CompiledCudaProgram::BindIo(RunContext& context) const {
  context.direct = true;
  absl::Status status;
  for (const RunContext::BoundNode& bound : context.bound_nodes) {
    const Launch& launch = *static_cast<const Launch*>(bound.launch);
    absl::InlinedVector<void*, 8> pointers, args;
    LaunchArguments(launch, context, pointers, args);
    cudaKernelNodeParams params{};
    params.func = reinterpret_cast<void*>(launch.kernel);
    params.gridDim = dim3(static_cast<unsigned>(launch.spec.grid));
    params.blockDim = dim3(launch.spec.block);
    params.sharedMemBytes = static_cast<unsigned>(launch.spec.shared_bytes);
    params.kernelParams = args.data();
    status = GRAFT_CUDA(cudaGraphExecKernelNodeSetParams(context.graph, bound.node, &params));
    if (!status.ok()) break;
  }
  context.direct = false;
  return status;
}

absl::StatusOr<std::vector<Tensor>> CompiledCudaProgram::Run(absl::Span<const Tensor> inputs,
                                                             bool keep_outputs_on_device) const {
  RETURN_IF_ERROR(GpuScope(gpu_.index).Use());
  std::unique_ptr<RunContext> context;
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    if (!free_contexts_.empty()) {
      context = std::move(free_contexts_.back());
      free_contexts_.pop_back();
    }
  }
  if (context == nullptr) {
    ASSIGN_OR_RETURN(context, NewContext());
  }
  if (context->queued != nullptr) {
    // A run on the context's own stream starts after the runs queued on
    // the device's (which may write its inputs), without waiting here.
    ASSIGN_OR_RETURN(cudaStream_t queue, DeviceStream(gpu_.index));
    RETURN_IF_ERROR(GRAFT_CUDA(cudaEventRecord(context->queued, queue)));
    RETURN_IF_ERROR(GRAFT_CUDA(cudaStreamWaitEvent(context->stream, context->queued, 0)));
  }
  absl::StatusOr<std::vector<Tensor>> outputs =
      direct_ ? RunDirect(*context, inputs, keep_outputs_on_device)
              : RunIn(*context, inputs, keep_outputs_on_device);
  if (outputs.ok() || absl::IsInvalidArgument(outputs.status())) {
    // A context whose run failed on the device is not reused.
    std::lock_guard<std::mutex> lock(contexts_mu_);
    free_contexts_.push_back(std::move(context));
  }
  return outputs;
}

CudaExecutable::CudaExecutable(const Module& module, std::vector<ValueSignature> inputs,
                               CudaOptions options, GpuInfo gpu, bool keep_outputs_on_device)
    : module_(std::make_unique<Module>(module.Clone())),
      inputs_(std::move(inputs)),
      outputs_(OutputSignature(module_->graph())),
      options_(std::move(options)),
      gpu_(std::move(gpu)),
      keep_outputs_on_device_(keep_outputs_on_device) {
  options_.compute_capability = gpu_.major * 10 + gpu_.minor;
  options_.l2_cache_bytes = gpu_.l2_cache_bytes;
}

absl::StatusOr<std::unique_ptr<CompiledCudaProgram>> CudaExecutable::Build(
    const std::vector<TensorType>& types, const CudaArtifact* artifact,
    std::optional<StepProgram> program) const {
  CompilePhases phases;
  if (!program.has_value()) {
    ASSIGN_OR_RETURN(program, BuildCudaProgram(*module_, types, options_));
    phases.Mark("program");
  }
  return CompiledCudaProgram::Create(*std::move(program), options_, gpu_, artifact, &phases);
}

absl::Status CudaExecutable::CompileNow(const CudaArtifact* artifact,
                                        std::optional<StepProgram> program) {
  if (!AllConcrete(inputs_)) {
    return absl::FailedPreconditionError("the inputs' shapes are not all fixed");
  }
  std::vector<TensorType> types;
  for (const ValueSignature& s : inputs_) types.push_back(*s.type);
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledCudaProgram> compiled,
                   Build(types, artifact, std::move(program)));
  programs_.Put(types, std::move(compiled));
  return absl::OkStatus();
}

const CompiledCudaProgram* CudaExecutable::fixed() const {
  return AllConcrete(inputs_) ? programs_.only() : nullptr;
}

absl::StatusOr<std::vector<Tensor>> CudaExecutable::Run(absl::Span<const Tensor> inputs) {
  ASSIGN_OR_RETURN(SymbolBindings bindings, CheckInputs(inputs_, inputs));
  (void)bindings;
  // Before any compile for new shapes: an input it could never read.
  for (const Tensor& t : inputs) {
    if (!t.on_host() && t.device() != Device{DeviceKind::kCuda, gpu_.index}) {
      return absl::InvalidArgumentError(absl::StrCat(
          "an input is on ", t.device().ToString(), ", the executable runs on cuda:",
          gpu_.index));
    }
  }
  // A fixed-shape module has its one program (CheckInputs matched the
  // shapes); others look theirs up by the inputs' types.
  const CompiledCudaProgram* program = fixed();
  if (program == nullptr) {
    std::vector<TensorType> types;
    types.reserve(inputs.size());
    for (const Tensor& t : inputs) types.push_back(t.type());
    ASSIGN_OR_RETURN(program, programs_.Get(types, [&](const std::vector<TensorType>& t) {
                       return Build(t, nullptr);
                     }));
  }
  return program->Run(inputs, keep_outputs_on_device_);
}

ExecutableInfo CudaExecutable::info() const {
  const CompiledCudaProgram* p = fixed();
  if (p == nullptr) return {};
  return {.arena_bytes = p->program().arena_bytes,
          .intermediate_bytes = p->program().intermediate_bytes};
}

}  // namespace graft::cuda
