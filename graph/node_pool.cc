#include "graph/node_pool.h"

#include <algorithm>
#include <new>

#include "graph/huge_pages.h"

namespace graft {
namespace {

constexpr size_t kFirstSlabObjects = 16;

}  // namespace

NodePool::NodePool(size_t object_size) : object_size_(object_size) {}

NodePool::~NodePool() {
  for (const Slab& slab : slabs_) {
    if (slab.mapped) {
      UnmapHugePages(slab.data, slab.bytes);
    } else {
      ::operator delete(slab.data);
    }
  }
}

void NodePool::AddSlab() {
  const size_t huge_objects = kHugePageBytes / object_size_;
  size_t objects = capacity_of_last_ == 0 ? kFirstSlabObjects : 2 * capacity_of_last_;
  objects = std::min(objects, huge_objects);
  void* data = objects == huge_objects ? MapHugePages(kHugePageBytes) : nullptr;
  if (data != nullptr) {
    slabs_.push_back({data, kHugePageBytes, true});
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
