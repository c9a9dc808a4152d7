#include "onnx/onnx_expansion.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace graft::onnx_import {

absl::StatusOr<int64_t> StaticDimOf(const ValueTypeLookup& types, const std::string& name, int64_t dim,
                                    const std::string& what) {
  std::optional<TensorType> t = types(name);
  if (!t.has_value()) return absl::InvalidArgumentError(absl::StrCat(what, " has no known shape"));
  const int64_t d = dim < 0 ? dim + t->rank() : dim;
  if (d < 0 || d >= t->rank() || !t->shape[d].is_constant()) {
    return absl::UnimplementedError(absl::StrCat(what, " (", t->ToString(), ") needs a static size in dim ", dim));
  }
  return t->shape[d].value();
}

absl::StatusOr<int64_t> RankOf(const ValueTypeLookup& types, const std::string& name, const std::string& what) {
  std::optional<TensorType> t = types(name);
  if (!t.has_value()) return absl::InvalidArgumentError(absl::StrCat(what, " has no known rank"));
  return t->rank();
}

std::string NodeExpansion::Value(const std::string& what) const {
  return absl::StrCat(node_.output_size() > 0 ? node_.output(0) : node_.name(), "::", what);
}

onnx::NodeProto& NodeExpansion::Add(const std::string& op_type, const std::vector<std::string>& inputs,
                                    const std::string& output) {
  onnx::NodeProto& n = nodes_.emplace_back();
  n.set_op_type(op_type);
  n.set_name(absl::StrCat(node_.name(), "/", op_type, nodes_.size()));
  for (const std::string& i : inputs) n.add_input(i);
  n.add_output(output);
  return n;
}

std::string NodeExpansion::AddValue(const std::string& op_type, const std::vector<std::string>& inputs,
                                    const std::string& what) {
  const std::string out = Value(what);
  Add(op_type, inputs, out);
  return out;
}

std::string NodeExpansion::Constant(float v, const std::string& what) {
  const std::string out = Value(what);
  SetFloat(Add("Constant", {}, out), "value_float", v);
  return out;
}

std::string NodeExpansion::ConstantInts(const std::vector<int64_t>& v, const std::string& what) {
  const std::string out = Value(what);
  SetInts(Add("Constant", {}, out), "value_ints", v);
  return out;
}

std::string NodeExpansion::Cast(const std::string& value, int32_t to, const std::string& what) {
  const std::string out = Value(what);
  SetInt(Add("Cast", {value}, out), "to", to);
  return out;
}

std::string NodeExpansion::DimLength(const std::string& x, int64_t dim, const std::string& what) {
  const std::string shape = AddValue("Shape", {x}, what + "_shape_of");
  const std::string index = Value(what + "_dim");
  onnx::AttributeProto* a = Add("Constant", {}, index).add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  a->mutable_t()->add_int64_data(dim);
  return AddValue("Gather", {shape, index}, what + "_length");
}

std::string NodeExpansion::Arange(const std::string& n, const std::string& what) {
  const std::string zero = Cast(Constant(0, what + "_zero_f"), onnx::TensorProto::INT64, what + "_zero");
  const std::string one = Cast(Constant(1, what + "_one_f"), onnx::TensorProto::INT64, what + "_one");
  return AddValue("Range", {zero, n, one}, what);
}

std::string NodeExpansion::SliceOf(const std::string& x, int64_t axis, int64_t from, int64_t to,
                                   const std::string& what, int64_t step) {
  return AddValue("Slice",
                  {x, ConstantInts({from}, what + "_from"), ConstantInts({to}, what + "_to"),
                   ConstantInts({axis}, what + "_axis"), ConstantInts({step}, what + "_step")},
                  what);
}

namespace {
std::string AxesOp(NodeExpansion& e, const std::string& op, const std::string& x,
                   const std::vector<int64_t>& axes, int64_t opset, const std::string& what) {
  const std::string out = e.Value(what);
  if (opset >= 13) {
    e.Add(op, {x, e.ConstantInts(axes, what + "_axes")}, out);
  } else {
    NodeExpansion::SetInts(e.Add(op, {x}, out), "axes", axes);
  }
  return out;
}
}  // namespace

