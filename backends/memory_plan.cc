#include "backends/memory_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace graft {
namespace {

size_t RoundUp(size_t n, size_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

MemoryPlan PlanMemory(absl::Span<const BufferLifetime> buffers,
                      size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by start, then index, so plans are deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) {
      return buffers[a].bytes > buffers[b].bytes;
    }
    return buffers[a].first < buffers[b].first;
  });
  std::vector<size_t> placed;  // Indices, in placing order.
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) in memory.
  for (size_t i : order) {
    const BufferLifetime& b = buffers[i];
    plan.total_bytes += b.bytes;
    busy.clear();
    for (size_t j : placed) {
      const BufferLifetime& other = buffers[j];
      if (other.last < b.first || b.last < other.first) continue;
      busy.emplace_back(plan.offsets[j], plan.offsets[j] + other.bytes);
    }
    std::sort(busy.begin(), busy.end());
    // The first gap that fits, scanning the live buffers by address.
    size_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= offset + b.bytes) break;
      offset = std::max(offset, RoundUp(end, alignment));
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + b.bytes);
    placed.push_back(i);
  }
  plan.arena_bytes = RoundUp(plan.arena_bytes, alignment);
  return plan;
}

}  // namespace graft
