#include "runtime/parallel_steps.h"

#include <algorithm>
#include <atomic>

#include "runtime/openmp.h"

namespace graft::runtime {
namespace {

bool HasOpenMp(const OpenMp& omp) {
  return omp.parallel != nullptr && omp.get_max_threads != nullptr &&
         omp.get_thread_num != nullptr && omp.get_num_threads != nullptr;
}

struct Region {
  StepPart part;
  void* const* buffers;
  int64_t n, chunk, parts;
  std::atomic<int32_t> failed{0};
};

// One thread's parts: its own, or more where the team came out smaller
// than asked (OpenMP may give fewer threads, one inside another region).
void RunParts(void* data) {
  Region& r = *static_cast<Region*>(data);
  const int64_t team = Omp().get_num_threads();
  for (int64_t p = Omp().get_thread_num(); p < r.parts; p += team) {
    const int64_t begin = p * r.chunk, end = std::min(r.n, begin + r.chunk);
    if (begin >= end) continue;
    const int32_t rc = r.part(r.buffers, begin, end);
    int32_t none = 0;
    if (rc != 0) r.failed.compare_exchange_strong(none, rc);
  }
}

}  // namespace

extern "C" int32_t graft_orc_parallel_for(StepPart part, void* const* buffers, int64_t n,
                                          int64_t grain) {
  const OpenMp& omp = Omp();
  const int64_t threads = HasOpenMp(omp) ? omp.get_max_threads() : 1;
  const int64_t parts = std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, threads);
  if (parts <= 1) return part(buffers, 0, n);
  Region region{part, buffers, n, (n + parts - 1) / parts, parts};
  // Long ranges split at multiples of 64 iterations: a contiguous loop's
  // parts then start on cache lines and vector boundaries.
  if (region.chunk >= 1024) region.chunk = (region.chunk + 63) / 64 * 64;
  omp.parallel(&RunParts, &region, static_cast<unsigned>(parts), 0);
  return region.failed.load();
}

}  // namespace graft::runtime
