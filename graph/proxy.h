#ifndef GRAFT_GRAPH_PROXY_H_
#define GRAFT_GRAPH_PROXY_H_

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/argument.h"
#include "graph/module.h"
#include "graph/node.h"
#include "graph/tensor.h"
#include "graph/tensor_type.h"

// The tracer lives in its own namespace because it defines a free function
// for every core op (relu, exp, abs, split, ...): in namespace graft those
// names would hide ::exp and friends from unqualified calls in any graft
// code that includes this header. Calls on proxies find the functions by
// argument-dependent lookup, so user code reads `relu(linear(x, w, b))`.
namespace graft::trace {

class Tracer;

// A value being traced: a node of a Tracer's graph. Operations on proxies
// (the free functions of graph/trace_ops.h and the operators + - * /)
// record new nodes instead of computing. Copies are cheap and refer to the
// same node. A default-constructed Proxy is invalid; using it records an
// error in the tracer.
class Proxy {
 public:
  Proxy() = default;

  bool valid() const { return node_ != nullptr; }
  Node* node() const { return node_; }
  Tracer* tracer() const { return tracer_; }
  // The inferred type; nullopt when unknown (or the proxy is invalid).
  const std::optional<TensorType>& type() const;
  // "%relu_1" style reference for messages; "<invalid>" when invalid.
  std::string Ref() const;

  // Lets a proxy stand wherever an Argument is expected (Tracer::Call).
  operator Argument() const { return Argument(node_); }  // NOLINT

 private:
  friend class Tracer;
  Proxy(Tracer* tracer, Node* node) : tracer_(tracer), node_(node) {}

  Tracer* tracer_ = nullptr;
  Node* node_ = nullptr;
};

// True for the number types a literal may be given as (bool included).
template <typename T>
concept Arithmetic = std::is_arithmetic_v<T>;

// A literal number for a Scalar parameter: int, float or bool, recorded with
// its own kind (arange(0, 10, 1) is an i64 range, arange(0, 10, 1.0) f32).
class ScalarArg {
 public:
  template <Arithmetic T>
  ScalarArg(T value) : arg_(ToArgument(value)) {}  // NOLINT: literals convert.

  const Argument& arg() const { return arg_; }

  template <Arithmetic T>
  static Argument ToArgument(T value) {
    if constexpr (std::is_same_v<T, bool>) {
      return Argument(value);
    } else if constexpr (std::is_integral_v<T>) {
      return Argument(static_cast<int64_t>(value));
    } else {
      return Argument(static_cast<double>(value));
    }
  }

 private:
  Argument arg_;
};

// A Tensor|Scalar parameter: a proxy or a literal number. Converting to it
// captures the source location of the expression, which is how the
// operators (which cannot take a defaulted location argument) know where
// `x + 1.0` was written.
class TensorOrScalar {
 public:
  TensorOrScalar(  // NOLINT: proxies convert implicitly.
      const Proxy& proxy,
      std::source_location location = std::source_location::current())
      : proxy_(proxy), arg_(proxy), location_(location) {}
  template <Arithmetic T>
  TensorOrScalar(  // NOLINT: literals convert implicitly.
      T value, std::source_location location = std::source_location::current())
      : arg_(ScalarArg::ToArgument(value)), location_(location) {}

  bool is_proxy() const { return arg_.is_node(); }
  // The proxy; invalid for a literal.
  const Proxy& proxy() const { return proxy_; }
  const Argument& arg() const { return arg_; }
  const std::source_location& location() const { return location_; }

 private:
  Proxy proxy_;
  Argument arg_;
  std::source_location location_;
};

// An int[] parameter: a list, or a single int that the op repeats as
// PyTorch does (`max_pool2d(x, 2)` == `max_pool2d(x, {2, 2})`).
class IntList {
 public:
  IntList(int64_t value) : arg_(value) {}         // NOLINT
  IntList(std::initializer_list<int64_t> values)  // NOLINT
      : arg_(Argument::IntList(std::vector<int64_t>(values))) {}
  IntList(const std::vector<int64_t>& values)  // NOLINT
      : arg_(Argument::IntList(values)) {}

  const Argument& arg() const { return arg_; }

 private:
  Argument arg_;
};

// An int[]? parameter: like IntList, or None (std::nullopt).
class OptionalIntList {
 public:
  OptionalIntList(std::nullopt_t) {}                      // NOLINT
  OptionalIntList(int64_t value) : arg_(value) {}         // NOLINT
  OptionalIntList(std::initializer_list<int64_t> values)  // NOLINT
      : arg_(Argument::IntList(std::vector<int64_t>(values))) {}
  OptionalIntList(const std::vector<int64_t>& values)  // NOLINT
      : arg_(Argument::IntList(values)) {}

