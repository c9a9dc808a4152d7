#include "onnx/onnx_functions.h"

#include <algorithm>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/unknown_field_set.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

std::string NormalDomain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

// Fields of IR versions 9 and 10 (FunctionProto.attribute_proto = 11,
// FunctionProto.overload = 13, NodeProto.overload = 8) are read by number:
// a libonnx older than them keeps them as unknown fields.
const google::protobuf::UnknownFieldSet& Unknown(const google::protobuf::Message& m) {
  return m.GetReflection()->GetUnknownFields(m);
}

std::string StringField(const google::protobuf::Message& m, int number) {
  // A libonnx that knows the field keeps it as a field.
  if (const google::protobuf::FieldDescriptor* field = m.GetDescriptor()->FindFieldByNumber(number)) {
    return field->type() == google::protobuf::FieldDescriptor::TYPE_STRING && !field->is_repeated()
               ? m.GetReflection()->GetString(m, field)
               : "";
  }
  const google::protobuf::UnknownFieldSet& u = Unknown(m);
  for (int i = 0; i < u.field_count(); ++i) {
    const google::protobuf::UnknownField& f = u.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      return f.length_delimited();
    }
  }
  return "";
}

std::string Overload(const onnx::NodeProto& node) { return StringField(node, 8); }
std::string Overload(const onnx::FunctionProto& f) { return StringField(f, 13); }

// The function's attributes with default values (attribute_proto).
absl::StatusOr<std::vector<onnx::AttributeProto>> AttributeDefaults(const onnx::FunctionProto& f) {
  std::vector<onnx::AttributeProto> out;
  if (const google::protobuf::FieldDescriptor* field = f.GetDescriptor()->FindFieldByNumber(11)) {
    if (field->is_repeated() && field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
      const google::protobuf::Reflection* r = f.GetReflection();
      for (int i = 0; i < r->FieldSize(f, field); ++i) {
        out.emplace_back().ParseFromString(r->GetRepeatedMessage(f, field, i).SerializeAsString());
      }
    }
    return out;
  }
  const google::protobuf::UnknownFieldSet& u = Unknown(f);
  for (int i = 0; i < u.field_count(); ++i) {
    const google::protobuf::UnknownField& field = u.field(i);
    if (field.number() != 11 || field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    if (!out.emplace_back().ParseFromString(field.length_delimited())) {
      return absl::InvalidArgumentError(
          absl::StrCat("local function '", f.name(), "' has an attribute default that does not parse"));
    }
  }
  return out;
}

// Names inside the body: formal inputs and outputs become the call's
// values, everything else the body's own, after the call.
class Renamer {
 public:
  Renamer(const onnx::FunctionProto& f, const onnx::NodeProto& call, const std::string& call_id)
      : prefix_(absl::StrCat(call_id, "::")) {
    for (int i = 0; i < f.input_size(); ++i) {
      names_[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    }
    for (int i = 0; i < f.output_size(); ++i) {
      const bool bound = i < call.output_size() && !call.output(i).empty();
      names_[f.output(i)] = bound ? call.output(i) : prefix_ + f.output(i);
    }
  }

  std::string operator()(const std::string& name) {
    if (name.empty()) return name;  // An absent optional input stays absent.
    auto [it, added] = names_.try_emplace(name);
    if (added) it->second = prefix_ + name;
    return it->second;
  }

 private:
  std::string prefix_;
  absl::flat_hash_map<std::string, std::string> names_;
};

}  // namespace

LocalFunctions::LocalFunctions(const onnx::ModelProto& model) {
  for (const onnx::FunctionProto& f : model.functions()) {
    functions_.emplace(Key{NormalDomain(f.domain()), f.name(), Overload(f)}, &f);
  }
}

const onnx::FunctionProto* LocalFunctions::Find(const onnx::NodeProto& node) const {
  if (functions_.empty()) return nullptr;
  auto it = functions_.find(Key{NormalDomain(node.domain()), node.op_type(), Overload(node)});
  return it == functions_.end() ? nullptr : it->second;
}

absl::StatusOr<int64_t> LocalFunctions::InlinedSize(const onnx::FunctionProto& f, int64_t limit, int depth) {
  if (auto it = sizes_.find(&f); it != sizes_.end()) return it->second;
  // The importer inlines at most this deep; sizing deeper chains would
  // only spend the stack.
  constexpr int kMaxDepth = 64;
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("local functions call each other more than ", kMaxDepth, " deep"));
  }
  if (sizing_[&f]) {
    return absl::InvalidArgumentError(
        absl::StrCat("local function '", f.name(), "' calls itself, directly or through others"));
  }
  sizing_[&f] = true;
  int64_t size = 0;
  for (const onnx::NodeProto& n : f.node()) {
    int64_t part = 1;
    if (const onnx::FunctionProto* callee = Find(n)) {
      ASSIGN_OR_RETURN(part, InlinedSize(*callee, limit, depth + 1));
    }
    size = std::min(limit, size + part);
  }
  sizing_[&f] = false;
  sizes_[&f] = size;
  return size;
}

