#include "graph/huge_pages.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define GRAFT_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define GRAFT_LSAN 1
#endif
#endif
#ifdef GRAFT_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace graft {
namespace {

// LeakSanitizer looks for pointers in the heap, stacks and globals, not in
// memory mapped by hand: without this, whatever the nodes in a mapped slab
// own would count as leaked while the graph is alive.
void RegisterWithLeakChecker(void* data, size_t bytes) {
#ifdef GRAFT_LSAN
  __lsan_register_root_region(data, bytes);
#else
  (void)data, (void)bytes;
#endif
}
void UnregisterWithLeakChecker(void* data, size_t bytes) {
#ifdef GRAFT_LSAN
  __lsan_unregister_root_region(data, bytes);
#else
  (void)data, (void)bytes;
#endif
}

std::atomic<size_t> bytes_in_use{0};

size_t RoundUp(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void* MapHugePages(size_t bytes) {
  bytes = RoundUp(bytes);
  // Map one huge page more than asked, then unmap the unaligned head and
  // whatever is left at the tail.
  const size_t span = bytes + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + span;
  if (end > aligned + bytes) {
    munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
  }
  void* data = reinterpret_cast<void*>(aligned);
  // Only advice: without transparent huge pages the memory still works.
  madvise(data, bytes, MADV_HUGEPAGE);
  RegisterWithLeakChecker(data, bytes);
  bytes_in_use.fetch_add(bytes, std::memory_order_relaxed);
  return data;
}

void UnmapHugePages(void* data, size_t bytes) {
  bytes = RoundUp(bytes);
  UnregisterWithLeakChecker(data, bytes);
  munmap(data, bytes);
  bytes_in_use.fetch_sub(bytes, std::memory_order_relaxed);
}

size_t HugePageBytesInUse() { return bytes_in_use.load(std::memory_order_relaxed); }

}  // namespace graft
