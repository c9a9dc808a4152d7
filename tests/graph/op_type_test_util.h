#ifndef GRAFT_TESTS_GRAPH_OP_TYPE_TEST_UTIL_H_
#define GRAFT_TESTS_GRAPH_OP_TYPE_TEST_UTIL_H_

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"

namespace graft::op_test {

inline Dim Sym(absl::string_view name) { return Dim::Symbol(name); }

// Built in place: copying an empty InlinedVector trips GCC 12's
// -Wmaybe-uninitialized on its unused inline storage.
inline TensorType T(DType dtype, std::initializer_list<Dim> dims) {
  TensorType t;
  t.dtype = dtype;
  t.shape.assign(dims.begin(), dims.end());
  return t;
}

inline Argument Ints(std::vector<int64_t> values) {
  return Argument::IntList(values);
}

// Builds small graphs and runs the registry's type rule of one call, the
// way shape propagation does: placeholders carry types, InferNodeTypes
// types the call, and the result is stored on the node for later calls.
class OpTypeTest : public ::testing::Test {
 protected:
  Node* Input(DType dtype, std::initializer_list<Dim> dims,
              absl::string_view name = "x") {
    return graph_.Placeholder(name, T(dtype, dims));
  }

  // Every result of the call; the node is left in graph_ with its types.
  absl::StatusOr<std::vector<TensorType>> InferAll(absl::string_view op,
                                                   std::vector<Argument> args,
                                                   Kwargs kwargs = {}) {
    last_ = graph_.CallFunction(op, std::move(args), std::move(kwargs));
    absl::StatusOr<std::optional<std::vector<TensorType>>> types =
        InferNodeTypes(*last_);
    if (!types.ok()) return types.status();
    if (!types->has_value()) {
      return absl::InternalError(absl::StrCat(op, ": no type inferred"));
    }
    std::vector<TensorType> out = **types;
    if (last_->schema() != nullptr && last_->schema()->returns_tuple) {
      last_->meta().tuple_types = out;
    } else if (out.size() == 1) {
      last_->set_type(out[0]);
    }
    return out;
  }

  // The single result of the call.
  absl::StatusOr<TensorType> Infer(absl::string_view op,
                                   std::vector<Argument> args,
                                   Kwargs kwargs = {}) {
    absl::StatusOr<std::vector<TensorType>> types =
        InferAll(op, std::move(args), std::move(kwargs));
    if (!types.ok()) return types.status();
    if (types->size() != 1) {
      return absl::InternalError(
          absl::StrCat(op, ": expected one result, got ", types->size()));
    }
    return (*types)[0];
  }

  // The node made by the last Infer/InferAll call.
  Node* last() const { return last_; }

  Graph graph_;
  Node* last_ = nullptr;
};

inline ::testing::AssertionResult HasType(const absl::StatusOr<TensorType>& got,
                                          const TensorType& want) {
  if (!got.ok()) {
    return ::testing::AssertionFailure()
           << "expected " << want.ToString()
           << ", got error: " << got.status().message();
  }
  if (*got != want) {
    return ::testing::AssertionFailure()
           << "expected " << want.ToString() << ", got " << got->ToString();
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult HasTypes(
    const absl::StatusOr<std::vector<TensorType>>& got,
    const std::vector<TensorType>& want) {
  auto str = [](const std::vector<TensorType>& ts) {
    return absl::StrJoin(ts, ", ", [](std::string* out, const TensorType& t) {
      out->append(t.ToString());
    });
  };
  if (!got.ok()) {
    return ::testing::AssertionFailure()
           << "expected (" << str(want)
           << "), got error: " << got.status().message();
  }
  if (*got != want) {
    return ::testing::AssertionFailure()
           << "expected (" << str(want) << "), got (" << str(*got) << ")";
  }
  return ::testing::AssertionSuccess();
}

// The error message of a failed rule; a marker text when it succeeded, so
// HasSubstr checks fail with a readable message.
template <typename T>
std::string ErrorOf(const absl::StatusOr<T>& r) {
  if (r.ok()) return "OK (no error)";
  return std::string(r.status().message());
}

}  // namespace graft::op_test

#endif  // GRAFT_TESTS_GRAPH_OP_TYPE_TEST_UTIL_H_
