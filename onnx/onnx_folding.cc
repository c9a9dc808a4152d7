#include "onnx/onnx_folding.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/type_rules.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

std::string DimsString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

absl::StatusOr<int64_t> CountElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return Invalid(absl::StrCat("negative size in ", DimsString(dims)));
    if (__builtin_mul_overflow(n, d, &n)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("shape ", DimsString(dims), " is too large"));
    }
  }
  return n;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    s[i] = s[i + 1] * dims[i + 1];
  }
  return s;
}

// The flat index into a value of `in_dims` that broadcasting reads for flat
// index `k` of a result of `out_dims` (in_dims right-aligned).
int64_t BroadcastSource(int64_t k, const std::vector<int64_t>& out_dims,
                        const std::vector<int64_t>& in_dims) {
  int64_t src = 0;
  int64_t in_stride = 1;
  const size_t offset = out_dims.size() - in_dims.size();
  for (int64_t i = static_cast<int64_t>(out_dims.size()) - 1; i >= 0; --i) {
    int64_t idx = k % out_dims[i];
    k /= out_dims[i];
    if (static_cast<size_t>(i) < offset) continue;
    int64_t d = in_dims[i - offset];
    if (d != 1) src += idx * in_stride;
    in_stride *= d;
  }
  return src;
}

// Rounds a double to what `dtype` holds.
double RoundFloat(DType dtype, double v) {
  switch (dtype) {
    case DType::kF32:
      return static_cast<float>(v);
    case DType::kF16:
      return HalfToFloat(FloatToHalf(static_cast<float>(v)));
    case DType::kBF16:
      return BFloat16ToFloat(FloatToBFloat16(static_cast<float>(v)));
    default:
      return v;
  }
}

// C-style conversion of an integer to a narrower integer dtype (wrapping).
int64_t WrapInt(DType dtype, int64_t v) {
  switch (dtype) {
    case DType::kI8:
      return static_cast<int8_t>(v);
    case DType::kU8:
      return static_cast<uint8_t>(v);
    case DType::kI32:
      return static_cast<int32_t>(v);
    case DType::kBool:
      return v != 0 ? 1 : 0;
    default:
      return v;
  }
}

// Float to integer: toward zero, saturating, NaN to 0 (graft's cast rule;
// ONNX leaves out-of-range values undefined).
int64_t FloatToInt(DType dtype, double v) {
  if (dtype == DType::kBool) return v != 0 ? 1 : 0;
  if (std::isnan(v)) return 0;
  double lo, hi;
  switch (dtype) {
    case DType::kI8:
      lo = -128;
      hi = 127;
      break;
    case DType::kU8:
      lo = 0;
      hi = 255;
      break;
    case DType::kI32:
      lo = -2147483648.0;
      hi = 2147483647.0;
      break;
    default:
      lo = -9223372036854775808.0;
      hi = 9223372036854774784.0;
      break;
  }
  v = std::trunc(v);
  if (v <= lo) return static_cast<int64_t>(lo);
  if (v >= hi) return static_cast<int64_t>(hi);
  return static_cast<int64_t>(v);
}

absl::Status SymbolError(absl::string_view what, const FoldValue& v) {
  return Invalid(absl::StrCat("cannot compute ", what,
                              " at import time: it depends on the symbolic "
                              "dim ",
                              v.SymbolNames()));
}

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes,
                                                   int64_t rank) {
  std::set<int64_t> seen;
  for (int64_t& a : axes) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, rank));
    if (!seen.insert(n).second) {
      return Invalid(absl::StrCat("axis ", a, " appears more than once"));
    }
    a = n;
  }
  return axes;
}

bool IsLogical(absl::string_view op) {
  return op == "And" || op == "Or" || op == "Xor";
}
bool IsComparison(absl::string_view op) {
  return op == "Equal" || op == "Less" || op == "Greater" ||
         op == "LessOrEqual" || op == "GreaterOrEqual";
}

