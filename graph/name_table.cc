#include "graph/name_table.h"

#include "absl/hash/hash.h"
#include "graph/node.h"

namespace graft {

size_t NameTable::Hash(absl::string_view name) {
  return absl::Hash<absl::string_view>()(name);
}

absl::string_view NameTable::SlotEq::Name(const Slot& s) { return s.node->name(); }

bool NameTable::Insert(Node* node, size_t hash) {
  return slots_.insert(Slot{node, hash}).second;
}

bool NameTable::Insert(Node* node) { return Insert(node, Hash(node->name())); }

void NameTable::Erase(const Node* node) {
  slots_.erase(Key{node->name(), Hash(node->name())});
}

Node* NameTable::Find(absl::string_view name) const {
  auto it = slots_.find(Key{name, Hash(name)});
  return it == slots_.end() ? nullptr : it->node;
}

void NameTable::Prefetch(size_t hash) const { slots_.prefetch(Key{{}, hash}); }

}  // namespace graft
