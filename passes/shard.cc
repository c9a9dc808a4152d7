#include "passes/shard.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/collective_ops.h"
#include "graph/fused_ops.h"
#include "graph/graph.h"
#include "graph/op_traits.h"
#include "graph/verifier.h"
#include "passes/dce.h"
#include "passes/node_util.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

// How a value is split over the ranks: along `dim`, which holds `blocks`
// equal blocks, each cut into world_size contiguous pieces; a rank holds
// its piece of every block. One block is the plain Megatron split; three
// are a fused q/k/v projection's result.
struct Sharding {
  int64_t dim = 0;
  int64_t blocks = 1;
  bool operator==(const Sharding&) const = default;
};

// The part of `t` one rank keeps when `t` is split as `s` along `dim`.
Tensor SliceForRank(const Tensor& t, int64_t dim, int64_t blocks, int world, int rank) {
  std::vector<int64_t> dims = t.dims();
  const int64_t block = dims[dim] / blocks, piece = block / world;
  dims[dim] = piece * blocks;
  Tensor out(t.dtype(), dims);
  int64_t outer = 1, inner = static_cast<int64_t>(DTypeSize(t.dtype()));
  for (int64_t d = 0; d < dim; ++d) outer *= t.dim(d);
  for (int64_t d = dim + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const auto* src = static_cast<const std::byte*>(t.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  const size_t run = piece * inner;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * block + rank * piece;
      std::memcpy(dst, src + (o * t.dim(dim) + first) * inner, run);
      dst += run;
    }
  }
  return out;
}

// The node of call `n`'s tensor parameter "input" (positional or keyword),
// or null.
const Node* InputOf(const Node& n) {
  absl::StatusOr<OpCall> call = OpCall::Bind(n);
  return call.ok() ? call->TensorNode("input") : nullptr;
}

// Whether every user of `n` (a tuple) reads it through getitem.
bool OnlyGetItems(const Node& n) {
  for (const Node* user : n.users()) {
    if (!user->is_call("getitem")) return false;
  }
  return true;
}

// Sets parameter `param` of call `n`.
void SetCallParam(Node* n, absl::string_view param, Argument value) {
  CallOperands ops = WithParam(*n, param, std::move(value));
  n->SetArgs(std::move(ops.args));
  n->SetKwargs(std::move(ops.kwargs));
}

bool IsLinearLayer(const Node& n) {
  return n.is_call("linear") || n.is_call("matmul") || n.target() == kLinearActivationOp;
}

int64_t Rank(const Node* n) { return n->type().has_value() ? n->type()->rank() : -1; }

// The constant dims of a type, or nullopt if it is unknown.
std::optional<Shape> ShapeOf(const Node* n) {
  if (!n->type().has_value()) return std::nullopt;
  return n->type()->shape;
}

