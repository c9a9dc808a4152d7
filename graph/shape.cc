#include "graph/shape.h"

#include <deque>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graft {
namespace {

// Interned symbol names. Ids never change and names are never freed, so a
// string_view into the table stays valid for the life of the process.
class SymbolTable {
 public:
  int64_t Intern(absl::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    names_.emplace_back(name);
    int64_t id = static_cast<int64_t>(names_.size()) - 1;
    ids_.emplace(names_.back(), id);
    return id;
  }
  absl::string_view Name(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return names_[id];
  }

 private:
  std::mutex mu_;
  std::deque<std::string> names_;  // deque: elements never move.
  absl::flat_hash_map<absl::string_view, int64_t> ids_;
};

SymbolTable& Symbols() {
  static auto* table = new SymbolTable();
  return *table;
}

}  // namespace

Dim Dim::Symbol(absl::string_view name) {
  return Dim(-Symbols().Intern(name) - 1);
}

absl::string_view Dim::symbol() const { return Symbols().Name(-value_ - 1); }

std::string Dim::ToString() const {
  return is_constant() ? absl::StrCat(value_) : std::string(symbol());
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat(
      "[",
      absl::StrJoin(shape, ",",
                    [](std::string* out, Dim d) { out->append(d.ToString()); }),
      "]");
}

int64_t SliceLength(int64_t from, int64_t to, int64_t step) {
  // Distances and |step| as unsigned: a step of +-2^63 stays exact.
  const bool up = step > 0;
  if (up ? to <= from : to >= from) return 0;
  const uint64_t distance = up ? static_cast<uint64_t>(to) - static_cast<uint64_t>(from)
                               : static_cast<uint64_t>(from) - static_cast<uint64_t>(to);
  const uint64_t magnitude = up ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  return static_cast<int64_t>(distance / magnitude + (distance % magnitude != 0));
}

bool IsStatic(const Shape& shape) {
  for (Dim d : shape) {
    if (d.is_symbolic()) return false;
  }
  return true;
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (Dim d : shape) n *= d.value();
  return n;
}

std::vector<int64_t> StaticDims(const Shape& shape) {
  std::vector<int64_t> dims;
  dims.reserve(shape.size());
  for (Dim d : shape) dims.push_back(d.value());
  return dims;
}

Shape ShapeFromDims(const std::vector<int64_t>& dims) {
  return Shape(dims.begin(), dims.end());
}

}  // namespace graft
