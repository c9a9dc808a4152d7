#ifndef GRAFT_JIT_JIT_H_
#define GRAFT_JIT_JIT_H_

// graft::Jit: call a C++ function of tensors; the first call with a new key
// (argument shapes, dtypes and devices, and the values of the static
// arguments) traces it, runs the default pass pipeline, compiles it and
// caches the result; later calls with the same key run the cached code.
// As jax.jit and torch.compile do, without Python:
//
//   auto f = graft::Jit([](graft::Proxy x) { return sum(x * x + sin(x)); });
//   absl::StatusOr<std::vector<graft::Tensor>> y = f(x);   // traces, compiles
//   y = f(x2);                                              // same shape: runs
//
// Arguments of type graft::Tensor become the traced function's Proxy
// inputs; any other argument (an int, a double, a bool, a string) is static:
// passed to the function as is while tracing and part of the key, so a new
// value traces again. docs/jit.md has the whole story.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "graph/module.h"
#include "graph/tensor.h"
#include "graph/tracer.h"

namespace graft {

class CompileCache;

// torch.compile's modes.
enum class JitMode {
  kDefault,
  // The lowest per-call overhead: on cuda a run is one CUDA graph replay
  // (which graft's cuda backend always captures); on the CPU, orc's single
  // entry function has no per-node dispatch to remove, so it compiles as
  // kDefault does.
  kReduceOverhead,
  // Longer compiles for faster code: cuda times cuBLASLt's candidate
  // algorithms (--autotune); orc and interp compile as by default.
  kMaxAutotune,
};

// Whether dims are compiled symbolic, so that a new size does not trace and
// compile again (torch.compile's `dynamic`).
enum class JitDynamic {
  // Static at first; a dim whose size changes between calls becomes
  // symbolic at the next compile (torch's automatic dynamic shapes).
  kAuto,
  kOn,   // Every dim of every tensor argument symbolic from the first call.
  kOff,  // Every new size compiles again.
};

struct JitOptions {
  // "orc" where graft is built with it, else "interp"; or any backend name.
  std::string backend;
  JitMode mode = JitMode::kDefault;
  JitDynamic dynamic = JitDynamic::kAuto;
  // (tensor argument index, dim) pairs that are symbolic from the start.
  std::vector<std::pair<int, int>> dynamic_dims;
  // After this many recompiles of one function, one warning names the
  // argument and dim (or static argument) that keeps changing.
  int recompile_limit = 8;
  // Passes run on each traced module before it is compiled.
  std::string pipeline = "shape-prop,cse,dce,fuse-linear-activation,canonicalize";
  // Backend options (CompileOptions::options), e.g. {"threads", "1"}.
  std::map<std::string, std::string> backend_options;
  // Keep compiled code on disk ($GRAFT_CACHE_DIR, as graft run does), so a
  // new process skips code generation for fixed shapes.
  bool disk_cache = true;
  // Where warnings go; stderr when empty.
  std::function<void(const std::string&)> warn;
};

// JAX's trace count and torch.compile's counters, per function.
struct JitStats {
  int64_t calls = 0;
  int64_t traces = 0;      // Traced into a module (a new key).
  int64_t compiles = 0;    // Compiled by the backend (not found in any cache).
  int64_t disk_hits = 0;   // Loaded from the disk cache instead.
  int64_t hits = 0;        // Calls that ran code cached in this process.
  int64_t recompiles = 0;  // Traces after the first.
  double compile_seconds = 0;  // Tracing, passes and compiling.
};

namespace jit_internal {

// A double as text that reads back to the same bits ("%a").
std::string ExactText(double value);

// One call's arguments: the tensors, and every argument as a tagged,
// exact text ("T" for a tensor, "f:0x1.8p+1" for the double 3.0, "s:abc"):
// two calls share a key only if every static argument has the same type
// and value at the same position.
struct CallArgs {
  std::vector<Tensor> tensors;
  std::vector<std::string> args;
};

template <typename A>
void AddArg(CallArgs& call, const A& a) {
  using T = std::decay_t<A>;
  if constexpr (std::is_same_v<T, Tensor>) {
    call.tensors.push_back(a);
    call.args.push_back("T");
  } else if constexpr (std::is_same_v<T, bool>) {
    call.args.push_back(a ? "b:1" : "b:0");
  } else if constexpr (std::is_floating_point_v<T>) {
    call.args.push_back(absl::StrCat("f", sizeof(T), ":", ExactText(static_cast<double>(a))));
  } else if constexpr (std::is_integral_v<T>) {
    call.args.push_back(absl::StrCat(std::is_signed_v<T> ? "i" : "u", sizeof(T), ":", a));
  } else {
    static_assert(std::is_convertible_v<T, std::string>,
                  "a jitted function's arguments are graft::Tensor, or static numbers, "
                  "bools and strings");
    call.args.push_back(absl::StrCat("s:", std::string(a)));
  }
}

// The argument the traced function gets: a Proxy for a tensor, else the
// static value itself.
template <typename A>
decltype(auto) TraceArg(const A& a, const std::vector<Proxy>& proxies, size_t& next) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
    return Proxy(proxies[next++]);
  } else {
    return (a);
  }
}

// Everything about a jitted function but its C++ type.
class JitCore {
 public:
  // Traces the function on proxies of `types` into a module.
  using Tracer = std::function<absl::StatusOr<Module>(const std::vector<TensorType>& types)>;

  explicit JitCore(JitOptions options);
  ~JitCore();

  absl::StatusOr<std::vector<Tensor>> Call(const CallArgs& args, const Tracer& trace);
  JitStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace jit_internal

// A jitted function; copies share their cache. Thread-safe.
template <typename Fn>
class JitFunction {
 public:
  JitFunction(Fn fn, JitOptions options)
      : fn_(std::make_shared<Fn>(std::move(fn))),
        core_(std::make_shared<jit_internal::JitCore>(std::move(options))) {}

  // Runs the function on `args`; returns its outputs in order.
  template <typename... Args>
  absl::StatusOr<std::vector<Tensor>> operator()(const Args&... args) const {
    jit_internal::CallArgs call;
    (jit_internal::AddArg(call, args), ...);
    auto trace = [&](const std::vector<TensorType>& types) -> absl::StatusOr<Module> {
      std::vector<std::optional<TensorType>> inputs(types.begin(), types.end());
      return trace::TraceFunction(
          [&](const std::vector<Proxy>& proxies) {
            size_t next = 0;
            // Braces evaluate left to right: proxies in argument order.
            auto traced = std::tuple<decltype(jit_internal::TraceArg(args, proxies, next))...>{
                jit_internal::TraceArg(args, proxies, next)...};
            return trace::internal::ToOutputs(std::apply(*fn_, traced));
          },
          inputs);
    };
    return core_->Call(call, trace);
  }

  JitStats stats() const { return core_->stats(); }

 private:
  std::shared_ptr<Fn> fn_;
  std::shared_ptr<jit_internal::JitCore> core_;
};

// Makes a jitted function of `fn`, a callable taking a Proxy for each tensor
// argument (and static arguments as themselves) and returning a Proxy, a
// std::vector<Proxy> or a tuple of them.
template <typename Fn>
JitFunction<std::decay_t<Fn>> Jit(Fn&& fn, JitOptions options = {}) {
  return JitFunction<std::decay_t<Fn>>(std::forward<Fn>(fn), std::move(options));
}

}  // namespace graft

#endif  // GRAFT_JIT_JIT_H_
