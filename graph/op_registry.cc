#include "graph/op_registry.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/graph.h"
#include "graph/printer.h"

namespace graft {
namespace {

bool IsValidOpName(absl::string_view name) {
  size_t sep = name.find("::");
  if (sep == absl::string_view::npos) return IsValidName(name);
  return IsValidName(name.substr(0, sep)) && IsValidName(name.substr(sep + 2)) &&
         name.substr(sep + 2).find("::") == absl::string_view::npos;
}

bool Accepts(ParamKind kind, const Argument& a) {
  switch (kind) {
    case ParamKind::kTensor: return a.is_node();
    case ParamKind::kTensorOrScalar:
      return a.is_node() || a.is_number() || a.is_bool();
    case ParamKind::kTensorList: {
      if (!a.is_list()) return false;
      for (const Argument& e : a.list()) {
        if (!e.is_node()) return false;
      }
      return true;
    }
    case ParamKind::kInt: return a.is_int();
    case ParamKind::kIntList: return a.is_int() || a.is_int_list();
    case ParamKind::kFloat: return a.is_number();
    case ParamKind::kScalar: return a.is_number() || a.is_bool();
    case ParamKind::kBool: return a.is_bool();
    case ParamKind::kDType: return a.is_dtype();
    case ParamKind::kString: return a.is_string();
  }
  return false;
}

std::string DescribeArgument(const Argument& a) {
  if (a.is_node()) return a.node()->Ref();
  if (a.is_none()) return "None";
  if (a.is_int()) return absl::StrCat("int ", a.int_value());
  if (a.is_double()) return absl::StrCat("float ", a.double_value());
  if (a.is_bool()) return a.bool_value() ? "True" : "False";
  if (a.is_string()) return absl::StrCat("string \"", a.string_value(), "\"");
  if (a.is_dtype()) return absl::StrCat("dtype ", DTypeName(a.dtype_value()));
  return "a list";
}

const Argument& NoneArgument() {
  static const auto* none = new Argument();
  return *none;
}

}  // namespace

absl::string_view ParamKindName(ParamKind kind) {
  switch (kind) {
    case ParamKind::kTensor: return "Tensor";
    case ParamKind::kTensorOrScalar: return "Tensor|Scalar";
    case ParamKind::kTensorList: return "Tensor[]";
    case ParamKind::kInt: return "int";
    case ParamKind::kIntList: return "int[]";
    case ParamKind::kFloat: return "float";
    case ParamKind::kScalar: return "Scalar";
    case ParamKind::kBool: return "bool";
    case ParamKind::kDType: return "dtype";
    case ParamKind::kString: return "str";
  }
  return "?";
}

int OpSchema::ParamIndex(absl::string_view param) const {
  // Type rules look parameters up by name many times per node, and the
  // names are short: a byte loop beats a call to memcmp.
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i].name;
    if (name.size() != param.size()) continue;
    size_t k = 0;
    while (k < name.size() && name[k] == param[k]) ++k;
    if (k == name.size()) return static_cast<int>(i);
  }
  return -1;
}

std::string OpSchema::Signature() const {
  std::vector<std::string> parts;
  for (const ParamSpec& p : params) {
    std::string s = absl::StrCat(p.name, ": ", ParamKindName(p.kind),
                                 p.optional ? "?" : "");
    if (p.default_value.has_value()) {
      // As the text format writes it: "= 1", "= 1.0", "= None", "= f32".
      absl::StrAppend(&s, " = ", PrintArgument(*p.default_value));
    }
    parts.push_back(std::move(s));
  }
  return absl::StrCat(name, "(", absl::StrJoin(parts, ", "), ")");
}