// Integer arithmetic; nullopt on overflow or an undefined result.
absl::StatusOr<int64_t> IntBinary(absl::string_view op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op == "Add") {
    if (!__builtin_add_overflow(a, b, &r)) return r;
  } else if (op == "Sub") {
    if (!__builtin_sub_overflow(a, b, &r)) return r;
  } else if (op == "Mul") {
    if (!__builtin_mul_overflow(a, b, &r)) return r;
  } else if (op == "Div" || op == "Mod") {
    if (b == 0) return Invalid("integer division by zero");
    if (a == std::numeric_limits<int64_t>::min() && b == -1) {
      return Invalid("integer overflow");
    }
    if (op == "Div") return a / b;  // C truncation, as ONNX runtimes do.
    int64_t m = a % b;              // Mod with fmod=0: sign of the divisor.
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
  } else if (op == "Pow") {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? (b % 2 == 0 ? 1 : -1) : 0);
    r = 1;
    for (int64_t k = 0; k < b; ++k) {
      if (__builtin_mul_overflow(r, a, &r)) return Invalid("integer overflow");
      if (r == 0 || r == 1) break;
    }
    return r;
  } else if (op == "Max") {
    return std::max(a, b);
  } else if (op == "Min") {
    return std::min(a, b);
  } else if (op == "Equal") {
    return a == b;
  } else if (op == "Less") {
    return a < b;
  } else if (op == "Greater") {
    return a > b;
  } else if (op == "LessOrEqual") {
    return a <= b;
  } else if (op == "GreaterOrEqual") {
    return a >= b;
  } else if (op == "And") {
    return (a != 0) && (b != 0);
  } else if (op == "Or") {
    return (a != 0) || (b != 0);
  } else if (op == "Xor") {
    return (a != 0) != (b != 0);
  } else {
    return absl::UnimplementedError(absl::StrCat("cannot evaluate ", op));
  }
  return Invalid("integer overflow");
}

absl::StatusOr<double> FloatBinary(absl::string_view op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Pow") return std::pow(a, b);
  if (op == "Max") return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  if (op == "Min") return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "Greater") return a > b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "GreaterOrEqual") return a >= b;
  return absl::UnimplementedError(
      absl::StrCat("cannot evaluate ", op, " on floating point"));
}

// `op` with at least one symbolic operand. Dims are never negative, which
// settles comparisons against negative numbers (exporters test for -1).
absl::StatusOr<FoldElem> SymBinary(absl::string_view op, const FoldElem& a,
                                   const FoldElem& b) {
  const bool a_neg = !a.is_sym() && a.i < 0;
  const bool b_neg = !b.is_sym() && b.i < 0;
  Dim da = a.is_sym() ? a.sym : Dim(std::max<int64_t>(a.i, 0));
  Dim db = b.is_sym() ? b.sym : Dim(std::max<int64_t>(b.i, 0));
  std::optional<Dim> r;
  if (op == "Add" && !a_neg && !b_neg) {
    r = rules::AddDims(da, db);
  } else if (op == "Mul" && !a_neg && !b_neg) {
    r = rules::MulDims(da, db);
  } else if (op == "Div" && !a_neg && !b_neg) {
    r = rules::DivDims(da, db);
  } else if (op == "Sub" && !b_neg) {
    if (b.is_sym() ? da == db : b.i == 0) r = b.is_sym() ? Dim(0) : da;
  } else if (op == "Equal") {
    if (a_neg || b_neg) return FoldElem::Int(0);
    if (da == db) return FoldElem::Int(1);
  } else if (op == "Less" || op == "GreaterOrEqual") {
    bool less;
    if (b_neg || (b.i == 0 && !b.is_sym())) {
      less = false;  // A dim is never below 0.
    } else if (a_neg) {
      less = true;
    } else {
      return Invalid(absl::StrCat("cannot compare the symbolic dim ",
                                  (a.is_sym() ? a.sym : b.sym).ToString(),
                                  " at import time"));
    }
    return FoldElem::Int(op == "Less" ? less : !less);
  } else if (op == "Greater" || op == "LessOrEqual") {
    bool greater;
    if (a_neg || (a.i == 0 && !a.is_sym())) {
      greater = false;
    } else if (b_neg) {
      greater = true;
    } else {
      return Invalid(absl::StrCat("cannot compare the symbolic dim ",
                                  (a.is_sym() ? a.sym : b.sym).ToString(),
                                  " at import time"));
    }
    return FoldElem::Int(op == "Greater" ? greater : !greater);
  } else if (op == "Max" || op == "Min") {
    // A dim is at least 0, and a symbolic one is taken to be at least 1
    // (exporters write max(size, 1) when broadcasting).
    auto at_most = [](const FoldElem& e, int64_t v) {
      return !e.is_sym() && e.i <= v;
    };
    if (op == "Max") {
      if (at_most(b, 1) && a.is_sym()) return a;
      if (at_most(a, 1) && b.is_sym()) return b;
    } else {
      if (at_most(b, 0)) return b;
      if (at_most(a, 0)) return a;
    }
    if (a.is_sym() && b.is_sym() && da == db) return a;
  }
  if (r.has_value()) return FoldElem::FromDim(*r);
  const Dim s = a.is_sym() ? a.sym : b.sym;
  return Invalid(absl::StrCat(
      "cannot compute ", op, " at import time: it depends on the symbolic dim ",
      s.ToString()));
}

}  // namespace

