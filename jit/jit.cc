#include "jit/jit.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <future>
#include <mutex>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/backend.h"
#include "backends/compile_cache.h"
#include "backends/disk_cache.h"
#include "backends/interp/constant_evaluator.h"
#include "passes/pass_context.h"
#include "passes/pipeline.h"
#include "support/status_macros.h"

namespace graft::jit_internal {
namespace {

// The calls whose tensors have these dtypes, ranks and devices and whose
// static arguments have these values: what automatic dynamic shapes track.
struct Family {
  std::vector<std::vector<int64_t>> first_dims;
  std::vector<std::vector<int64_t>> last_dims;
  std::set<std::pair<int, int>> dynamic;  // (tensor argument, dim).
};

std::string FamilyKey(const CallArgs& args) {
  std::string key;
  // Length-prefixed: no argument's text can run into the next one's.
  for (const std::string& a : args.args) absl::StrAppend(&key, a.size(), ":", a, ";");
  for (const Tensor& t : args.tensors) {
    absl::StrAppend(&key, "|", DTypeName(t.dtype()), "/", t.rank(), "@",
                    t.device().ToString());
  }
  return key;
}

std::string DimsKey(const std::vector<std::vector<std::string>>& dims) {
  std::string key;
  for (const auto& d : dims) absl::StrAppend(&key, "[", absl::StrJoin(d, ","), "]");
  return key;
}

std::string DefaultBackend() {
  return CreateBackend("orc").ok() ? "orc" : "interp";
}

}  // namespace

std::string ExactText(double value) { return absl::StrFormat("%a", value); }

using ExecutableOrError = absl::StatusOr<std::shared_ptr<Executable>>;

// What a call found, under the lock: code to run, a compile to wait for,
// or a compile to do itself (with the lock released).
struct Found {
  std::shared_ptr<Executable> executable;
  std::shared_future<ExecutableOrError> wait;
  std::shared_ptr<std::promise<ExecutableOrError>> compile;
  std::vector<TensorType> types;
  std::string sizes_key, general_key;
  bool recompile = false;
};

// The last call's signature and the code it ran: a call with the same one
// (the common case: a loop) runs it after comparing, without building keys.
struct LastCall {
  std::vector<std::string> args;
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> dims;
  std::vector<Device> devices;
  std::shared_ptr<Executable> executable;

  bool Matches(const CallArgs& call) const {
    if (executable == nullptr || call.args != args || call.tensors.size() != dims.size()) {
      return false;
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      const Tensor& t = call.tensors[i];
      if (t.dtype() != dtypes[i] || t.dims() != dims[i] || t.device() != devices[i]) {
        return false;
      }
    }
    return true;
  }
  void Remember(const CallArgs& call, std::shared_ptr<Executable> e) {
    args = call.args;
    dtypes.clear();
    dims.clear();
    devices.clear();
    for (const Tensor& t : call.tensors) {
      dtypes.push_back(t.dtype());
      dims.push_back(t.dims());
      devices.push_back(t.device());
    }
    executable = std::move(e);
  }
};

struct JitCore::State {
  JitOptions options;
  LastCall last;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<CompileCache> cache;
  std::mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<Executable>> by_sizes;
  absl::flat_hash_map<std::string, std::shared_ptr<Executable>> by_general;
  absl::flat_hash_map<std::string, Family> families;
  // Compiles under way, by general key: calls of the same key wait for
  // them instead of compiling again.
  absl::flat_hash_map<std::string, std::shared_future<ExecutableOrError>> in_flight;
  JitStats stats;
  std::string last_change;  // What made the last recompile: for the warning.
  bool warned = false;