// Where input dim `d` of a reshape lands in the output when the value is
// split along it: the input and output dims form groups of equal element
// counts, and a contiguous split of d's group stays contiguous in the
// output when d is the group's outermost dim larger than 1 and the group's
// outermost output dim larger than 1 divides by `world`.
std::optional<int64_t> ReshapedDim(const Shape& in, const Shape& out, int64_t d, int64_t world) {
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    const size_t gi = i, gj = j;
    if (i < in.size() && in[i].is_symbolic()) {
      if (j >= out.size() || out[j] != in[i]) return std::nullopt;
      ++i, ++j;
    } else {
      if (j < out.size() && out[j].is_symbolic()) return std::nullopt;
      int64_t pi = i < in.size() ? in[i++].value() : 1;
      int64_t pj = j < out.size() ? out[j++].value() : 1;
      while (pi != pj) {
        if (pi < pj) {
          if (i >= in.size() || in[i].is_symbolic()) return std::nullopt;
          pi *= in[i++].value();
        } else {
          if (j >= out.size() || out[j].is_symbolic()) return std::nullopt;
          pj *= out[j++].value();
        }
      }
    }
    if (d < static_cast<int64_t>(gi) || d >= static_cast<int64_t>(i)) continue;
    for (size_t k = gi; k < static_cast<size_t>(d); ++k) {
      if (in[k] != Dim(1)) return std::nullopt;
    }
    for (size_t k = gj; k < j; ++k) {
      if (out[k] == Dim(1)) continue;
      if (out[k].is_symbolic() || out[k].value() % world != 0) return std::nullopt;
      return static_cast<int64_t>(k);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

class Sharder {
 public:
  Sharder(const Module& in, const ShardOptions& options, ShardReport& report)
      : in_(in),
        world_(options.world_size),
        rank_(options.rank),
        strategy_(options.strategy),
        rows_in_place_(options.rows_in_place && options.strategy == ShardStrategy::kBatch),
        report_(report) {}

  absl::StatusOr<Module> Run() {
    for (const auto& [name, t] : in_.tensors()) out_.SetTensor(name, t.value, t.init);
    for (const auto& [name, sub] : in_.submodules()) out_.AddSubmodule(name, sub->Clone());
    Graph& graph = out_.graph();
    graph.ReserveNodes(in_.graph().num_nodes());
    for (const Node* old : in_.graph().nodes()) {
      RETURN_IF_ERROR(Lower(*old));
    }
    RETURN_IF_ERROR(PropagateShapes(out_).status());
    EliminateDeadCode(out_.graph());
    RemoveUnreadTensors(out_);
    RETURN_IF_ERROR(Verify(out_));
    return std::move(out_);
  }

 private:
  Graph& graph() { return out_.graph(); }

  std::optional<Sharding> ShardingOf(const Node* n) const {
    auto it = sharded_.find(n);
    if (it == sharded_.end()) return std::nullopt;
    return it->second;
  }

  // The new node `old` became.
  Node* New(const Node* old) const { return map_.at(old); }

  Node* Call(absl::string_view op, std::vector<Argument> args, Kwargs kwargs = {}) {
    Node* n = graph().CallFunction(op, std::move(args), std::move(kwargs));
    InferAndSetType(n);
    return n;
  }

  // Copies `old` over the new nodes of its inputs. A call's type is
  // inferred again once its rule is done (Lower): it may be split.
  Node* Copy(const Node& old) {
    Node* n = graph().CopyNode(old, map_);
    if (n->op() == OpCode::kCallFunction) {
      n->meta().type.reset();
      n->meta().tuple_types.clear();
    }
    map_[&old] = n;
    return n;
  }

  // A get_attr of this rank's part of `tensor_node`'s tensor.
  Node* SlicedConstant(const Node* tensor_node, int64_t dim, int64_t blocks) {
    const Tensor* t = AttrTensor(out_, tensor_node);
    Tensor part = SliceForRank(*t, dim, blocks, world_, rank_);
    std::string name = out_.UniqueTensorName(absl::StrCat(tensor_node->target(), "_shard"));
    out_.SetTensor(name, part);
    Node* n = graph().GetAttr(name, part.type());
    return n;
  }

  bool IsConstant(const Node* n) const { return AttrTensor(out_, n) != nullptr; }

  // The whole value of a split `value` on every rank (cached).
  Node* Gathered(Node* value) {
    std::optional<Sharding> s = ShardingOf(value);
    if (!s.has_value()) return value;
    auto cached = gathered_.find(value);
    if (cached != gathered_.end()) return cached->second;
    Node* whole;
    if (s->blocks == 1) {
      whole = GatherPieces(value, s->dim);
    } else {
      // Each block is cut into rank pieces: gather block by block, then
      // join the blocks.
      const int64_t piece = value->type()->shape[s->dim].value() / s->blocks;
      Node* parts = Call("split", {Argument(value), Argument(piece), Argument(s->dim)});
      ArgumentList blocks;
      for (int64_t b = 0; b < s->blocks; ++b) {
        blocks.push_back(Argument(GatherPieces(Call("getitem", {Argument(parts), Argument(b)}),
                                               s->dim)));
      }
      whole = Call("concat", {Argument(std::move(blocks)), Argument(s->dim)});
    }
    gathered_[value] = whole;
    return whole;
  }

  // Every rank's piece of `x` along `dim`, in rank order. NCCL gathers
  // whole rank blocks, so the dim goes to the front unless every dim before
  // it has size 1.
  Node* GatherPieces(Node* x, int64_t dim) {
    const Shape shape = x->type()->shape;
    bool leading = true;
    for (int64_t k = 0; k < dim; ++k) leading = leading && shape[k] == Dim(1);
    std::vector<int64_t> perm;
    if (!leading) {
      perm.push_back(dim);
      for (int64_t k = 0; k < static_cast<int64_t>(shape.size()); ++k) {
        if (k != dim) perm.push_back(k);
      }
      x = Call("permute", {Argument(x), Argument::IntList(perm)});
    }
    x = Call(kAllGatherOp, {Argument(x), Argument(leading ? dim : int64_t{0}),
                            Argument(static_cast<int64_t>(world_))});
    ++report_.all_gathers;
    if (!leading) {
      std::vector<int64_t> inverse(perm.size());
      for (size_t k = 0; k < perm.size(); ++k) inverse[perm[k]] = static_cast<int64_t>(k);
      x = Call("permute", {Argument(x), Argument::IntList(inverse)});
    }
    return x;
  }

  // Copies `old` with every split input gathered first.
  void CopyWhole(const Node& old) {
    Node* n = Copy(old);
    for (Node* input : n->unique_inputs()) {
      if (ShardingOf(input).has_value()) {
        Node* whole = Gathered(input);
        graph().MoveBefore(n, nullptr);
        n->ReplaceInputWith(input, whole);
      }
    }
  }

  absl::Status Lower(const Node& old) {
    if (old.op() == OpCode::kPlaceholder) ++placeholders_;
    if (old.op() == OpCode::kPlaceholder && strategy_ == ShardStrategy::kBatch) {
      Copy(old);
      SplitBatch(old);
      return absl::OkStatus();
    }
    if (old.op() == OpCode::kOutput) {
      LowerOutput(old);
      return absl::OkStatus();
    }
    if (old.op() != OpCode::kCallFunction) {
      CopyWhole(old);
      return absl::OkStatus();
    }
    bool any_split = false;
    for (const Node* input : old.unique_inputs()) {
      any_split = any_split || ShardingOf(New(input)).has_value() ||
                  split_tuples_.contains(New(input));
    }
    if (!any_split) {
      if (strategy_ != ShardStrategy::kTensor || !ColumnParallel(old)) Copy(old);
    } else if (!ShardSplitValue(old)) {
      CopyWhole(old);
    }
    // Rules change arguments after copying: the type follows them.
    InferAndSetType(New(&old));
    return absl::OkStatus();
  }

  // ShardStrategy::kBatch: the rank's rows of input `old` (already copied),
  // when its first dim is the batch.
  void SplitBatch(const Node& old) {
    std::optional<Shape> shape = ShapeOf(&old);
    if (!shape.has_value() || shape->empty() || (*shape)[0].is_symbolic()) return;
    const int64_t rows = (*shape)[0].value();
    if (batch_ < 0) batch_ = rows;
    if (rows != batch_ || rows == 0 || rows % world_ != 0) return;
    const int64_t piece = rows / world_;
    Node* part;
    if (rows_in_place_) {
      // The placeholder itself becomes the rank's rows: the caller passes
      // only those.
      part = New(&old);
      TensorType rank_rows = *old.type();
      rank_rows.shape[0] = Dim(piece);
      part->set_type(rank_rows);
      report_.rank_row_inputs.push_back(placeholders_ - 1);
    } else {
      part = Call("slice", {Argument(New(&old)), Argument(int64_t{0}),
                            Argument(rank_ * piece), Argument((rank_ + 1) * piece)});
      map_[&old] = part;
    }
    sharded_[part] = Sharding{0, 1};
    report_.batch_split_inputs.push_back(old.name());
  }

  // Whether the output's value `n` stays the rank's rows (rows_in_place).
  bool LeftAsRankRows(const Node* n) const {
    std::optional<Sharding> s = ShardingOf(n);
    return rows_in_place_ && s.has_value() && s->dim == 0 && s->blocks == 1;
  }

  // The output: split values gathered, except those left as the rank's
  // rows, whose indices the report lists. The outputs keep their names
  // (callers see them): a gathered split value takes another.
  void LowerOutput(const Node& old) {
    Node* n = Copy(old);
    std::vector<Node*> values;
    if (n->num_args() == 1 && n->arg(0).is_node()) {
      values.push_back(n->arg(0).node());
    } else if (n->num_args() == 1 && n->arg(0).is_list()) {
      for (const Argument& a : n->arg(0).list()) values.push_back(a.is_node() ? a.node() : nullptr);
    }
    // Output indices count a tuple's elements: left only where each value
    // is one tensor.
    bool tensors = true;
    for (Node* v : values) tensors = tensors && v != nullptr && v->type().has_value();
    absl::flat_hash_set<const Node*> left;
    for (size_t i = 0; i < values.size() && tensors; ++i) {
      if (!LeftAsRankRows(values[i])) continue;
      report_.rank_row_outputs.push_back(static_cast<int>(i));
      left.insert(values[i]);
    }
    for (Node* input : n->unique_inputs()) {
      if (!ShardingOf(input).has_value() || left.contains(input)) continue;
      Node* whole = Gathered(input);
      graph().MoveBefore(n, nullptr);
      n->ReplaceInputWith(input, whole);
      const std::string name = input->name();
      (void)graph().Rename(input, graph().UniqueName(name + "_part"));
      (void)graph().Rename(whole, name);
    }
  }

  // --- Layers whose input every rank holds whole. ---

  // How many blocks the result of `old` holds: its users split the last
  // dim into k equal parts (a fused q/k/v projection), else 1.
  // Pointwise ops of the same shape in between (a bias added) are looked
  // through.
  int64_t BlocksOf(const Node& old) const {
    if (Rank(&old) < 1) return 1;
    const int64_t last = Rank(&old) - 1;
    int64_t blocks = 0;
    std::vector<Node*> users = old.users();
    for (size_t u = 0; u < users.size(); ++u) {
      const Node* user = users[u];
      if (KindOf(*user) == OpKind::kPointwise && user->type() == old.type()) {
        for (Node* next : user->users()) users.push_back(next);
        continue;
      }
      if (!user->is_call("split")) return 1;
      absl::StatusOr<OpCall> call = OpCall::Bind(*user);
      if (!call.ok() || WrapDim(call->Int("dim"), last + 1) != last) return 1;
      std::vector<int64_t> sizes = call->Ints("split_size_or_sections");
      const Dim features_dim = old.type()->shape[last];
      if (features_dim.is_symbolic() || sizes.empty() || sizes[0] <= 0) return 1;
      const int64_t features = features_dim.value();
      int64_t k = sizes.size() == 1 ? features / sizes[0] : static_cast<int64_t>(sizes.size());
      for (int64_t s : sizes) {
        if (s * k != features) return 1;
      }
      if (blocks != 0 && blocks != k) return 1;
      blocks = k;
    }
    return std::max<int64_t>(blocks, 1);
  }

  // Whether a value made by `old` reaches another linear layer through ops
  // that work on split values: then splitting `old` by columns pays.
  bool ReachesLinearLayer(const Node& old) const {
    std::vector<const Node*> work = {&old};
    absl::flat_hash_map<const Node*, bool> seen;
    while (!work.empty() && seen.size() < 256) {
      const Node* n = work.back();
      work.pop_back();
      for (const Node* user : n->users()) {
        if (seen.contains(user) || user->op() != OpCode::kCallFunction) continue;
        seen[user] = true;
        if (IsLinearLayer(*user) && InputOf(*user) == n) {
          std::optional<Weight> w = WeightOf(*user);
          if (w.has_value()) return true;
        }
        OpKind kind = KindOf(*user);
        if (kind == OpKind::kPointwise || kind == OpKind::kView || user->is_call("softmax") ||
            user->is_call("log_softmax") || user->is_call("matmul")) {
          work.push_back(user);
        }
      }
    }
    return false;
  }

  // The weight of a linear layer: its node, and which dim holds the output
  // features ([out, in] for linear, [in, out] for matmul).
  struct Weight {
    const Node* node = nullptr;
    int64_t out_dim = 0;
  };
  std::optional<Weight> WeightOf(const Node& old) const {
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    if (!call.ok()) return std::nullopt;
    const bool matmul = old.is_call("matmul");
    const Node* w = call->TensorNode(matmul ? "other" : "weight");
    if (w == nullptr || w->op() != OpCode::kGetAttr || Rank(w) != 2) return std::nullopt;
    const bool in_out = matmul || (old.target() == kLinearActivationOp &&
                                   call->String("weight_layout") == "in_out");
    return Weight{w, in_out ? 1 : 0};
  }

  // Splits a linear layer by output features (column parallel). False if
  // it is not one, or not worth it.
  bool ColumnParallel(const Node& old) {
    if (!IsLinearLayer(old) || !old.type().has_value() || Rank(&old) < 1) return false;
    std::optional<Weight> w = WeightOf(old);
    if (!w.has_value() || !IsConstant(New(w->node))) return false;
    const Dim features = old.type()->shape.back();
    const int64_t blocks = BlocksOf(old);
    if (features.is_symbolic() || features.value() % (blocks * world_) != 0 ||
        !ReachesLinearLayer(old)) {
      return false;
    }
    Node* n = Copy(old);
    n->ReplaceInputWith(New(w->node), SlicedConstant(New(w->node), w->out_dim, blocks));
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    if (!old.is_call("matmul") && call->TensorNode("bias") != nullptr) {
      Node* bias = New(call->TensorNode("bias"));
      if (!IsConstant(bias)) return Undo(old, n);
      n->ReplaceInputWith(bias, SlicedConstant(bias, 0, blocks));
    }
    graph().MoveBefore(n, nullptr);
    InferAndSetType(n);
    sharded_[n] = Sharding{Rank(&old) - 1, blocks};
    report_.column_parallel.push_back(old.name());
    return true;
  }

  bool Undo(const Node& old, Node* n) {
    map_.erase(&old);
    (void)graph().EraseNode(n);
    return false;
  }

  // --- Ops with a split input. ---

  // Lowers `old`, some of whose inputs are split, keeping its result split;
  // false (nothing made) where it cannot.
  bool ShardSplitValue(const Node& old) {
    if (old.is_call("getitem")) return GetItem(old);
    // A tuple of split parts is read through getitem only.
    for (const Node* input : old.unique_inputs()) {
      if (split_tuples_.contains(New(input))) return false;
    }
    if (IsLinearLayer(old)) {
      if (old.is_call("matmul") && !WeightOf(old).has_value()) return MatmulOfSplit(old);
      return LinearOfSplit(old);
    }
    if (KindOf(old) == OpKind::kPointwise) return Pointwise(old);
    if (old.is_call("identity") || old.is_call("dropout")) return SameSplit(old, 0);
    if (old.is_call("reshape") || old.is_call("flatten") || old.is_call("squeeze") ||
        old.is_call("unsqueeze")) {
      return Reshape(old);
    }
    if (old.is_call("permute") || old.is_call("transpose")) return Permute(old);
    if (old.is_call("split")) return Split(old);
    if (old.is_call("slice")) return Slice(old);
    if (old.is_call("softmax") || old.is_call("log_softmax") || old.is_call("index_select")) {
      return AlongOtherDim(old);
    }
    if (old.is_call("layer_norm")) return LayerNorm(old);
    if (IsPerSampleOp(old)) return PerSample(old);
    if (old.is_call("pad")) return Pad(old);
    if (old.is_call("argmax")) return ArgMax(old);
    if (old.is_call("gather")) return Gather(old);
    if (old.is_call("concat")) return Concat(old);
    if (old.is_call("sum") || old.is_call("mean") || old.is_call("amax") || old.is_call("amin")) {
      return Reduce(old);
    }
    if (old.is_call("expand")) return Expand(old);
    return false;
  }

  // Broadcasting that keeps the split dim's size (-1 there, or its whole
  // size, which becomes the rank's part).
  bool Expand(const Node& old) {
    Sharding s;
    Node* input = SplitMainInput(old, &s);
    if (input == nullptr || s.blocks != 1) return false;
    std::optional<Shape> in = ShapeOf(InputOf(old));
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    std::vector<int64_t> sizes = call->Ints("size");
    const int64_t dim = s.dim + static_cast<int64_t>(sizes.size()) - Rank(InputOf(old));
    if (!in.has_value() || dim < 0 || dim >= static_cast<int64_t>(sizes.size())) return false;
    const Dim whole = (*in)[s.dim];
    if (sizes[dim] != -1) {
      if (!whole.is_constant() || sizes[dim] != whole.value() || whole.value() % world_ != 0) {
        return false;
      }
      sizes[dim] = whole.value() / world_;
    }
    Node* n = CopySplit(old, Sharding{dim, 1});
    SetCallParam(n, "size", Argument::IntList(sizes));
    return true;
  }

  // Reductions over named dims other than the split one.
  bool Reduce(const Node& old) {
    Sharding s;
    if (SplitMainInput(old, &s) == nullptr) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    if (call->IsNone("dim") || call->Ints("dim").empty()) return false;
    const int64_t rank = Rank(InputOf(old));
    int64_t before = 0;  // Reduced dims before the split one.
    for (int64_t d : call->Ints("dim")) {
      const int64_t w = WrapDim(d, rank);
      if (w == s.dim) return false;
      if (w < s.dim) ++before;
    }
    if (!call->Bool("keepdim")) s.dim -= before;
    CopySplit(old, s);
    return true;
  }

  // Joining along another dim than the split one, every part split alike.
  bool Concat(const Node& old) {
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    std::optional<Sharding> s;
    for (const Node* part : call->TensorNodes("tensors")) {
      std::optional<Sharding> sp = ShardingOf(New(part));
      if (!sp.has_value() || (s.has_value() && *s != *sp)) return false;
      s = sp;
    }
    if (!s.has_value() || WrapDim(call->Int("dim"), Rank(&old)) == s->dim) return false;
    CopySplit(old, *s);
    return true;
  }

  // The largest along another dim than the split one.
  bool ArgMax(const Node& old) {
    Sharding s;
    if (OnlySplitInput(old, &s) == nullptr) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    if (call->IsNone("dim")) return false;
    const int64_t dim = WrapDim(call->Int("dim"), Rank(InputOf(old)));
    if (dim == s.dim) return false;
    if (!call->Bool("keepdim") && dim < s.dim) --s.dim;
    CopySplit(old, s);
    return true;
  }

  // Picking along another dim than the split one, input and index split
  // alike (TopK's rounds: each sample's picks from its own row).
  bool Gather(const Node& old) {
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    const Node* input = call->TensorNode("input");
    const Node* index = call->TensorNode("index");
    if (input == nullptr || index == nullptr) return false;
    std::optional<Sharding> si = ShardingOf(New(input)), sx = ShardingOf(New(index));
    if (!si.has_value() || !sx.has_value() || *si != *sx) return false;
    if (WrapDim(call->Int("dim"), Rank(input)) == si->dim) return false;
    // An index shorter than the input along the split dim would pair each
    // rank's index rows with other input rows.
    std::optional<Shape> in = ShapeOf(input), at = ShapeOf(index);
    if (!in.has_value() || !at.has_value() || (*in)[si->dim] != (*at)[si->dim]) return false;
    CopySplit(old, *si);
    return true;
  }

  // Padding of dims other than the split one (a reflect pad of a batch
  // split's pictures).
  bool Pad(const Node& old) {
    Sharding s;
    Node* input = SplitMainInput(old, &s);
    if (input == nullptr) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    // Pairs from the last dim back: they reach the last size / 2 dims.
    const int64_t padded = static_cast<int64_t>(call->Ints("pad").size() + 1) / 2;
    if (s.dim >= Rank(input) - padded) return false;
    CopySplit(old, s);
    return true;
  }


  // Ops that compute each sample (first dim) of their input on its own:
  // a batch split passes through them.
  static bool IsPerSampleOp(const Node& n) {
    return n.is_call("conv2d") || n.is_call("max_pool2d") || n.is_call("avg_pool2d") ||
           n.is_call("adaptive_avg_pool2d") || n.is_call("batch_norm");
  }

  bool PerSample(const Node& old) {
    Sharding s;
    if (SplitMainInput(old, &s) == nullptr || s.dim != 0) return false;
    CopySplit(old, s);
    return true;
  }

  // The only split tensor input of `old`, or null.
  Node* OnlySplitInput(const Node& old, Sharding* s) const {
    Node* found = nullptr;
    for (const Node* input : old.unique_inputs()) {
      std::optional<Sharding> si = ShardingOf(New(input));
      if (!si.has_value()) continue;
      if (found != nullptr) return nullptr;
      found = New(input);
      *s = *si;
    }
    return found;
  }

  // The only split input of `old` where it is its `input` parameter, or
  // null.
  Node* SplitMainInput(const Node& old, Sharding* s) const {
    Node* input = OnlySplitInput(old, s);
    const Node* main = InputOf(old);
    return input != nullptr && main != nullptr && input == New(main) ? input : nullptr;
  }

  // Copies `old`, whose result is split as `s`.
  Node* CopySplit(const Node& old, Sharding s) {
    Node* n = Copy(old);
    sharded_[n] = s;
    return n;
  }

  bool SameSplit(const Node& old, int64_t) {
    Sharding s;
    if (OnlySplitInput(old, &s) == nullptr) return false;
    CopySplit(old, s);
    return true;
  }

  bool Pointwise(const Node& old) {
    const int64_t out_rank = Rank(&old);
    if (out_rank < 0) return false;
    std::optional<Sharding> s;
    for (const Node* input : old.unique_inputs()) {
      std::optional<Sharding> si = ShardingOf(New(input));
      if (!si.has_value()) continue;
      Sharding mapped{si->dim + out_rank - Rank(input), si->blocks};
      if (s.has_value() && *s != mapped) return false;
      s = mapped;
    }
    // Whole inputs either broadcast along the split dim or are constants
    // this rank takes its part of.
    std::vector<std::pair<Node*, Node*>> replace;
    for (const Node* input : old.unique_inputs()) {
      if (ShardingOf(New(input)).has_value()) continue;
      if (!input->type().has_value()) return false;
      const int64_t dim = s->dim - (out_rank - Rank(input));
      if (dim < 0 || input->type()->shape[dim] == Dim(1)) continue;
      if (!IsConstant(New(input))) return false;
      replace.emplace_back(New(input), SlicedConstant(New(input), dim, s->blocks));
    }
    Node* n = CopySplit(old, *s);
    for (auto [from, to] : replace) n->ReplaceInputWith(from, to);
    graph().MoveBefore(n, nullptr);
    return true;
  }

  bool Reshape(const Node& old) {
    Sharding s;
    Node* input = OnlySplitInput(old, &s);
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    if (input == nullptr || s.blocks != 1 || !call.ok()) return false;
    std::optional<Shape> in = ShapeOf(call->TensorNode("input"));
    std::optional<Shape> out = ShapeOf(&old);
    if (!in.has_value() || !out.has_value()) return false;
    // squeeze works on the local shape: a split dim of one element per rank
    // would vanish on the ranks only, unless the dims it squeezes are named
    // and the split one is not among them.
    if (old.is_call("squeeze") && (*in)[s.dim] == Dim(world_)) {
      if (call->IsNone("dim")) return false;
      for (int64_t d : call->Ints("dim")) {
        if (WrapDim(d, static_cast<int64_t>(in->size())) == s.dim) return false;
      }
    }
    std::optional<int64_t> dim = ReshapedDim(*in, *out, s.dim, world_);
    if (!dim.has_value()) return false;
    Node* n = CopySplit(old, Sharding{*dim, 1});
    if (old.is_call("reshape")) {
      std::vector<int64_t> sizes = call->Ints("shape");
      if (sizes[*dim] != -1) sizes[*dim] /= world_;
      SetCallParam(n, "shape", Argument::IntList(sizes));
    }
    return true;
  }

  bool Permute(const Node& old) {
    Sharding s;
    if (OnlySplitInput(old, &s) == nullptr) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    const int64_t rank = Rank(&old);
    int64_t dim = -1;
    if (old.is_call("permute")) {
      std::vector<int64_t> dims = call->Ints("dims");
      for (size_t k = 0; k < dims.size(); ++k) {
        if (WrapDim(dims[k], rank) == s.dim) dim = static_cast<int64_t>(k);
      }
    } else {
      const int64_t d0 = WrapDim(call->Int("dim0"), rank), d1 = WrapDim(call->Int("dim1"), rank);
      dim = s.dim == d0 ? d1 : s.dim == d1 ? d0 : s.dim;
    }
    if (dim < 0) return false;
    CopySplit(old, Sharding{dim, s.blocks});
    return true;
  }

  // split along the split dim into one part per block, or along another dim.
  bool Split(const Node& old) {
    Sharding s;
    Node* input = OnlySplitInput(old, &s);
    // The parts are split only where getitem reads them.
    if (input == nullptr || !OnlyGetItems(old)) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    const int64_t dim = WrapDim(call->Int("dim"), Rank(input));
    if (dim != s.dim) {
      Node* n = Copy(old);
      split_tuples_[n] = s;
      return true;
    }
    if (s.blocks == 1 || BlocksOf(*InputOf(old)) != s.blocks) return false;
    const int64_t piece = input->type()->shape[dim].value() / s.blocks;
    Node* n = Copy(old);
    SetCallParam(n, "split_size_or_sections", Argument(piece));
    split_tuples_[n] = Sharding{dim, 1};
    return true;
  }

  bool GetItem(const Node& old) {
    const Node* input = InputOf(old);
    if (input == nullptr) return false;
    Node* tuple = New(input);
    auto it = split_tuples_.find(tuple);
    if (it == split_tuples_.end()) return false;
    CopySplit(old, it->second);
    return true;
  }

  // slice along another dim, or of one whole block along the split dim.
  bool Slice(const Node& old) {
    Sharding s;
    Node* input = OnlySplitInput(old, &s);
    if (input == nullptr) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    const int64_t dim = WrapDim(call->Int("dim"), Rank(input));
    if (dim != s.dim) {
      CopySplit(old, s);
      return true;
    }
    const Shape whole = InputOf(old)->type()->shape;
    const int64_t size = whole[dim].value(), block = size / s.blocks;
    if (s.blocks == 1 || call->Int("step") != 1) return false;
    int64_t start = call->IsNone("start") ? 0 : call->Int("start");
    int64_t end = call->IsNone("end") ? size : call->Int("end");
    if (start < 0) start += size;
    if (end < 0) end += size;
    end = std::min(end, size);
    if (start % block != 0 || end - start != block) return false;
    const int64_t piece = block / world_;
    Node* n = CopySplit(old, Sharding{dim, 1});
    SetCallParam(n, "start", Argument(start / block * piece));
    SetCallParam(n, "end", Argument(start / block * piece + piece));
    return true;
  }

  // An op along its dim other than the split one: softmax and
  // log_softmax, index_select by whole indices (a resize's taps).
  bool AlongOtherDim(const Node& old) {
    Sharding s;
    Node* input = SplitMainInput(old, &s);
    if (input == nullptr) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    if (WrapDim(call->Int("dim"), Rank(input)) == s.dim) return false;
    CopySplit(old, s);
    return true;
  }

  // layer_norm over trailing dims that leave the split dim out; its weight
  // and bias cover only those dims.
  bool LayerNorm(const Node& old) {
    Sharding s;
    Node* input = SplitMainInput(old, &s);
    if (input == nullptr) return false;
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    const int64_t normalized = static_cast<int64_t>(call->Ints("normalized_shape").size());
    if (s.dim >= Rank(&old) - normalized) return false;
    CopySplit(old, s);
    return true;
  }

  // matmul of two computed values: both split along the same batch dim
  // (attention's heads), the left one by rows, the right one by columns,
  // or both along the contracted dim (a partial sum, then all_reduce).
  bool MatmulOfSplit(const Node& old) {
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    const Node* a_old = call->TensorNode("input");
    const Node* b_old = call->TensorNode("other");
    const int64_t ra = Rank(a_old), rb = Rank(b_old), ro = Rank(&old);
    if (ra < 2 || rb < 2 || ro < 2) return false;
    std::optional<Sharding> sa = ShardingOf(New(a_old)), sb = ShardingOf(New(b_old));
    // In output coordinates; the contracted dim is -1 (a) and -2 (b).
    auto out_dim = [ro](const std::optional<Sharding>& s, int64_t r, bool left) -> int64_t {
      if (!s.has_value()) return -100;
      if (s->dim == r - (left ? 1 : 2)) return -1;  // contracted
      return s->dim + ro - r;
    };
    const int64_t da = out_dim(sa, ra, true), db = out_dim(sb, rb, false);
    if (sa.has_value() && sb.has_value()) {
      if (sa->blocks != sb->blocks) return false;
      if (da == -1 && db == -1 && sa->blocks == 1) {
        Node* n = Copy(old);
        AllReduceAfter(old, n);
        return true;
      }
      if (da != db || da < 0 || da >= ro - 2) return false;
      CopySplit(old, Sharding{da, sa->blocks});
      return true;
    }
    const std::optional<Sharding>& s = sa.has_value() ? sa : sb;
    const int64_t d = sa.has_value() ? da : db;
    const Node* whole = sa.has_value() ? b_old : a_old;
    const int64_t rw = sa.has_value() ? rb : ra;
    if (d == -1) return false;
    if (d < ro - 2) {
      // A batch dim: the whole side must broadcast along it.
      const int64_t dw = d - (ro - rw);
      if (dw >= 0 && (!whole->type().has_value() || whole->type()->shape[dw] != Dim(1))) {
        return false;
      }
    } else if ((sa.has_value() && d != ro - 2) || (sb.has_value() && d != ro - 1)) {
      return false;
    }
    CopySplit(old, Sharding{d, s->blocks});
    return true;
  }

  // A linear layer whose input is split: by input features (row parallel,
  // then all_reduce and the bias), or along a batch dim (the weight whole).
  bool LinearOfSplit(const Node& old) {
    std::optional<Weight> w = WeightOf(old);
    absl::StatusOr<OpCall> call = OpCall::Bind(old);
    if (!w.has_value() || !IsConstant(New(w->node))) return false;
    Node* input = New(call->TensorNode("input"));
    std::optional<Sharding> s = ShardingOf(input);
    const int64_t rank = Rank(input);
    for (const Node* other : old.unique_inputs()) {
      if (New(other) != input && ShardingOf(New(other)).has_value()) return false;
    }
    if (!s.has_value()) return false;
    if (s->dim != rank - 1) {
      CopySplit(old, Sharding{s->dim, s->blocks});
      return true;
    }
    if (s->blocks != 1) return false;
    const Node* bias_old = old.is_call("matmul") ? nullptr : call->TensorNode("bias");
    Node* weight = SlicedConstant(New(w->node), 1 - w->out_dim, 1);
    Node* product;
    if (old.is_call("matmul")) {
      product = Call("matmul", {Argument(input), Argument(weight)});
    } else if (w->out_dim == 0) {
      product = Call("linear", {Argument(input), Argument(weight)});
    } else {
      product = Call("matmul", {Argument(input), Argument(weight)});
    }
    Node* sum = Call(kAllReduceOp, {Argument(product), Argument(static_cast<int64_t>(world_))});
    ++report_.all_reduces;
    if (bias_old != nullptr) sum = Call("add", {Argument(sum), Argument(New(bias_old))});
    if (old.target() == kLinearActivationOp) {
      const std::string& act = call->String("activation");
      sum = act == "relu" ? Call("relu", {Argument(sum)})
                          : Call("gelu", {Argument(sum)},
                                 {{"approximate", Argument(act == "gelu" ? "none" : "tanh")}});
    }
    map_[&old] = sum;
    report_.row_parallel.push_back(old.name());
    return true;
  }

  // Puts graft::all_reduce after `n`, the new node of `old`, a partial sum.
  void AllReduceAfter(const Node& old, Node* n) {
    InferAndSetType(n);
    Node* sum = Call(kAllReduceOp, {Argument(n), Argument(static_cast<int64_t>(world_))});
    ++report_.all_reduces;
    map_[&old] = sum;
  }

  const Module& in_;
  const int world_, rank_;
  const ShardStrategy strategy_;
  const bool rows_in_place_;  // ShardOptions::rows_in_place, for kBatch.
  ShardReport& report_;
  Module out_;
  absl::flat_hash_map<const Node*, Node*> map_;         // Old node -> new.
  absl::flat_hash_map<const Node*, Sharding> sharded_;  // New split values.
  absl::flat_hash_map<const Node*, Sharding> split_tuples_;  // New splits' parts.
  absl::flat_hash_map<const Node*, Node*> gathered_;    // Split -> whole.
  int64_t batch_ = -1;  // kBatch: the first input's first dim.
  int placeholders_ = 0;  // Placeholders lowered so far.
};

}  // namespace

absl::string_view ShardStrategyName(ShardStrategy strategy) {
  return strategy == ShardStrategy::kBatch ? "batch" : "tensor";
}

absl::StatusOr<ShardStrategy> ParseShardStrategy(absl::string_view name) {
  if (name == "tensor") return ShardStrategy::kTensor;
  if (name == "batch") return ShardStrategy::kBatch;
  return absl::InvalidArgumentError(
      absl::StrCat("a sharding strategy is \"tensor\" or \"batch\", got \"", name, "\""));
}

std::string ShardReport::Summary() const {
  if (strategy == ShardStrategy::kBatch) {
    std::string joined;
    if (!rank_row_outputs.empty()) {
      joined = absl::StrCat("; ", rank_row_outputs.size(), " output",
                            rank_row_outputs.size() == 1 ? "" : "s",
                            " joined from the ranks' rows");
    }
    return absl::StrCat(batch_split_inputs.size(), " input",
                        batch_split_inputs.size() == 1 ? "" : "s",
                        " split along the batch; ", all_reduces, " all_reduce, ", all_gathers,
                        " all_gather", joined);
  }
  return absl::StrCat(column_parallel.size(), " column-parallel, ", row_parallel.size(),
                      " row-parallel layers; ", all_reduces, " all_reduce, ", all_gathers,
                      " all_gather");
}

absl::StatusOr<std::unique_ptr<ShardPass>> ShardPass::FromOptions(const PassOptions& options) {
  ASSIGN_OR_RETURN(int64_t world, options.GetInt("world", 2));
  ASSIGN_OR_RETURN(int64_t rank, options.GetInt("rank", 0));
  ASSIGN_OR_RETURN(ShardStrategy strategy, ParseShardStrategy(options.GetString("by", "tensor")));
  if (world < 1 || world > 1024 || rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard{world=", world, ",rank=", rank,
                     "}: needs 1 <= world <= 1024 and 0 <= rank < world"));
  }
  return std::make_unique<ShardPass>(
      ShardOptions{static_cast<int>(world), static_cast<int>(rank), strategy});
}

absl::StatusOr<bool> ShardPass::Run(Module& module, PassContext&) {
  if (options_.world_size == 1) return false;
  ASSIGN_OR_RETURN(module, ShardModule(module, options_));
  return true;
}

absl::StatusOr<Module> ShardModule(const Module& module, const ShardOptions& options,
                                   ShardReport* report) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", options.rank, " of a world of ",
                                                   options.world_size, " ranks"));
  }
  Module typed = module.Clone();
  RETURN_IF_ERROR(PropagateShapes(typed).status());
  ShardReport local;
  local.strategy = options.strategy;
  if (options.world_size == 1) {
    if (report != nullptr) *report = local;
    return typed;
  }
  absl::StatusOr<Module> sharded = Sharder(typed, options, local).Run();
  if (sharded.ok() && report != nullptr) *report = local;
  return sharded;
}

}  // namespace graft::passes
