#include "graph/type_rules.h"

#include <algorithm>
#include <atomic>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/node.h"

namespace graft::rules {
namespace {

// A dim as coefficient * product of symbols (sorted, with repeats).
struct Monomial {
  int64_t coeff = 1;
  std::vector<std::string> symbols;
};

Monomial ToMonomial(Dim d) {
  Monomial m;
  if (d.is_constant()) {
    m.coeff = d.value();
    return m;
  }
  absl::string_view name = d.symbol();
  for (absl::string_view part : absl::StrSplit(name, '*')) {
    int64_t value = 0;
    if (m.symbols.empty() && m.coeff == 1 && absl::SimpleAtoi(part, &value) &&
        value > 0) {
      m.coeff = value;
    } else {
      m.symbols.emplace_back(part);
    }
  }
  // A user symbol that merely looks like a number ("2") stays one symbol.
  if (m.symbols.empty()) {
    m.coeff = 1;
    m.symbols.emplace_back(name);
  }
  std::sort(m.symbols.begin(), m.symbols.end());
  return m;
}

Dim FromMonomial(const Monomial& m) {
  if (m.coeff == 0) return Dim(0);
  if (m.symbols.empty()) return Dim(m.coeff);
  if (m.coeff == 1 && m.symbols.size() == 1) return Dim::Symbol(m.symbols[0]);
  std::string name = m.coeff == 1 ? "" : absl::StrCat(m.coeff, "*");
  absl::StrAppend(&name, absl::StrJoin(m.symbols, "*"));
  return Dim::Symbol(name);
}

}  // namespace

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    Dim da = i < rank - a.size() ? Dim(1) : a[i - (rank - a.size())];
    Dim db = i < rank - b.size() ? Dim(1) : b[i - (rank - b.size())];
    if (da == db || db == Dim(1)) {
      out[i] = da;
    } else if (da == Dim(1)) {
      out[i] = db;
    } else if (da.is_symbolic() && db.is_constant()) {
      out[i] = db;
    } else if (db.is_symbolic() && da.is_constant()) {
      out[i] = da;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ", ShapeToString(a), " and ", ShapeToString(b),
          " do not broadcast (dim ", i, " of the result: ", da.ToString(),
          " vs ", db.ToString(), ")"));
    }
  }
  return out;
}

bool DimsConflict(Dim a, Dim b) {
  return a != b && a.is_symbolic() == b.is_symbolic();
}

std::optional<Dim> MulDims(Dim a, Dim b) {
  Monomial ma = ToMonomial(a);
  Monomial mb = ToMonomial(b);
  Monomial out;
  if (__builtin_mul_overflow(ma.coeff, mb.coeff, &out.coeff)) {
    return std::nullopt;
  }
  if (out.coeff == 0) return Dim(0);
  std::merge(ma.symbols.begin(), ma.symbols.end(), mb.symbols.begin(),
             mb.symbols.end(), std::back_inserter(out.symbols));
  return FromMonomial(out);
}

std::optional<Dim> DivDims(Dim a, Dim b) {
  if (b == Dim(0)) return std::nullopt;
  if (a == Dim(0)) return Dim(0);
  Monomial ma = ToMonomial(a);
  Monomial mb = ToMonomial(b);
  if (ma.coeff % mb.coeff != 0) return std::nullopt;
  if (!std::includes(ma.symbols.begin(), ma.symbols.end(), mb.symbols.begin(),
                     mb.symbols.end())) {
    return std::nullopt;
  }
  Monomial out;
  out.coeff = ma.coeff / mb.coeff;
  std::set_difference(ma.symbols.begin(), ma.symbols.end(), mb.symbols.begin(),
                      mb.symbols.end(), std::back_inserter(out.symbols));
  return FromMonomial(out);
}

std::optional<Dim> AddDims(Dim a, Dim b) {
  if (a == Dim(0)) return b;
  if (b == Dim(0)) return a;
  Monomial ma = ToMonomial(a);
  Monomial mb = ToMonomial(b);
  if (ma.symbols != mb.symbols) return std::nullopt;
  Monomial out;
  out.symbols = std::move(ma.symbols);
  if (__builtin_add_overflow(ma.coeff, mb.coeff, &out.coeff)) {
    return std::nullopt;
  }
  return FromMonomial(out);
}

std::optional<Dim> NumElementsDim(const Shape& shape) {
  Dim n(1);
  for (Dim d : shape) {
    std::optional<Dim> next = MulDims(n, d);
    if (!next.has_value()) return std::nullopt;
    n = *next;
  }
  return n;
}

