#include "backends/backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/graph.h"
#include "graph/type_rules.h"
#include "support/status_macros.h"

namespace graft {
namespace {

std::string DimsToString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

std::string InputName(absl::Span<const ValueSignature> signature, size_t i) {
  return absl::StrCat("input ", i, " ('", signature[i].name, "')");
}

// Appends the signature entries of output value `node`.
void AppendOutput(const Node* node, std::vector<ValueSignature>& out) {
  const std::vector<TensorType>& tuple = node->meta().tuple_types;
  if (!node->type().has_value() && !tuple.empty()) {
    for (size_t i = 0; i < tuple.size(); ++i) {
      out.push_back({absl::StrCat(node->name(), ".", i), tuple[i]});
    }
    return;
  }
  out.push_back({node->name(), node->type()});
}

// Walks an output argument: a node or a (possibly nested) list of nodes.
// Nesting depth is that of the literal, not of the graph.
void CollectOutputs(const Argument& arg, std::vector<ValueSignature>& out) {
  if (arg.is_node()) {
    AppendOutput(arg.node(), out);
  } else if (arg.is_list()) {
    for (const Argument& e : arg.list()) CollectOutputs(e, out);
  }
}

}  // namespace

std::string CompileOptions::Get(absl::string_view key,
                                absl::string_view fallback) const {
  auto it = options.find(std::string(key));
  return it == options.end() ? std::string(fallback) : it->second;
}

std::string CompileOptions::KeyString() const {
  std::string key = absl::StrCat("device=", device_index,
                                 ";keep_outputs_on_device=",
                                 keep_outputs_on_device, ";inputs=");
  if (communicator != nullptr) {
    // Compiled code binds its communicator: a key per communicator.
    absl::StrAppend(&key, "world=", communicator->world_size(), ";rank=",
                    communicator->rank(), ";communicator=", communicator->id(), ";");
  }
  for (const TensorType& t : input_types) absl::StrAppend(&key, t.ToString(), ",");
  for (const auto& [k, v] : options) {
    absl::StrAppend(&key, ";", k.size(), ":", k, "=", v.size(), ":", v);
  }
  return key;
}

absl::StatusOr<std::string> Backend::SerializeExecutable(
    const Executable& executable) const {
  return absl::UnimplementedError(absl::StrCat(
      "the ", name(), " backend does not write executables to disk"));
}

absl::StatusOr<PayloadParts> Backend::SerializeExecutableInParts(
    std::shared_ptr<const Executable> executable) const {
  ASSIGN_OR_RETURN(std::string bytes, SerializeExecutable(*executable));
  return PayloadParts::Owning(std::move(bytes));
}

absl::Status Backend::WriteCompiledModel(const Executable& executable,
                                         const std::string& path) const {
  return absl::UnimplementedError(absl::StrCat(
      "the ", name(), " backend does not write compiled model files (orc does)"));
}

absl::StatusOr<std::unique_ptr<Executable>> Backend::DeserializeExecutable(
    absl::string_view bytes, const Module& module,
    const CompileOptions& options) const {
  return absl::UnimplementedError(absl::StrCat(
      "the ", name(), " backend does not read executables from disk"));
}

BackendRegistry& BackendRegistry::Global() {
  static auto* registry = new BackendRegistry();
  return *registry;
}

absl::Status BackendRegistry::Register(std::string name,
                                       BackendFactory factory) {
  std::lock_guard<std::mutex> lock(mu_);
  if (factories_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("backend '", name, "' is already registered"));
  }
  factories_.emplace(std::move(name), std::move(factory));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Backend>> BackendRegistry::Create(
    absl::string_view name) const {
  BackendFactory factory;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = factories_.find(name);
    if (it != factories_.end()) factory = it->second;
  }
  if (!factory) {
    std::vector<std::string> names = Names();
    return absl::NotFoundError(
        absl::StrCat("unknown backend '", name, "'; known backends: ",
                     names.empty() ? "(none linked into this program)"
                                   : absl::StrJoin(names, ", ")));
  }
  std::unique_ptr<Backend> backend = factory();
  if (backend == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("backend '", name, "' is not available on this machine"));
  }
  return backend;
}

std::vector<std::string> BackendRegistry::Names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(absl::string_view name) {
  return BackendRegistry::Global().Create(name);
}

absl::Status RegisterBackend(std::string name, BackendFactory factory) {
  return BackendRegistry::Global().Register(std::move(name),
                                            std::move(factory));
}

std::vector<ValueSignature> PlaceholderSignature(const Graph& graph) {
  std::vector<ValueSignature> signature;
  for (const Node* node : graph.nodes()) {
    if (node->op() == OpCode::kPlaceholder) {
      signature.push_back({node->target(), node->type()});
    }
  }
  return signature;
}

