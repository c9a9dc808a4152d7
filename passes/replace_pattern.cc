#include "passes/replace_pattern.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "graph/op_registry.h"
#include "passes/inferred_type_cache.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

// The pattern's shape, computed once: nodes numbered, placeholders and
// output anchors listed.
struct PatternInfo {
  std::vector<const Node*> nodes;  // Placeholders and computations, in order.
  absl::flat_hash_map<const Node*, int> index;
  std::vector<int> placeholders;
  std::vector<int> anchors;
};

absl::StatusOr<std::vector<const Node*>> OutputValues(const Graph& g,
                                                      absl::string_view what) {
  const Node* out = g.output();
  if (out == nullptr || out->num_args() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " graph has no output"));
  }
  std::vector<const Node*> values;
  const Argument& v = out->arg(0);
  if (v.is_node()) {
    values.push_back(v.node());
  } else if (v.is_list()) {
    for (const Argument& a : v.list()) {
      if (!a.is_node()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " graph returns a literal"));
      }
      values.push_back(a.node());
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(what, " graph returns a literal"));
  }
  return values;
}

absl::StatusOr<PatternInfo> AnalyzePattern(const Graph& pattern) {
  PatternInfo info;
  for (Node* n : pattern.nodes()) {
    if (n->op() == OpCode::kOutput) continue;
    info.index[n] = static_cast<int>(info.nodes.size());
    if (n->op() == OpCode::kPlaceholder) info.placeholders.push_back(info.nodes.size());
    info.nodes.push_back(n);
  }
  absl::StatusOr<std::vector<const Node*>> outs =
      OutputValues(pattern, "pattern");
  if (!outs.ok()) return outs.status();
  for (const Node* a : *outs) {
    if (a->op() == OpCode::kPlaceholder) {
      return absl::InvalidArgumentError(
          "pattern output is a placeholder: it would match every node");
    }
    info.anchors.push_back(info.index.at(a));
  }
  return info;
}

bool LiteralsEqual(const Argument& p, const Argument& g) {
  if (p.is_number() && g.is_number()) return p.number() == g.number();
  return p == g;
}

// Matches one pattern against graph nodes. State is a vector indexed by
// pattern node number, so a match attempt allocates nothing per node.
class Matcher {
 public:
  Matcher(const PatternInfo& info, const ReplaceOptions& options,
          const absl::flat_hash_set<const Node*>& claimed)
      : info_(info), options_(options), claimed_(claimed),
        bound_(info.nodes.size(), nullptr) {}

  // Tries to match the pattern with anchor 0 at `g`.
  bool MatchAt(Node* g) {
    std::fill(bound_.begin(), bound_.end(), nullptr);
    trail_.clear();
    if (!MatchNode(info_.anchors[0], g)) return false;
    for (size_t k = 1; k < info_.anchors.size(); ++k) {
      if (!MatchOtherAnchor(info_.anchors[k])) return false;
    }
    return NoEscapingUses();
  }

  // The graph node bound to each pattern node, by pattern node number.
  absl::Span<Node* const> bound() const { return bound_; }

 private:
  bool IsInternal(const Node* g) const {
    for (size_t i = 0; i < bound_.size(); ++i) {
      if (bound_[i] == g && info_.nodes[i]->op() != OpCode::kPlaceholder) return true;
    }
    return false;
  }

  void Bind(int p, Node* g) {
    bound_[p] = g;
    trail_.push_back(p);
  }
  void Rollback(size_t mark) {
    while (trail_.size() > mark) {
      bound_[trail_.back()] = nullptr;
      trail_.pop_back();
    }
  }

  // Walks upwards from (p, g) with an explicit worklist.
  bool MatchNode(int p0, Node* g0) {
    work_.clear();
    work_.push_back({p0, g0});
    while (!work_.empty()) {
      auto [p, g] = work_.back();
      work_.pop_back();
      if (bound_[p] != nullptr) {
        if (bound_[p] != g) return false;
        continue;
      }
      const Node* pn = info_.nodes[p];
      if (pn->op() == OpCode::kPlaceholder) {
        Bind(p, g);
        continue;
      }
      if (g->op() != pn->op() || g->target() != pn->target() ||
          g->num_args() != pn->num_args() ||
          g->kwargs().size() != pn->kwargs().size() || claimed_.contains(g) ||
          IsInternal(g)) {
        return false;
      }
      Bind(p, g);
      for (size_t i = 0; i < pn->num_args(); ++i) {
        if (!MatchArgument(pn->arg(i), g->arg(i))) return false;
      }
      for (size_t i = 0; i < pn->kwargs().size(); ++i) {
        const Argument* ga = g->kwarg(pn->kwargs()[i].first);
        if (ga == nullptr || !MatchArgument(pn->kwargs()[i].second, *ga)) return false;
      }
    }
    return true;
  }

