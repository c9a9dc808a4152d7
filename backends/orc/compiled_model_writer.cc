#include "backends/orc/compiled_model_writer.h"

#include <vector>

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

// The host's features that LLVM compiled for ("+avx2,-avx512f,..."), as
// far as the runtime can check them on the loading machine. LLVM may also
// name features that no arithmetic code uses (rdrnd, xsaveopt); those the
// runtime does not know are left out.
std::vector<std::string> CheckableFeatures() {
  std::vector<std::string> features;
  for (absl::string_view f : absl::StrSplit(DetectHostCpu().features, ',')) {
    if (f.size() < 2 || f[0] != '+') continue;
    const std::string name(f.substr(1));
    if (runtime::IsKnownCpuFeature(name)) features.push_back(name);
  }
  return features;
}

std::string TargetArch() {
  const std::string& triple = DetectHostCpu().triple;
  return triple.substr(0, triple.find('-'));
}

}  // namespace

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
  m.compiled_for = CodegenIdentity();
  m.target_arch = TargetArch();
  m.cpu_features = CheckableFeatures();
  m.threads = executable.threads();
  m.arena_bytes = program.arena_bytes;
  m.inputs = ValueSpecs(executable.input_signature(), program.input_types);
  m.outputs = ValueSpecs(executable.output_signature(), program.output_types);
  m.library_calls = compiled->library_specs();
  m.failures = StepFailures(program);
  std::vector<runtime::ArtifactTensor> tensors;
  for (const Tensor* t : program.tensors) {
    if (!t->on_host()) return absl::InternalError("a module tensor is not in host memory");
    tensors.push_back({t->raw_data(), t->NumBytes()});
  }
  return runtime::WriteArtifact(path, std::move(m), compiled->object(), tensors);
}

}  // namespace graft::orc
