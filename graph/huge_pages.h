#ifndef GRAFT_GRAPH_HUGE_PAGES_H_
#define GRAFT_GRAPH_HUGE_PAGES_H_

#include <cstddef>
#include <memory>
#include <new>

namespace graft {

// Memory for the big structures of big graphs (node slabs, the name table)
// straight from the kernel, 2 MiB-aligned and advised as transparent huge
// pages: one page fault and one TLB entry per 2 MiB rather than per 4 KiB.
// A million-node graph reads its name table at random, so with 4 KiB pages
// nearly every lookup also missed the TLB.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` of zeroed memory at a kHugePageBytes-aligned address, `bytes`
// rounded up to a multiple of kHugePageBytes; null if the system refuses.
void* MapHugePages(size_t bytes);
// Gives back memory from MapHugePages(bytes), with the same `bytes`.
void UnmapHugePages(void* data, size_t bytes);
// Bytes mapped by MapHugePages and not yet given back, in the whole process.
// Heap statistics (mallinfo) do not see them.
size_t HugePageBytesInUse();

// A standard allocator that takes requests of kHugePageBytes or more from
// MapHugePages and smaller ones from std::allocator.
template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT

  T* allocate(size_t n) {
    if (n * sizeof(T) >= kHugePageBytes) {
      if (void* data = MapHugePages(n * sizeof(T))) return static_cast<T*>(data);
      throw std::bad_alloc();  // What std::allocator does when memory runs out.
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) >= kHugePageBytes) {
      UnmapHugePages(p, n * sizeof(T));
    } else {
      std::allocator<T>().deallocate(p, n);
    }
  }
  template <typename U>
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator<U>&) {
    return true;
  }

};

}  // namespace graft

#endif  // GRAFT_GRAPH_HUGE_PAGES_H_
