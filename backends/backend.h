#ifndef GRAFT_BACKENDS_BACKEND_H_
#define GRAFT_BACKENDS_BACKEND_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/payload_parts.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "backends/communicator.h"
#include "graph/module.h"
#include "graph/node.h"
#include "graph/tensor.h"
#include "graph/tensor_type.h"

namespace graft {

// How a module should be compiled. Backends read what they understand and
// refuse option keys they do not know, so a typo is an error rather than a
// silently ignored setting.
struct CompileOptions {
  // Backend-specific settings, e.g. {"autotune", "1"}.
  std::map<std::string, std::string> options;
  // Which device of the backend's kind to use (GPU ordinal); 0 for the CPU.
  int device_index = 0;
  // If non-empty, one type per placeholder: the types the caller promises to
  // pass. Each must be compatible with the placeholder's own type (a symbol
  // may be narrowed to a constant); unknown placeholder types are filled in.
  std::vector<TensorType> input_types;
  // Leave outputs in the device's memory (Tensor::device()) instead of
  // copying them to the host; for chaining runs on a GPU. No effect on
  // backends that run on the host.
  bool keep_outputs_on_device = false;
  // For a module holding collectives (a rank of a sharded module,
  // passes/shard.h): this rank's link to the others. Null otherwise.
  std::shared_ptr<Communicator> communicator;

  // The value of option `key`, or `fallback` when it is not set.
  std::string Get(absl::string_view key, absl::string_view fallback = "") const;
  // Every field in one deterministic string, for compile cache keys.
  std::string KeyString() const;
};

// The name and (when known) type of one input or output of an Executable.
struct ValueSignature {
  std::string name;
  std::optional<TensorType> type;
};

// What an executable can say about itself after compiling, for
// `graft run --stats` and for tests. Zero means unknown.
struct ExecutableInfo {
  // Bytes of the intermediates' memory arena planned from value lifetimes,
  // beside the sum of every intermediate's size.
  size_t arena_bytes = 0;
  size_t intermediate_bytes = 0;
};

// A compiled module, ready to run. Inputs are given in placeholder order;
// outputs come back in the order of the output node's value (one node, or a
// list of nodes; a tuple-valued output contributes each of its elements).
// Run may be called from several threads at once.
class Executable {
 public:
  virtual ~Executable() = default;

  // Inputs may be on the host or on the executable's device; outputs are on
  // the host unless CompileOptions::keep_outputs_on_device asked otherwise.
  // Outputs kept on a device may still be being computed when Run returns
  // (the CUDA backend queues such runs); copies of them, and later runs on
  // that device, are ordered after it (DeviceAllocator::Synchronize waits).
  virtual absl::StatusOr<std::vector<Tensor>> Run(
      absl::Span<const Tensor> inputs) = 0;
  virtual const std::vector<ValueSignature>& input_signature() const = 0;
  virtual const std::vector<ValueSignature>& output_signature() const = 0;
  virtual ExecutableInfo info() const { return {}; }
};

// Something that turns a Module into an Executable: the reference
// interpreter, a CPU JIT, a GPU code generator.
class Backend {
 public:
  virtual ~Backend() = default;

  // The registry name: "interp", "orc", "cuda".
  virtual absl::string_view name() const = 0;
  // OK if this backend can run `node` itself with `options`, else why not
  // ("conv2d: groups=3 with dilation 2"). Nodes it cannot run fall back to
  // the interpreter (CompileWithFallback) and are reported as graph breaks.
  virtual absl::Status CanRun(const Node& node,
                              const CompileOptions& options) const = 0;
  // Compiles the whole module; fails if a node cannot run. The module is
  // not referenced after Compile returns.
  virtual absl::StatusOr<std::unique_ptr<Executable>> Compile(
      const Module& module, const CompileOptions& options) = 0;

  // OK if this machine can run the backend's executables (a GPU backend
  // needs a GPU and its driver), else why not.
  virtual absl::Status Available(const CompileOptions& options) const {
    return absl::OkStatus();
  }
  // The device the executables run on; the host unless overridden.
  virtual Device device(const CompileOptions& options) const { return {}; }
  // The allocator of that device; null for the host.
  virtual std::shared_ptr<DeviceAllocator> allocator(
      const CompileOptions& options) const {
    return nullptr;
  }

  // The options of each of `world_size` ranks sharing this host's cores
  // (CompileSharded on a host backend): `options` by default; a backend
  // whose runs take several threads gives each rank its share of them.
  virtual CompileOptions ForRankOnHost(const CompileOptions& options, int world_size) const {
    return options;
  }