  bool MatchArgument(const Argument& pa, const Argument& ga) {
    if (pa.is_node()) {
      if (!ga.is_node()) return false;
      work_.push_back({info_.index.at(pa.node()), ga.node()});
      return true;
    }
    if (pa.is_list()) {
      if (!ga.is_list() || ga.list().size() != pa.list().size()) return false;
      for (size_t i = 0; i < pa.list().size(); ++i) {
        if (!MatchArgument(pa.list()[i], ga.list()[i])) return false;
      }
      return true;
    }
    if (ga.HasNodes()) return false;
    return options_.ignore_literals || LiteralsEqual(pa, ga);
  }

  // A later output of a multi-output pattern: its candidates are the users
  // of a graph node already bound to one of its operands.
  bool MatchOtherAnchor(int anchor) {
    const Node* pn = info_.nodes[anchor];
    if (bound_[anchor] != nullptr) return true;
    for (Node* operand : pn->inputs()) {
      Node* bound = bound_[info_.index.at(operand)];
      if (bound == nullptr) continue;
      for (Node* candidate : bound->users()) {
        size_t mark = trail_.size();
        if (MatchNode(anchor, candidate)) return true;
        Rollback(mark);
      }
      return false;
    }
    return false;  // Disconnected outputs are not supported.
  }

  bool NoEscapingUses() const {
    for (size_t i = 0; i < info_.nodes.size(); ++i) {
      if (info_.nodes[i]->op() == OpCode::kPlaceholder) continue;
      if (std::find(info_.anchors.begin(), info_.anchors.end(), static_cast<int>(i)) !=
          info_.anchors.end()) {
        continue;
      }
      for (const Use& u : bound_[i]->uses()) {
        if (!IsInternal(u.user)) return false;
      }
    }
    return true;
  }

  const PatternInfo& info_;
  const ReplaceOptions& options_;
  const absl::flat_hash_set<const Node*>& claimed_;
  std::vector<Node*> bound_;
  std::vector<int> trail_;
  std::vector<std::pair<int, Node*>> work_;
};

// The match whose pattern-node bindings are `bound` (by pattern node
// number); `with_map` also fills nodes_map.
PatternMatch MakeMatch(const PatternInfo& info, absl::Span<Node* const> bound,
                       bool with_map) {
  PatternMatch m;
  if (with_map) {
    for (size_t i = 0; i < info.nodes.size(); ++i) m.nodes_map[info.nodes[i]] = bound[i];
  }
  for (int p : info.placeholders) m.inputs.push_back(bound[p]);
  for (int a : info.anchors) m.anchors.push_back(bound[a]);
  return m;
}

// Calls fn(node) for each graph node a match computes (its bindings other
// than the placeholders').
template <typename Fn>
void ForEachInternal(const PatternInfo& info, absl::Span<Node* const> bound, Fn&& fn) {
  for (size_t i = 0; i < info.nodes.size(); ++i) {
    if (info.nodes[i]->op() != OpCode::kPlaceholder && bound[i] != nullptr) fn(bound[i]);
  }
}

// The matches found, in graph order, as one flat array of bindings: match i
// binds pattern node p to bound[i * stride + p]. Thousands of matches cost a
// few allocations, not a few each.
struct FoundMatches {
  size_t stride = 0;
  std::vector<Node*> bound;
  size_t size() const { return stride == 0 ? 0 : bound.size() / stride; }
  absl::Span<Node* const> operator[](size_t i) const {
    return absl::MakeConstSpan(bound).subspan(i * stride, stride);
  }
};

FoundMatches FindMatches(const Graph& graph, const PatternInfo& info,
                         const ReplaceOptions& options) {
  FoundMatches found;
  found.stride = info.nodes.size();
  absl::flat_hash_set<const Node*> claimed;
  Matcher matcher(info, options, claimed);
  const Node* anchor = info.nodes[info.anchors[0]];
  for (Node* g : graph.nodes()) {
    if (g->op() != anchor->op() || g->target() != anchor->target()) continue;
    if (claimed.contains(g) || !matcher.MatchAt(g)) continue;
    absl::Span<Node* const> bound = matcher.bound();
    if (!options.filters.empty()) {
      const PatternMatch match = MakeMatch(info, bound, /*with_map=*/true);
      bool vetoed = false;
      for (const MatchFilter& filter : options.filters) {
        if (!filter(match, graph)) {
          vetoed = true;
          break;
        }
      }
      if (vetoed) continue;
    }
    ForEachInternal(info, bound, [&](Node* n) { claimed.insert(n); });
    found.bound.insert(found.bound.end(), bound.begin(), bound.end());
  }
  return found;
}