std::vector<ValueSignature> OutputSignature(const Graph& graph) {
  std::vector<ValueSignature> signature;
  const Node* output = graph.output();
  if (output == nullptr || output->num_args() == 0) return signature;
  CollectOutputs(output->arg(0), signature);
  return signature;
}

absl::Status NarrowSignature(std::vector<ValueSignature>& signature,
                             const std::vector<TensorType>& input_types) {
  if (input_types.empty()) return absl::OkStatus();
  if (input_types.size() != signature.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compile options give ", input_types.size(),
        " input types, but the graph has ", signature.size(), " placeholders"));
  }
  for (size_t i = 0; i < signature.size(); ++i) {
    const TensorType& given = input_types[i];
    if (signature[i].type.has_value()) {
      const TensorType& declared = *signature[i].type;
      bool compatible =
          given.dtype == declared.dtype && given.rank() == declared.rank();
      for (size_t d = 0; compatible && d < declared.shape.size(); ++d) {
        compatible = declared.shape[d].is_symbolic() ||
                     declared.shape[d] == given.shape[d];
      }
      if (!compatible) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input type ", given.ToString(), " given for ",
            InputName(signature, i), " does not match its declared type ",
            declared.ToString()));
      }
    }
    signature[i].type = given;
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const Tensor>> InputsOnHost(
    absl::Span<const Tensor> inputs, std::vector<Tensor>& copies) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].on_host()) continue;
    if (copies.empty()) copies.assign(inputs.begin(), inputs.end());
    ASSIGN_OR_RETURN(copies[i], CopyToHost(inputs[i]));
  }
  return copies.empty() ? inputs : absl::Span<const Tensor>(copies);
}

absl::StatusOr<SymbolBindings> CheckInputs(
    absl::Span<const ValueSignature> signature,
    absl::Span<const Tensor> inputs) {
  if (inputs.size() != signature.size()) {
    std::vector<std::string> names;
    for (const ValueSignature& s : signature) names.push_back(s.name);
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", signature.size(), " inputs (",
                     absl::StrJoin(names, ", "), "), got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat(InputName(signature, i), " is an undefined tensor"));
    }
    if (!signature[i].type.has_value()) continue;
    const TensorType& type = *signature[i].type;
    if (t.dtype() != type.dtype || t.rank() != type.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat(InputName(signature, i), ": expected ", type.ToString(),
                       ", got ", t.TypeString()));
    }
    for (size_t d = 0; d < type.shape.size(); ++d) {
      Dim dim = type.shape[d];
      if (dim.is_constant() && dim.value() != t.dims()[d]) {
        return absl::InvalidArgumentError(
            absl::StrCat(InputName(signature, i), ": expected ",
                         type.ToString(), ", got ", t.TypeString(), " (dim ", d,
                         " is ", t.dims()[d], ", expected ", dim.value(), ")"));
      }
    }
  }
  // Plain symbols ("batch") bind first; derived ones ("128*batch") are then
  // checked against the product they stand for, or bound by name when a
  // symbol they mention is unbound.
  SymbolBindings bindings;
  absl::flat_hash_map<std::string, size_t> bound_by;  // Symbol -> input.
  for (bool derived : {false, true}) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!signature[i].type.has_value()) continue;
      const Shape& shape = signature[i].type->shape;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d].is_constant()) continue;
        std::string symbol(shape[d].symbol());
        if ((symbol.find('*') != std::string::npos) != derived) continue;
        const int64_t size = inputs[i].dims()[d];
        if (derived) {
          std::optional<int64_t> value = rules::EvaluateDim(shape[d], bindings);
          if (value.has_value()) {
            if (*value != size) {
              return absl::InvalidArgumentError(absl::StrCat(
                  InputName(signature, i), ": dim ", d, " (", symbol, ") is ",
                  size, ", but ", symbol, " is ", *value,
                  " from the sizes bound by the other inputs"));
            }
            continue;
          }
        }
        auto [it, inserted] = bindings.emplace(symbol, size);
        if (inserted) {
          bound_by[symbol] = i;
        } else if (it->second != size) {
          const size_t j = bound_by[symbol];
          return absl::InvalidArgumentError(
              absl::StrCat(InputName(signature, i), ": dim ", d, " (", symbol,
                           ") is ", size, ", but ", symbol, " is ", it->second,
                           " from ", InputName(signature, j), " (shape ",
                           DimsToString(inputs[j].dims()), ")"));
        }
      }
    }
  }
  return bindings;
}

}  // namespace graft