  // The communicators of a world of `world_size` ranks, one per rank, for
  // running a sharded module (CompileSharded); a GPU backend puts rank r on
  // device r. The default is an in-process world on the host.
  virtual absl::StatusOr<std::vector<std::shared_ptr<Communicator>>> CreateWorld(
      int world_size) const {
    return InProcessWorld(world_size);
  }

  // The on-disk compile cache. A backend whose executables can be written
  // as bytes returns a non-empty identity: everything besides the module
  // and the options that decides the compiled code (compiler version, CPU
  // or GPU model and features), so that an entry made elsewhere is never
  // loaded. The interpreter has nothing worth keeping.
  virtual std::string CacheIdentity(const CompileOptions& options) const {
    return "";
  }
  virtual absl::StatusOr<std::string> SerializeExecutable(
      const Executable& executable) const;
  // The same bytes in parts, pointing into the executable's own memory
  // where the backend can (its packed weights), kept alive with it: what
  // the compile cache writes, in the background for a large entry, without
  // copying the bulk first. By default, SerializeExecutable's bytes.
  virtual absl::StatusOr<PayloadParts> SerializeExecutableInParts(
      std::shared_ptr<const Executable> executable) const;
  // `module` and `options` are those the bytes were compiled from.
  virtual absl::StatusOr<std::unique_ptr<Executable>> DeserializeExecutable(
      absl::string_view bytes, const Module& module,
      const CompileOptions& options) const;
  // The same for bytes that `keep_alive` keeps (a mapped disk cache entry,
  // 64-byte aligned): the executable may keep pointers into them and hold
  // `keep_alive` for as long. By default, DeserializeExecutable.
  virtual absl::StatusOr<std::unique_ptr<Executable>> DeserializeMapped(
      absl::string_view bytes, std::shared_ptr<const void> keep_alive, const Module& module,
      const CompileOptions& options) const {
    return DeserializeExecutable(bytes, module, options);
  }

  // Writes `executable` (compiled by this backend, for fixed input shapes)
  // as a compiled model file (.gcx) that graft::runtime loads and runs with
  // no compiler (runtime/compiled_model.h), or says why it cannot.
  virtual absl::Status WriteCompiledModel(const Executable& executable,
                                          const std::string& path) const;
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

// Backends by name. A backend library registers itself when it is linked
// into a program (see backends/CMakeLists.txt for how that is guaranteed).
class BackendRegistry {
 public:
  static BackendRegistry& Global();

  // Fails if `name` is taken.
  absl::Status Register(std::string name, BackendFactory factory);
  absl::StatusOr<std::unique_ptr<Backend>> Create(absl::string_view name) const;
  // Sorted.
  std::vector<std::string> Names() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, BackendFactory, std::less<>> factories_;
};

// BackendRegistry::Global().Create(name); an unknown name gives an error
// listing the backends this program knows.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(absl::string_view name);
absl::Status RegisterBackend(std::string name, BackendFactory factory);

// Which size each shape symbol stands for in one run ("batch" -> 32).
using SymbolBindings = absl::flat_hash_map<std::string, int64_t>;

// The signature of `graph`'s placeholders, in order.
std::vector<ValueSignature> PlaceholderSignature(const Graph& graph);
// The signature of the values the output node returns, in order. A
// tuple-valued output contributes one entry per element ("split.0", ...)
// when its tuple types are known.
std::vector<ValueSignature> OutputSignature(const Graph& graph);

// Applies CompileOptions::input_types to a placeholder signature: checks
// that each given type is compatible and takes it.
absl::Status NarrowSignature(std::vector<ValueSignature>& signature,
                             const std::vector<TensorType>& input_types);

// `inputs` with every tensor in a device's memory copied to the host, for
// executables that run on the host: the span itself when all are there
// already, else a view of `copies`, which holds the copies.
absl::StatusOr<absl::Span<const Tensor>> InputsOnHost(
    absl::Span<const Tensor> inputs, std::vector<Tensor>& copies);

// Checks run-time inputs against a signature: count, dtype, rank, constant
// dims, and that a symbol binds to one size across all inputs. Returns the
// bindings. Errors name the input.
absl::StatusOr<SymbolBindings> CheckInputs(
    absl::Span<const ValueSignature> signature,
    absl::Span<const Tensor> inputs);

}  // namespace graft

#endif  // GRAFT_BACKENDS_BACKEND_H_
