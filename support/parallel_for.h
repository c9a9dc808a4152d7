#ifndef GRAFT_SUPPORT_PARALLEL_FOR_H_
#define GRAFT_SUPPORT_PARALLEL_FOR_H_

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace graft {

// Calls `body(begin, end)` on ranges that cover [0, n), each of at least
// `grain` items but the last, on up to one thread per core (this one
// included): for
// host loops over a model's weights (casts, transposes), which run once
// per compile but over hundreds of MB. `body` must be safe to run on
// disjoint ranges at once.
template <class Body>
void ParallelFor(int64_t n, int64_t grain, const Body& body) {
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const int64_t parts = std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, cores);
  if (parts == 1) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  const int64_t step = (n + parts - 1) / parts;
  std::vector<std::thread> threads;
  for (int64_t begin = step; begin < n; begin += step) {
    threads.emplace_back([&body, begin, end = std::min(n, begin + step)] { body(begin, end); });
  }
  body(0, std::min(n, step));
  for (std::thread& t : threads) t.join();
}

}  // namespace graft

#endif  // GRAFT_SUPPORT_PARALLEL_FOR_H_
