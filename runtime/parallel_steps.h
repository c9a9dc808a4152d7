#ifndef GRAFT_RUNTIME_PARALLEL_STEPS_H_
#define GRAFT_RUNTIME_PARALLEL_STEPS_H_

#include <cstdint>

namespace graft::runtime {

// A generated loop split over the run's threads. Compiled code calls
//   int32_t graft_orc_parallel_for(StepPart part, void* const* buffers,
//                                  int64_t n, int64_t grain);
// for a step whose outermost loop has n independent iterations: it runs
// part(buffers, begin, end) on ranges that cover [0, n), each of at least
// `grain` iterations, one per thread, and returns 0 or a part's non-zero
// code. The threads are OpenMP's, as oneDNN's library calls use them, as
// many as the run asked for (ScopedLibraryThreads); without OpenMP loaded
// the part runs whole on the calling thread.
inline constexpr char kParallelForSymbol[] = "graft_orc_parallel_for";
using StepPart = int32_t (*)(void* const* buffers, int64_t begin, int64_t end);

extern "C" int32_t graft_orc_parallel_for(StepPart part, void* const* buffers, int64_t n,
                                          int64_t grain);

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_PARALLEL_STEPS_H_