  const Argument& arg() const { return arg_; }

 private:
  Argument arg_;  // None by default.
};

// Records operations on proxies into a graph and hands the result over as a
// Module. Each recorded node gets its type inferred from its inputs (the op
// registry's type rules) and the C++ source location of the call in
// meta().location. Failures do not stop tracing: the first one is kept,
// naming the op and the location, and Finish() returns it.
//
//   Tracer t;
//   Proxy x = t.Input("x", TensorType{DType::kF32, {Dim::Symbol("batch"), 4}});
//   Proxy w = t.Parameter("fc.weight", RandomTensor(DType::kF32, {8, 4}, 1));
//   Proxy y = relu(linear(x, w));
//   absl::StatusOr<Module> m = t.Finish({y});
//
// A Tracer is used from one thread at a time; tracers on different threads
// are independent. While it lives it is the thread's current tracer
// (Current()), which ops with no tensor argument (zeros, full, arange)
// record into; tracers on one thread must be destroyed in reverse order of
// creation.
class Tracer {
 public:
  Tracer();
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The innermost live tracer of this thread, or null.
  static Tracer* Current();

  // A graph input (placeholder) named `name`, of type `type` if known.
  Proxy Input(absl::string_view name,
              std::optional<TensorType> type = std::nullopt,
              std::source_location location = std::source_location::current());
  // Adds `value` to the module as tensor `name` and reads it (get_attr).
  // `init` tells the text format how to recreate it ("random(seed=3)").
  Proxy Parameter(
      absl::string_view name, Tensor value, std::string init = {},
      std::source_location location = std::source_location::current());
  // A tensor constant under a fresh name ("constant", "constant_1", ...).
  Proxy Constant(Tensor value, std::source_location location =
                                   std::source_location::current());
  // Reads tensor `name`, which must already be in the module.
  Proxy Attr(absl::string_view name,
             std::source_location location = std::source_location::current());

  // Records call_function `op` with the arguments as given (proxies convert
  // to Arguments). For ops without a free function: extension ops
  // ("ns::name") or calls with explicit keyword arguments.
  Proxy Call(absl::string_view op, std::vector<Argument> args,
             Kwargs kwargs = {},
             std::source_location location = std::source_location::current());
  // Like Call for an op that returns a tuple: one proxy per element, each a
  // getitem node. The element count comes from the inferred types, else
  // from `num_results`.
  std::vector<Proxy> CallTuple(
      absl::string_view op, std::vector<Argument> args, Kwargs kwargs = {},
      std::optional<size_t> num_results = std::nullopt,
      std::source_location location = std::source_location::current());

  // Ends tracing: adds the output node (one value, or a list for several),
  // verifies the module and returns it, or the first error recorded. The
  // tracer records nothing afterwards.
  absl::StatusOr<Module> Finish(
      const std::vector<Proxy>& outputs,
      std::source_location location = std::source_location::current());

  // OK, or the first error so far.
  const absl::Status& status() const { return status_; }
  bool finished() const { return module_ == nullptr; }
  // The module being built; requires !finished().
  Module& module() { return *module_; }
  Graph& graph() { return module_->graph(); }

  // A proxy for `node`, a node of this tracer's graph (for code that mixes
  // tracing with direct graph edits).
  Proxy Wrap(Node* node) { return Proxy(this, node); }

  // Keeps the first error, prefixed with "file:line: op: ".
  void RecordError(absl::string_view op, const absl::Status& error,
                   const std::source_location& location);

 private:
  // Checks that every node reference among the arguments is a node of this
  // tracer's live graph; records an error and returns false otherwise.
  bool CheckOperands(absl::string_view op, const std::vector<Argument>& args,
                     const Kwargs& kwargs,
                     const std::source_location& location);
  void SetLocation(Node* node, const std::source_location& location);
  Proxy ReadTensor(absl::string_view name,
                   const std::source_location& location);

  std::unique_ptr<Module> module_;
  absl::flat_hash_set<std::string> input_names_;  // Placeholder targets.
  absl::Status status_;
  Tracer* previous_;  // The thread's current tracer before this one.
};

}  // namespace graft::trace

namespace graft {
using trace::Proxy;
using trace::Tracer;
}  // namespace graft

#endif  // GRAFT_GRAPH_PROXY_H_