// Replacing a match reads and writes its nodes (operands, use-lists, names,
// links), which matching visited long before: in a big graph they have left
// the cache by then. The replace loop starts loading the nodes of the match
// this many ahead, so that their misses overlap the work on earlier ones.
constexpr size_t kPrefetchAhead = 4;

void PrefetchNodes(absl::Span<Node* const> nodes) {
  for (const Node* n : nodes) {
    if (n == nullptr) continue;
    const char* p = reinterpret_cast<const char*>(n);
    for (size_t offset = 0; offset < sizeof(Node); offset += 64) {
      __builtin_prefetch(p + offset, /*rw=*/1);
    }
    __builtin_prefetch(p + sizeof(Node) - 1, /*rw=*/1);  // A node seldom starts a line.
  }
}

// Copies replacement graphs into the target module, one match at a time.
class Replacer {
 public:
  Replacer(Module& module, const Module& replacement, const PatternInfo& info)
      : module_(module), replacement_(replacement), info_(info) {}

  absl::Status Prepare(size_t num_inputs, size_t num_outputs) {
    for (Node* n : replacement_.graph().nodes()) {
      if (n->op() == OpCode::kPlaceholder) placeholders_.push_back(n);
    }
    replacement_nodes_ = replacement_.graph().num_nodes() - placeholders_.size();
    absl::StatusOr<std::vector<const Node*>> outs =
        OutputValues(replacement_.graph(), "replacement");
    if (!outs.ok()) return outs.status();
    outputs_ = *std::move(outs);
    if (placeholders_.size() != num_inputs || outputs_.size() != num_outputs) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pattern takes ", num_inputs, " inputs and returns ", num_outputs,
          " values, but the replacement takes ", placeholders_.size(),
          " and returns ", outputs_.size()));
    }
    return absl::OkStatus();
  }

  // Replaces the match whose bindings are `bound`. Returns false (and
  // changes nothing) if the rewrite would make a cycle.
  bool Replace(absl::Span<Node* const> bound, std::vector<ReplacedPattern>& replaced) {
    inputs_.clear();  // Member vectors keep their capacity across matches.
    for (int p : info_.placeholders) inputs_.push_back(Resolve(bound[p]));
    anchors_.clear();
    for (int a : info_.anchors) anchors_.push_back(bound[a]);
    internal_.clear();
    ForEachInternal(info_, bound, [&](Node* n) { internal_.push_back(n); });
    Node* position = InsertionPoint();
    if (position == nullptr) return false;
    Graph& graph = module_.graph();
    ReplacedPattern record{anchors_[0], {}, {}};
    record.replacements.reserve(replacement_nodes_);
    absl::flat_hash_map<const Node*, Node*>& map = map_;
    map.clear();  // Keeps its capacity: no allocation per match.
    {
      auto guard = graph.InsertingBefore(position);
      size_t next_input = 0;
      for (Node* n : replacement_.graph().nodes()) {
        if (n->op() == OpCode::kOutput) continue;
        if (n->op() == OpCode::kPlaceholder) {
          map[n] = inputs_[next_input++];
          continue;
        }
        Node* copy = Copy(*n, map);
        map[n] = copy;
        record.replacements.push_back(copy);
      }
    }
    for (size_t k = 0; k < outputs_.size(); ++k) {
      Node* old_value = anchors_[k];
      Node* new_value = map.at(outputs_[k]);
      old_value->ReplaceAllUsesWith(new_value);
      replaced_by_[old_value] = new_value;
    }
    record.matched = internal_;
    // Erase the matched nodes, users before producers.
    std::sort(internal_.begin(), internal_.end(),
              [](const Node* a, const Node* b) { return b->IsBefore(a); });
    for (Node* n : internal_) (void)graph.EraseNode(n);
    replaced.push_back(std::move(record));
    return true;
  }

 private:
  Node* Resolve(Node* n) const {
    for (auto it = replaced_by_.find(n); it != replaced_by_.end();
         it = replaced_by_.find(n)) {
      n = it->second;
    }
    return n;
  }

  // Before the earliest anchor if every input precedes it; otherwise right
  // after the latest input, if that still precedes every outside user of
  // the outputs. Null when neither holds (the rewrite would form a cycle).
  Node* InsertionPoint() const {
    Node* earliest = anchors_[0];
    for (Node* a : anchors_) {
      if (a->IsBefore(earliest)) earliest = a;
    }
    Node* latest_input = nullptr;
    for (Node* in : inputs_) {
      if (latest_input == nullptr || latest_input->IsBefore(in)) latest_input = in;
    }
    if (latest_input == nullptr || latest_input->IsBefore(earliest)) return earliest;
    for (Node* a : anchors_) {
      for (Node* user : a->users()) {
        bool inside = std::find(internal_.begin(), internal_.end(), user) !=
                      internal_.end();
        if (!inside && !latest_input->IsBefore(user)) return nullptr;
      }
    }
    Node* after = latest_input->next();
    return after;  // Never null: the output node follows every value.
  }

  Node* Copy(const Node& n, const absl::flat_hash_map<const Node*, Node*>& map) {
    auto map_arg = [&](const Argument& a, auto& self) -> Argument {
      if (a.is_node()) return Argument(map.at(a.node()));
      if (!a.is_list()) return a;
      ArgumentList list;
      for (const Argument& e : a.list()) list.push_back(self(e, self));
      return Argument(std::move(list));
    };
    std::vector<Argument> args;
    args.reserve(n.num_args());
    for (const Argument& a : n.args()) args.push_back(map_arg(a, map_arg));
    Kwargs kwargs;
    for (const auto& [k, v] : n.kwargs()) kwargs.emplace_back(k, map_arg(v, map_arg));
    std::string tensor_name;
    absl::string_view target = n.target();
    if (n.op() == OpCode::kGetAttr) target = tensor_name = TensorName(n.target());
    Graph& graph = module_.graph();
    Node* copy = graph.CreateNode(n.op(), target, std::move(args), std::move(kwargs));
    if (n.op() == OpCode::kGetAttr) {
      copy->meta().type = module_.FindTensor(copy->target())->type();
    } else if (n.op() == OpCode::kCallFunction) {
      types_.Apply(&n, copy);
    }
    return copy;
  }

  // The module's name for a tensor of the replacement, copied on first use.
  std::string TensorName(const std::string& name) {
    auto it = tensor_names_.find(name);
    if (it != tensor_names_.end()) return it->second;
    std::string fresh = module_.UniqueTensorName(name);
    const Tensor* t = replacement_.FindTensor(name);
    module_.SetTensor(fresh, t != nullptr ? *t : Tensor());
    tensor_names_[name] = fresh;
    return fresh;
  }

  Module& module_;
  const Module& replacement_;
  const PatternInfo& info_;
  std::vector<Node*> placeholders_;
  std::vector<const Node*> outputs_;
  absl::flat_hash_map<Node*, Node*> replaced_by_;
  absl::flat_hash_map<const Node*, Node*> map_;  // Replacement node -> copy.
  // The match being replaced: its (resolved) inputs, anchors and internal
  // nodes.
  std::vector<Node*> inputs_;
  std::vector<Node*> anchors_;
  std::vector<Node*> internal_;
  size_t replacement_nodes_ = 0;  // Nodes one match adds (reserve hint).
  absl::flat_hash_map<std::string, std::string> tensor_names_;
  InferredTypeCache types_;  // Copies of one replacement node share types.
};

}  // namespace

