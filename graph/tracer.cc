#include "graph/tracer.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "graph/verifier.h"

namespace graft::trace {
namespace {

// Tracers nest per thread (a pattern traced while building a pass, say);
// each one remembers the one it replaced.
thread_local Tracer* current_tracer = nullptr;

const std::optional<TensorType>& NoType() {
  static const auto* none = new std::optional<TensorType>();
  return *none;
}

// Finds a node reference that is null or not a live node of `graph`;
// recursion only follows literal list nesting.
const Argument* FindBadNodeRef(const Argument& arg, const Graph& graph) {
  if (arg.is_node()) {
    const Node* n = arg.node();
    return n == nullptr || n->graph() != &graph || n->erased() ? &arg : nullptr;
  }
  if (arg.is_list()) {
    for (const Argument& a : arg.list()) {
      if (const Argument* bad = FindBadNodeRef(a, graph)) return bad;
    }
  }
  return nullptr;
}

}  // namespace

const std::optional<TensorType>& Proxy::type() const {
  return node_ == nullptr ? NoType() : node_->type();
}

std::string Proxy::Ref() const {
  return node_ == nullptr ? "<invalid>" : node_->Ref();
}

Tracer::Tracer()
    : module_(std::make_unique<Module>()), previous_(current_tracer) {
  current_tracer = this;
}

Tracer::~Tracer() {
  if (current_tracer == this) current_tracer = previous_;
}

Tracer* Tracer::Current() { return current_tracer; }

void Tracer::RecordError(absl::string_view op, const absl::Status& error,
                         const std::source_location& location) {
  if (!status_.ok()) return;  // Later errors are usually consequences.
  absl::string_view message = error.message();
  // Type rules already start their messages with the op name.
  std::string prefix = absl::StrCat(op, ": ");
  if (absl::StartsWith(message, prefix)) message.remove_prefix(prefix.size());
  status_ = absl::Status(
      error.code(), absl::StrCat(location.file_name(), ":", location.line(),
                                 ": ", op, ": ", message));
}

void Tracer::SetLocation(Node* node, const std::source_location& location) {
  node->meta().location =
      SourceLocation{location.file_name(), static_cast<int>(location.line()),
                     static_cast<int>(location.column())};
}

bool Tracer::CheckOperands(absl::string_view op,
                           const std::vector<Argument>& args,
                           const Kwargs& kwargs,
                           const std::source_location& location) {
  if (finished()) {
    RecordError(
        op, absl::FailedPreconditionError("the tracer has already finished"),
        location);
    return false;
  }
  const Argument* bad = nullptr;
  for (const Argument& a : args) {
    if (bad == nullptr) bad = FindBadNodeRef(a, graph());
  }
  for (const auto& [key, value] : kwargs) {
    if (bad == nullptr) bad = FindBadNodeRef(value, graph());
  }
  if (bad == nullptr) return true;
  RecordError(op,
              absl::InvalidArgumentError(
                  bad->node() == nullptr
                      ? "an argument is an invalid Proxy (default-constructed, "
                        "or made after an earlier failure)"
                      : absl::StrCat("argument ", bad->node()->Ref(),
                                     " belongs to another Tracer")),
              location);
  return false;
}

Proxy Tracer::Input(absl::string_view name, std::optional<TensorType> type,
                    std::source_location location) {
  if (!CheckOperands("placeholder", {}, {}, location))
    return Proxy(this, nullptr);
  if (!IsValidName(name)) {
    RecordError("placeholder",
                absl::InvalidArgumentError(absl::StrCat(
                    "input name '", name,
                    "' is not valid (want [A-Za-z_][A-Za-z0-9_.]*)")),
                location);
  }
  if (!input_names_.insert(std::string(name)).second) {
    RecordError("placeholder",
                absl::AlreadyExistsError(absl::StrCat(
                    "there is already an input named '", name, "'")),
                location);
  }
  Node* node = graph().Placeholder(name, std::move(type));
  SetLocation(node, location);
  return Proxy(this, node);
}

Proxy Tracer::ReadTensor(absl::string_view name,
                         const std::source_location& location) {
  const Tensor* tensor = module_->FindTensor(name);
  Node* node =
      graph().GetAttr(name, tensor != nullptr && tensor->defined()
                                ? std::optional<TensorType>(tensor->type())
                                : std::nullopt);
  SetLocation(node, location);
  return Proxy(this, node);
}

Proxy Tracer::Parameter(absl::string_view name, Tensor value, std::string init,
                        std::source_location location) {
  if (!CheckOperands("get_attr", {}, {}, location)) return Proxy(this, nullptr);
  if (!IsValidName(name)) {
    RecordError("get_attr",
                absl::InvalidArgumentError(absl::StrCat(
                    "tensor name '", name,
                    "' is not valid (want [A-Za-z_][A-Za-z0-9_.]*)")),
                location);
  } else if (module_->FindTensor(name) != nullptr) {
    RecordError("get_attr",
                absl::AlreadyExistsError(absl::StrCat(
                    "tensor '", name,
                    "' is already a parameter; use Attr() to read it again")),
                location);
  } else {
    module_->SetTensor(std::string(name), std::move(value), std::move(init));
  }
  return ReadTensor(name, location);
}

Proxy Tracer::Constant(Tensor value, std::source_location location) {
  if (!CheckOperands("get_attr", {}, {}, location)) return Proxy(this, nullptr);
  std::string name = module_->UniqueTensorName("constant");
  module_->SetTensor(name, std::move(value));
  return ReadTensor(name, location);
}

Proxy Tracer::Attr(absl::string_view name, std::source_location location) {
  if (!CheckOperands("get_attr", {}, {}, location)) return Proxy(this, nullptr);
  if (module_->FindTensor(name) == nullptr) {
    RecordError(
        "get_attr",
        absl::NotFoundError(absl::StrCat("the module has no tensor '", name,
                                         "'; add it with Parameter() first")),
        location);
  }
  return ReadTensor(name, location);
}

Proxy Tracer::Call(absl::string_view op, std::vector<Argument> args,
                   Kwargs kwargs, std::source_location location) {
  if (!CheckOperands(op, args, kwargs, location)) return Proxy(this, nullptr);
  Node* node = graph().CallFunction(op, std::move(args), std::move(kwargs));
  SetLocation(node, location);
  absl::StatusOr<std::optional<std::vector<TensorType>>> types =
      InferNodeTypes(*node);
  if (!types.ok()) {
    RecordError(op, types.status(), location);
  } else if (types->has_value()) {
    std::vector<TensorType>& results = **types;
    const OpSchema* schema = node->schema();
    if (schema != nullptr && schema->returns_tuple) {
      node->meta().tuple_types = std::move(results);
    } else if (results.size() == 1) {
      node->set_type(std::move(results[0]));
    } else {
      RecordError(op,
                  absl::InternalError(absl::StrCat(
                      "the type rule gave ", results.size(),
                      " results for an op that returns one value")),
                  location);
    }
  }
  return Proxy(this, node);
}

std::vector<Proxy> Tracer::CallTuple(absl::string_view op,
                                     std::vector<Argument> args, Kwargs kwargs,
                                     std::optional<size_t> num_results,
                                     std::source_location location) {
  Proxy tuple = Call(op, std::move(args), std::move(kwargs), location);
  if (!tuple.valid()) return {};
  size_t count = 0;
  if (!tuple.node()->meta().tuple_types.empty()) {
    count = tuple.node()->meta().tuple_types.size();
  } else if (num_results.has_value()) {
    count = *num_results;
  } else {
    RecordError(op,
                absl::InvalidArgumentError(
                    "cannot tell how many results it returns: its type is "
                    "unknown (give the inputs types)"),
                location);
    return {};
  }
  std::vector<Proxy> results;
  results.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    results.push_back(
        Call("getitem", {tuple, static_cast<int64_t>(i)}, {}, location));
  }
  return results;
}