absl::StatusOr<OpCall> OpCall::Bind(const OpSchema& schema,
                                    absl::Span<const Argument> args,
                                    const Kwargs& kwargs) {
  OpCall call;
  call.schema_ = &schema;
  call.bound_.assign(schema.params.size(), nullptr);
  if (args.size() > schema.params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(schema.name, " takes at most ", schema.params.size(),
                     " arguments, got ", args.size(), "; expected ",
                     schema.Signature()));
  }
  for (size_t i = 0; i < args.size(); ++i) call.bound_[i] = &args[i];
  for (const auto& [key, value] : kwargs) {
    int index = schema.ParamIndex(key);
    if (index < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          schema.name, " has no parameter '", key, "'; expected ",
          schema.Signature()));
    }
    if (call.bound_[index] != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          schema.name, " got parameter '", key, "' twice"));
    }
    call.bound_[index] = &value;
  }
  for (size_t i = 0; i < schema.params.size(); ++i) {
    const ParamSpec& p = schema.params[i];
    const Argument* a = call.bound_[i];
    if (a == nullptr) {
      if (p.default_value.has_value()) {
        call.bound_[i] = &*p.default_value;
        continue;
      }
      if (p.optional) {
        call.bound_[i] = &NoneArgument();
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat(schema.name, " is missing required argument '", p.name,
                       "'; expected ", schema.Signature()));
    }
    if (a->is_none() && p.optional) continue;
    if (!Accepts(p.kind, *a)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument '", p.name, "' of ", schema.name, " expects ",
          ParamKindName(p.kind), p.optional ? " or None" : "", ", got ",
          DescribeArgument(*a)));
    }
  }
  return call;
}

absl::StatusOr<OpCall> OpCall::Bind(const Node& node) {
  const OpSchema* schema = node.schema();
  if (schema == nullptr) schema = OpRegistry::Global().Find(node.target());
  if (schema == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown op '", node.target(), "'"));
  }
  return Bind(*schema, node.args(), node.kwargs());
}

const Argument& OpCall::Get(absl::string_view name) const {
  int index = schema_->ParamIndex(name);
  if (index < 0) {
    // A programmer error in a type rule or kernel: name the culprit loudly.
    std::fprintf(stderr, "graft: op %s has no parameter '%.*s'\n",
                 schema_->name.c_str(), static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return *bound_[index];
}

Node* OpCall::TensorNode(absl::string_view name) const {
  const Argument& a = Get(name);
  return a.is_node() ? a.node() : nullptr;
}

std::vector<Node*> OpCall::TensorNodes(absl::string_view name) const {
  std::vector<Node*> out;
  const Argument& a = Get(name);
  if (!a.is_list()) return out;
  for (const Argument& e : a.list()) out.push_back(e.node());
  return out;
}

TensorType InferContext::Type(absl::string_view name) const {
  const Argument& a = call_.Get(name);
  if (a.is_node()) return *a.node()->type();
  if (a.is_bool()) return TensorType{DType::kBool, {}};
  if (a.is_int()) return TensorType{DType::kI64, {}};
  return TensorType{DType::kF32, {}};
}

std::vector<TensorType> InferContext::Types(absl::string_view name) const {
  std::vector<TensorType> out;
  for (Node* n : call_.TensorNodes(name)) out.push_back(*n->type());
  return out;
}

absl::Status InferContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat(call_.schema().name, ": ", message));
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterCoreOps(*r);
    return r;
  }();
  return *registry;
}

absl::Status OpRegistry::Register(OpSchema schema) {
  if (!IsValidOpName(schema.name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid op name '", schema.name,
        "': use an identifier, or ns::name for extension ops"));
  }
  std::lock_guard<std::mutex> lock(write_mu_);
  if (ops_.contains(schema.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("op '", schema.name, "' is already registered"));
  }
  std::string name = schema.name;
  auto [it, inserted] =
      ops_.emplace(std::move(name), std::make_unique<OpSchema>(std::move(schema)));
  const Index* current = index_.load(std::memory_order_acquire);
  auto next = current != nullptr ? std::make_unique<Index>(*current)
                                 : std::make_unique<Index>();
  next->emplace(it->first, it->second.get());
  index_.store(next.get(), std::memory_order_release);
  indexes_.push_back(std::move(next));
  return absl::OkStatus();
}

const OpSchema* OpRegistry::Find(absl::string_view name) const {
  const Index* index = index_.load(std::memory_order_acquire);
  if (index == nullptr) return nullptr;
  auto it = index->find(name);
  return it == index->end() ? nullptr : it->second;
}

std::vector<const OpSchema*> OpRegistry::All() const {
  std::lock_guard<std::mutex> lock(write_mu_);
  std::vector<const OpSchema*> out;
  for (const auto& [name, schema] : ops_) out.push_back(schema.get());
  return out;
}

