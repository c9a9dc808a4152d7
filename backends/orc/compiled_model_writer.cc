#include "backends/orc/compiled_model_writer.h"

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "backends/orc/llvm_jit.h"
#include "runtime/artifact.h"
#include "runtime/cpu_features.h"
#include "support/status_macros.h"

namespace graft::orc {
namespace {

std::vector<runtime::ValueSpec> ValueSpecs(const std::vector<ValueSignature>& signature,
                                           const std::vector<TensorType>& types) {
  std::vector<runtime::ValueSpec> values;
  for (size_t i = 0; i < types.size(); ++i) {
    runtime::ValueSpec v;
    v.name = i < signature.size() ? signature[i].name : absl::StrCat("output_", i);
    v.dtype = types[i].dtype;
    for (Dim d : types[i].shape) v.dims.push_back(d.value());
    values.push_back(std::move(v));
  }
  return values;
}

std::string TargetArch() {
  const std::string& triple = DetectHostCpu().triple;
  return triple.substr(0, triple.find('-'));
}

// The state slots that some step reads as a buffer: all but the constant
// weights of library calls whose packed form the file keeps instead.
std::vector<bool> SlotsReadAsBuffers(const Program& program,
                                     const std::vector<runtime::LibraryCallSpec>& specs) {
  std::vector<bool> read(program.tensors.size(), false);
  std::vector<int> library_of_step(program.steps.size(), -1);
  for (size_t i = 0; i < program.library_steps.size(); ++i) {
    library_of_step[program.library_steps[i]] = static_cast<int>(i);
  }
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    const runtime::LibraryCallSpec* spec =
        library_of_step[s] >= 0 ? &specs[library_of_step[s]] : nullptr;
    for (size_t o = 0; o < step.operands.size(); ++o) {
      const BufferRef& ref = step.operands[o];
      if (ref.where != BufferRef::Where::kState) continue;
      // Operands are listed once: the packed weights may also be the
      // product's input or bias (linear(%w, %w)), which read the plain form.
      const int operand = static_cast<int>(o);
      const bool packed_weight = spec != nullptr && spec->packed_index >= 0 &&
                                 operand == spec->weights_operand &&
                                 operand != spec->src_operand && operand != spec->bias_operand;
      if (!packed_weight && ref.index < static_cast<int>(read.size())) read[ref.index] = true;
    }
  }
  return read;
}

}  // namespace

// Whether generated code may contain instructions of feature `name`: the
// vector and arithmetic extensions. System features (pku, sgx, rdpru,
// waitpkg, ...) are never used by generated code, and hypervisors often
// hide them: recording them would refuse files on machines that run them.
bool IsInstructionSetFeature(absl::string_view name) {
  static const absl::flat_hash_set<absl::string_view> kOthers = {
      "popcnt", "cx8", "cx16", "cmov", "mmx", "movbe", "aes", "pclmul", "f16c",
      "fma", "fma4", "xop", "tbm", "bmi", "bmi2", "lzcnt", "adx", "sha", "sha512",
      "gfni", "vaes", "vpclmulqdq", "crc32", "sahf", "evex512", "sm3", "sm4"};
  return absl::StartsWith(name, "sse") || absl::StartsWith(name, "avx") ||
         absl::StartsWith(name, "amx") || kOthers.contains(name);
}

std::vector<std::string> CheckableCpuFeatures(const HostCpu& cpu) {
  std::vector<std::string> features;
  for (absl::string_view f : absl::StrSplit(cpu.features, ',')) {
    if (f.size() < 2 || f[0] != '+') continue;
    const std::string name(f.substr(1));
    if (runtime::IsKnownCpuFeature(name) && IsInstructionSetFeature(name)) {
      features.push_back(name);
    }
  }
  return features;
}

absl::Status WriteOrcCompiledModel(const OrcExecutable& executable, const std::string& path) {
  const CompiledProgram* compiled = executable.fixed();
  if (compiled == nullptr) {
    return absl::FailedPreconditionError(
        "the model's inputs have symbolic dims: a compiled model file is for fixed shapes "
        "(give each symbol a size, e.g. --dim batch=32)");
  }
  const Program& program = compiled->program();
  runtime::ArtifactMetadata m;
  m.graft_version = GRAFT_VERSION_STRING;
  m.backend = "orc";
  ASSIGN_OR_RETURN(const HostCpu cpu, TargetCpu(program.options.target_cpu));
  m.compiled_for = CodegenIdentity(cpu);
  m.target_arch = TargetArch();
  m.cpu_features = CheckableCpuFeatures(cpu);
  m.threads = executable.threads();
  m.arena_bytes = program.arena_bytes;
  m.inputs = ValueSpecs(executable.input_signature(), program.input_types);
  m.outputs = ValueSpecs(executable.output_signature(), program.output_types);
  m.library_calls = compiled->library_specs();
  m.failures = StepFailures(program);
  // Constant weights go in the layout oneDNN packed them into here, so
  // that loading maps them instead of reordering them.
  std::vector<runtime::ArtifactTensor> packed;
  m.packing_identity = runtime::PackingIdentity();
  for (size_t i = 0; i < m.library_calls.size(); ++i) {
    std::optional<runtime::PackedWeights> w = compiled->library_calls()[i]->packed_weights();
    if (!w.has_value()) continue;  // No constant weights, or a layout kept plain.
    runtime::LibraryCallSpec& spec = m.library_calls[i];
    spec.packed_index = static_cast<int32_t>(packed.size());
    packed.push_back({w->data, w->bytes});
    m.packed.push_back({0, w->bytes, 0, w->layout});
  }
  const std::vector<bool> read = SlotsReadAsBuffers(program, m.library_calls);
  for (runtime::LibraryCallSpec& spec : m.library_calls) {
    if (spec.packed_index >= 0 && spec.weights_state >= 0 && !read[spec.weights_state]) {
      spec.weights_state = -1;  // Its plain form is not written.
    }
  }
  std::vector<runtime::ArtifactTensor> tensors;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const Tensor* t = program.tensors[i];
    if (!t->on_host()) return absl::InternalError("a module tensor is not in host memory");
    tensors.push_back(read[i] ? runtime::ArtifactTensor{t->raw_data(), t->NumBytes()}
                              : runtime::ArtifactTensor{t->raw_data(), 0});
  }
  return runtime::WriteArtifact(path, std::move(m), compiled->object(), tensors, packed);
}

}  // namespace graft::orc
