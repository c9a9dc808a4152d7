#include "graph/printer.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "graph/file_io.h"
#include "graph/lexer.h"

namespace graft {
namespace {

// absl::string_view is not std::string_view here: append by pointer.
void Append(std::string* out, absl::string_view text) {
  out->append(text.data(), text.size());
}

// Tensor, submodule and kwarg names and targets: bare when they lex as one
// identifier, quoted otherwise ("layer/0.weight").
void AppendName(std::string* out, absl::string_view name) {
  if (IsBareName(name)) {
    out->append(name.data(), name.size());
  } else {
    AppendQuoted(out, name);
  }
}

void AppendInt(std::string* out, int64_t value) {
  char buf[24];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, result.ptr);
}

// Keeps a float literal a float: "1" -> "1.0".
void AppendShortest(std::string* out, const char* begin, const char* end) {
  out->append(begin, end);
  for (const char* p = begin; p < end; ++p) {
    if (*p == '.' || *p == 'e' || *p == 'E') return;
  }
  out->append(".0");
}

bool AppendNonFinite(std::string* out, double value) {
  if (std::isnan(value)) {
    out->append("nan");
  } else if (std::isinf(value)) {
    out->append(value < 0 ? "-inf" : "inf");
  } else {
    return false;
  }
  return true;
}

void AppendDims(std::string* out, const Shape& shape) {
  out->push_back('[');
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out->push_back(',');
    Dim d = shape[i];
    if (d.is_constant()) {
      AppendInt(out, d.value());
    } else {
      AppendName(out, d.symbol());
    }
  }
  out->push_back(']');
}

void AppendType(std::string* out, const TensorType& type) {
  Append(out, DTypeName(type.dtype));
  AppendDims(out, type.shape);
}

// Writes modules, graphs and nodes into one buffer.
class TextPrinter {
 public:
  TextPrinter(std::string* out, const PrintOptions& options)
      : out_(out), options_(options) {}

  void AppendModule(const graft::Module& module, int indent);
  void AppendGraph(const graft::Graph& graph, int indent);
  void AppendNode(const graft::Node& node);
  // `in_return`: node references are bare, FX style, and lists are tuples
  // at the top level.
  void AppendArg(const Argument& arg, bool in_return);

 private:
  void Indent(int n) { out_->append(static_cast<size_t>(n), ' '); }
  void AppendTensor(absl::string_view name, const ModuleTensor& tensor);
  void AppendTensorData(const ModuleTensor& tensor);
  bool AppendRecordedInit(const ModuleTensor& tensor);
  void AppendElement(const graft::Tensor& t, int64_t i);
  void AppendElements(const graft::Tensor& t);
  void ReturnValue(const Argument& value);

  std::string* out_;
  const PrintOptions& options_;
};

void TextPrinter::AppendModule(const graft::Module& module, int indent) {
  bool first = true;
  for (const auto& [name, tensor] : module.tensors()) {
    Indent(indent);
    AppendTensor(name, tensor);
    first = false;
  }
  for (const auto& [name, sub] : module.submodules()) {
    if (!first) out_->push_back('\n');
    first = false;
    Indent(indent);
    out_->append("submodule ");
    AppendName(out_, name);
    out_->append(" {\n");
    AppendModule(*sub, indent + 2);
    Indent(indent);
    out_->append("}\n");
  }
  if (!first) out_->push_back('\n');
  AppendGraph(module.graph(), indent);
}

void TextPrinter::AppendGraph(const graft::Graph& graph, int indent) {
  Indent(indent);
  out_->append("graph():\n");
  for (const graft::Node* node : graph.nodes()) {
    Indent(indent + 4);
    AppendNode(*node);
    out_->push_back('\n');
  }
}

