#ifndef GRAFT_GRAPH_NODE_H_
#define GRAFT_GRAPH_NODE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "graph/argument.h"
#include "graph/boxed.h"
#include "graph/boxed_vector.h"
#include "graph/tensor_type.h"

namespace graft {

class Graph;
struct OpSchema;

// FX opcodes.
enum class OpCode : uint8_t {
  kPlaceholder,
  kGetAttr,
  kCallFunction,
  kCallModule,
  kOutput,
};
absl::string_view OpCodeName(OpCode op);
// A process-wide copy of `target` that is never freed: node targets repeat
// across nodes and graphs, and a pointer is a quarter of a std::string.
const std::string* InternTarget(absl::string_view target);
std::optional<OpCode> ParseOpCode(absl::string_view name);

// One use of a node's value: `user` reads it in operand slot `slot`. Slots
// number the node references of the user's args, then kwargs, depth first,
// so `add(%x, %x)` gives %x two uses (slots 0 and 1).
struct Use {
  Node* user;
  uint32_t slot;
  friend bool operator==(Use a, Use b) {
    return a.user == b.user && a.slot == b.slot;
  }
};

// Where a node came from in user code (tracer) or a file (parser).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

// Which pass created a node, and from which nodes (by name at that time).
struct Provenance {
  std::string pass;
  std::vector<std::string> from;
};

// Free-form string entries of a node's meta, allocated on first write so
// that the many nodes without any cost one pointer.
class MetaEntries {
 public:
  using Map = std::map<std::string, std::string>;
  MetaEntries() = default;
  MetaEntries(const MetaEntries& o) : map_(o.map_ ? std::make_unique<Map>(*o.map_) : nullptr) {}
  MetaEntries(MetaEntries&&) noexcept = default;
  MetaEntries& operator=(const MetaEntries& o) {
    if (this != &o) map_ = o.map_ ? std::make_unique<Map>(*o.map_) : nullptr;
    return *this;
  }
  MetaEntries& operator=(MetaEntries&&) noexcept = default;

  std::string& operator[](const std::string& key) { return Mutable()[key]; }
  // Requires the key to exist.
  const std::string& at(const std::string& key) const { return map_->at(key); }
  const std::string* Find(const std::string& key) const {
    if (!map_) return nullptr;
    auto it = map_->find(key);
    return it == map_->end() ? nullptr : &it->second;
  }
  bool empty() const { return !map_ || map_->empty(); }
  size_t size() const { return map_ ? map_->size() : 0; }
  const Map& map() const {
    static const Map* kEmpty = new Map();
    return map_ ? *map_ : *kEmpty;
  }
  Map::const_iterator begin() const { return map().begin(); }
  Map::const_iterator end() const { return map().end(); }
  void erase(const std::string& key) {
    if (map_) map_->erase(key);
  }
  friend bool operator==(const MetaEntries& a, const MetaEntries& b) {
    return a.map() == b.map();
  }

 private:
  Map& Mutable() {
    if (!map_) map_ = std::make_unique<Map>();
    return *map_;
  }
  std::unique_ptr<Map> map_;
};

// Everything known about a node that is not its operation: its type (or
// tuple of types), source location, provenance, and free-form entries.
struct NodeMeta {
  std::optional<TensorType> type;
  // For ops that return a tuple (read with getitem); empty otherwise.
  // Boxed, like the members below: most nodes return one tensor.
  BoxedVector<TensorType> tuple_types;
  // Boxed (8 bytes each when absent): most nodes of big graphs have neither.
  Boxed<SourceLocation> location;
  Boxed<Provenance> provenance;
  MetaEntries entries;
};

// A node of a Graph: one operation and, as in FX, the value it produces.
// Created and owned by a Graph; the pointer stays valid until
// Graph::Cleanup() after the node is erased.
class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  Graph* graph() const { return graph_; }
  OpCode op() const { return op_; }
  const std::string& name() const { return name_; }
  // Op name (call_function), input name (placeholder), tensor name
  // (get_attr), submodule name (call_module), "output" (output).
  const std::string& target() const { return *target_; }
  // The registered schema of a call_function node; null if not registered.
  const OpSchema* schema() const { return schema_; }
  bool is_call(absl::string_view op_name) const {
    return op_ == OpCode::kCallFunction && *target_ == op_name;
  }

