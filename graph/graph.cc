#include "graph/graph.h"

#include <algorithm>
#include <cstdio>
#include <new>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"

namespace graft {
namespace {

// Sets *name to `base`, or to base_<n> when n > 0.
void SetNumberedName(absl::string_view base, int64_t n, std::string* name) {
  name->assign(base.data(), base.size());
  if (n == 0) return;
  char digits[absl::numbers_internal::kFastToBufferSize + 1];
  digits[0] = '_';
  char* end = absl::numbers_internal::FastIntToBuffer(n, digits + 1);
  name->append(digits, end - digits);
}

constexpr int64_t kOrderGap = 1 << 16;

// FX-style base name for a target: "ns::gelu" -> "ns_gelu".
std::string SanitizeName(absl::string_view base) {
  std::string out;
  out.reserve(base.size());
  for (char c : base) {
    out.push_back(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'
                      ? c
                      : '_');
  }
  if (out.empty() || absl::ascii_isdigit(static_cast<unsigned char>(out[0]))) {
    out.insert(out.begin(), '_');
  }
  // Collapse "::" -> "__" -> "_".
  std::string collapsed;
  for (char c : out) {
    if (c == '_' && !collapsed.empty() && collapsed.back() == '_' &&
        collapsed.size() > 1) {
      continue;
    }
    collapsed.push_back(c);
  }
  return collapsed;
}

}  // namespace

bool IsValidName(absl::string_view name) {
  if (name.empty()) return false;
  auto c0 = static_cast<unsigned char>(name[0]);
  if (!absl::ascii_isalpha(c0) && c0 != '_') return false;
  for (char ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.') return false;
  }
  return true;
}

Graph::Graph() : root_(new Node(this, OpCode::kOutput, InternTarget(""))) {
  root_->prev_ = root_->next_ = root_.get();
  insert_before_ = root_.get();
}

Graph::~Graph() {
  Node* n = root_->next_;
  while (n != root_.get()) {
    Node* next = n->next_;
    DeleteNode(n);
    n = next;
  }
  for (Node* dead : erased_) DeleteNode(dead);
}

Node* Graph::NewNode(OpCode op, const std::string* target) {
  return new (pool_.Allocate()) Node(this, op, target);
}

void Graph::DeleteNode(Node* node) {
  node->~Node();
  pool_.Free(node);
}

std::string Graph::UniqueName(absl::string_view base) {
  std::string candidate = IsValidName(base) ? std::string(base) : SanitizeName(base);
  if (!names_.Contains(candidate)) return candidate;
  int64_t& counter = name_counters_[candidate];
  std::string name;
  do {
    name = absl::StrCat(candidate, "_", ++counter);
  } while (names_.Contains(name));
  return name;
}

void Graph::NameAfterTarget(Node* node, size_t name_hash) {
  int64_t& counter = target_counters_[node->target_];
  // node->name_ already holds the first candidate: the target itself while
  // the counter is 0, then target_<counter + 1>.
  if (counter != 0) ++counter;
  if (names_.Insert(node, name_hash)) return;
  do {
    SetNumberedName(node->target(), ++counter, &node->name_);
  } while (!names_.Insert(node));
}

Node* Graph::CreateNode(OpCode op, absl::string_view target,
                        std::vector<Argument> args, Kwargs kwargs,
                        absl::string_view name) {
  const OpSchema* schema = nullptr;
  const std::string* interned;
  if (op == OpCode::kCallFunction &&
      (schema = OpRegistry::Global().Find(target)) != nullptr) {
    interned = &schema->name;  // Stable for the life of the process.
  } else {
    interned = InternTarget(target);
  }
  Node* node = NewNode(op, interned);
  node->schema_ = schema;
  const bool named_after_target =
      name.empty() && op != OpCode::kOutput && IsValidName(*interned);
  // The name table of a big graph is read at random, so claiming a name
  // costs a cache miss: start loading the slot of the likely name now, and
  // claim it after the work on operands, which hides most of the miss.
  absl::string_view base;  // The wanted name, unless named after the target.
  if (named_after_target) {
    const int64_t counter = target_counters_[interned];
    SetNumberedName(*interned, counter == 0 ? 0 : counter + 1, &node->name_);
  } else {
    base = !name.empty() ? name
           : op == OpCode::kOutput ? absl::string_view("output")
                                   : absl::string_view(*interned);
    node->name_.assign(base.data(), base.size());
  }
  const size_t name_hash = NameTable::Hash(node->name_);
  names_.Prefetch(name_hash);
  // Moved one by one into the fresh node's (empty) inline storage: absl's
  // generic Assign costs more per node, and it is every node's path.
  node->args_.reserve(args.size());
  for (Argument& a : args) node->args_.push_back(std::move(a));
  node->kwargs_ = std::move(kwargs);
  node->AddUses();
  Link(node, insert_before_);
  if (named_after_target) {
    NameAfterTarget(node, name_hash);
    return node;
  }
  // Fast path: the wanted name is valid and free (parsers and copies give
  // names that are usually unique already).
  if (IsValidName(base) && names_.Insert(node, name_hash)) return node;
  node->name_ = UniqueName(base);
  names_.Insert(node);
  return node;
}

Node* Graph::Placeholder(absl::string_view name, std::optional<TensorType> type) {
  Node* n = CreateNode(OpCode::kPlaceholder, std::string(name), {}, {}, name);
  n->meta_.type = std::move(type);
  return n;
}

Node* Graph::GetAttr(absl::string_view tensor_name, std::optional<TensorType> type) {
  Node* n = CreateNode(OpCode::kGetAttr, std::string(tensor_name), {}, {},
                       tensor_name);
  n->meta_.type = std::move(type);
  return n;
}

Node* Graph::CallFunction(absl::string_view op_name, std::vector<Argument> args,
                          Kwargs kwargs) {
  return CreateNode(OpCode::kCallFunction, std::string(op_name), std::move(args),
                    std::move(kwargs));
}

Node* Graph::CallModule(absl::string_view submodule, std::vector<Argument> args,
                        Kwargs kwargs) {
  return CreateNode(OpCode::kCallModule, std::string(submodule), std::move(args),
                    std::move(kwargs));
}

Node* Graph::Output(Argument value) {
  std::vector<Argument> args;
  args.push_back(std::move(value));
  return CreateNode(OpCode::kOutput, "output", std::move(args));
}

void Graph::Link(Node* node, Node* before) {
  Node* prev = before->prev_;
  node->prev_ = prev;
  node->next_ = before;
  prev->next_ = node;
  before->prev_ = node;
  ++num_nodes_;
  AssignOrder(node);
}

void Graph::Unlink(Node* node) {
  node->prev_->next_ = node->next_;
  node->next_->prev_ = node->prev_;
  --num_nodes_;
}

void Graph::AssignOrder(Node* node) {
  if (!order_valid_) return;
  int64_t lo = node->prev_ == root() ? 0 : node->prev_->order_;
  if (node->next_ == root()) {
    node->order_ = lo + kOrderGap;
    return;
  }
  int64_t hi = node->next_->order_;
  if (hi - lo > 1) {
    node->order_ = lo + (hi - lo) / 2;
  } else {
    order_valid_ = false;  // Renumbered lazily by EnsureOrder.
  }
}

void Graph::EnsureOrder() const {
  if (order_valid_) return;
  int64_t order = 0;
  for (Node* n : nodes()) n->order_ = (order += kOrderGap);
  order_valid_ = true;
}

absl::Status Graph::EraseNode(Node* node) {
  if (node->graph_ != this || node->erased_) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot erase ", node->Ref(), ": not a live node of this graph"));
  }
  if (node->has_uses()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot erase ", node->Ref(), ": it still has ", node->num_uses(),
        " use(s), first by ", node->uses_[0].user->Ref()));
  }
  if (insert_before_ == node) insert_before_ = node->next_;
  node->RemoveUses();
  Unlink(node);
  names_.Erase(node);
  node->erased_ = true;
  erased_.push_back(node);
  return absl::OkStatus();
}