FoldElem FoldElem::FromDim(Dim d) {
  if (d.is_constant()) return Int(d.value());
  FoldElem e;
  e.sym = d;
  return e;
}

bool FoldValue::HasSymbols() const {
  for (const FoldElem& e : elems) {
    if (e.is_sym()) return true;
  }
  return false;
}

std::string FoldValue::SymbolNames() const {
  std::vector<std::string> names;
  for (const FoldElem& e : elems) {
    if (!e.is_sym()) continue;
    std::string n = absl::StrCat("'", e.sym.ToString(), "'");
    if (std::find(names.begin(), names.end(), n) == names.end()) {
      names.push_back(std::move(n));
    }
  }
  return absl::StrJoin(names, ", ");
}

Tensor FoldValue::ToTensor() const {
  Tensor t(dtype, dims);
  for (int64_t k = 0; k < NumElements(); ++k) {
    if (dtype == DType::kI64) {
      t.data<int64_t>()[k] = elems[k].i;
    } else if (IsFloatingPoint(dtype)) {
      t.SetFromDouble(k, elems[k].f);
    } else {
      t.SetFromDouble(k, static_cast<double>(elems[k].i));
    }
  }
  return t;
}

double FoldValue::AsDouble(int64_t k) const {
  return IsFloatingPoint(dtype) ? elems[k].f : static_cast<double>(elems[k].i);
}

FoldValue FoldValue::FromTensor(const Tensor& t) {
  FoldValue v;
  v.dtype = t.dtype();
  v.dims = t.dims();
  v.elems.resize(t.NumElements());
  for (int64_t k = 0; k < t.NumElements(); ++k) {
    if (t.dtype() == DType::kI64) {
      v.elems[k].i = t.data<int64_t>()[k];
    } else if (IsFloatingPoint(t.dtype())) {
      v.elems[k].f = t.GetAsDouble(k);
    } else {
      v.elems[k].i = static_cast<int64_t>(t.GetAsDouble(k));
    }
  }
  return v;
}

FoldValue FoldValue::Scalar(DType dtype, FoldElem e) {
  FoldValue v;
  v.dtype = dtype;
  v.elems.push_back(e);
  return v;
}

