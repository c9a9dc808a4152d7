#ifndef GRAFT_GRAPH_TRACER_H_
#define GRAFT_GRAPH_TRACER_H_

// The C++ tracer: Proxy and Tracer (graph/proxy.h), one free function per
// core op (graph/trace_ops.h), and helpers that trace a whole function,
// e.g. the pattern and replacement of a rewrite. See docs/tracer.md.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "graph/proxy.h"
#include "graph/tensor_type.h"
#include "graph/trace_ops.h"

namespace graft::trace {

// Traces `fn` on one placeholder per entry of `input_types` (nullopt: type
// unknown, as for pattern wildcards) and returns the module with fn's
// results as outputs. Inputs are named `input_names[i]`, or "x0", "x1", ...
// when no names are given.
absl::StatusOr<Module> TraceFunction(
    const std::function<std::vector<Proxy>(const std::vector<Proxy>&)>& fn,
    const std::vector<std::optional<TensorType>>& input_types,
    const std::vector<std::string>& input_names = {});

namespace internal {

template <typename T>
struct IsTupleLike : std::false_type {};
template <typename... Ts>
struct IsTupleLike<std::tuple<Ts...>> : std::true_type {};
template <typename A, typename B>
struct IsTupleLike<std::pair<A, B>> : std::true_type {};

// A traced function's result as a list of outputs.
template <typename R>
std::vector<Proxy> ToOutputs(R&& result) {
  using T = std::decay_t<R>;
  if constexpr (std::is_same_v<T, Proxy>) {
    return {std::forward<R>(result)};
  } else if constexpr (std::is_same_v<T, std::vector<Proxy>>) {
    return std::forward<R>(result);
  } else {
    static_assert(IsTupleLike<T>::value,
                  "a traced function returns a Proxy, a std::vector<Proxy>, "
                  "or a tuple/pair of Proxy");
    return std::apply(
        [](const auto&... p) { return std::vector<Proxy>{Proxy(p)...}; },
        result);
  }
}

template <typename Fn, size_t... I>
auto InvokeOnInputs(Fn& fn, const std::vector<Proxy>& in,
                    std::index_sequence<I...>) {
  return fn(in[I]...);
}

// An input type given as TensorType, std::optional<TensorType> or
// std::nullopt. (Converting std::nullopt_t in a pack expansion directly
// crashes GCC 12.)
template <typename T>
std::optional<TensorType> InputType(const T& type) {
  if constexpr (std::is_same_v<T, std::nullopt_t>) {
    return std::nullopt;
  } else {
    return std::optional<TensorType>(type);
  }
}

// Calls a callable of N proxies with a vector of them. A named functor
// rather than a lambda, to keep the template simple.
template <typename Fn, size_t N>
struct SpreadInputs {
  Fn* fn;
  std::vector<Proxy> operator()(const std::vector<Proxy>& in) const {
    return ToOutputs(InvokeOnInputs(*fn, in, std::make_index_sequence<N>{}));
  }
};

}  // namespace internal

// Traces `fn`, a callable taking one Proxy per input type and returning a
// Proxy, a std::vector<Proxy> or a tuple of them:
//   absl::StatusOr<Module> pattern = Trace(
//       [](Proxy x) { return relu(x + 1.0); }, std::nullopt);
//   absl::StatusOr<Module> m = Trace(
//       [](Proxy a, Proxy b) { return std::pair(a * b, a + b); },
//       TensorType{DType::kF32, {4}}, TensorType{DType::kF32, {4}});
// Each input type is a TensorType or std::nullopt (unknown).
template <typename Fn, typename... Types>
absl::StatusOr<Module> Trace(Fn&& fn, const Types&... input_types) {
  std::vector<std::optional<TensorType>> types{
      internal::InputType(input_types)...};
  using F = std::remove_reference_t<Fn>;
  return TraceFunction(internal::SpreadInputs<F, sizeof...(Types)>{&fn}, types);
}

}  // namespace graft::trace

namespace graft {
using trace::Trace;
using trace::TraceFunction;
}  // namespace graft

#endif  // GRAFT_GRAPH_TRACER_H_