void Graph::MoveBefore(Node* node, Node* position) {
  if (position == nullptr) position = root();
  if (node == position || node->next_ == position) return;
  if (insert_before_ == node) insert_before_ = node->next_;
  Unlink(node);
  Link(node, position);
}

void Graph::Cleanup() {
  for (Node* dead : erased_) DeleteNode(dead);
  erased_.clear();
}

Node* Graph::FindNode(absl::string_view name) const {
  return names_.Find(name);
}

Node* Graph::output() const {
  for (Node* n : reversed_nodes()) {
    if (n->op() == OpCode::kOutput) return n;
  }
  return nullptr;
}

std::vector<Node*> Graph::placeholders() const {
  std::vector<Node*> out;
  for (Node* n : nodes()) {
    if (n->op() == OpCode::kPlaceholder) out.push_back(n);
  }
  return out;
}

absl::Status Graph::Rename(Node* node, absl::string_view name) {
  // An erased node's old name may already belong to a new node.
  if (node->graph_ != this || node->erased_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot rename ", node->Ref(), ": not a live node of this graph"));
  }
  if (node->name_ == name) return absl::OkStatus();
  if (!IsValidName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid node name '", name, "'"));
  }
  if (names_.Contains(name)) {
    return absl::AlreadyExistsError(absl::StrCat("node name '", name, "' is taken"));
  }
  names_.Erase(node);
  node->name_ = std::string(name);
  names_.Insert(node);
  return absl::OkStatus();
}