FoldValue FoldValue::Ints(const std::vector<int64_t>& values) {
  FoldValue v;
  v.dims = {static_cast<int64_t>(values.size())};
  for (int64_t x : values) v.elems.push_back(FoldElem::Int(x));
  return v;
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank,
                                      absl::string_view what) {
  if (axis < -rank || axis >= rank) {
    return Invalid(absl::StrCat(what, " ", axis, " is out of range for rank ",
                                rank, " (expected ", -rank, "..", rank - 1,
                                ")"));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) {
      return Invalid(absl::StrCat("shapes ", DimsString(a), " and ",
                                  DimsString(b), " do not broadcast"));
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

absl::Status Folder::CheckSize(int64_t count) const {
  if (count > max_elements_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(count, " elements is more than the ", max_elements_,
                     " evaluated at import time"));
  }
  return absl::OkStatus();
}

absl::StatusOr<FoldValue> Folder::Shape(const graft::Shape& shape,
                                        int64_t start,
                                        std::optional<int64_t> end) const {
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t lo = clamp(start);
  int64_t hi = end.has_value() ? clamp(*end) : rank;
  FoldValue v;
  for (int64_t i = lo; i < hi; ++i)
    v.elems.push_back(FoldElem::FromDim(shape[i]));
  v.dims = {v.NumElements()};
  return v;
}

absl::StatusOr<FoldValue> Folder::Size(const graft::Shape& shape) const {
  std::optional<Dim> n = rules::NumElementsDim(shape);
  if (!n.has_value()) return Invalid("the element count overflows int64");
  return FoldValue::Scalar(DType::kI64, FoldElem::FromDim(*n));
}

absl::StatusOr<FoldValue> Folder::Gather(const FoldValue& data,
                                         const FoldValue& indices,
                                         int64_t axis) const {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0) return Invalid("Gather needs data of rank >= 1");
  absl::StatusOr<int64_t> ax = NormalizeAxis(axis, rank);
  if (!ax.ok()) return ax.status();
  if (IsFloatingPoint(indices.dtype) || indices.dtype == DType::kBool) {
    return Invalid("indices must be an integer tensor");
  }
  if (indices.HasSymbols()) return SymbolError("Gather indices", indices);
  std::vector<int64_t> out_dims(data.dims.begin(), data.dims.begin() + *ax);
  out_dims.insert(out_dims.end(), indices.dims.begin(), indices.dims.end());
  out_dims.insert(out_dims.end(), data.dims.begin() + *ax + 1, data.dims.end());
  ASSIGN_OR_RETURN(int64_t count, CountElements(out_dims));
  RETURN_IF_ERROR(CheckSize(count));
  const int64_t n = data.dims[*ax];
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < *ax; ++i) outer *= data.dims[i];
  for (int64_t i = *ax + 1; i < rank; ++i) inner *= data.dims[i];
  FoldValue out;
  out.dtype = data.dtype;
  out.dims = out_dims;
  out.elems.reserve(count);
  for (int64_t o = 0; o < outer; ++o) {
    for (const FoldElem& idx : indices.elems) {
      int64_t j = idx.i;
      if (j < -n || j >= n) {
        return Invalid(absl::StrCat("index ", j, " is out of range for axis ",
                                    *ax, " of size ", n));
      }
      if (j < 0) j += n;
      for (int64_t in = 0; in < inner; ++in) {
        out.elems.push_back(data.elems[(o * n + j) * inner + in]);
      }
    }
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Slice(const FoldValue& data,
                                        const std::vector<int64_t>& starts,
                                        const std::vector<int64_t>& ends,
                                        std::vector<int64_t> axes,
                                        std::vector<int64_t> steps) const {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (starts.size() != ends.size()) {
    return Invalid(absl::StrCat("starts has ", starts.size(),
                                " entries but ends has ", ends.size()));
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return Invalid("starts, ends, axes and steps must have the same length");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(axes, rank));
  std::vector<int64_t> first(rank, 0), step(rank, 1), count = data.dims;
  for (size_t k = 0; k < norm.size(); ++k) {
    const int64_t a = norm[k];
    const int64_t n = data.dims[a];
    const int64_t s = steps[k];
    if (s == 0) return Invalid("slice steps must not be 0");
    int64_t b = starts[k], e = ends[k];
    if (b < 0) b += n;
    if (e < 0) e += n;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      count[a] = SliceLength(b, e, s);
    } else {
      b = std::clamp<int64_t>(b, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      count[a] = SliceLength(b, e, s);
    }
    first[a] = b;
    step[a] = s;
  }
  ASSIGN_OR_RETURN(int64_t total, CountElements(count));
  RETURN_IF_ERROR(CheckSize(total));
  const std::vector<int64_t> strides = Strides(data.dims);
  FoldValue out;
  out.dtype = data.dtype;
  out.dims = count;
  out.elems.reserve(total);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < total; ++k) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) {
      src += (first[d] + idx[d] * step[d]) * strides[d];
    }
    out.elems.push_back(data.elems[src]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < count[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Concat(
    const std::vector<const FoldValue*>& inputs, int64_t axis) const {
  if (inputs.empty()) return Invalid("Concat needs at least one input");
  const FoldValue& first = *inputs[0];
  const int64_t rank = static_cast<int64_t>(first.dims.size());
  if (rank == 0) return Invalid("Concat inputs need rank >= 1");
  absl::StatusOr<int64_t> ax = NormalizeAxis(axis, rank);
  if (!ax.ok()) return ax.status();
  std::vector<int64_t> out_dims = first.dims;
  out_dims[*ax] = 0;
  for (const FoldValue* v : inputs) {
    if (v->dtype != first.dtype) {
      return Invalid(absl::StrCat("inputs have different dtypes (",
                                  DTypeName(first.dtype), " and ",
                                  DTypeName(v->dtype), ")"));
    }
    if (v->dims.size() != first.dims.size()) {
      return Invalid(
          absl::StrCat("inputs have different ranks: ", DimsString(first.dims),
                       " and ", DimsString(v->dims)));
    }
    for (int64_t i = 0; i < rank; ++i) {
      if (i != *ax && v->dims[i] != first.dims[i]) {
        return Invalid(absl::StrCat("input shapes ", DimsString(first.dims),
                                    " and ", DimsString(v->dims),
                                    " differ outside axis ", *ax));
      }
    }
    out_dims[*ax] += v->dims[*ax];
  }
  ASSIGN_OR_RETURN(int64_t total, CountElements(out_dims));
  RETURN_IF_ERROR(CheckSize(total));
  int64_t outer = 1;
  for (int64_t i = 0; i < *ax; ++i) outer *= first.dims[i];
  FoldValue out;
  out.dtype = first.dtype;
  out.dims = out_dims;
  out.elems.reserve(total);
  for (int64_t o = 0; o < outer; ++o) {
    for (const FoldValue* v : inputs) {
      const int64_t chunk = outer == 0 ? 0 : v->NumElements() / outer;
      out.elems.insert(out.elems.end(), v->elems.begin() + o * chunk,
                       v->elems.begin() + (o + 1) * chunk);
    }
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Unsqueeze(const FoldValue& data,
                                            std::vector<int64_t> axes) const {
  const int64_t out_rank = static_cast<int64_t>(data.dims.size() + axes.size());
  ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(axes, out_rank));
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : norm) inserted[a] = true;
  FoldValue out = data;
  out.dims.clear();
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    out.dims.push_back(inserted[i] ? 1 : data.dims[next++]);
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Squeeze(const FoldValue& data,
                                          std::vector<int64_t> axes) const {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) drop[i] = data.dims[i] == 1;
  } else {
    ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(axes, rank));
    for (int64_t a : norm) {
      if (data.dims[a] != 1) {
        return Invalid(absl::StrCat("cannot squeeze axis ", a, " of size ",
                                    data.dims[a], " (shape ",
                                    DimsString(data.dims), ")"));
      }
      drop[a] = true;
    }
  }
  FoldValue out = data;
  out.dims.clear();
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[i]) out.dims.push_back(data.dims[i]);
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Reshape(const FoldValue& data,
                                          const std::vector<int64_t>& shape,
                                          bool allow_zero) const {
  std::vector<int64_t> dims = shape;
  int64_t infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allow_zero) {
      if (i >= data.dims.size()) {
        return Invalid(absl::StrCat("shape ", DimsString(shape), " copies dim ",
                                    i, " (a 0) but the input has rank ",
                                    data.dims.size()));
      }
      dims[i] = data.dims[i];
    }
    if (dims[i] == -1) {
      if (infer >= 0) {
        return Invalid(
            absl::StrCat("shape ", DimsString(shape), " has more than one -1"));
      }
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (dims[i] < 0) {
      return Invalid(absl::StrCat("invalid size ", dims[i], " in shape ",
                                  DimsString(shape)));
    }
    if (__builtin_mul_overflow(known, dims[i], &known)) {
      return Invalid(
          absl::StrCat("shape ", DimsString(shape), " is too large"));
    }
  }
  const int64_t total = data.NumElements();
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      return Invalid(absl::StrCat("cannot reshape ", DimsString(data.dims),
                                  " to ", DimsString(shape)));
    }
    dims[infer] = total / known;
  } else if (known != total) {
    return Invalid(absl::StrCat("cannot reshape ", DimsString(data.dims), " (",
                                total, " elements) to ", DimsString(shape)));
  }
  FoldValue out = data;
  out.dims = dims;
  return out;
}

