#include "runtime/parallel_steps.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>

namespace graft::runtime {
namespace {

// libgomp's entry for a parallel region (what GCC compiles `#pragma omp
// parallel` to; stable since GCC 4.9) and the thread queries, looked up
// in the OpenMP library that oneDNN brought, as library_call.cc does: the
// same threads serve the library calls and the generated loops, where a
// pool of our own would compete with OpenMP's spinning threads.
using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
struct OpenMp {
  GompParallel parallel = reinterpret_cast<GompParallel>(dlsym(RTLD_DEFAULT, "GOMP_parallel"));
  int (*max_threads)() = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  int (*thread_num)() = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_thread_num"));
  int (*num_threads)() = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_num_threads"));
  bool ok() const {
    return parallel != nullptr && max_threads != nullptr && thread_num != nullptr &&
           num_threads != nullptr;
  }
};
const OpenMp& Omp() {
  static const OpenMp omp;
  return omp;
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
  const int64_t team = Omp().num_threads();
  for (int64_t p = Omp().thread_num(); p < r.parts; p += team) {
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
  const int64_t threads = omp.ok() ? omp.max_threads() : 1;
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
