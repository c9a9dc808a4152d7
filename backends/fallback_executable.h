#ifndef GRAFT_BACKENDS_FALLBACK_EXECUTABLE_H_
#define GRAFT_BACKENDS_FALLBACK_EXECUTABLE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "backends/partitioner.h"
#include "graph/module.h"

namespace graft {

// What CompileWithFallback did: the graph breaks, and how many separately
// compiled parts the executable runs (1 when the backend took everything).
struct CompileReport {
  std::vector<GraphBreak> breaks;
  int partitions = 0;
  int backend_partitions = 0;
};

// Compiles `module` on `backend`, falling back to the interpreter for the
// nodes the backend cannot run (Backend::CanRun). When it can run them all,
// this is backend.Compile. Otherwise the module is split by PlanPartitions;
// each part becomes a module of its own (its inputs as placeholders, the
// values later parts read as outputs) compiled on its side, and the
// executable runs the parts in order, copying each tensor to the device of
// the part that reads it. Fills `report` when given.
absl::StatusOr<std::unique_ptr<Executable>> CompileWithFallback(
    Backend& backend, const Module& module, const CompileOptions& options,
    CompileReport* report = nullptr);

}  // namespace graft

#endif  // GRAFT_BACKENDS_FALLBACK_EXECUTABLE_H_
