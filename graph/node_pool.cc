#include "graph/node_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>

namespace graft {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kFirstSlabObjects = 16;

std::atomic<size_t> mapped_bytes{0};

// kHugePage bytes at a kHugePage-aligned address, advised as a huge page;
// null if the system refuses the mapping.
void* MapHugeSlab() {
  // Map twice the size, then unmap the unaligned head and the tail.
  void* raw = mmap(nullptr, 2 * kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(raw, aligned - start);
  uintptr_t end = start + 2 * kHugePage;
  if (end > aligned + kHugePage) {
    munmap(reinterpret_cast<void*>(aligned + kHugePage), end - aligned - kHugePage);
  }
  void* slab = reinterpret_cast<void*>(aligned);
  // Only advice: without transparent huge pages the slab still works.
  madvise(slab, kHugePage, MADV_HUGEPAGE);
  mapped_bytes.fetch_add(kHugePage, std::memory_order_relaxed);
  return slab;
}

}  // namespace

NodePool::NodePool(size_t object_size) : object_size_(object_size) {}

NodePool::~NodePool() {
  for (const Slab& slab : slabs_) {
    if (slab.mapped) {
      munmap(slab.data, slab.bytes);
      mapped_bytes.fetch_sub(slab.bytes, std::memory_order_relaxed);
    } else {
      ::operator delete(slab.data);
    }
  }
}

size_t NodePool::MappedBytes() { return mapped_bytes.load(std::memory_order_relaxed); }

void NodePool::AddSlab() {
  const size_t huge_objects = kHugePage / object_size_;
  size_t objects = capacity_of_last_ == 0 ? kFirstSlabObjects : 2 * capacity_of_last_;
  objects = std::min(objects, huge_objects);
  void* data = objects == huge_objects ? MapHugeSlab() : nullptr;
  if (data != nullptr) {
    slabs_.push_back({data, kHugePage, true});
  } else {
    data = ::operator new(objects * object_size_);
    slabs_.push_back({data, objects * object_size_, false});
  }
  capacity_of_last_ = objects;
  used_in_last_ = 0;
}

void* NodePool::Allocate() {
  if (!free_.empty()) {
    void* slot = free_.back();
    free_.pop_back();
    return slot;
  }
  if (used_in_last_ == capacity_of_last_) AddSlab();
  return static_cast<std::byte*>(slabs_.back().data) + object_size_ * used_in_last_++;
}

void NodePool::Free(void* slot) { free_.push_back(slot); }

}  // namespace graft
