#ifndef GRAFT_GRAPH_GRAPH_H_
#define GRAFT_GRAPH_GRAPH_H_

#include <cstdint>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/name_table.h"
#include "graph/node.h"
#include "graph/node_pool.h"

namespace graft {

// A list of nodes in topological order, FX style. Owns its nodes: they are
// created through the graph, linked into an intrusive list, and freed only
// by Cleanup() after being erased, so pointers held across a pass stay valid.
// Node names are unique within the graph.
class Graph {
 public:
  // Iterates nodes in order. Early-increment: the node the iterator stands
  // on may be erased (or moved) without disturbing the walk.
  class Iterator {
   public:
    Iterator(Node* node, bool reverse) : node_(node), reverse_(reverse) {
      next_ = Step(node_);
    }
    Node* operator*() const { return node_; }
    Iterator& operator++() {
      node_ = next_;
      next_ = Step(node_);
      return *this;
    }
    bool operator==(const Iterator& o) const { return node_ == o.node_; }
    bool operator!=(const Iterator& o) const { return node_ != o.node_; }

   private:
    Node* Step(Node* n) const { return reverse_ ? n->prev_ : n->next_; }
    Node* node_;
    Node* next_;
    bool reverse_;
  };
  class Range {
   public:
    Range(Node* root, bool reverse) : root_(root), reverse_(reverse) {}
    Iterator begin() const {
      return Iterator(reverse_ ? root_->prev_ : root_->next_, reverse_);
    }
    Iterator end() const { return Iterator(root_, reverse_); }

   private:
    Node* root_;
    bool reverse_;
  };

  // Sets the insertion point for the life of the guard; restores the old one.
  class InsertPoint {
   public:
    InsertPoint(InsertPoint&&) = delete;
    // The saved point may have been erased while this guard was live (by a
    // nested guard's user): then insert where it was, before the first live
    // node that followed it.
    ~InsertPoint() {
      Node* point = saved_;
      while (point->erased_) point = point->next_;
      graph_->insert_before_ = point;
    }

   private:
    friend class Graph;
    InsertPoint(Graph* graph, Node* before)
        : graph_(graph), saved_(graph->insert_before_) {
      graph_->insert_before_ = before;
    }
    Graph* graph_;
    Node* saved_;
  };

  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Creating nodes: each is inserted at the insertion point (the end by
  // default) and named uniquely, from `name` if given, else from the target.
  Node* CreateNode(OpCode op, absl::string_view target, std::vector<Argument> args,
                   Kwargs kwargs = {}, absl::string_view name = {});
  Node* Placeholder(absl::string_view name,
                    std::optional<TensorType> type = std::nullopt);
  Node* GetAttr(absl::string_view tensor_name,
                std::optional<TensorType> type = std::nullopt);
  Node* CallFunction(absl::string_view op_name, std::vector<Argument> args,
                     Kwargs kwargs = {});
  Node* CallModule(absl::string_view submodule, std::vector<Argument> args,
                   Kwargs kwargs = {});
  // `value` is a node or a list of nodes (several outputs).
  Node* Output(Argument value);

  [[nodiscard]] InsertPoint InsertingBefore(Node* node) {
    return InsertPoint(this, node);
  }
  [[nodiscard]] InsertPoint InsertingAfter(Node* node) {
    return InsertPoint(this, node->next_);
  }
  [[nodiscard]] InsertPoint InsertingAtEnd() { return InsertPoint(this, root()); }

  // Unlinks `node` and drops its uses of other nodes. Refuses (and changes
  // nothing) if the node still has users. The memory lives until Cleanup().
  absl::Status EraseNode(Node* node);
  // Moves `node` to just before `position` (a node of this graph, or null
  // for the end). The caller keeps the order topological.
  void MoveBefore(Node* node, Node* position);
  // Frees erased nodes. Invalidates pointers to them.
  void Cleanup();

  Range nodes() const { return Range(root(), false); }
  Range reversed_nodes() const { return Range(root(), true); }
  Node* first() const { return root_->next_ == root() ? nullptr : root_->next_; }
  Node* last() const { return root_->prev_ == root() ? nullptr : root_->prev_; }
  size_t num_nodes() const { return num_nodes_; }
  bool empty() const { return num_nodes_ == 0; }

  // Prepares for `count` more nodes, so that building a large graph whose
  // size is known (a parser, a copy, a generator) does not rehash the name
  // table as it grows. Only a hint: more nodes are fine.
  void ReserveNodes(size_t count);

  Node* FindNode(absl::string_view name) const;
  // The output node, or null.
  Node* output() const;
  std::vector<Node*> placeholders() const;
  // Renames `node`; fails if the name is taken or not an identifier.
  absl::Status Rename(Node* node, absl::string_view name);
  // A name that is free in this graph, derived from `base` FX style:
  // "add", "add_1", "add_2", ...
  std::string UniqueName(absl::string_view base);

  // Copies `node` (of any graph) to the insertion point, with its name when
  // free, its meta, and every node it reads replaced through `map`, which
  // must hold them all.
  Node* CopyNode(const Node& node,
                 const absl::flat_hash_map<const Node*, Node*>& map);
  // Copies every node of `other` to the end of this graph. Returns the map
  // from `other`'s nodes to the copies.
  absl::flat_hash_map<const Node*, Node*> CopyFrom(const Graph& other);

  // Internal, for Node.
  Node* root() const { return root_.get(); }
  void EnsureOrder() const;

 private:
  friend class GraphTestPeer;  // Tests break invariants to check the verifier.
  void Link(Node* node, Node* before);
  void Unlink(Node* node);
  void AssignOrder(Node* node);

  std::unique_ptr<Node> root_;  // Sentinel of the circular list.
  Node* insert_before_;
  size_t num_nodes_ = 0;
  NameTable names_;
  absl::flat_hash_map<std::string, int64_t> name_counters_;
  // Name counters for nodes named after their (interned) target: a pointer
  // key, so naming a call costs one string hash (the insert).
  absl::flat_hash_map<const std::string*, int64_t> target_counters_;
  // Names `node` after its target: "add", then "add_1", "add_2", ...
  // `name_hash` is the hash of the first candidate, already in node->name_.
  void NameAfterTarget(Node* node, size_t name_hash);
  // Live nodes are owned through the list (freed by the destructor); erased
  // ones wait here for Cleanup().
  std::vector<Node*> erased_;
  Node* NewNode(OpCode op, const std::string* target);
  void DeleteNode(Node* node);
  NodePool pool_{sizeof(Node)};
  mutable bool order_valid_ = true;
};

// True for names the text format accepts unquoted: [A-Za-z_][A-Za-z0-9_.]*.
bool IsValidName(absl::string_view name);

}  // namespace graft

#endif  // GRAFT_GRAPH_GRAPH_H_
