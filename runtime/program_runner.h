#ifndef GRAFT_RUNTIME_PROGRAM_RUNNER_H_
#define GRAFT_RUNTIME_PROGRAM_RUNNER_H_

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/tensor.h"
#include "graph/tensor_type.h"

namespace graft::runtime {

// The entry function of compiled CPU code:
//   int32_t graft_entry(void** io, char* arena, void** state);
// io holds the inputs' then the outputs' data pointers; it returns 0, or
// 1 + the index of the step that failed.
inline constexpr char kEntrySymbol[] = "graft_entry";
using EntryFunction = int (*)(void* const* io, char* arena, void* const* state);

// What a step that can fail reports: a library call's own error, or an
// index out of range. `label` names the node: "%emb (embedding)".
struct StepFailure {
  bool library = false;
  std::string label;
};

// Runs loaded code: fresh output tensors and a memory arena per run (kept
// for later runs), the state table (module tensors, then prepared library
// calls) as given. Concurrent runs are safe. Shared by the ORC backend and
// the runtime of compiled model files, so both run a program the same way.
class ProgramRunner {
 public:
  ProgramRunner() = default;
  ProgramRunner(EntryFunction entry, std::vector<void*> state, size_t arena_bytes,
                std::vector<TensorType> outputs, std::map<int, StepFailure> failures);
  ~ProgramRunner();
  ProgramRunner(ProgramRunner&&) = delete;

  // Runs on `inputs`, already checked by the caller against the types the
  // code was compiled for, on `threads` (0: all cores): the library calls'
  // and the generated loops split over threads (parallel_steps.h).
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs, int threads) const;

  const std::vector<TensorType>& output_types() const { return outputs_; }
  size_t arena_bytes() const { return arena_bytes_; }

 private:
  char* TakeArena() const;
  void ReturnArena(char* arena) const;

  EntryFunction entry_ = nullptr;
  std::vector<void*> state_;
  size_t arena_bytes_ = 0;
  std::vector<TensorType> outputs_;
  std::map<int, StepFailure> failures_;  // By step index.
  mutable std::mutex arenas_mu_;
  mutable std::vector<char*> arenas_;  // Free arenas, reused across runs.
};

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_PROGRAM_RUNNER_H_