absl::StatusOr<Module> Tracer::Finish(const std::vector<Proxy>& outputs,
                                      std::source_location location) {
  if (outputs.empty()) {
    RecordError("output",
                absl::InvalidArgumentError("Finish needs at least one output"),
                location);
  }
  std::vector<Argument> values(outputs.begin(), outputs.end());
  CheckOperands("output", values, {}, location);
  if (!status_.ok()) {
    module_.reset();
    return status_;
  }
  Node* out = graph().Output(
      values.size() == 1 ? values[0] : Argument(ArgumentList(values)));
  SetLocation(out, location);
  std::unique_ptr<Module> module = std::move(module_);
  if (absl::Status verified = Verify(*module); !verified.ok()) {
    status_ = absl::InternalError(absl::StrCat(
        "the traced module does not verify: ", verified.message()));
    return status_;
  }
  return std::move(*module);
}

absl::StatusOr<Module> TraceFunction(
    const std::function<std::vector<Proxy>(const std::vector<Proxy>&)>& fn,
    const std::vector<std::optional<TensorType>>& input_types,
    const std::vector<std::string>& input_names) {
  if (!input_names.empty() && input_names.size() != input_types.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TraceFunction: ", input_names.size(), " input names for ",
                     input_types.size(), " input types"));
  }
  Tracer tracer;
  std::vector<Proxy> inputs;
  inputs.reserve(input_types.size());
  for (size_t i = 0; i < input_types.size(); ++i) {
    std::string name =
        input_names.empty() ? absl::StrCat("x", i) : input_names[i];
    inputs.push_back(tracer.Input(name, input_types[i]));
  }
  return tracer.Finish(fn(inputs));
}

}  // namespace graft::trace