absl::StatusOr<FoldValue> Folder::Flatten(const FoldValue& data,
                                          int64_t axis) const {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (axis < -rank || axis > rank) {
    return Invalid(
        absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  if (axis < 0) axis += rank;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? a : b) *= data.dims[i];
  FoldValue out = data;
  out.dims = {a, b};
  return out;
}

absl::StatusOr<FoldValue> Folder::Transpose(const FoldValue& data,
                                            std::vector<int64_t> perm) const {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return Invalid(
        absl::StrCat("perm ", DimsString(perm), " does not match rank ", rank));
  }
  absl::StatusOr<std::vector<int64_t>> norm = NormalizeAxes(perm, rank);
  if (!norm.ok()) return norm.status();
  std::vector<int64_t> out_dims(rank);
  for (int64_t i = 0; i < rank; ++i) out_dims[i] = data.dims[(*norm)[i]];
  const std::vector<int64_t> in_strides = Strides(data.dims);
  FoldValue out;
  out.dtype = data.dtype;
  out.dims = out_dims;
  out.elems.reserve(data.elems.size());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < data.NumElements(); ++k) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += idx[d] * in_strides[(*norm)[d]];
    out.elems.push_back(data.elems[src]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Expand(
    const FoldValue& data, const std::vector<int64_t>& shape) const {
  for (int64_t d : shape) {
    if (d < 0)
      return Invalid(
          absl::StrCat("invalid size ", d, " in ", DimsString(shape)));
  }
  absl::StatusOr<std::vector<int64_t>> out_dims =
      BroadcastDims(data.dims, shape);
  if (!out_dims.ok()) return out_dims.status();
  ASSIGN_OR_RETURN(int64_t total, CountElements(*out_dims));
  RETURN_IF_ERROR(CheckSize(total));
  FoldValue out;
  out.dtype = data.dtype;
  out.dims = *out_dims;
  out.elems.reserve(total);
  for (int64_t k = 0; k < total; ++k) {
    out.elems.push_back(data.elems[BroadcastSource(k, *out_dims, data.dims)]);
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Cast(const FoldValue& data, DType to) const {
  FoldValue out = data;
  out.dtype = to;
  const bool from_float = IsFloatingPoint(data.dtype);
  for (FoldElem& e : out.elems) {
    if (e.is_sym()) {
      if (IsFloatingPoint(to) || to == DType::kBool) {
        return SymbolError(absl::StrCat("a cast to ", DTypeName(to)), data);
      }
      continue;
    }
    if (IsFloatingPoint(to)) {
      e.f = RoundFloat(to, from_float ? e.f : static_cast<double>(e.i));
      e.i = 0;
    } else {
      e.i = from_float ? FloatToInt(to, e.f) : WrapInt(to, e.i);
      e.f = 0;
    }
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::ConstantOfShape(
    const std::vector<int64_t>& shape, const FoldValue& value) const {
  if (value.NumElements() != 1) {
    return Invalid("the value of ConstantOfShape must have one element");
  }
  ASSIGN_OR_RETURN(int64_t total, CountElements(shape));
  RETURN_IF_ERROR(CheckSize(total));
  FoldValue out;
  out.dtype = value.dtype;
  out.dims = shape;
  out.elems.assign(total, value.elems[0]);
  return out;
}

absl::StatusOr<FoldValue> Folder::Range(const FoldValue& start,
                                        const FoldValue& limit,
                                        const FoldValue& delta) const {
  for (const FoldValue* v : {&start, &limit, &delta}) {
    if (v->NumElements() != 1) {
      return Invalid("Range takes scalars for start, limit and delta");
    }
    if (v->HasSymbols()) return SymbolError("Range", *v);
  }
  FoldValue out;
  out.dtype = start.dtype;
  int64_t n;
  if (IsFloatingPoint(start.dtype)) {
    double s = start.elems[0].f, l = limit.elems[0].f, d = delta.elems[0].f;
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) {
      return Invalid("Range needs finite values and a non-zero delta");
    }
    double count = std::ceil((l - s) / d);
    if (count > static_cast<double>(max_elements_)) {
      return CheckSize(max_elements_ + 1);
    }
    n = std::max<int64_t>(static_cast<int64_t>(count), 0);
    for (int64_t k = 0; k < n; ++k) {
      out.elems.push_back(FoldElem::Float(RoundFloat(start.dtype, s + k * d)));
    }
  } else {
    __int128 s = start.elems[0].i, l = limit.elems[0].i, d = delta.elems[0].i;
    if (d == 0) return Invalid("Range needs a non-zero delta");
    __int128 count = d > 0 ? (l > s ? (l - s + d - 1) / d : 0)
                           : (s > l ? (s - l + (-d) - 1) / (-d) : 0);
    if (count > max_elements_) return CheckSize(max_elements_ + 1);
    n = static_cast<int64_t>(count);
    for (int64_t k = 0; k < n; ++k) {
      out.elems.push_back(FoldElem::Int(static_cast<int64_t>(s + k * d)));
    }
  }
  out.dims = {n};
  return out;
}

absl::StatusOr<FoldValue> Folder::Unary(absl::string_view op,
                                        const FoldValue& x) const {
  FoldValue out = x;
  const bool is_float = IsFloatingPoint(x.dtype);
  for (FoldElem& e : out.elems) {
    if (e.is_sym()) {
      if (op == "Identity" || op == "Abs" || op == "Relu") continue;
      return SymbolError(op, x);
    }
    if (op == "Identity") continue;
    if (op == "Not") {
      e.i = e.i == 0;
    } else if (op == "Neg") {
      if (is_float)
        e.f = -e.f;
      else
        e.i = WrapInt(x.dtype, -e.i);
    } else if (op == "Abs") {
      if (is_float)
        e.f = std::fabs(e.f);
      else
        e.i = WrapInt(x.dtype, e.i < 0 ? -e.i : e.i);
    } else if (op == "Relu") {
      if (is_float)
        e.f = std::max(e.f, 0.0);
      else
        e.i = std::max<int64_t>(e.i, 0);
    } else if (is_float && op == "Sqrt") {
      e.f = RoundFloat(x.dtype, std::sqrt(e.f));
    } else if (is_float && op == "Reciprocal") {
      e.f = RoundFloat(x.dtype, 1.0 / e.f);
    } else if (is_float && op == "Floor") {
      e.f = std::floor(e.f);
    } else if (is_float && op == "Ceil") {
      e.f = std::ceil(e.f);
    } else if (is_float && op == "Round") {
      e.f = std::nearbyint(e.f);  // Halves to even.
    } else if (op == "Floor" || op == "Ceil" || op == "Round") {
      // Integers are whole already.
    } else {
      return absl::UnimplementedError(
          absl::StrCat("cannot evaluate ", op, " on ", DTypeName(x.dtype)));
    }
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Binary(absl::string_view op,
                                         const FoldValue& a,
                                         const FoldValue& b) const {
  if (a.dtype != b.dtype && op != "Pow") {
    return Invalid(absl::StrCat("inputs have different dtypes (",
                                DTypeName(a.dtype), " and ", DTypeName(b.dtype),
                                ")"));
  }
  absl::StatusOr<std::vector<int64_t>> out_dims = BroadcastDims(a.dims, b.dims);
  if (!out_dims.ok()) return out_dims.status();
  ASSIGN_OR_RETURN(int64_t total, CountElements(*out_dims));
  RETURN_IF_ERROR(CheckSize(total));
  FoldValue out;
  out.dims = *out_dims;
  out.dtype = IsComparison(op) || IsLogical(op) ? DType::kBool : a.dtype;
  const bool is_float = IsFloatingPoint(a.dtype) || IsFloatingPoint(b.dtype);
  out.elems.reserve(total);
  for (int64_t k = 0; k < total; ++k) {
    const FoldElem& x = a.elems[BroadcastSource(k, *out_dims, a.dims)];
    const FoldElem& y = b.elems[BroadcastSource(k, *out_dims, b.dims)];
    if (x.is_sym() || y.is_sym()) {
      ASSIGN_OR_RETURN(FoldElem r, SymBinary(op, x, y));
      out.elems.push_back(r);
      continue;
    }
    if (is_float) {
      double xv = IsFloatingPoint(a.dtype) ? x.f : static_cast<double>(x.i);
      double yv = IsFloatingPoint(b.dtype) ? y.f : static_cast<double>(y.i);
      ASSIGN_OR_RETURN(double r, FloatBinary(op, xv, yv));
      if (out.dtype == DType::kBool) {
        out.elems.push_back(FoldElem::Int(r != 0));
      } else if (IsFloatingPoint(out.dtype)) {
        out.elems.push_back(FoldElem::Float(RoundFloat(out.dtype, r)));
      } else {
        out.elems.push_back(FoldElem::Int(FloatToInt(out.dtype, r)));
      }
      continue;
    }
    ASSIGN_OR_RETURN(int64_t r, IntBinary(op, x.i, y.i));
    out.elems.push_back(FoldElem::Int(WrapInt(out.dtype, r)));
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Where(const FoldValue& cond,
                                        const FoldValue& x,
                                        const FoldValue& y) const {
  if (cond.dtype != DType::kBool) return Invalid("the condition must be bool");
  if (cond.HasSymbols()) return SymbolError("Where", cond);
  if (x.dtype != y.dtype) {
    return Invalid(absl::StrCat("inputs have different dtypes (",
                                DTypeName(x.dtype), " and ", DTypeName(y.dtype),
                                ")"));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> xy, BroadcastDims(x.dims, y.dims));
  absl::StatusOr<std::vector<int64_t>> out_dims = BroadcastDims(cond.dims, xy);
  if (!out_dims.ok()) return out_dims.status();
  ASSIGN_OR_RETURN(int64_t total, CountElements(*out_dims));
  RETURN_IF_ERROR(CheckSize(total));
  FoldValue out;
  out.dtype = x.dtype;
  out.dims = *out_dims;
  for (int64_t k = 0; k < total; ++k) {
    bool c = cond.elems[BroadcastSource(k, *out_dims, cond.dims)].i != 0;
    const FoldValue& pick = c ? x : y;
    out.elems.push_back(pick.elems[BroadcastSource(k, *out_dims, pick.dims)]);
  }
  return out;
}

absl::StatusOr<FoldValue> Folder::Reduce(absl::string_view op,
                                         const FoldValue& x,
                                         std::vector<int64_t> axes,
                                         bool keep_dims) const {
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::vector<bool> reduced(rank, axes.empty());
  ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(axes, rank));
  for (int64_t a : norm) reduced[a] = true;
  std::vector<int64_t> out_dims, kept_dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) out_dims.push_back(x.dims[i]);
    kept_dims.push_back(reduced[i] ? 1 : x.dims[i]);
  }
  ASSIGN_OR_RETURN(int64_t total, CountElements(kept_dims));
  const bool is_float = IsFloatingPoint(x.dtype);
  const std::string elementwise = op == "ReduceSum"    ? "Add"
                                  : op == "ReduceProd" ? "Mul"
                                  : op == "ReduceMax"  ? "Max"
                                                       : "Min";
  std::vector<std::optional<FoldElem>> acc(total);
  const std::vector<int64_t> out_strides = Strides(kept_dims);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < x.NumElements(); ++k) {
    int64_t dst = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[d]) dst += idx[d] * out_strides[d];
    }
    const FoldElem& e = x.elems[k];
    if (!acc[dst].has_value()) {
      acc[dst] = e;
    } else if (e.is_sym() || acc[dst]->is_sym()) {
      ASSIGN_OR_RETURN(FoldElem r, SymBinary(elementwise, *acc[dst], e));
      acc[dst] = r;
    } else if (is_float) {
      ASSIGN_OR_RETURN(double r, FloatBinary(elementwise, acc[dst]->f, e.f));
      acc[dst]->f = RoundFloat(x.dtype, r);
    } else {
      ASSIGN_OR_RETURN(int64_t r, IntBinary(elementwise, acc[dst]->i, e.i));
      acc[dst]->i = WrapInt(x.dtype, r);
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < x.dims[d]) break;
      idx[d] = 0;
    }
  }
  FoldValue out;
  out.dtype = x.dtype;
  out.dims = keep_dims ? kept_dims : out_dims;
  for (std::optional<FoldElem>& a : acc) {
    if (a.has_value()) {
      out.elems.push_back(*a);
    } else if (op == "ReduceSum" || op == "ReduceProd") {
      int64_t identity = op == "ReduceSum" ? 0 : 1;
      out.elems.push_back(is_float ? FoldElem::Float(identity)
                                   : FoldElem::Int(identity));
    } else {
      return Invalid(absl::StrCat(op, " of an empty tensor"));
    }
  }
  return out;
}

}  // namespace graft::onnx_import
