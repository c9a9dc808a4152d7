#ifndef GRAFT_GRAPH_SHAPE_H_
#define GRAFT_GRAPH_SHAPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/inlined_vector.h"

namespace graft {

// One dimension of a shape: a constant extent or a named symbol ("batch"), so
// one compiled artifact can serve many sizes. Eight bytes: symbols are
// interned process-wide, which keeps per-node types small on huge graphs.
class Dim {
 public:
  constexpr Dim() : value_(0) {}
  constexpr Dim(int64_t value) : value_(value) {}  // NOLINT: dims are ints.
  static Dim Symbol(absl::string_view name);

  bool is_constant() const { return value_ >= 0; }
  bool is_symbolic() const { return value_ < 0; }
  // Requires is_constant().
  int64_t value() const { return value_; }
  // Requires is_symbolic().
  absl::string_view symbol() const;
  std::string ToString() const;

  friend bool operator==(Dim a, Dim b) { return a.value_ == b.value_; }
  friend bool operator!=(Dim a, Dim b) { return a.value_ != b.value_; }
  template <typename H>
  friend H AbslHashValue(H h, Dim d) {
    return H::combine(std::move(h), d.value_);
  }

 private:
  int64_t value_;  // >= 0: extent; < 0: -(symbol id) - 1.
};

using Shape = absl::InlinedVector<Dim, 4>;

// "[2,batch,3]".
std::string ShapeToString(const Shape& shape);
bool IsStatic(const Shape& shape);
// The elements a slice from `from` toward `to` by `step` (not 0) takes:
// from, from + step, ... strictly before `to`; `from` and `to` clamped to
// a dim's positions (or one past either end). No overflow for any step.
int64_t SliceLength(int64_t from, int64_t to, int64_t step);
// Product of the extents; requires IsStatic(shape).
int64_t NumElements(const Shape& shape);
std::vector<int64_t> StaticDims(const Shape& shape);
Shape ShapeFromDims(const std::vector<int64_t>& dims);

}  // namespace graft

#endif  // GRAFT_GRAPH_SHAPE_H_
