#ifndef GRAFT_GRAPH_NAME_TABLE_H_
#define GRAFT_GRAPH_NAME_TABLE_H_

#include <cstddef>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "graph/huge_pages.h"

namespace graft {

class Node;

// The nodes of one graph by name. Each slot keeps the name's hash beside
// the node pointer (16 bytes a slot), so that growing the table rehashes
// without reading a single node: a graph built node by node, as a tracer
// does, would otherwise visit every node at random each time the table
// doubles. Names are read from the nodes themselves, so a node must be
// erased before its name changes and inserted again after.
class NameTable {
 public:
  static size_t Hash(absl::string_view name);

  // Adds `node` under its name, whose hash is `hash`; false (and no change)
  // if the name is taken.
  bool Insert(Node* node, size_t hash);
  bool Insert(Node* node);
  // Removes `node`, which is in the table under its current name.
  void Erase(const Node* node);
  Node* Find(absl::string_view name) const;
  bool Contains(absl::string_view name) const { return Find(name) != nullptr; }
  // Starts loading the slot for a name with this hash: an Insert that
  // follows a little later then finds it in cache.
  void Prefetch(size_t hash) const;
  void Reserve(size_t count) { slots_.reserve(count); }
  size_t size() const { return slots_.size(); }

 private:
  struct Slot {
    Node* node;
    size_t hash;
  };
  struct Key {
    absl::string_view name;
    size_t hash;
  };
  struct SlotHash {
    using is_transparent = void;
    size_t operator()(const Slot& s) const { return s.hash; }
    size_t operator()(const Key& k) const { return k.hash; }
  };
  struct SlotEq {
    using is_transparent = void;
    static absl::string_view Name(const Slot& s);
    static absl::string_view Name(const Key& k) { return k.name; }
    // The stored hashes settle almost every comparison without a node read.
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return a.hash == b.hash && Name(a) == Name(b);
    }
  };
  // Big tables on huge pages: lookups land at random across the table.
  absl::flat_hash_set<Slot, SlotHash, SlotEq, HugePageAllocator<Slot>> slots_;
};

}  // namespace graft

#endif  // GRAFT_GRAPH_NAME_TABLE_H_
