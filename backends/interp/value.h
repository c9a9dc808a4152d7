#ifndef GRAFT_BACKENDS_INTERP_VALUE_H_
#define GRAFT_BACKENDS_INTERP_VALUE_H_

#include <utility>
#include <variant>
#include <vector>

#include "graph/tensor.h"

namespace graft::interp {

// What a node evaluates to in the interpreter: a tensor, or a tuple of
// tensors for ops that return several results (split), read with getitem.
// An empty Value is one that has not been computed or was already freed.
class Value {
 public:
  Value() = default;
  Value(Tensor tensor) : value_(std::move(tensor)) {}  // NOLINT
  static Value Tuple(std::vector<Tensor> elements) {
    Value v;
    v.value_ = std::move(elements);
    return v;
  }

  bool empty() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(value_); }
  bool is_tuple() const {
    return std::holds_alternative<std::vector<Tensor>>(value_);
  }
  // Require is_tensor() / is_tuple().
  const Tensor& tensor() const { return std::get<Tensor>(value_); }
  const std::vector<Tensor>& tuple() const {
    return std::get<std::vector<Tensor>>(value_);
  }
  void Reset() { value_ = std::monostate{}; }

 private:
  std::variant<std::monostate, Tensor, std::vector<Tensor>> value_;
};

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_VALUE_H_