  absl::StatusOr<Found> Lookup(const CallArgs& args);
  std::vector<TensorType> GeneralTypes(const CallArgs& args, Family& family, bool is_new);
  absl::StatusOr<std::shared_ptr<Executable>> Compile(const std::vector<TensorType>& types,
                                                      const std::vector<Tensor>& args_tensors,
                                                      const JitCore::Tracer& trace);
  void CountRecompile();
};

std::vector<TensorType> JitCore::State::GeneralTypes(const CallArgs& args, Family& family,
                                                     bool is_new) {
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor& t : args.tensors) dims.push_back(t.dims());
  if (is_new) {
    family.first_dims = dims;
    for (const auto& [arg, dim] : options.dynamic_dims) family.dynamic.insert({arg, dim});
    if (options.dynamic == JitDynamic::kOn) {
      for (size_t i = 0; i < dims.size(); ++i) {
        for (size_t d = 0; d < dims[i].size(); ++d) family.dynamic.insert({i, d});
      }
    }
  } else {
    for (size_t i = 0; i < dims.size(); ++i) {
      for (size_t d = 0; d < dims[i].size(); ++d) {
        if (dims[i][d] == family.last_dims[i][d]) continue;
        last_change = absl::StrCat("tensor argument ", i, " dim ", d, " (", family.last_dims[i][d],
                                   " -> ", dims[i][d], ")");
        if (options.dynamic == JitDynamic::kAuto && dims[i][d] != family.first_dims[i][d]) {
          family.dynamic.insert({static_cast<int>(i), static_cast<int>(d)});
        }
      }
    }
  }
  family.last_dims = dims;
  // Symbolic dims of equal size in this call share one symbol (torch's
  // "duck sizing"), so that a + b or a @ b of two symbolic dims still
  // type-checks; the sharing is part of the key, and a call whose sizes
  // differ where they were equal compiles anew.
  std::map<int64_t, std::string> symbol_of_size;
  std::vector<TensorType> types;
  for (size_t i = 0; i < args.tensors.size(); ++i) {
    TensorType t;
    t.dtype = args.tensors[i].dtype();
    for (size_t d = 0; d < dims[i].size(); ++d) {
      const bool symbolic = family.dynamic.count({static_cast<int>(i), static_cast<int>(d)}) > 0;
      if (!symbolic) {
        t.shape.push_back(Dim(dims[i][d]));
        continue;
      }
      auto [it, added] = symbol_of_size.try_emplace(dims[i][d], absl::StrCat("s", i, "_", d));
      t.shape.push_back(Dim::Symbol(it->second));
    }
    types.push_back(std::move(t));
  }
  return types;
}

void JitCore::State::CountRecompile() {
  ++stats.recompiles;
  if (warned || stats.recompiles < options.recompile_limit) return;
  warned = true;
  const std::string what = last_change.empty() ? "a static argument or a dtype" : last_change;
  const std::string message = absl::StrCat(
      "graft::Jit: a function was compiled again ", stats.recompiles,
      " times (recompile_limit ", options.recompile_limit, "); the last change: ", what,
      ". Mark a changing dim dynamic (JitOptions::dynamic_dims) or keep static arguments fixed.");
  if (options.warn) {
    options.warn(message);
  } else {
    std::fprintf(stderr, "graft: warning: %s\n", message.c_str());
  }
}

absl::StatusOr<std::shared_ptr<Executable>> JitCore::State::Compile(
    const std::vector<TensorType>& types, const std::vector<Tensor>& args_tensors,
    const JitCore::Tracer& trace) {
  ASSIGN_OR_RETURN(Module module, trace(types));
  if (!options.pipeline.empty()) {
    ASSIGN_OR_RETURN(passes::Pipeline pipeline, passes::Pipeline::FromString(options.pipeline));
    passes::PassContext ctx;
    ctx.constant_evaluator = interp::EvaluateNode;
    RETURN_IF_ERROR(pipeline.Run(module, ctx).status());
  }
  CompileOptions compile;
  compile.options = options.backend_options;
  if (options.mode == JitMode::kMaxAutotune && backend->name() == "cuda") {
    compile.options["autotune"] = "1";
  }
  compile.input_types = types;
  // Code for the device the tensors are on, with the results left there
  // (as torch.compile returns them).
  for (const Tensor& t : args_tensors) {
    if (t.on_host()) continue;
    compile.device_index = t.device().index;
    compile.keep_outputs_on_device = true;
    break;
  }
  return cache->GetOrCompile(*backend, module, compile);
}

