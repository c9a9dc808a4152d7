#include "runtime/compiled_model.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/cpu_features.h"
#include "runtime/elf_object.h"
#include "runtime/library_call.h"
#include "runtime/parallel_steps.h"
#include "runtime/program_runner.h"
#include "support/status_macros.h"

namespace graft::runtime {

// The linked code and what runs it; torn down before the file is unmapped.
struct CompiledModel::Code {
  std::unique_ptr<ElfObject> object;
  std::vector<std::unique_ptr<LibraryCall>> calls;
  std::unique_ptr<ProgramRunner> runner;
};

namespace {

#if defined(__x86_64__)
constexpr char kHostArch[] = "x86_64";
#elif defined(__aarch64__)
constexpr char kHostArch[] = "aarch64";
#else
constexpr char kHostArch[] = "unknown";
#endif

// What the code calls: the library-call entry, the C library (expf,
// memcpy, ...) and glibc's vector math library, as the JIT resolves them.
void* ResolveRuntimeSymbol(absl::string_view name) {
  const std::string n(name);
  if (n == kRunLibrarySymbol) return reinterpret_cast<void*>(&graft_orc_run_library);
  if (n == kParallelForSymbol) return reinterpret_cast<void*>(&graft_orc_parallel_for);
  if (void* address = dlsym(RTLD_DEFAULT, n.c_str())) return address;
  static void* const libmvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
  return libmvec != nullptr ? dlsym(libmvec, n.c_str()) : nullptr;
}

std::vector<TensorType> TypesOf(const std::vector<ValueSpec>& values) {
  std::vector<TensorType> types;
  for (const ValueSpec& v : values) {
    TensorType t;
    t.dtype = v.dtype;
    for (int64_t d : v.dims) t.shape.push_back(Dim(d));
    types.push_back(std::move(t));
  }
  return types;
}

std::string TypeText(DType dtype, const std::vector<int64_t>& dims) {
  return absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(dims, ", "), "]");
}

}  // namespace

absl::Status CheckCpuFeatures(const std::vector<std::string>& needed,
                              const std::set<std::string>& host) {
  std::vector<std::string> missing, unknown;
  for (const std::string& f : needed) {
    if (!IsKnownCpuFeature(f)) {
      unknown.push_back(f);
    } else if (host.count(f) == 0) {
      missing.push_back(f);
    }
  }
  if (!unknown.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("it needs CPU features this graft runtime cannot check: ",
                     absl::StrJoin(unknown, ", ")));
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("it was compiled for a CPU with ", absl::StrJoin(missing, ", "),
                     ", which this CPU lacks: compile the model on this machine"));
  }
  return absl::OkStatus();
}

CompiledModel::~CompiledModel() {
  code_.reset();
  if (mapped_ != nullptr) munmap(mapped_, mapped_bytes_);
}

absl::StatusOr<std::unique_ptr<CompiledModel>> CompiledModel::Load(const std::string& path,
                                                                   const LoadOptions& options) {
  std::unique_ptr<CompiledModel> model(new CompiledModel());
  model->path_ = path;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  model->mapped_bytes_ = static_cast<size_t>(st.st_size);
  if (model->mapped_bytes_ > 0) {
    void* m = mmap(nullptr, model->mapped_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      close(fd);
      return absl::InternalError(absl::StrCat(path, ": cannot map: ", std::strerror(err)));
    }
    model->mapped_ = m;
  }
  close(fd);
  const absl::string_view file(static_cast<const char*>(model->mapped_), model->mapped_bytes_);
  absl::StatusOr<ArtifactView> view = ParseArtifact(file, options.verify_checksums);
  absl::Status status = view.ok() ? model->Link(*view, options) : view.status();
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
  }
  return model;
}

absl::Status CompiledModel::Link(const ArtifactView& view, const LoadOptions& options) {
  metadata_ = view.metadata;
  const ArtifactMetadata& m = metadata_;
  if (m.backend != "orc") {
    return absl::UnimplementedError(absl::StrCat("code for backend '", m.backend,
                                                 "'; this runtime runs 'orc' code"));
  }
  if (m.target_arch != kHostArch) {
    return absl::FailedPreconditionError(absl::StrCat(
        "compiled for ", m.target_arch, "; this machine is ", kHostArch));
  }
  RETURN_IF_ERROR(CheckCpuFeatures(
      m.cpu_features, options.host_features != nullptr ? *options.host_features
                                                        : HostCpuFeatures()));
  threads_ = options.threads >= 0 ? options.threads : m.threads;
  code_ = std::make_unique<Code>();
  ASSIGN_OR_RETURN(code_->object, ElfObject::Load(view.object, ResolveRuntimeSymbol));
  ASSIGN_OR_RETURN(void* entry, code_->object->Lookup(kEntrySymbol));

  std::vector<void*> state;
  std::vector<ConstantBuffer> constants;
  for (const TensorRange& t : m.tensors) {
    const char* data = view.data.data() + t.offset;
    state.push_back(const_cast<char*>(data));
    constants.push_back({data, t.bytes});
  }
  std::vector<PackedWeights> packed;
  if (!m.packed.empty() && m.packing_identity != PackingIdentity()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "its weights were packed for ", m.packing_identity, "; this graft runtime has ",
        PackingIdentity(), ": compile the model again with this graft"));
  }
  for (const PackedRange& p : m.packed) {
    packed.push_back({view.data.data() + p.offset, p.bytes, p.layout});
  }
  // Library calls plan their threads when they are made (see ORC).
  ScopedLibraryThreads library_threads(threads_);
  for (const LibraryCallSpec& spec : m.library_calls) {
    absl::StatusOr<std::unique_ptr<LibraryCall>> call =
        PrepareLibraryCall(spec, constants, packed);
    if (!call.ok()) {
      return absl::Status(call.status().code(),
                          absl::StrCat(spec.label, ": ", call.status().message()));
    }
    state.push_back(call->get());
    code_->calls.push_back(*std::move(call));
  }
  code_->runner = std::make_unique<ProgramRunner>(
      reinterpret_cast<EntryFunction>(entry), std::move(state), m.arena_bytes,
      TypesOf(m.outputs), m.failures);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> CompiledModel::Run(absl::Span<const Tensor> inputs) const {
  if (inputs.size() != metadata_.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": takes ", metadata_.inputs.size(),
                                                   " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueSpec& want = metadata_.inputs[i];
    const Tensor& t = inputs[i];
    if (!t.defined() || t.dtype() != want.dtype || t.dims() != want.dims) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": input '", want.name, "' must be ", TypeText(want.dtype, want.dims),
          ", got ", t.defined() ? TypeText(t.dtype(), t.dims()) : "no tensor"));
    }
    if (!t.on_host()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": input '", want.name, "' is not in host memory"));
    }
  }
  absl::StatusOr<std::vector<Tensor>> outputs = code_->runner->Run(inputs, threads_);
  if (!outputs.ok()) {
    return absl::Status(outputs.status().code(),
                        absl::StrCat(path_, ": ", outputs.status().message()));
  }
  return outputs;
}

}  // namespace graft::runtime
