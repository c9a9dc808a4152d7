#ifndef GRAFT_BACKENDS_MEMORY_PLAN_H_
#define GRAFT_BACKENDS_MEMORY_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace graft {

// One intermediate value to place in an arena: alive from the step that
// writes it to the last step that reads it (inclusive), `bytes` long.
struct BufferLifetime {
  int64_t first = 0;
  int64_t last = 0;
  size_t bytes = 0;
};

// Where each buffer sits in one arena. Two buffers whose lifetimes overlap
// never overlap in memory; the others may share bytes.
struct MemoryPlan {
  std::vector<size_t> offsets;  // Per buffer, aligned.
  size_t arena_bytes = 0;       // The arena's size.
  size_t total_bytes = 0;       // Every buffer's size added up (no reuse).
};

// Plans an arena with the greedy-by-size heuristic (TensorFlow Lite's, also
// used by XLA and ONNX Runtime in their arena planners): the largest buffer
// first, each at the lowest aligned offset that no placed buffer alive at
// the same time occupies. Compiled backends allocate one arena of
// arena_bytes per run and address intermediates by offset.
MemoryPlan PlanMemory(absl::Span<const BufferLifetime> buffers,
                      size_t alignment = 64);

}  // namespace graft

#endif  // GRAFT_BACKENDS_MEMORY_PLAN_H_
