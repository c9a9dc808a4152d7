#ifndef GRAFT_GRAPH_TYPE_RULES_H_
#define GRAFT_GRAPH_TYPE_RULES_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/op_registry.h"

// Type rules shared by many ops of the core set: broadcasting, dtype
// promotion, dim index normalization and arithmetic on symbolic dims.
namespace graft::rules {

// ---------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------

// NumPy broadcasting of two shapes. Symbolic dims: equal symbols match, a
// symbol against 1 gives the symbol, a symbol against a constant n != 1
// gives n (the only size that can be valid). Two different symbols are an
// error: they are usually a mix-up (batch vs seq), and nothing says which
// one the result would have.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// True when two dims are known to differ: two different constants, or two
// different symbols. A symbol against a constant is no conflict, since the
// symbol may take that value at run time.
bool DimsConflict(Dim a, Dim b);

// Arithmetic on dims that may be symbolic. A dim is read as an integer
// coefficient times a product of symbols. Results that are not a single
// constant or a plain symbol become a derived symbol named by the canonical
// product, coefficient first and symbols sorted: "128*batch", "batch*seq".
// Equal products are thus equal dims, and a later division cancels them, so
// flatten([batch,128,768], 0, 1) gives [128*batch,768] and a reshape back to
// [-1,128,768] gives [batch,128,768] again.
//
// a * b; nullopt on int64 overflow.
std::optional<Dim> MulDims(Dim a, Dim b);
// a / b when it is exact (b's symbols all cancel and the coefficient
// divides); nullopt otherwise, and for b == 0.
std::optional<Dim> DivDims(Dim a, Dim b);
// a + b when the sum is again a product: constants, or the same symbols
// (batch + batch = 2*batch); nullopt otherwise (batch + 1).
std::optional<Dim> AddDims(Dim a, Dim b);
// The product of all dims (1 for rank 0); nullopt on overflow.
std::optional<Dim> NumElementsDim(const Shape& shape);
// The value of `dim` once every symbol it mentions is bound; nullopt when
// some symbol is unbound or the product overflows.
std::optional<int64_t> EvaluateDim(
    Dim dim, const absl::flat_hash_map<std::string, int64_t>& bindings);

// A new symbol for result dim `result_dim` of the node being typed, for a
// size that is not a product of the input dims (a slice or a convolution
// of a symbolic dim). It is named after the node ("%slice_2" gives
// "slice_2_d1"), so typing the same node again gives the same symbol and
// two unknown sizes never compare equal by accident.
Dim UnknownDim(const InferContext& ctx, int64_t result_dim);

// A dim index, PyTorch style: -rank <= dim < rank, negative counts from the
// end. The error names the op and `what` ("dim", "start_dim", ...):
// "softmax: dim 3 out of range for rank 2 (expected -2..1)".
absl::StatusOr<int64_t> NormalizeDim(const InferContext& ctx, int64_t dim,
                                     int64_t rank,
                                     absl::string_view what = "dim");

// Checks that a user-supplied size is a valid extent (>= 0) before it
// becomes a Dim (a negative int64 would read as a symbol).
absl::Status CheckSize(const InferContext& ctx, int64_t size,
                       absl::string_view what);

// ---------------------------------------------------------------------------
// dtypes
// ---------------------------------------------------------------------------

// PyTorch's result_type over the named parameters (tensors, scalar literals;
// None is skipped). Tensors with at least one dim take part first, rank-0
// tensors next, literals last; a later group only matters when it is of a
// higher category (bool < integer < floating point). A literal of a higher
// category gives that category's default type: bool tensor + 1 is i64,
// i32 tensor + 1.5 is f32, f16 tensor + 1.5 stays f16.
DType ResultType(const InferContext& ctx,
                 std::initializer_list<absl::string_view> params);

// The dtype of a floating-point op (exp, sigmoid, softmax, ...): float
// dtypes are kept, integers and bool compute in f32.
DType FloatResult(DType dtype);

// ---------------------------------------------------------------------------
// Whole rules
// ---------------------------------------------------------------------------

// One result with the type of parameter "input".
absl::StatusOr<std::vector<TensorType>> SameAsInput(const InferContext& ctx);
// Broadcast "input" and "other"; dtype by ResultType.
absl::StatusOr<std::vector<TensorType>> BroadcastBinary(
    const InferContext& ctx);

}  // namespace graft::rules

#endif  // GRAFT_GRAPH_TYPE_RULES_H_