std::optional<int64_t> EvaluateDim(
    Dim dim, const absl::flat_hash_map<std::string, int64_t>& bindings) {
  if (dim.is_constant()) return dim.value();
  Monomial m = ToMonomial(dim);
  int64_t value = m.coeff;
  for (const std::string& s : m.symbols) {
    auto it = bindings.find(s);
    if (it == bindings.end()) return std::nullopt;
    if (__builtin_mul_overflow(value, it->second, &value)) return std::nullopt;
  }
  return value;
}

Dim UnknownDim(const InferContext& ctx, int64_t result_dim) {
  if (ctx.node() != nullptr) {
    return Dim::Symbol(absl::StrCat(ctx.node()->name(), "_d", result_dim));
  }
  // No node to name it after: a process-wide counter keeps it distinct.
  static std::atomic<int64_t> counter{0};
  return Dim::Symbol(
      absl::StrCat(ctx.call().schema().name, "_", counter++, "_d", result_dim));
}

absl::StatusOr<int64_t> NormalizeDim(const InferContext& ctx, int64_t dim,
                                     int64_t rank, absl::string_view what) {
  if (rank == 0 || dim < -rank || dim >= rank) {
    if (rank == 0) {
      return ctx.Error(
          absl::StrCat(what, " ", dim, " out of range: the input has no dims"));
    }
    return ctx.Error(absl::StrCat(what, " ", dim, " out of range for rank ",
                                  rank, " (expected ", -rank, "..", rank - 1,
                                  ")"));
  }
  return dim < 0 ? dim + rank : dim;
}

absl::Status CheckSize(const InferContext& ctx, int64_t size,
                       absl::string_view what) {
  if (size >= 0) return absl::OkStatus();
  return ctx.Error(absl::StrCat(what, " must not be negative, got ", size));
}

namespace {

enum class Category { kBool, kInteger, kFloat };

Category CategoryOf(DType d) {
  if (IsFloatingPoint(d)) return Category::kFloat;
  if (IsInteger(d)) return Category::kInteger;
  return Category::kBool;
}

std::optional<DType> PromoteOptional(std::optional<DType> a, DType b) {
  return a.has_value() ? PromoteTypes(*a, b) : b;
}

// PyTorch's combine_categories: the lower-priority group only counts when
// it is of a higher category than the higher-priority group.
std::optional<DType> Combine(std::optional<DType> higher,
                             std::optional<DType> lower) {
  if (!higher.has_value()) return lower;
  if (!lower.has_value()) return higher;
  if (CategoryOf(*higher) == Category::kFloat) return higher;
  if (CategoryOf(*higher) == Category::kBool ||
      CategoryOf(*lower) == Category::kFloat) {
    return PromoteTypes(*higher, *lower);
  }
  return higher;
}

}  // namespace

DType ResultType(const InferContext& ctx,
                 std::initializer_list<absl::string_view> params) {
  std::optional<DType> dimensioned, zero_dim, literal;
  // One lookup per parameter and no copies of types: this runs for every
  // arithmetic node a pass creates.
  for (absl::string_view name : params) {
    const Argument& a = ctx.call().Get(name);
    if (a.is_none()) continue;
    if (!a.is_node()) {
      literal = PromoteOptional(literal, ctx.Type(name).dtype);
      continue;
    }
    const TensorType& t = *a.node()->type();
    if (t.rank() == 0) {
      zero_dim = PromoteOptional(zero_dim, t.dtype);
    } else {
      dimensioned = PromoteOptional(dimensioned, t.dtype);
    }
  }
  return Combine(dimensioned, Combine(zero_dim, literal)).value_or(DType::kF32);
}

DType FloatResult(DType dtype) {
  return IsFloatingPoint(dtype) ? dtype : DType::kF32;
}

absl::StatusOr<std::vector<TensorType>> SameAsInput(const InferContext& ctx) {
  return std::vector<TensorType>{ctx.Type("input")};
}

absl::StatusOr<std::vector<TensorType>> BroadcastBinary(
    const InferContext& ctx) {
  TensorType a = ctx.Type("input");
  TensorType b = ctx.Type("other");
  absl::StatusOr<Shape> shape = BroadcastShapes(a.shape, b.shape);
  if (!shape.ok()) return ctx.Error(shape.status().message());
  DType dtype = ResultType(ctx, {"input", "other"});
  return std::vector<TensorType>{TensorType{dtype, *std::move(shape)}};
}

}  // namespace graft::rules