namespace {

bool IsTyped(const Argument& a) {
  if (a.is_node()) {
    const Node* n = a.node();
    return n->type().has_value() || !n->meta().tuple_types.empty();
  }
  if (!a.is_list()) return true;
  for (const Argument& e : a.list()) {
    if (!IsTyped(e)) return false;
  }
  return true;
}

// Whether every node the operands refer to has a type. Walks the operands
// in place: type inference runs for every node a pass creates.
bool AllInputsTyped(const Node& node) {
  for (const Argument& a : node.args()) {
    if (!IsTyped(a)) return false;
  }
  for (const auto& [name, a] : node.kwargs()) {
    if (!IsTyped(a)) return false;
  }
  return true;
}

// The first f8e4m3 tensor among `a`'s nodes, or null.
const Node* Float8Operand(const Argument& a) {
  if (a.is_node()) {
    const Node* n = a.node();
    return n->type().has_value() && IsFloat8(n->type()->dtype) ? n : nullptr;
  }
  if (!a.is_list()) return nullptr;
  for (const Argument& e : a.list()) {
    if (const Node* n = Float8Operand(e)) return n;
  }
  return nullptr;
}

// f8e4m3 is a storage type for quantized values: views move it (as bytes,
// so never into another dtype, and pad fills with 0 only) and dequantize
// reads it; nothing computes with it.
absl::Status CheckFloat8Readers(const Node& node, const InferContext& ctx,
                                const OpSchema& schema) {
  const Node* f8 = nullptr;
  bool others = false;  // A data operand of another dtype.
  auto visit = [&](const Argument& a, bool index, auto& self) -> void {
    if (a.is_list()) {
      for (const Argument& e : a.list()) self(e, index, self);
      return;
    }
    if (!a.is_node() || !a.node()->type().has_value()) return;
    if (IsFloat8(a.node()->type()->dtype)) {
      if (f8 == nullptr) f8 = a.node();
    } else if (!index) {
      others = true;
    }
  };
  const OpCall& call = ctx.call();
  for (size_t i = 0; i < schema.params.size(); ++i) {
    const std::string& param = schema.params[i].name;
    // The index operands of the gathering views may be integers.
    const bool index = (param == "index" && (schema.name == "gather" ||
                                             schema.name == "index_select")) ||
                       (param == "input" && schema.name == "embedding");
    visit(call.GetAt(i), index, visit);
  }
  if (f8 == nullptr || schema.name == "dequantize") return absl::OkStatus();
  const std::string what = absl::StrCat("%", f8->name(), " is ", f8->type()->ToString(), ": ");
  if (schema.traits.kind != OpKind::kView) {
    return ctx.Error(absl::StrCat(
        what, "f8e4m3 values are only moved (views) and read by dequantize"));
  }
  if (others) {
    return ctx.Error(absl::StrCat(what, "a view moves f8e4m3 values only with f8e4m3 values"));
  }
  if (schema.name == "pad" && ctx.call().Float("value") != 0) {
    return ctx.Error(absl::StrCat(what, "an f8e4m3 pad fills with 0 only"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<std::vector<TensorType>>> InferNodeTypes(
    const Node& node) {
  absl::StatusOr<OpCall> call = OpCall::Bind(node);
  if (!call.ok()) return call.status();
  InferContext ctx(*call, &node);
  // Before the returns below: an op without a type rule, or with an input
  // not typed yet, still refuses an f8e4m3 operand it has.
  if (absl::Status s = CheckFloat8Readers(node, ctx, call->schema()); !s.ok()) return s;
  if (!call->schema().infer) return std::nullopt;
  if (!AllInputsTyped(node)) return std::nullopt;
  absl::StatusOr<std::vector<TensorType>> types = call->schema().infer(ctx);
  if (!types.ok()) return types.status();
  // f8e4m3 values come only from quantizing (a creation op or a cast would
  // write raw bytes or a saturated integer); views move them.
  const std::string& op = call->schema().name;
  if (call->schema().traits.kind != OpKind::kView && op != "quantize_per_tensor" &&
      op != "quantize_per_channel") {
    for (const TensorType& t : *types) {
      if (IsFloat8(t.dtype)) {
        return ctx.Error(
            "f8e4m3 values are made only by quantize_per_tensor and quantize_per_channel");
      }
    }
  }
  return std::optional<std::vector<TensorType>>(*std::move(types));
}

}  // namespace graft
