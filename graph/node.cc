#include "graph/node.h"

#include <algorithm>
#include <array>

#include <deque>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "graph/graph.h"

namespace graft {
namespace {

constexpr std::array<absl::string_view, 5> kOpCodeNames = {
    "placeholder", "get_attr", "call_function", "call_module", "output"};

// Visits every node reference inside `arg`, depth first, without recursion
// on the node graph (only on literal nesting, which the parser bounds).
template <typename Fn>
void VisitNodeRefs(Argument& arg, Fn& fn) {
  if (arg.is_node()) {
    fn(arg);
  } else if (arg.is_list()) {
    for (Argument& a : arg.mutable_list()) VisitNodeRefs(a, fn);
  }
}

}  // namespace

const std::string* InternTarget(absl::string_view target) {
  static std::mutex mu;
  static auto* storage = new std::deque<std::string>();
  static auto* index =
      new absl::flat_hash_map<absl::string_view, const std::string*>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = index->find(target);
  if (it != index->end()) return it->second;
  storage->emplace_back(target);
  const std::string* interned = &storage->back();
  index->emplace(*interned, interned);
  return interned;
}

absl::string_view OpCodeName(OpCode op) {
  return kOpCodeNames[static_cast<int>(op)];
}

std::optional<OpCode> ParseOpCode(absl::string_view name) {
  for (size_t i = 0; i < kOpCodeNames.size(); ++i) {
    if (kOpCodeNames[i] == name) return static_cast<OpCode>(i);
  }
  return std::nullopt;
}

const Argument* Node::kwarg(absl::string_view name) const {
  for (const auto& [key, value] : kwargs_) {
    if (key == name) return &value;
  }
  return nullptr;
}

template <typename Fn>
void Node::ForEachOperand(Fn&& fn) {
  for (Argument& a : args_) VisitNodeRefs(a, fn);
  for (auto& [key, value] : kwargs_) VisitNodeRefs(value, fn);
}

void Node::AddUses() {
  uint32_t slot = 0;
  ForEachOperand([&](Argument& a) { a.node()->uses_.push_back({this, slot++}); });
}

void Node::RemoveUses() {
  ForEachOperand([&](Argument& a) {
    auto& uses = a.node()->uses_;
    uses.erase(std::remove_if(uses.begin(), uses.end(),
                              [&](const Use& u) { return u.user == this; }),
               uses.end());
  });
}

Argument* Node::OperandAt(uint32_t slot) {
  Argument* found = nullptr;
  uint32_t i = 0;
  ForEachOperand([&](Argument& a) {
    if (i++ == slot) found = &a;
  });
  return found;
}

void Node::SetArgs(std::vector<Argument> args) {
  RemoveUses();
  args_.assign(std::make_move_iterator(args.begin()),
               std::make_move_iterator(args.end()));
  AddUses();
}

void Node::SetArg(size_t i, Argument value) {
  RemoveUses();
  args_[i] = std::move(value);
  AddUses();
}

void Node::SetKwargs(Kwargs kwargs) {
  RemoveUses();
  kwargs_ = std::move(kwargs);
  AddUses();
}

void Node::SetKwarg(absl::string_view name, Argument value) {
  RemoveUses();
  bool found = false;
  for (auto& [key, v] : kwargs_) {
    if (key == name) {
      v = std::move(value);
      found = true;
      break;
    }
  }
  if (!found) kwargs_.emplace_back(std::string(name), std::move(value));
  AddUses();
}

void Node::ReplaceInputWith(Node* from, Node* to) {
  if (from == to) return;
  from->ReplaceUsesWithIf(to, [this](Node* user) { return user == this; });
}

std::vector<Node*> Node::inputs() const {
  std::vector<Node*> out;
  const_cast<Node*>(this)->ForEachOperand(
      [&](Argument& a) { out.push_back(a.node()); });
  return out;
}

std::vector<Node*> Node::unique_inputs() const {
  std::vector<Node*> out = inputs();
  absl::flat_hash_set<Node*> seen;
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](Node* n) { return !seen.insert(n).second; }),
            out.end());
  return out;
}

std::vector<Node*> Node::users() const {
  std::vector<Node*> out;
  if (uses_.size() == 1) return {uses_[0].user};
  absl::flat_hash_set<Node*> seen;
  for (const Use& u : uses_) {
    if (seen.insert(u.user).second) out.push_back(u.user);
  }
  return out;
}

size_t Node::ReplaceAllUsesWith(Node* replacement) {
  return ReplaceUsesWithIf(replacement, [](Node*) { return true; });
}

Node* Node::prev() const {
  return prev_ == graph_->root() ? nullptr : prev_;
}

Node* Node::next() const {
  return next_ == graph_->root() ? nullptr : next_;
}

bool Node::IsBefore(const Node* other) const {
  graph_->EnsureOrder();
  return order_ < other->order_;
}

}  // namespace graft
