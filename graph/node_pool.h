#ifndef GRAFT_GRAPH_NODE_POOL_H_
#define GRAFT_GRAPH_NODE_POOL_H_

#include <cstddef>
#include <vector>

namespace graft {

// Memory for the nodes of one graph, carved from slabs: no allocation
// header per node, a few hundred allocations for a million nodes, and slots
// of freed nodes reused. Slabs double from a few nodes, so that the many
// small graphs (patterns, replacements) stay small, up to 2 MiB; slabs of
// that size come from MapHugePages (graph/huge_pages.h).
class NodePool {
 public:
  explicit NodePool(size_t object_size);
  ~NodePool();
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  // Uninitialized memory for one object.
  void* Allocate();
  // Gives back a slot from Allocate() whose object has been destroyed.
  void Free(void* slot);

 private:
  struct Slab {
    void* data;
    size_t bytes;
    bool mapped;
  };
  void AddSlab();

  size_t object_size_;
  std::vector<Slab> slabs_;
  size_t capacity_of_last_ = 0;  // Objects the newest slab holds.
  size_t used_in_last_ = 0;
  std::vector<void*> free_;
};

}  // namespace graft

#endif  // GRAFT_GRAPH_NODE_POOL_H_
