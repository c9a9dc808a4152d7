#ifndef GRAFT_GRAPH_ARGUMENT_H_
#define GRAFT_GRAPH_ARGUMENT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "graph/boxed.h"
#include "graph/dtype.h"

namespace graft {

class Node;
class Argument;
using ArgumentList = std::vector<Argument>;

// Marker for the literal `None`.
struct NoneArg {
  friend bool operator==(NoneArg, NoneArg) { return true; }
};

// One argument of a node: a reference to another node's value or a literal
// (int, float, bool, string, dtype, None, or a list of arguments, which may
// itself hold node references, e.g. concat's tensor list). 16 bytes:
// strings and lists are boxed, since nodes hold arguments inline and most
// arguments are node references and numbers.
class Argument {
 public:
  using Value = std::variant<NoneArg, Node*, int64_t, double, bool,
                             Boxed<std::string>, DType, Boxed<ArgumentList>>;

  Argument() : value_(NoneArg{}) {}
  Argument(NoneArg) : value_(NoneArg{}) {}                // NOLINT
  Argument(Node* node) : value_(node) {}                  // NOLINT
  Argument(int64_t v) : value_(v) {}                      // NOLINT
  Argument(int v) : value_(static_cast<int64_t>(v)) {}    // NOLINT
  Argument(double v) : value_(v) {}                       // NOLINT
  Argument(bool v) : value_(v) {}                         // NOLINT
  Argument(std::string v) : value_(Boxed<std::string>(std::move(v))) {}  // NOLINT
  Argument(const char* v) : value_(Boxed<std::string>(std::string(v))) {}  // NOLINT
  Argument(DType v) : value_(v) {}                        // NOLINT
  Argument(ArgumentList v) : value_(Boxed<ArgumentList>(std::move(v))) {}  // NOLINT
  static Argument IntList(const std::vector<int64_t>& values);

  bool is_none() const { return std::holds_alternative<NoneArg>(value_); }
  bool is_node() const { return std::holds_alternative<Node*>(value_); }
  bool is_int() const { return std::holds_alternative<int64_t>(value_); }
  bool is_double() const { return std::holds_alternative<double>(value_); }
  bool is_number() const { return is_int() || is_double(); }
  bool is_bool() const { return std::holds_alternative<bool>(value_); }
  bool is_string() const {
    return std::holds_alternative<Boxed<std::string>>(value_);
  }
  bool is_dtype() const { return std::holds_alternative<DType>(value_); }
  bool is_list() const {
    return std::holds_alternative<Boxed<ArgumentList>>(value_);
  }

  Node* node() const { return std::get<Node*>(value_); }
  int64_t int_value() const { return std::get<int64_t>(value_); }
  double double_value() const { return std::get<double>(value_); }
  // Int or double as a double.
  double number() const {
    return is_int() ? static_cast<double>(int_value()) : double_value();
  }
  bool bool_value() const { return std::get<bool>(value_); }
  const std::string& string_value() const {
    return *std::get<Boxed<std::string>>(value_);
  }
  DType dtype_value() const { return std::get<DType>(value_); }
  const ArgumentList& list() const { return *std::get<Boxed<ArgumentList>>(value_); }
  ArgumentList& mutable_list() { return *std::get<Boxed<ArgumentList>>(value_); }
  // True for a list whose elements are all ints.
  bool is_int_list() const;
  std::vector<int64_t> int_list() const;

  const Value& value() const { return value_; }
  // True if this argument or any nested element refers to a node.
  bool HasNodes() const;

  // Structural equality; node references compare by identity.
  friend bool operator==(const Argument& a, const Argument& b) {
    return a.value_ == b.value_;
  }

 private:
  Value value_;
};

using Kwargs = std::vector<std::pair<std::string, Argument>>;

}  // namespace graft

#endif  // GRAFT_GRAPH_ARGUMENT_H_