void TextPrinter::AppendNode(const graft::Node& node) {
  if (node.op() == OpCode::kOutput) {
    out_->append("return ");
    if (node.num_args() == 1) {
      ReturnValue(node.arg(0));
    } else {
      // Not what Graph::Output makes; printed so that it reads back as one
      // tuple value.
      ReturnValue(
          Argument(ArgumentList(node.args().begin(), node.args().end())));
    }
    return;
  }
  out_->push_back('%');
  out_->append(node.name());
  const NodeMeta& meta = node.meta();
  if (meta.type.has_value()) {
    out_->append(" : ");
    AppendType(out_, *meta.type);
  } else if (!meta.tuple_types.empty()) {
    out_->append(" : (");
    for (size_t i = 0; i < meta.tuple_types.size(); ++i) {
      if (i > 0) out_->append(", ");
      AppendType(out_, meta.tuple_types[i]);
    }
    if (meta.tuple_types.size() == 1) out_->push_back(',');
    out_->push_back(')');
  }
  out_->append(" = ");
  Append(out_, OpCodeName(node.op()));
  out_->append("[target=");
  AppendName(out_, node.target());
  out_->push_back(']');
  bool is_call =
      node.op() == OpCode::kCallFunction || node.op() == OpCode::kCallModule;
  if (!is_call && node.num_args() == 0 && node.kwargs().empty()) return;
  out_->append("(args = (");
  for (size_t i = 0; i < node.num_args(); ++i) {
    if (i > 0) out_->append(", ");
    AppendArg(node.arg(i), false);
  }
  if (node.num_args() == 1) out_->push_back(',');
  out_->append("), kwargs = {");
  bool first = true;
  for (const auto& [key, value] : node.kwargs()) {
    if (!first) out_->append(", ");
    first = false;
    AppendName(out_, key);
    out_->append(": ");
    AppendArg(value, false);
  }
  out_->append("})");
}

void TextPrinter::ReturnValue(const Argument& value) {
  if (!value.is_list()) {
    AppendArg(value, true);
    return;
  }
  const ArgumentList& list = value.list();
  out_->push_back('(');
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out_->append(", ");
    AppendArg(list[i], true);
  }
  if (list.size() == 1) out_->push_back(',');
  out_->push_back(')');
}

void TextPrinter::AppendArg(const Argument& arg, bool in_return) {
  // One overload per Argument alternative.
  struct Visitor {
    TextPrinter* p;
    bool in_return;
    std::string* out;
    void operator()(NoneArg) { out->append("None"); }
    void operator()(graft::Node* n) {
      if (!in_return || IsValueKeyword(n->name())) out->push_back('%');
      out->append(n->name());
    }
    void operator()(int64_t v) { AppendInt(out, v); }
    void operator()(double v) { AppendDouble(out, v); }
    void operator()(bool v) { out->append(v ? "True" : "False"); }
    void operator()(const std::string& v) { AppendQuoted(out, v); }
    void operator()(DType v) { Append(out, DTypeName(v)); }
    void operator()(const ArgumentList& list) {
      out->push_back('[');
      for (size_t i = 0; i < list.size(); ++i) {
        if (i > 0) out->append(", ");
        p->AppendArg(list[i], in_return);
      }
      out->push_back(']');
    }
  };
  std::visit(Visitor{this, in_return, out_}, arg.value());
}

// The init strings the parser records; anything else is ignored.
bool TextPrinter::AppendRecordedInit(const ModuleTensor& tensor) {
  absl::string_view init = tensor.init;
  if (init == "zeros") {
    out_->append("zeros");
    return true;
  }
  int64_t seed;
  if (absl::ConsumePrefix(&init, "random(seed=") &&
      absl::ConsumeSuffix(&init, ")") && absl::SimpleAtoi(init, &seed)) {
    absl::StrAppend(out_, "random(seed=", seed, ")");
    return true;
  }
  if (absl::StartsWith(tensor.init, "full(") &&
      tensor.value.NumElements() > 0) {
    // Printed from the data, so the text is canonical whatever the init says.
    out_->append("full(");
    AppendElement(tensor.value, 0);
    out_->push_back(')');
    return true;
  }
  return false;
}