std::string NodeExpansion::Unsqueeze(const std::string& x, const std::vector<int64_t>& axes, int64_t opset,
                                     const std::string& what) {
  return AxesOp(*this, "Unsqueeze", x, axes, opset, what);
}

std::string NodeExpansion::Squeeze(const std::string& x, const std::vector<int64_t>& axes, int64_t opset,
                                   const std::string& what) {
  return AxesOp(*this, "Squeeze", x, axes, opset, what);
}

std::string NodeExpansion::Permute(const std::string& x, const std::vector<int64_t>& perm, const std::string& what) {
  const std::string out = Value(what);
  SetInts(Add("Transpose", {x}, out), "perm", perm);
  return out;
}

std::string NodeExpansion::SplitHeads(const std::string& x, int64_t heads, const std::string& what,
                                      const std::vector<int64_t>& perm) {
  const std::string split = AddValue("Reshape", {x, ConstantInts({0, 0, heads, -1}, what + "_shape")}, what + "_heads");
  return Permute(split, perm, what + "_bhsd");
}

void NodeExpansion::CopyAttributes(onnx::NodeProto& to, const std::set<std::string>& except) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (!except.contains(a.name())) *to.add_attribute() = a;
  }
}

const onnx::AttributeProto* NodeExpansion::Attribute(const std::string& name) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

const onnx::AttributeProto* NodeExpansion::Typed(const std::string& name,
                                                 onnx::AttributeProto::AttributeType type) const {
  const onnx::AttributeProto* a = Attribute(name);
  if (a == nullptr || a->type() == type) return a;
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("attribute '", name, "' is of type ", onnx::AttributeProto::AttributeType_Name(a->type()),
                     ", not ", onnx::AttributeProto::AttributeType_Name(type)));
  }
  return nullptr;
}

int64_t NodeExpansion::IntAttribute(const std::string& name, int64_t fallback) const {
  const onnx::AttributeProto* a = Typed(name, onnx::AttributeProto::INT);
  return a == nullptr ? fallback : a->i();
}

float NodeExpansion::FloatAttribute(const std::string& name, float fallback) const {
  const onnx::AttributeProto* a = Typed(name, onnx::AttributeProto::FLOAT);
  return a == nullptr ? fallback : a->f();
}

std::string NodeExpansion::StringAttribute(const std::string& name, const std::string& fallback) const {
  const onnx::AttributeProto* a = Typed(name, onnx::AttributeProto::STRING);
  return a == nullptr ? fallback : a->s();
}

absl::Status NodeExpansion::RefuseOtherAttributes(const std::set<std::string>& known) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (!known.contains(a.name())) {
      return absl::UnimplementedError(absl::StrCat("attribute '", a.name(), "' is not supported"));
    }
  }
  return absl::OkStatus();
}

absl::Status NodeExpansion::RequireInputs(int count) const {
  if (node_.input_size() < count || node_.output_size() < 1 || node_.output(0).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("needs at least ", count, " inputs and an output, has ",
                                                   node_.input_size(), " and ", node_.output_size()));
  }
  return absl::OkStatus();
}

void NodeExpansion::SetInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void NodeExpansion::SetInts(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void NodeExpansion::SetFloat(onnx::NodeProto& n, const std::string& name, float v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void NodeExpansion::SetString(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

std::string ExpansionKey(const onnx::NodeProto& node) {
  const std::string& d = node.domain();
  return absl::StrCat(d == "ai.onnx" ? "" : d, "/", node.op_type());
}

std::string OpTypeOfExpansionKey(const std::string& key) {
  const size_t slash = key.find('/');
  return slash == 0 ? key.substr(1) : absl::StrCat(key.substr(0, slash), ".", key.substr(slash + 1));
}

}  // namespace graft::onnx_import