absl::StatusOr<std::vector<ReplacedPattern>> ReplacePattern(
    Module& module, const Module& pattern, const Module& replacement,
    const ReplaceOptions& options, const PassContext* ctx) {
  absl::StatusOr<PatternInfo> info = AnalyzePattern(pattern.graph());
  if (!info.ok()) return info.status();
  for (const Node* n : replacement.graph().nodes()) {
    if (n->op() == OpCode::kGetAttr && replacement.FindTensor(n->target()) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replacement reads tensor '", n->target(), "', which it does not define"));
    }
    if (n->op() == OpCode::kCallModule) {
      return absl::InvalidArgumentError("replacements may not call submodules");
    }
  }
  Replacer replacer(module, replacement, *info);
  RETURN_IF_ERROR(
      replacer.Prepare(info->placeholders.size(), info->anchors.size()));
  const FoundMatches found = FindMatches(module.graph(), *info, options);
  std::vector<ReplacedPattern> replaced;
  replaced.reserve(found.size());
  for (size_t i = 0; i < found.size(); ++i) {
    if (i + kPrefetchAhead < found.size()) PrefetchNodes(found[i + kPrefetchAhead]);
    replacer.Replace(found[i], replaced);
  }
  // Provenance names the matched nodes, which are known only per match.
  if (ctx != nullptr) {
    for (ReplacedPattern& r : replaced) {
      for (Node* n : r.replacements) ctx->RecordProvenance(n, r.matched);
    }
  }
  return replaced;
}

}  // namespace graft::passes