void TextPrinter::AppendElement(const graft::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32:
      AppendFloat(out_, t.data<float>()[i]);
      return;
    case DType::kF64:
      AppendDouble(out_, t.data<double>()[i]);
      return;
    // Every half value is a float, and the float's shortest text reads back
    // to the same half.
    case DType::kF16:
      AppendFloat(out_, HalfToFloat(t.data<uint16_t>()[i]));
      return;
    case DType::kBF16:
      AppendFloat(out_, BFloat16ToFloat(t.data<uint16_t>()[i]));
      return;
    case DType::kI8:
      AppendInt(out_, t.data<int8_t>()[i]);
      return;
    case DType::kU8:
      AppendInt(out_, t.data<uint8_t>()[i]);
      return;
    case DType::kI32:
      AppendInt(out_, t.data<int32_t>()[i]);
      return;
    case DType::kI64:
      AppendInt(out_, t.data<int64_t>()[i]);
      return;
    case DType::kBool:
      out_->append(t.data<uint8_t>()[i] ? "True" : "False");
      return;
    case DType::kF8E4M3:
      AppendFloat(out_, Float8E4M3ToFloat(t.data<uint8_t>()[i]));
      return;
  }
}

void TextPrinter::AppendElements(const graft::Tensor& t) {
  out_->push_back('[');
  const int64_t n = t.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) out_->append(", ");
    AppendElement(t, i);
  }
  out_->push_back(']');
}

bool AllBytesZero(const graft::Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  const size_t n = t.NumBytes();
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

bool AllElementsEqual(const graft::Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  const size_t size = DTypeSize(t.dtype());
  const size_t n = t.NumBytes();
  for (size_t i = size; i < n; i += size) {
    if (std::memcmp(p, p + i, size) != 0) return false;
  }
  return true;
}

void TextPrinter::AppendTensor(absl::string_view name,
                               const ModuleTensor& tensor) {
  const graft::Tensor& t = tensor.value;
  out_->append("tensor ");
  AppendName(out_, name);
  out_->append(" : ");
  Append(out_, DTypeName(t.dtype()));
  out_->push_back('[');
  for (size_t i = 0; i < t.dims().size(); ++i) {
    if (i > 0) out_->push_back(',');
    AppendInt(out_, t.dims()[i]);
  }
  out_->append("] = ");
  AppendTensorData(tensor);
  out_->push_back('\n');
}

void TextPrinter::AppendTensorData(const ModuleTensor& tensor) {
  const graft::Tensor& t = tensor.value;
  if (!t.defined()) {
    out_->append("elided");
    return;
  }
  if (AppendRecordedInit(tensor)) return;
  const int64_t limit = options_.max_inline_elements;
  if (limit < 0 || t.NumElements() <= limit) {
    AppendElements(t);
  } else if (AllBytesZero(t)) {
    out_->append("zeros");
  } else if (AllElementsEqual(t)) {
    out_->append("full(");
    AppendElement(t, 0);
    out_->push_back(')');
  } else {
    out_->append("elided");
  }
}

}  // namespace

void AppendDouble(std::string* out, double value) {
  if (AppendNonFinite(out, value)) return;
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  AppendShortest(out, buf, result.ptr);
}

void AppendFloat(std::string* out, float value) {
  if (AppendNonFinite(out, value)) return;
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  AppendShortest(out, buf, result.ptr);
}

std::string PrintModule(const Module& module, const PrintOptions& options) {
  std::string out;
  out.reserve(64 * module.graph().num_nodes() + 256);
  TextPrinter(&out, options).AppendModule(module, 0);
  return out;
}

std::string PrintGraph(const Graph& graph) {
  std::string out;
  out.reserve(64 * graph.num_nodes() + 16);
  PrintOptions options;
  TextPrinter(&out, options).AppendGraph(graph, 0);
  return out;
}

std::string PrintNode(const Node& node) {
  std::string out;
  PrintOptions options;
  TextPrinter(&out, options).AppendNode(node);
  return out;
}

std::string PrintArgument(const Argument& argument) {
  std::string out;
  PrintOptions options;
  TextPrinter(&out, options).AppendArg(argument, false);
  return out;
}

std::string PrintType(const TensorType& type) {
  std::string out;
  AppendType(&out, type);
  return out;
}

absl::Status WriteTextModule(const Module& module, absl::string_view path,
                             const PrintOptions& options) {
  return WriteFileAtomically(std::string(path), PrintModule(module, options));
}

}  // namespace graft
