#include "runtime/program_runner.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/library_call.h"

namespace graft::runtime {

ProgramRunner::ProgramRunner(EntryFunction entry, std::vector<void*> state,
                             size_t arena_bytes, std::vector<TensorType> outputs,
                             std::map<int, StepFailure> failures)
    : entry_(entry),
      state_(std::move(state)),
      arena_bytes_(arena_bytes),
      outputs_(std::move(outputs)),
      failures_(std::move(failures)) {}

ProgramRunner::~ProgramRunner() {
  for (char* arena : arenas_) std::free(arena);
}

char* ProgramRunner::TakeArena() const {
  {
    std::lock_guard<std::mutex> lock(arenas_mu_);
    if (!arenas_.empty()) {
      char* arena = arenas_.back();
      arenas_.pop_back();
      return arena;
    }
  }
  const size_t bytes = (arena_bytes_ + 63) / 64 * 64;
  return static_cast<char*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes));
}

void ProgramRunner::ReturnArena(char* arena) const {
  std::lock_guard<std::mutex> lock(arenas_mu_);
  arenas_.push_back(arena);
}

absl::StatusOr<std::vector<Tensor>> ProgramRunner::Run(absl::Span<const Tensor> inputs,
                                                       int threads) const {
  std::vector<Tensor> outputs;
  outputs.reserve(outputs_.size());
  std::vector<void*> io;
  io.reserve(inputs.size() + outputs_.size());
  for (const Tensor& t : inputs) io.push_back(t.raw_data());
  for (const TensorType& type : outputs_) {
    std::vector<int64_t> dims;
    for (Dim d : type.shape) dims.push_back(d.value());
    outputs.emplace_back(type.dtype, std::move(dims));
    io.push_back(outputs.back().raw_data());
  }
  char* arena = TakeArena();
  if (arena == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate the ", arena_bytes_, "-byte arena"));
  }
  int rc;
  {
    ScopedLibraryThreads run_threads(threads);
    rc = entry_(io.data(), arena, state_.data());
  }
  ReturnArena(arena);
  if (rc == 0) return outputs;
  auto failure = failures_.find(rc - 1);
  if (failure == failures_.end()) {
    return absl::InternalError(absl::StrCat("step ", rc - 1, " failed"));
  }
  absl::Status error =
      failure->second.library
          ? TakeLibraryError()
          : absl::InvalidArgumentError("an index is out of range for the dim it selects from");
  return absl::Status(error.code(),
                      absl::StrCat(failure->second.label, ": ", error.message()));
}

}  // namespace graft::runtime
