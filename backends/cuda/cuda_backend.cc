#include "backends/cuda/cuda_backend.h"

#include <future>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cuda/compile_phases.h"
#include "backends/cuda/cuda_artifact_format.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_executable.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/nccl_world.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "graph/fused_ops.h"
#include "support/fingerprint.h"
#include "support/status_macros.h"

// Referenced by the link options of graft_cuda (backends/CMakeLists.txt), so
// that the registration below is linked into every program that links it.
extern "C" {
int graft_link_cuda_backend = 0;
}

namespace graft::cuda {
namespace {

absl::StatusOr<CudaOptions> OptionsOf(const CompileOptions& options) {
  for (const auto& [key, value] : options.options) {
    if (key != "precision" && key != "autotune" && key != "gemm") {
      return absl::InvalidArgumentError(absl::StrCat(
          "the cuda backend has no option '", key,
          "' (it takes precision=f32|tf32|bf16|f16, autotune=0|1 and gemm=auto|graft|cublaslt)"));
    }
  }
  CudaOptions cuda;
  cuda.precision = options.Get("precision", "f32");
  if (cuda.precision != "f32" && cuda.precision != "tf32" && cuda.precision != "bf16" &&
      cuda.precision != "f16") {
    return absl::InvalidArgumentError(absl::StrCat(
        "precision must be f32, tf32, bf16 or f16, got '", cuda.precision, "'"));
  }
  const std::string autotune = options.Get("autotune", "0");
  if (autotune != "0" && autotune != "1") {
    return absl::InvalidArgumentError(
        absl::StrCat("autotune must be 0 or 1, got '", autotune, "'"));
  }
  cuda.autotune = autotune == "1";
  cuda.gemm = options.Get("gemm", "auto");
  if (cuda.gemm != "auto" && cuda.gemm != "graft" && cuda.gemm != "cublaslt") {
    return absl::InvalidArgumentError(
        absl::StrCat("gemm must be auto, graft or cublaslt, got '", cuda.gemm, "'"));
  }
  if (options.communicator != nullptr) {
    cuda.communicator = std::dynamic_pointer_cast<NcclCommunicator>(options.communicator);
    if (cuda.communicator == nullptr || cuda.communicator->device() != options.device_index) {
      return absl::InvalidArgumentError(
          "the cuda backend's collectives need the NCCL communicator of the device it "
          "compiles for (CudaBackend::CreateWorld)");
    }
  }
  return cuda;
}

std::string ProgramHash(const StepProgram& program) {
  return FingerprintBuilder().AddString(program.Describe()).Finish().ToHex();
}

bool HasProducts(const Module& module) {
  for (const Node* n : module.graph().nodes()) {
    if (IsGemmCall(*n)) return true;
  }
  return false;
}

std::vector<TensorType> TypesOf(const std::vector<ValueSignature>& signature) {
  std::vector<TensorType> types;
  for (const ValueSignature& s : signature) types.push_back(*s.type);
  return types;
}

}  // namespace

absl::Status CudaBackend::CanRun(const Node& node, const CompileOptions& options) const {
  // What some ops need of the GPU (graft::attention: 8.0 on), where there
  // is one; without one every compile fails anyway.
  if (node.is_call(kAttentionOp)) {
    absl::StatusOr<GpuInfo> gpu = ProbeGpu(options.device_index);
    if (gpu.ok()) return CanLower(node, gpu->major * 10 + gpu->minor);
  }
  return CanLower(node);
}

absl::StatusOr<std::unique_ptr<Executable>> CudaBackend::Compile(const Module& module,
                                                                 const CompileOptions& options) {
  ASSIGN_OR_RETURN(CudaOptions cuda, OptionsOf(options));
  ASSIGN_OR_RETURN(GpuInfo gpu, ProbeGpu(options.device_index));
  std::vector<ValueSignature> inputs = PlaceholderSignature(module.graph());
  RETURN_IF_ERROR(NarrowSignature(inputs, options.input_types));
  auto executable = std::make_unique<CudaExecutable>(module, std::move(inputs), cuda, gpu,
                                                     options.keep_outputs_on_device);
  absl::Status s = executable->CompileNow();
  // Symbolic or unknown input shapes: compiled at the first run of each.
  if (!s.ok() && !absl::IsFailedPrecondition(s)) return s;
  return std::unique_ptr<Executable>(std::move(executable));
}

absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> CudaBackend::CreateWorld(
    int world_size) const {
  return CreateNcclWorld(world_size);
}

absl::Status CudaBackend::Available(const CompileOptions& options) const {
  return ProbeGpu(options.device_index).status();
}

Device CudaBackend::device(const CompileOptions& options) const {
  return {DeviceKind::kCuda, options.device_index};
}

std::shared_ptr<DeviceAllocator> CudaBackend::allocator(const CompileOptions& options) const {
  return GpuAllocator(options.device_index);
}

std::string CudaBackend::CacheIdentity(const CompileOptions& options) const {
  absl::StatusOr<GpuInfo> gpu = ProbeGpu(options.device_index);
  if (!gpu.ok()) return "";  // Nothing compiles without a GPU.
  // The multiprocessor count and the L2 size too: they set the splits of
  // the skinny products and whether they prefetch their weights, which are
  // constants in the CUBIN.
  return absl::StrCat(gpu->Identity(), " ", gpu->multiprocessors, " SMs ", gpu->l2_cache_bytes,
                      " B L2 nvrtc ", NvrtcVersion(), " cublasLt ", cublasLtGetVersion());
}

absl::StatusOr<std::string> CudaBackend::SerializeExecutable(const Executable& executable) const {
  const auto* cuda = dynamic_cast<const CudaExecutable*>(&executable);
  const CompiledCudaProgram* program = cuda == nullptr ? nullptr : cuda->fixed();
  if (program == nullptr) {
    return absl::UnimplementedError(
        "only executables compiled for fixed input shapes are written to disk");
  }
  return WriteCudaArtifact(ProgramHash(program->program()), program->Artifact());
}

absl::StatusOr<std::unique_ptr<Executable>> CudaBackend::DeserializeExecutable(
    absl::string_view bytes, const Module& module, const CompileOptions& options) const {
  ASSIGN_OR_RETURN(CudaOptions cuda, OptionsOf(options));
  ASSIGN_OR_RETURN(GpuInfo gpu, ProbeGpu(options.device_index));
  cuda.compute_capability = gpu.major * 10 + gpu.minor;
  cuda.l2_cache_bytes = gpu.l2_cache_bytes;
  // cuBLASLt's handle takes a few milliseconds to make: on another core,
  // while the program is built, where the model has a product cuBLASLt
  // may run.
  std::future<void> blas;
  if (HasProducts(module)) blas = PrepareCublasLt(options.device_index);
  CompilePhases phases;
  ASSIGN_OR_RETURN(ReadArtifact entry, ReadCudaArtifact(bytes));
  phases.Mark("cache entry read");
  std::vector<ValueSignature> inputs = PlaceholderSignature(module.graph());
  RETURN_IF_ERROR(NarrowSignature(inputs, options.input_types));
  if (!AllConcrete(inputs)) return absl::DataLossError("input types unknown");
  // The code is only used for the very program it was compiled from.
  ASSIGN_OR_RETURN(StepProgram program, BuildCudaProgram(module, TypesOf(inputs), cuda));
  phases.Mark("program");
  if (ProgramHash(program) != entry.program_hash) {
    return absl::DataLossError("the cached code was compiled from another program");
  }
  phases.Mark("program checked");
  auto executable = std::make_unique<CudaExecutable>(module, std::move(inputs), cuda, gpu,
                                                     options.keep_outputs_on_device);
  RETURN_IF_ERROR(executable->CompileNow(&entry.artifact, std::move(program)));
  return std::unique_ptr<Executable>(std::move(executable));
}

namespace {

[[maybe_unused]] const bool registered = [] {
  return RegisterBackend("cuda", [] { return std::make_unique<CudaBackend>(); }).ok();
}();

}  // namespace
}  // namespace graft::cuda