absl::StatusOr<std::vector<onnx::NodeProto>> LocalFunctions::Inline(const onnx::FunctionProto& f,
                                                                    const onnx::NodeProto& call,
                                                                    const std::string& call_id) {
  const std::string what = absl::StrCat("local function '", f.name(), "'");
  if (call.input_size() > f.input_size() || call.output_size() > f.output_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the call has ", call.input_size(), " inputs and ", call.output_size(), " outputs, but ", what,
        " takes ", f.input_size(), " and gives ", f.output_size()));
  }
  // The call's attributes, and the function's defaults for those it omits.
  absl::flat_hash_map<std::string, const onnx::AttributeProto*> values;
  std::set<std::string> declared(f.attribute().begin(), f.attribute().end());
  ASSIGN_OR_RETURN(const std::vector<onnx::AttributeProto> defaults, AttributeDefaults(f));
  for (const onnx::AttributeProto& a : defaults) {
    declared.insert(a.name());
    values[a.name()] = &a;
  }
  for (const onnx::AttributeProto& a : call.attribute()) {
    if (!declared.contains(a.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", a.name(), "' is not an attribute of ", what));
    }
    values[a.name()] = &a;
  }
  Renamer rename(f, call, call_id);
  std::vector<onnx::NodeProto> body;
  body.reserve(f.node_size());
  for (int i = 0; i < f.node_size(); ++i) {
    const onnx::NodeProto& n = f.node(i);
    for (const onnx::AttributeProto& a : n.attribute()) {
      // Their names would need renaming with the body's, and their
      // attribute references resolving.
      if (a.has_g() || a.graphs_size() > 0) {
        return absl::UnimplementedError(absl::StrCat(what, "'s node ", n.op_type(),
                                                     " holds a subgraph (If, Loop, Scan), which graft does not "
                                                     "inline from a function"));
      }
    }
    // A copy keeps the node's other fields (its overload, newer fields).
    onnx::NodeProto& out = body.emplace_back(n);
    out.clear_input();
    out.clear_output();
    out.clear_attribute();
    out.set_name(absl::StrCat(call.name(), "/", n.name().empty() ? absl::StrCat(n.op_type(), i) : n.name()));
    for (const std::string& in : n.input()) out.add_input(rename(in));
    for (const std::string& o : n.output()) out.add_output(rename(o));
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.ref_attr_name().empty()) {
        *out.add_attribute() = a;
        continue;
      }
      // A reference to an attribute neither given nor defaulted leaves the
      // node's attribute out, as ONNX defines.
      auto value = values.find(a.ref_attr_name());
      if (value == values.end()) continue;
      onnx::AttributeProto* copy = out.add_attribute();
      *copy = *value->second;
      copy->set_name(a.name());
    }
  }
  return body;
}

}  // namespace graft::onnx_import
