#ifndef GRAFT_TESTS_BACKENDS_ATTENTION_MODELS_H_
#define GRAFT_TESTS_BACKENDS_ATTENTION_MODELS_H_

// Attention written out as exports have it (matmul, scale, mask, softmax,
// matmul), for the tests of passes/fuse_attention.h and of the kernels
// that run graft::attention.

#include <cstdint>
#include <random>
#include <vector>

#include "tests/backends/differential_test_util.h"

namespace graft::differential {

struct AttentionSpec {
  DType dtype = DType::kF32;
  std::vector<int64_t> lead = {2, 3};  // Batch, heads.
  int64_t t = 9, s = 9, d = 8, dv = 8;
  enum class Mask {
    kNone,
    kCausalTensor,   // A module tensor, true above the diagonal, filled with
                     // -inf.
    kFillWhereTrue,  // A random bool input [lead[0], 1, t, s]: where(mask,
                     // fill, scores).
    kKeepWhereTrue,  // The same mask read the other way: where(mask, scores,
                     // fill).
    kCausalAndWholeRows,  // As kCausalTensor, and every third query's row
                          // masked whole (softmax then averages v where the
                          // fill is finite).
  } mask = Mask::kCausalTensor;
  double fill = -INFINITY;
  double scale = 0.35;
  bool divide = false;  // div(scores, 1 / scale) instead of mul.
  bool keys_by_permute =
      true;  // kT = permute of [.., s, heads, d] (as exports), else transpose.
  // q, k and v split from one [batch, t, 3 heads d] input and permuted per
  // head, as a GPT-2 export has them (t == s, d == dv, two leading dims).
  bool packed_qkv = false;
  // The output's heads merged back: reshape(permute(out, 0, 2, 1, 3),
  // [batch, t, heads dv]), as the projection after attention reads it.
  bool merge_heads = false;
  double lo = -2, hi = 2;  // The inputs' range.
};

// kT from an input: a permute of [.., s, heads, d], or a transpose.
inline Node* Keys(ModuleBuilder& b, const AttentionSpec& spec) {
  Node* kt;
  if (spec.keys_by_permute && spec.lead.size() == 2) {
    // Keys as a projection leaves them: [batch, s, heads, d].
    Node* k = b.In(spec.dtype, {spec.lead[0], spec.s, spec.lead[1], spec.d},
                   spec.lo, spec.hi);
    kt = b.Call("permute", {k, Argument::IntList({0, 2, 3, 1})});
  } else {
    std::vector<int64_t> kd = spec.lead;
    kd.push_back(spec.s);
    kd.push_back(spec.d);
    kt = b.Call("transpose", {b.In(spec.dtype, kd, spec.lo, spec.hi),
                              int64_t{-2}, int64_t{-1}});
  }
  return kt;
}

// The attention of q, kT and v as `spec` writes it out.
inline Node* WrittenOutAttentionOf(ModuleBuilder& b, const AttentionSpec& spec,
                                   std::mt19937_64& rng, Node* q, Node* kt,
                                   Node* v) {
  Node* scores = b.Call("matmul", {q, kt});
  scores = spec.divide ? b.Call("div", {scores, 1.0 / spec.scale})
                       : b.Call("mul", {scores, spec.scale});
  using Mask = AttentionSpec::Mask;
  if (spec.mask == Mask::kCausalTensor || spec.mask == Mask::kCausalAndWholeRows) {
    const bool whole_rows = spec.mask == Mask::kCausalAndWholeRows;
    Tensor causal = RandomData(DType::kBool, {1, 1, spec.t, spec.s}, rng, 0, 1);
    for (int64_t i = 0; i < spec.t; ++i) {
      for (int64_t j = 0; j < spec.s; ++j)
        causal.data<bool>()[i * spec.s + j] = j > i || (whole_rows && i % 3 == 0);
    }
    scores = b.Call("where", {b.Const(causal), spec.fill, scores});
  } else if (spec.mask != Mask::kNone) {
    std::vector<int64_t> md =
        spec.lead;  // Broadcast over the last leading dim.
    if (!md.empty()) md.back() = 1;
    md.push_back(spec.t);
    md.push_back(spec.s);
    Node* mask = b.In(DType::kBool, md);
    scores = spec.mask == Mask::kFillWhereTrue
                 ? b.Call("where", {mask, spec.fill, scores})
                 : b.Call("where", {mask, scores, spec.fill});
  }
  return b.Call("matmul", {b.Call("softmax", {scores, int64_t{-1}}), v});
}

// Adds q, k and v (and the mask) as inputs of `b` and returns the
// attention's output node.
inline Node* WrittenOutAttention(ModuleBuilder& b, const AttentionSpec& spec,
                                 std::mt19937_64& rng) {
  std::vector<int64_t> qd = spec.lead, vd = spec.lead;
  qd.push_back(spec.t);
  qd.push_back(spec.d);
  vd.push_back(spec.s);
  vd.push_back(spec.dv);
  Node* q;
  Node* kt;
  Node* v;
  if (spec.packed_qkv) {
    const int64_t batch = spec.lead[0], heads = spec.lead[1],
                  width = heads * spec.d;
    Node* x = b.In(spec.dtype, {batch, spec.t, 3 * width}, spec.lo, spec.hi);
    Node* parts = b.Call(
        "split", {x, Argument::IntList({width, width, width}), int64_t{2}});
    std::vector<Node*> heads_of;
    for (int64_t i = 0; i < 3; ++i) {
      Node* part = b.Call("getitem", {parts, i});
      heads_of.push_back(
          b.Call("reshape",
                 {part, Argument::IntList({batch, spec.t, heads, spec.d})}));
    }
    q = b.Call("permute", {heads_of[0], Argument::IntList({0, 2, 1, 3})});
    kt = b.Call("permute", {heads_of[1], Argument::IntList({0, 2, 3, 1})});
    v = b.Call("permute", {heads_of[2], Argument::IntList({0, 2, 1, 3})});
  } else {
    q = b.In(spec.dtype, qd, spec.lo, spec.hi);
    kt = Keys(b, spec);
    v = b.In(spec.dtype, vd, spec.lo, spec.hi);
  }
  Node* out = WrittenOutAttentionOf(b, spec, rng, q, kt, v);
  if (spec.merge_heads) {
    out = b.Call(
        "reshape",
        {b.Call("permute", {out, Argument::IntList({0, 2, 1, 3})}),
         Argument::IntList({spec.lead[0], spec.t, spec.lead[1] * spec.dv})});
  }
  return out;
}

}  // namespace graft::differential

#endif  // GRAFT_TESTS_BACKENDS_ATTENTION_MODELS_H_
