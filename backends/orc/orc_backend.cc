#include "backends/orc/orc_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/orc/cache_entry.h"
#include "backends/orc/llvm_jit.h"
#include "backends/orc/compiled_model_writer.h"
#include "backends/orc/orc_executable.h"
#include "backends/orc/program.h"
#include "support/fingerprint.h"
#include "support/status_macros.h"

#ifdef GRAFT_ORC_WITH_DNNL
#include "oneapi/dnnl/dnnl.hpp"
#endif

// Referenced by the link options of graft_orc (backends/CMakeLists.txt), so
// that the registration below is linked into every program that links it.
extern "C" {
int graft_link_orc_backend = 0;
}

namespace graft::orc {
namespace {

absl::StatusOr<int> ThreadsOption(const CompileOptions& options) {
  for (const auto& [key, value] : options.options) {
    if (key != "threads" && key != "matmul_precision" && key != "target_cpu") {
      return absl::InvalidArgumentError(
          absl::StrCat("the orc backend has no option '", key,
                       "' (it takes threads=N, matmul_precision=f32|bf16 and target_cpu=NAME)"));
    }
  }
  int threads = 0;
  const std::string text = options.Get("threads", "0");
  if (!absl::SimpleAtoi(text, &threads) || threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "threads must be a number of threads (0: all cores), got '", text, "'"));
  }
  return threads;
}

absl::StatusOr<ProgramOptions> ProgramOptionsOf(const CompileOptions& options) {
  ProgramOptions program;
  program.target_cpu = options.Get("target_cpu");
  if (program.target_cpu == "native") program.target_cpu.clear();
  ASSIGN_OR_RETURN(const HostCpu cpu, TargetCpu(program.target_cpu));
  const std::string precision = options.Get("matmul_precision", "f32");
  if (precision == "bf16") {
    if (!cpu.has_avx512_bf16) {
      return absl::InvalidArgumentError(absl::StrCat(
          "matmul_precision=bf16 needs a CPU with AVX512_BF16; this one (", cpu.name,
          ") does not have it"));
    }
    program.bf16_matmuls = true;
  } else if (precision != "f32") {
    return absl::InvalidArgumentError(absl::StrCat(
        "matmul_precision must be f32 or bf16, got '", precision, "'"));
  }
  return program;
}

// threads=0 means every core the process may use.
int ResolveThreads(int threads) {
  if (threads > 0) return threads;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

absl::Status CheckDevice(const CompileOptions& options) {
  if (options.device_index == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the orc backend runs on the CPU only (device 0), got device ",
      options.device_index));
}

std::string ProgramHash(const Program& program) {
  return FingerprintBuilder().AddString(program.Describe()).Finish().ToHex();
}

}  // namespace

CompileOptions OrcBackend::ForRankOnHost(const CompileOptions& options, int world_size) const {
  absl::StatusOr<int> threads = ThreadsOption(options);
  if (!threads.ok() || world_size < 2) return options;  // Compile reports a bad value.
  CompileOptions share = options;
  share.options["threads"] = absl::StrCat(std::max(1, ResolveThreads(*threads) / world_size));
  return share;
}

absl::Status OrcBackend::CanRun(const Node& node,
                                const CompileOptions& options) const {
  return CanLower(node);
}

absl::StatusOr<std::unique_ptr<Executable>> OrcBackend::Compile(
    const Module& module, const CompileOptions& options) {
  RETURN_IF_ERROR(CheckDevice(options));
  ASSIGN_OR_RETURN(int threads, ThreadsOption(options));
  ASSIGN_OR_RETURN(ProgramOptions program_options, ProgramOptionsOf(options));
  program_options.threads = ResolveThreads(threads);
  std::vector<ValueSignature> inputs = PlaceholderSignature(module.graph());
  RETURN_IF_ERROR(NarrowSignature(inputs, options.input_types));
  auto executable = std::make_unique<OrcExecutable>(module, std::move(inputs),
                                                    threads, program_options);
  absl::Status s = executable->CompileNow();
  // Symbolic or unknown input shapes: compiled at the first run of each.
  if (!s.ok() && !absl::IsFailedPrecondition(s)) return s;
  return std::unique_ptr<Executable>(std::move(executable));
}

std::string OrcBackend::CacheIdentity(const CompileOptions& options) const {
  std::string identity = CodegenIdentity();
#ifdef GRAFT_ORC_WITH_DNNL
  const dnnl_version_t* v = dnnl_version();
  absl::StrAppend(&identity, " oneDNN ", v->major, ".", v->minor, ".", v->patch);
#endif
  return identity;
}

