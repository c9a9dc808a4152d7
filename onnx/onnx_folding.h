#ifndef GRAFT_ONNX_ONNX_FOLDING_H_
#define GRAFT_ONNX_ONNX_FOLDING_H_

// Evaluation of ONNX shape arithmetic while importing (docs/onnx.md).
// Exporters compute the targets of Reshape and Expand at run time from
// Shape, Gather, Concat, ... of other values; graft's reshape and expand
// take static sizes, so the importer evaluates that arithmetic on small
// tensors instead. A value may be known only up to symbolic dims (the
// Shape of an input whose batch dim is "batch"): its integer elements can
// then be dims like `batch`, which flow through gathers, concats and
// products as graft's Dim arithmetic allows.
//
// The functions follow the ONNX operators of the same name (opsets 13-20).
// Errors say why a value cannot be computed ("... depends on the symbolic
// dim 'batch'") or that the inputs are invalid (an index out of range).
// kResourceExhausted means the result would exceed the element limit and
// kUnimplemented that the op is not evaluated for that dtype: the caller
// computes the value at run time instead.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/dtype.h"
#include "graph/shape.h"
#include "graph/tensor.h"

namespace graft::onnx_import {

// One element of a folded value: an integer (integer and bool dtypes), a
// floating-point number, or, for integer dtypes, a symbolic dim.
struct FoldElem {
  int64_t i = 0;
  double f = 0;
  Dim sym;  // Symbolic when the element is a symbol (then `i` is unused).

  bool is_sym() const { return sym.is_symbolic(); }
  static FoldElem Int(int64_t v) { return FoldElem{.i = v}; }
  static FoldElem Float(double v) { return FoldElem{.f = v}; }
  // A dim: a constant becomes an Int.
  static FoldElem FromDim(Dim d);
};

// A small tensor whose contents are known at import time, possibly up to
// symbolic dims. Row-major, like Tensor.
struct FoldValue {
  DType dtype = DType::kI64;
  std::vector<int64_t> dims;
  std::vector<FoldElem> elems;

  int64_t NumElements() const { return static_cast<int64_t>(elems.size()); }
  bool HasSymbols() const;
  // The symbols mentioned, for messages: "'batch', 'seq'".
  std::string SymbolNames() const;
  // Requires !HasSymbols().
  Tensor ToTensor() const;
  // Element i as a double (floats) or integer (others); not for symbols.
  double AsDouble(int64_t i) const;

  static FoldValue FromTensor(const Tensor& t);
  static FoldValue Scalar(DType dtype, FoldElem e);
  // A 1-D i64 value.
  static FoldValue Ints(const std::vector<int64_t>& values);
};

// Limits every result to `max_elements` (kResourceExhausted beyond).
class Folder {
 public:
  explicit Folder(int64_t max_elements) : max_elements_(max_elements) {}

  // Shape: the dims of a value of shape `shape`, [start, end) per opset 15.
  absl::StatusOr<FoldValue> Shape(const graft::Shape& shape, int64_t start,
                                  std::optional<int64_t> end) const;
  absl::StatusOr<FoldValue> Size(const graft::Shape& shape) const;
  absl::StatusOr<FoldValue> Gather(const FoldValue& data,
                                   const FoldValue& indices,
                                   int64_t axis) const;
  // `axes` and `steps` may be empty (all axes, step 1).
  absl::StatusOr<FoldValue> Slice(const FoldValue& data,
                                  const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& ends,
                                  std::vector<int64_t> axes,
                                  std::vector<int64_t> steps) const;
  absl::StatusOr<FoldValue> Concat(const std::vector<const FoldValue*>& inputs,
                                   int64_t axis) const;
  absl::StatusOr<FoldValue> Unsqueeze(const FoldValue& data,
                                      std::vector<int64_t> axes) const;
  // Empty `axes`: every size-1 dim.
  absl::StatusOr<FoldValue> Squeeze(const FoldValue& data,
                                    std::vector<int64_t> axes) const;
  // ONNX Reshape: 0 copies the input dim (unless allow_zero), one -1.
  absl::StatusOr<FoldValue> Reshape(const FoldValue& data,
                                    const std::vector<int64_t>& shape,
                                    bool allow_zero) const;
  absl::StatusOr<FoldValue> Flatten(const FoldValue& data, int64_t axis) const;
  absl::StatusOr<FoldValue> Transpose(const FoldValue& data,
                                      std::vector<int64_t> perm) const;
  // Bidirectional broadcast to `shape`.
  absl::StatusOr<FoldValue> Expand(const FoldValue& data,
                                   const std::vector<int64_t>& shape) const;
  absl::StatusOr<FoldValue> Cast(const FoldValue& data, DType to) const;
  absl::StatusOr<FoldValue> ConstantOfShape(const std::vector<int64_t>& shape,
                                            const FoldValue& value) const;
  absl::StatusOr<FoldValue> Range(const FoldValue& start,
                                  const FoldValue& limit,
                                  const FoldValue& delta) const;
  // Unary: Neg Abs Not Identity Sqrt Reciprocal Floor Ceil Round Relu.
  absl::StatusOr<FoldValue> Unary(absl::string_view op,
                                  const FoldValue& x) const;
  // Binary with broadcasting: Add Sub Mul Div Mod Pow Max Min Equal Less
  // Greater LessOrEqual GreaterOrEqual And Or Xor.
  absl::StatusOr<FoldValue> Binary(absl::string_view op, const FoldValue& a,
                                   const FoldValue& b) const;
  absl::StatusOr<FoldValue> Where(const FoldValue& cond, const FoldValue& x,
                                  const FoldValue& y) const;
  // ReduceSum ReduceProd ReduceMax ReduceMin over `axes` (empty: all).
  absl::StatusOr<FoldValue> Reduce(absl::string_view op, const FoldValue& x,
                                   std::vector<int64_t> axes,
                                   bool keep_dims) const;

  // Fails with kResourceExhausted when `count` elements exceed the limit.
  absl::Status CheckSize(int64_t count) const;
  int64_t max_elements() const { return max_elements_; }

 private:
  int64_t max_elements_;
};

// An ONNX axis in [-rank, rank), made non-negative; an error naming `what`
// otherwise.
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank,
                                      absl::string_view what = "axis");

// NumPy broadcasting of two static shapes.
absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_FOLDING_H_