namespace {

Argument MapArgument(const Argument& arg,
                     const absl::flat_hash_map<const Node*, Node*>& map) {
  if (arg.is_node()) return Argument(map.at(arg.node()));
  if (!arg.is_list()) return arg;
  ArgumentList out;
  out.reserve(arg.list().size());
  for (const Argument& a : arg.list()) out.push_back(MapArgument(a, map));
  return Argument(std::move(out));
}

// Graph::CopyNode's body, visible here so that CopyFrom, which copies every
// node of a graph, inlines it.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline Node* CopyNodeInto(
    Graph& graph, const Node& node,
    const absl::flat_hash_map<const Node*, Node*>& map) {
  std::vector<Argument> args;
  args.reserve(node.num_args());
  for (const Argument& a : node.args()) args.push_back(MapArgument(a, map));
  Kwargs kwargs;
  for (const auto& [k, v] : node.kwargs()) {
    kwargs.emplace_back(k, MapArgument(v, map));
  }
  Node* copy = graph.CreateNode(node.op(), node.target(), std::move(args),
                                std::move(kwargs), node.name());
  // Member by member, inlined here: NodeMeta's own copy is out of line,
  // and every node of a copied graph comes through.
  NodeMeta& to = copy->meta();
  const NodeMeta& from = node.meta();
  to.type = from.type;
  to.tuple_types = from.tuple_types;
  to.location = from.location;
  to.provenance = from.provenance;
  to.entries = from.entries;
  return copy;
}

}  // namespace

Node* Graph::CopyNode(const Node& node,
                      const absl::flat_hash_map<const Node*, Node*>& map) {
  return CopyNodeInto(*this, node, map);
}

void Graph::ReserveNodes(size_t count) { names_.Reserve(names_.size() + count); }

absl::flat_hash_map<const Node*, Node*> Graph::CopyFrom(const Graph& other) {
  absl::flat_hash_map<const Node*, Node*> map;
  map.reserve(other.num_nodes());
  ReserveNodes(other.num_nodes());
  for (Node* n : other.nodes()) map.emplace(n, CopyNodeInto(*this, *n, map));
  // Continue the source's name counters (targets are interned process-wide,
  // so the keys match): nodes created later in the copy then find a free
  // name at once instead of probing past every name the copy took over.
  for (const auto& [target, count] : other.target_counters_) {
    int64_t& mine = target_counters_[target];
    mine = std::max(mine, count);
  }
  return map;
}

}  // namespace graft