absl::StatusOr<PayloadParts> OrcBackend::SerializeExecutableInParts(
    std::shared_ptr<const Executable> executable) const {
  const auto* orc = dynamic_cast<const OrcExecutable*>(executable.get());
  const CompiledProgram* program = orc == nullptr ? nullptr : orc->fixed();
  if (program == nullptr) {
    return absl::UnimplementedError(
        "only executables compiled for fixed input shapes are written to disk");
  }
  OrcCacheEntry entry;
  entry.program_hash = ProgramHash(program->program());
  entry.object = program->object();
  for (const auto& call : program->library_calls()) {
    entry.packed.push_back(call->packed_weights());
  }
  // The packed weights are the executable's, kept with it.
  return EncodeOrcCacheEntryInParts(entry, std::move(executable));
}

absl::StatusOr<std::string> OrcBackend::SerializeExecutable(
    const Executable& executable) const {
  // The executable is the caller's, alive for the call: a non-owning pointer.
  std::shared_ptr<const Executable> borrowed(&executable, [](const Executable*) {});
  ASSIGN_OR_RETURN(PayloadParts parts, SerializeExecutableInParts(std::move(borrowed)));
  return parts.Join();
}

absl::StatusOr<std::unique_ptr<Executable>> OrcBackend::DeserializeExecutable(
    absl::string_view bytes, const Module& module,
    const CompileOptions& options) const {
  // The packed weights must outlive the executable: a copy it owns,
  // 64-byte aligned as a mapped entry is.
  const size_t size = (bytes.size() + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, size == 0 ? 64 : size);
  if (data == nullptr) return absl::ResourceExhaustedError("no memory for a cache entry");
  std::shared_ptr<void> copy(data, [](void* p) { std::free(p); });
  if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  return DeserializeMapped(absl::string_view(static_cast<const char*>(data), bytes.size()),
                           std::move(copy), module, options);
}

absl::StatusOr<std::unique_ptr<Executable>> OrcBackend::DeserializeMapped(
    absl::string_view bytes, std::shared_ptr<const void> keep_alive, const Module& module,
    const CompileOptions& options) const {
  RETURN_IF_ERROR(CheckDevice(options));
  ASSIGN_OR_RETURN(int threads, ThreadsOption(options));
  ASSIGN_OR_RETURN(ProgramOptions program_options, ProgramOptionsOf(options));
  program_options.threads = ResolveThreads(threads);
  ASSIGN_OR_RETURN(OrcCacheEntry entry, DecodeOrcCacheEntry(bytes));
  std::vector<ValueSignature> inputs = PlaceholderSignature(module.graph());
  RETURN_IF_ERROR(NarrowSignature(inputs, options.input_types));
  std::vector<TensorType> types;
  for (const ValueSignature& s : inputs) {
    if (!s.type.has_value()) return absl::DataLossError("input types unknown");
    types.push_back(*s.type);
  }
  // The object is only used for the very program it was compiled from.
  ASSIGN_OR_RETURN(Program program, BuildProgram(module, types, program_options));
  if (ProgramHash(program) != entry.program_hash) {
    return absl::DataLossError("the cached object was compiled from another program");
  }
  if (entry.packed.size() != program.library_steps.size()) {
    return absl::DataLossError("the cached weights are for another program");
  }
  auto executable = std::make_unique<OrcExecutable>(module, std::move(inputs),
                                                    threads, program_options);
  const CompiledProgram::Prepacked prepacked{std::move(entry.packed), std::move(keep_alive)};
  RETURN_IF_ERROR(executable->CompileNow(&entry.object, &prepacked));
  return std::unique_ptr<Executable>(std::move(executable));
}

absl::Status OrcBackend::WriteCompiledModel(const Executable& executable,
                                            const std::string& path) const {
  const auto* orc = dynamic_cast<const OrcExecutable*>(&executable);
  if (orc == nullptr) {
    return absl::FailedPreconditionError(
        "some nodes of the model cannot run on orc (`graft run --backend orc --explain` "
        "lists them), and a compiled model file holds orc code only");
  }
  return WriteOrcCompiledModel(*orc, path);
}

namespace {

[[maybe_unused]] const bool registered = [] {
  return RegisterBackend("orc", [] { return std::make_unique<OrcBackend>(); })
      .ok();
}();

}  // namespace
}  // namespace graft::orc