  absl::Span<const Argument> args() const { return args_; }
  const Argument& arg(size_t i) const { return args_[i]; }
  size_t num_args() const { return args_.size(); }
  const Kwargs& kwargs() const { return kwargs_.get(); }
  // The kwarg `name`, or null.
  const Argument* kwarg(absl::string_view name) const;

  // Replace operands; use-lists are updated.
  void SetArgs(std::vector<Argument> args);
  void SetArg(size_t i, Argument value);
  void SetKwargs(Kwargs kwargs);
  void SetKwarg(absl::string_view name, Argument value);
  // Replaces every reference to `from` among this node's operands with `to`.
  void ReplaceInputWith(Node* from, Node* to);

  // Node references among the operands, in slot order (with repeats).
  std::vector<Node*> inputs() const;
  // Distinct nodes among the operands, in first-use order.
  std::vector<Node*> unique_inputs() const;
  using UseList = absl::InlinedVector<Use, 1>;
  const UseList& uses() const { return uses_; }
  // Distinct users, in first-use order.
  std::vector<Node*> users() const;
  size_t num_uses() const { return uses_.size(); }
  bool has_uses() const { return !uses_.empty(); }

  // Makes every user read `replacement` instead; returns how many uses moved.
  // A filter may keep some users (return false to keep the use).
  size_t ReplaceAllUsesWith(Node* replacement);
  template <typename Filter>
  size_t ReplaceUsesWithIf(Node* replacement, Filter&& keep_if_false);

  NodeMeta& meta() { return meta_; }
  const NodeMeta& meta() const { return meta_; }
  const std::optional<TensorType>& type() const { return meta_.type; }
  void set_type(TensorType t) { meta_.type = std::move(t); }

  Node* prev() const;  // Null at the start of the graph.
  Node* next() const;  // Null at the end of the graph.
  bool erased() const { return erased_; }
  // True if this node comes before `other` in the graph's order.
  bool IsBefore(const Node* other) const;

  // Human-readable "%name" for messages.
  std::string Ref() const { return "%" + name_; }

 private:
  friend class Graph;
  friend class GraphTestPeer;  // Tests break invariants to check the verifier.
  // `target` is interned (or an op schema's name): it outlives the node.
  Node(Graph* graph, OpCode op, const std::string* target)
      : graph_(graph), op_(op), target_(target) {}

  template <typename Fn>
  void ForEachOperand(Fn&& fn);
  void AddUses();
  void RemoveUses();
  Argument* OperandAt(uint32_t slot);

  Graph* graph_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  OpCode op_;
  bool erased_ = false;
  int64_t order_ = 0;  // Position key kept by Graph for IsBefore.
  std::string name_;
  const std::string* target_;  // Interned: targets repeat across nodes.
  const OpSchema* schema_ = nullptr;
  absl::InlinedVector<Argument, 2> args_;
  BoxedVector<std::pair<std::string, Argument>> kwargs_;  // Usually none.
  UseList uses_;
  NodeMeta meta_;
};

template <typename Filter>
size_t Node::ReplaceUsesWithIf(Node* replacement, Filter&& filter) {
  if (replacement == this) return 0;
  UseList kept;
  size_t moved = 0;
  for (const Use& use : uses_) {
    if (!filter(use.user)) {
      kept.push_back(use);
      continue;
    }
    *use.user->OperandAt(use.slot) = Argument(replacement);
    replacement->uses_.push_back(use);
    ++moved;
  }
  uses_ = std::move(kept);
  return moved;
}

}  // namespace graft

#endif  // GRAFT_GRAPH_NODE_H_