absl::StatusOr<Found> JitCore::State::Lookup(const CallArgs& args) {
  Found found;
  const std::string family_key = FamilyKey(args);
  std::vector<std::vector<std::string>> sizes;
  for (const Tensor& t : args.tensors) {
    sizes.emplace_back();
    for (int64_t d : t.dims()) sizes.back().push_back(absl::StrCat(d));
  }
  found.sizes_key = absl::StrCat(family_key, DimsKey(sizes));
  if (auto it = by_sizes.find(found.sizes_key); it != by_sizes.end()) {
    ++stats.hits;
    found.executable = it->second;
    return found;
  }
  if (backend == nullptr) {
    ASSIGN_OR_RETURN(backend, CreateBackend(options.backend.empty() ? DefaultBackend()
                                                                    : options.backend));
  }
  auto [family, is_new] = families.try_emplace(family_key);
  if (is_new && families.size() > 1) {
    last_change = "a static argument, a dtype, a rank or a device";
  }
  found.types = GeneralTypes(args, family->second, is_new);
  std::vector<std::vector<std::string>> general;
  for (const TensorType& t : found.types) {
    general.emplace_back();
    for (const Dim& d : t.shape) general.back().push_back(d.ToString());
  }
  found.general_key = absl::StrCat(family_key, DimsKey(general));
  if (auto it = by_general.find(found.general_key); it != by_general.end()) {
    ++stats.hits;
    by_sizes[found.sizes_key] = it->second;
    found.executable = it->second;
    return found;
  }
  if (auto it = in_flight.find(found.general_key); it != in_flight.end()) {
    found.wait = it->second;
    return found;
  }
  found.recompile = !by_general.empty() || !in_flight.empty();
  ++stats.traces;
  found.compile = std::make_shared<std::promise<ExecutableOrError>>();
  in_flight[found.general_key] = found.compile->get_future().share();
  return found;
}

JitCore::JitCore(JitOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  std::shared_ptr<DiskCache> disk;
  if (state_->options.disk_cache) {
    disk = std::make_shared<DiskCache>(DiskCache::DefaultDir(), DiskCache::DefaultMaxBytes());
  }
  state_->cache = std::make_unique<CompileCache>(std::move(disk));
}

JitCore::~JitCore() = default;

absl::StatusOr<std::vector<Tensor>> JitCore::Call(const CallArgs& args, const Tracer& trace) {
  State& st = *state_;
  Found found;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    ++st.stats.calls;
    if (st.last.Matches(args)) {
      ++st.stats.hits;
      found.executable = st.last.executable;
    } else {
      ASSIGN_OR_RETURN(found, st.Lookup(args));
      if (found.executable != nullptr) st.last.Remember(args, found.executable);
    }
  }
  if (found.executable != nullptr) return found.executable->Run(args.tensors);
  if (found.wait.valid()) {
    // Another call is compiling this key: its result is ours.
    ExecutableOrError done = found.wait.get();
    if (!done.ok()) return done.status();
    {
      std::lock_guard<std::mutex> lock(st.mu);
      ++st.stats.hits;
      st.by_sizes[found.sizes_key] = *done;
    }
    return (*done)->Run(args.tensors);
  }
  // Traced and compiled with the lock released: calls of cached keys run
  // meanwhile.
  const auto start = std::chrono::steady_clock::now();
  ExecutableOrError compiled = absl::InternalError("the traced function threw an exception");
  try {
    compiled = st.Compile(found.types, args.tensors, trace);
  } catch (...) {
    // The key must not stay in flight: waiters get an error, later calls
    // trace again, and the exception goes on to this caller.
    {
      std::lock_guard<std::mutex> lock(st.mu);
      st.in_flight.erase(found.general_key);
    }
    found.compile->set_value(compiled);
    throw;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.in_flight.erase(found.general_key);
    st.stats.compile_seconds += seconds;
    // The function's own cache counts what it compiled and loaded.
    const CompileCacheStats cache = st.cache->stats();
    st.stats.compiles = cache.compiles;
    st.stats.disk_hits = cache.disk_hits;
    if (compiled.ok()) {
      st.by_general[found.general_key] = *compiled;
      st.by_sizes[found.sizes_key] = *compiled;
      if (found.recompile) st.CountRecompile();
    }
  }
  found.compile->set_value(compiled);
  if (!compiled.ok()) return compiled.status();
  return (*compiled)->Run(args.tensors);
}

JitStats JitCore::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->stats;
}

}  // namespace graft::jit_internal
