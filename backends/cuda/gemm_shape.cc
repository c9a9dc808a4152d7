#include "backends/cuda/gemm_shape.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/strided_view.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

bool AllOnes(const std::vector<int64_t>& dims) {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d == 1; });
}

// The leading (batch) dims of a matmul operand, padded on the left with
// ones to `rank`.
std::vector<int64_t> BatchDims(const std::vector<int64_t>& dims, size_t rank) {
  std::vector<int64_t> batch(dims.begin(), dims.end() - 2);
  batch.insert(batch.begin(), rank - batch.size(), 1);
  return batch;
}

absl::StatusOr<GemmShape> MatmulShape(const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b) {
  GemmShape s;
  if (a.empty() || b.empty()) return absl::UnimplementedError("matmul of a rank-0 tensor");
  s.k = a.back();
  if (b.size() == 1) {  // A matrix-vector product.
    s.m = Product(a, 0, a.size() - 1);
    s.n = 1;
    return s;
  }
  s.n = b.back();
  const int64_t kb = b[b.size() - 2];
  if (kb != s.k) return absl::InvalidArgumentError("matmul: inner dims differ");
  if (b.size() == 2) {  // Every row of every batch of `a` times one matrix.
    s.m = Product(a, 0, a.size() - 1);
    return s;
  }
  const std::vector<int64_t> a_mat =
      a.size() == 1 ? std::vector<int64_t>{1, a[0]} : std::vector<int64_t>(a.end() - 2, a.end());
  s.m = a_mat[0];
  const size_t rank = std::max(a.size(), b.size());
  const std::vector<int64_t> ab =
      a.size() >= 2 ? BatchDims(a, rank) : std::vector<int64_t>(rank - 2, 1);
  const std::vector<int64_t> bb = BatchDims(b, rank);
  if (ab == bb) {
    s.batch = Product(ab, 0, ab.size());
    s.stride_a = s.m * s.k;
    s.stride_b = s.k * s.n;
  } else if (AllOnes(ab)) {
    s.batch = Product(bb, 0, bb.size());
    s.stride_b = s.k * s.n;
  } else if (AllOnes(bb)) {
    s.m = Product(a, 0, a.size() - 1);  // One matrix for all of `a`'s rows.
  } else {
    return absl::UnimplementedError("matmul whose batch dims broadcast against each other");
  }
  s.stride_c = s.m * s.n;
  return s;
}

}  // namespace

std::string GemmShape::ToString() const {
  return absl::StrCat("gemm m=", m, " n=", n, " k=", k, " batch=", batch, " strides=", stride_a,
                      ",", stride_b, ",", stride_c, b_is_nk ? " nk" : " kn", " ",
                      DTypeName(dtype), has_bias ? absl::StrCat(" bias ", DTypeName(bias_dtype)) : "",
                      " ", activation, tf32 ? " tf32" : "", residual ? " +residual" : "");
}

absl::StatusOr<GemmShape> GemmShapeOf(const Node& node) {
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  const Node* a = call.TensorNode("input");
  const Node* b = call.TensorNode(node.is_call("matmul") ? "other" : "weight");
  if (!a->type().has_value() || !b->type().has_value()) {
    return absl::FailedPreconditionError("operand types unknown");
  }
  const DType t = a->type()->dtype;
  if (t != DType::kF32 && t != DType::kF16 && t != DType::kBF16 && t != DType::kF64) {
    return absl::UnimplementedError(absl::StrCat(node.target(), " on ", DTypeName(t),
                                                 " tensors (cuBLASLt products take floats)"));
  }
  if (b->type()->dtype != t) {
    return absl::UnimplementedError(absl::StrCat(node.target(), " of ", DTypeName(t), " by ",
                                                 DTypeName(b->type()->dtype)));
  }
  for (const Node* n : {a, b}) {
    for (Dim d : n->type()->shape) {
      if (d.is_symbolic()) return absl::FailedPreconditionError("symbolic operand dims");
    }
  }
  const std::vector<int64_t> ad = DimsOf(*a), bd = DimsOf(*b);
  GemmShape s;
  if (node.is_call("matmul")) {
    ASSIGN_OR_RETURN(s, MatmulShape(ad, bd));
  } else {
    if (ad.empty() || bd.size() != 2) {
      return absl::UnimplementedError("linear with a weight that is not 2-D");
    }
    const bool nk = !node.is_call("graft::linear_activation") ||
                    call.String("weight_layout") == "out_in";
    s.k = ad.back();
    s.m = Product(ad, 0, ad.size() - 1);
    s.n = nk ? bd[0] : bd[1];
    s.b_is_nk = nk;
    if (!call.IsNone("bias")) {
      const Node* bias = call.TensorNode("bias");
      if (!bias->type().has_value() || bias->type()->rank() != 1 ||
          bias->type()->shape[0].is_symbolic() || bias->type()->shape[0].value() != s.n) {
        return absl::UnimplementedError("linear with a bias that is not one value per output");
      }
      s.has_bias = true;
      s.bias_dtype = bias->type()->dtype;
      if (s.bias_dtype != t && s.bias_dtype != DType::kF32) {
        return absl::UnimplementedError("a bias of another dtype than the product");
      }
    }
    if (node.is_call("graft::linear_activation")) s.activation = call.String("activation");
  }
  if (s.k == 0) return absl::UnimplementedError("a product over an empty dim");
  s.dtype = t;
  if (s.stride_c == 0 && s.batch > 1) s.stride_c = s.m * s.n;
  return s;
}

std::string GemmActivation(const Step& step) {
  if (!step.activation.empty()) return step.activation;
  if (step.node->is_call("graft::linear_activation")) {
    absl::StatusOr<OpCall> call = OpCall::Bind(*step.node);
    if (call.ok()) return call->String("activation");
  }
  return "";
}

}  // namespace graft::cuda
