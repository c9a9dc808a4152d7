#include "graph/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/file_io.h"
#include "graph/graph.h"
#include "graph/lexer.h"
#include "graph/random_tensor.h"
#include "support/status_macros.h"

namespace graft {
namespace {

constexpr int kMaxListDepth = 64;
constexpr int kMaxModuleDepth = 64;

// Bytes of one element of any dtype, parsed from the text.
union ElementBits {
  float f32;
  double f64;
  uint16_t u16;
  int8_t i8;
  uint8_t u8;
  int32_t i32;
  int64_t i64;
};

// A recursive-descent parser with one token of lookahead. Builds the
// module as it reads, so a node's operands are resolved against the nodes
// already created (which is also what makes forward references an error).
class TextParser {
 public:
  TextParser(absl::string_view text, absl::string_view filename,
             const ParseOptions& options)
      : lexer_(text), text_(text), filename_(filename), options_(options) {
    tok_ = lexer_.Next();
  }

  absl::StatusOr<Module> Run();

 private:
  // Tokens.
  Token Take() {
    Token t = tok_;
    tok_ = lexer_.Next();
    return t;
  }
  bool At(TokenKind kind) const { return tok_.kind == kind; }
  bool AtWord(absl::string_view word) const {
    return tok_.kind == TokenKind::kIdent && tok_.text == word;
  }
  absl::Status ErrorAt(const Token& at, absl::string_view message) const;
  absl::Status Expected(absl::string_view what) const;
  absl::Status Expect(TokenKind kind, absl::string_view what);
  absl::Status ExpectWord(absl::string_view word);

  // Module structure.
  absl::Status ParseModuleBody(Module& module, int depth);
  void ReserveForRestOfText(Graph& graph);
  absl::Status ParseTensor(Module& module);
  absl::Status ParseSubmodule(Module& module, int depth);
  absl::Status ParseGraph(Module& module);
  absl::Status ParseNode(Module& module);
  absl::Status ParseReturn(Graph& graph);

  // Pieces.
  absl::StatusOr<std::string> ParseName(absl::string_view what);
  absl::Status ParseTensorType(TensorType* type);
  absl::Status ParseNodeType(NodeMeta& meta);
  absl::StatusOr<Argument> ParseValue(const Graph& graph, int depth,
                                      bool in_return);
  absl::StatusOr<ArgumentList> ParseSequence(const Graph& graph,
                                             TokenKind close, int depth,
                                             bool in_return);
  absl::StatusOr<Kwargs> ParseKwargs(const Graph& graph);
  absl::StatusOr<Node*> ResolveNode(const Graph& graph, const Token& ref);
  absl::StatusOr<int64_t> ParseInt(const Token& t);
  absl::StatusOr<double> ParseDouble(const Token& t);

  // Tensor data.
  absl::StatusOr<Tensor> ParseTensorData(absl::string_view name, DType dtype,
                                         const std::vector<int64_t>& dims,
                                         const Token& type_token,
                                         std::string* init);
  absl::StatusOr<Tensor> ParseTensorLiteral(absl::string_view name, DType dtype,
                                            const std::vector<int64_t>& dims,
                                            int64_t count);
  absl::Status ParseElement(const Token& t, DType dtype, ElementBits* out);

  absl::Status DuplicateName(Graph& graph, Node* node, const Token& name);
  SourceLocation Location(const Token& t) const {
    return SourceLocation{filename_, t.line, t.column};
  }

  Lexer lexer_;
  absl::string_view text_;
  Token tok_;
  std::string filename_;
  const ParseOptions& options_;
  Node* last_node_ = nullptr;  // The last node created in the current graph.
};

absl::Status TextParser::ErrorAt(const Token& at,
                                 absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat(filename_, ":", at.line, ":", at.column, ": ", message));
}

absl::Status TextParser::Expected(absl::string_view what) const {
  // A lexer error says more than "expected X".
  if (tok_.kind == TokenKind::kError) return ErrorAt(tok_, tok_.text);
  return ErrorAt(
      tok_, absl::StrCat("expected ", what, ", got ", DescribeToken(tok_)));
}

absl::Status TextParser::Expect(TokenKind kind, absl::string_view what) {
  if (!At(kind)) return Expected(what);
  Take();
  return absl::OkStatus();
}

absl::Status TextParser::ExpectWord(absl::string_view word) {
  if (!AtWord(word)) return Expected(absl::StrCat("'", word, "'"));
  Take();
  return absl::OkStatus();
}

absl::StatusOr<Module> TextParser::Run() {
  Module module;
  absl::Status status = ParseModuleBody(module, 0);
  if (!status.ok()) return status;
  if (!At(TokenKind::kEof)) return Expected("end of file");
  return module;
}

// Declarations in any order, then the graph, which ends the module.
absl::Status TextParser::ParseModuleBody(Module& module, int depth) {
  while (true) {
    absl::Status status;
    if (AtWord("tensor")) {
      status = ParseTensor(module);
    } else if (AtWord("submodule")) {
      status = ParseSubmodule(module, depth);
    } else if (AtWord("graph")) {
      if (depth == 0) ReserveForRestOfText(module.graph());
      return ParseGraph(module);
    } else {
      return Expected("'tensor', 'submodule' or 'graph():'");
    }
    if (!status.ok()) return status;
  }
}

// The top-level graph holds at most one node per remaining line: reserving
// that many names up front saves rehashing the name table while a large
// graph is read.
void TextParser::ReserveForRestOfText(Graph& graph) {
  const size_t at = static_cast<size_t>(tok_.text.data() - text_.data());
  if (at >= text_.size()) return;
  const absl::string_view rest = text_.substr(at);
  graph.ReserveNodes(static_cast<size_t>(std::count(rest.begin(), rest.end(), '\n')));
}

absl::StatusOr<std::string> TextParser::ParseName(absl::string_view what) {
  if (At(TokenKind::kIdent)) return std::string(Take().text);
  if (At(TokenKind::kString)) return DecodeString(Take().text);
  return Expected(what);
}

absl::Status TextParser::ParseSubmodule(Module& module, int depth) {
  Token keyword = Take();
  if (depth + 1 > kMaxModuleDepth) {
    return ErrorAt(keyword, absl::StrCat("submodules nested more than ",
                                         kMaxModuleDepth, " deep"));
  }
  Token name_token = tok_;
  absl::StatusOr<std::string> name = ParseName("a submodule name");
  if (!name.ok()) return name.status();
  if (module.FindSubmodule(*name) != nullptr) {
    return ErrorAt(name_token,
                   absl::StrCat("duplicate submodule '", *name, "'"));
  }
  RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "'{'"));
  Module sub;
  RETURN_IF_ERROR(ParseModuleBody(sub, depth + 1));
  if (absl::Status s =
          Expect(TokenKind::kRBrace, "'}' after the submodule's graph");
      !s.ok()) {
    return s;
  }
  module.AddSubmodule(*std::move(name), std::move(sub));
  return absl::OkStatus();
}

absl::Status TextParser::ParseTensorType(TensorType* type) {
  if (!At(TokenKind::kIdent)) return Expected("a type such as f32[2,3]");
  std::optional<DType> dtype = ParseDType(tok_.text);
  if (!dtype.has_value()) {
    std::vector<absl::string_view> known;
    for (int d = 0; d < kNumDTypes; ++d) known.push_back(DTypeName(static_cast<DType>(d)));
    return ErrorAt(tok_, absl::StrCat("unknown dtype ", DescribeToken(tok_), " (known: ",
                                      absl::StrJoin(known, ", "), ")"));
  }
  Take();
  type->dtype = *dtype;
  type->shape.clear();
  RETURN_IF_ERROR(Expect(TokenKind::kLBracket, "'[' after the dtype"));
  while (!At(TokenKind::kRBracket)) {
    if (At(TokenKind::kInt)) {
      Token t = Take();
      absl::StatusOr<int64_t> value = ParseInt(t);
      if (!value.ok()) return value.status();
      if (*value < 0) {
        return ErrorAt(t, absl::StrCat("dimension ", *value,
                                       " is negative; use a symbol for an "
                                       "unknown size"));
      }
      type->shape.push_back(Dim(*value));
    } else if (At(TokenKind::kIdent)) {
      type->shape.push_back(Dim::Symbol(Take().text));
    } else if (At(TokenKind::kString)) {
      type->shape.push_back(Dim::Symbol(DecodeString(Take().text)));
    } else {
      return Expected("a dimension (a size or a symbol)");
    }
    if (At(TokenKind::kComma)) {
      Take();
    } else if (!At(TokenKind::kRBracket)) {
      return Expected("',' or ']'");
    }
  }
  Take();
  return absl::OkStatus();
}

absl::Status TextParser::ParseNodeType(NodeMeta& meta) {
  if (!At(TokenKind::kLParen)) {
    meta.type.emplace();
    return ParseTensorType(&*meta.type);
  }
  Take();
  while (true) {
    meta.tuple_types.emplace_back();
    RETURN_IF_ERROR(ParseTensorType(&meta.tuple_types.back()));
    if (At(TokenKind::kComma)) {
      Take();
      if (At(TokenKind::kRParen)) break;
      continue;
    }
    break;
  }
  return Expect(TokenKind::kRParen, "',' or ')' in the tuple type");
}

absl::StatusOr<int64_t> TextParser::ParseInt(const Token& t) {
  int64_t value = 0;
  auto [ptr, ec] =
      std::from_chars(t.text.data(), t.text.data() + t.text.size(), value);
  if (ec != std::errc() || ptr != t.text.data() + t.text.size()) {
    return ErrorAt(t, absl::StrCat("integer ", t.text,
                                   " is out of range for a 64-bit integer"));
  }
  return value;
}

// True if the literal's decimal exponent is negative: an out-of-range result
// then means underflow (to zero), not overflow.
bool HasNegativeExponent(absl::string_view text) {
  size_t e = text.find_first_of("eE");
  return e != absl::string_view::npos && e + 1 < text.size() &&
         text[e + 1] == '-';
}

template <typename T>
bool ParseFloating(absl::string_view text, T* value) {
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *value);
  if (ptr != text.data() + text.size()) return false;
  if (ec == std::errc::result_out_of_range && HasNegativeExponent(text)) {
    *value = text[0] == '-' ? -T(0) : T(0);
    return true;
  }
  return ec == std::errc();
}

absl::StatusOr<double> TextParser::ParseDouble(const Token& t) {
  double value = 0;
  if (!ParseFloating(t.text, &value)) {
    return ErrorAt(t,
                   absl::StrCat("float ", t.text, " is out of range for f64"));
  }
  return value;
}

absl::StatusOr<Node*> TextParser::ResolveNode(const Graph& graph,
                                              const Token& ref) {
  // Most operands are the node just before: skip the hash lookup for them.
  if (last_node_ != nullptr && last_node_->name() == ref.text) {
    return last_node_;
  }
  Node* node = graph.FindNode(ref.text);
  if (node == nullptr) {
    return ErrorAt(ref, absl::StrCat("undefined node '%", ref.text,
                                     "' (nodes must be defined before use)"));
  }
  return node;
}

// The literal a value keyword stands for (True, None, inf, f32, ...).
std::optional<Argument> KeywordValue(absl::string_view word) {
  if (word == "None") return Argument(NoneArg{});
  if (word == "True") return Argument(true);
  if (word == "False") return Argument(false);
  if (word == "inf") return Argument(std::numeric_limits<double>::infinity());
  if (word == "nan") return Argument(std::numeric_limits<double>::quiet_NaN());
  if (std::optional<DType> dtype = ParseDType(word)) return Argument(*dtype);
  return std::nullopt;
}

absl::StatusOr<Argument> TextParser::ParseValue(const Graph& graph, int depth,
                                                bool in_return) {
  switch (tok_.kind) {
    case TokenKind::kNodeRef: {
      absl::StatusOr<Node*> node = ResolveNode(graph, Take());
      if (!node.ok()) return node.status();
      return Argument(*node);
    }
    case TokenKind::kInt: {
      absl::StatusOr<int64_t> value = ParseInt(Take());
      if (!value.ok()) return value.status();
      return Argument(*value);
    }
    case TokenKind::kFloat: {
      absl::StatusOr<double> value = ParseDouble(Take());
      if (!value.ok()) return value.status();
      return Argument(*value);
    }
    case TokenKind::kString:
      return Argument(DecodeString(Take().text));
    case TokenKind::kLBracket:
    case TokenKind::kLParen: {
      if (depth + 1 > kMaxListDepth) {
        return ErrorAt(tok_, absl::StrCat("lists nested more than ",
                                          kMaxListDepth, " deep"));
      }
      TokenKind close =
          At(TokenKind::kLBracket) ? TokenKind::kRBracket : TokenKind::kRParen;
      Take();
      absl::StatusOr<ArgumentList> list =
          ParseSequence(graph, close, depth + 1, in_return);
      if (!list.ok()) return list.status();
      return Argument(*std::move(list));
    }
    case TokenKind::kIdent: {
      absl::string_view word = tok_.text;
      std::optional<Argument> keyword = KeywordValue(word);
      if (keyword.has_value()) {
        Take();
        return *std::move(keyword);
      }
      if (in_return) {
        absl::StatusOr<Node*> node = ResolveNode(graph, Take());
        if (!node.ok()) return node.status();
        return Argument(*node);
      }
      return ErrorAt(tok_,
                     absl::StrCat("expected a value, got ", DescribeToken(tok_),
                                  " (node references start with '%')"));
    }
    default:
      return Expected("a value");
  }
}

// Elements up to `close`, separated by commas; a trailing comma is allowed.
absl::StatusOr<ArgumentList> TextParser::ParseSequence(const Graph& graph,
                                                       TokenKind close,
                                                       int depth,
                                                       bool in_return) {
  ArgumentList list;
  const char* close_text = close == TokenKind::kRParen ? "')'" : "']'";
  while (!At(close)) {
    absl::StatusOr<Argument> value = ParseValue(graph, depth, in_return);
    if (!value.ok()) return value.status();
    // Room for a typical call's operands at once, not one by one (the
    // args tuple is copied into the node; nested lists are kept as built).
    if (depth == 0 && list.empty()) list.reserve(4);
    list.push_back(*std::move(value));
    if (At(TokenKind::kComma)) {
      Take();
      continue;
    }
    if (!At(close)) return Expected(absl::StrCat("',' or ", close_text));
  }
  Take();
  return list;
}

absl::StatusOr<Kwargs> TextParser::ParseKwargs(const Graph& graph) {
  RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "'{'"));
  Kwargs kwargs;
  // Keys seen so far; a set only for long dicts, which real nodes never have
  // but hostile input might (a linear scan would make it quadratic).
  constexpr size_t kScanLimit = 16;
  absl::flat_hash_set<std::string> seen;
  while (!At(TokenKind::kRBrace)) {
    Token key_token = tok_;
    absl::StatusOr<std::string> key = ParseName("a keyword argument name");
    if (!key.ok()) return key.status();
    bool duplicate = false;
    if (kwargs.size() < kScanLimit) {
      for (const auto& [existing, value] : kwargs)
        duplicate |= existing == *key;
    } else {
      if (seen.empty()) {
        for (const auto& [existing, value] : kwargs) seen.insert(existing);
      }
      duplicate = !seen.insert(*key).second;
    }
    if (duplicate) {
      return ErrorAt(key_token,
                     absl::StrCat("duplicate keyword argument '", *key, "'"));
    }
    RETURN_IF_ERROR(Expect(TokenKind::kColon, "':'"));
    absl::StatusOr<Argument> value = ParseValue(graph, 0, false);
    if (!value.ok()) return value.status();
    kwargs.emplace_back(*std::move(key), *std::move(value));
    if (At(TokenKind::kComma)) {
      Take();
      continue;
    }
    if (!At(TokenKind::kRBrace)) return Expected("',' or '}'");
  }
  Take();
  return kwargs;
}

absl::Status TextParser::ParseGraph(Module& module) {
  Take();  // graph
  last_node_ = nullptr;
  RETURN_IF_ERROR(Expect(TokenKind::kLParen, "'(' after 'graph'"));
  RETURN_IF_ERROR(Expect(TokenKind::kRParen, "')'"));
  RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' after 'graph()'"));
  while (true) {
    if (At(TokenKind::kNodeRef)) {
      RETURN_IF_ERROR(ParseNode(module));
    } else if (AtWord("return")) {
      return ParseReturn(module.graph());
    } else if (At(TokenKind::kEof) || At(TokenKind::kRBrace)) {
      return ErrorAt(tok_,
                     "missing 'return': a graph ends with 'return VALUE'");
    } else {
      return Expected("a node ('%name = ...') or 'return'");
    }
  }
}

absl::Status TextParser::ParseNode(Module& module) {
  Graph& graph = module.graph();
  Token name_token = Take();
  // The node's own name is checked when it is created: one hash lookup
  // less per node.
  NodeMeta meta;
  if (At(TokenKind::kColon)) {
    Take();
    RETURN_IF_ERROR(ParseNodeType(meta));
  }
  RETURN_IF_ERROR(Expect(TokenKind::kEquals, "':' or '='"));
  if (!At(TokenKind::kIdent)) return Expected("an opcode");
  Token op_token = Take();
  std::optional<OpCode> op = ParseOpCode(op_token.text);
  if (op == OpCode::kOutput) {
    return ErrorAt(op_token, "the output node is written 'return VALUE'");
  }
  if (!op.has_value()) {
    return ErrorAt(op_token,
                   absl::StrCat("unknown opcode ", DescribeToken(op_token),
                                " (expected placeholder, get_attr, "
                                "call_function or call_module)"));
  }
  RETURN_IF_ERROR(Expect(TokenKind::kLBracket, "'[target=...]'"));
  RETURN_IF_ERROR(ExpectWord("target"));
  RETURN_IF_ERROR(Expect(TokenKind::kEquals, "'='"));
  Token target_token = tok_;
  absl::StatusOr<std::string> target = ParseName("a target name");
  if (!target.ok()) return target.status();
  RETURN_IF_ERROR(Expect(TokenKind::kRBracket, "']'"));
  if (*op == OpCode::kGetAttr && module.FindTensor(*target) == nullptr) {
    return ErrorAt(target_token,
                   absl::StrCat("get_attr of undefined tensor '", *target,
                                "' (declare it before the graph with 'tensor ",
                                *target, " : TYPE = ...')"));
  }
  if (*op == OpCode::kCallModule && module.FindSubmodule(*target) == nullptr) {
    return ErrorAt(
        target_token,
        absl::StrCat("call_module of undefined submodule '", *target, "'"));
  }
  ArgumentList args;
  Kwargs kwargs;
  if (At(TokenKind::kLParen)) {
    Take();
    RETURN_IF_ERROR(ExpectWord("args"));
    RETURN_IF_ERROR(Expect(TokenKind::kEquals, "'='"));
    RETURN_IF_ERROR(Expect(TokenKind::kLParen, "'(' (the args tuple)"));
    absl::StatusOr<ArgumentList> parsed =
        ParseSequence(graph, TokenKind::kRParen, 0, false);
    if (!parsed.ok()) return parsed.status();
    args = *std::move(parsed);
    RETURN_IF_ERROR(Expect(TokenKind::kComma, "','"));
    RETURN_IF_ERROR(ExpectWord("kwargs"));
    RETURN_IF_ERROR(Expect(TokenKind::kEquals, "'='"));
    absl::StatusOr<Kwargs> parsed_kwargs = ParseKwargs(graph);
    if (!parsed_kwargs.ok()) return parsed_kwargs.status();
    kwargs = *std::move(parsed_kwargs);
    RETURN_IF_ERROR(Expect(TokenKind::kRParen, "')'"));
  }
  Node* node = graph.CreateNode(*op, *std::move(target), std::move(args),
                                std::move(kwargs), name_token.text);
  if (node->name() != name_token.text) {
    return DuplicateName(graph, node, name_token);
  }
  meta.location = Location(name_token);
  node->meta() = std::move(meta);
  last_node_ = node;
  return absl::OkStatus();
}

// `node` was created under another name because `name`'s was taken.
absl::Status TextParser::DuplicateName(Graph& graph, Node* node,
                                       const Token& name) {
  graph.EraseNode(node).IgnoreError();  // The module is dropped anyway.
  std::string where;
  Node* existing = graph.FindNode(name.text);
  if (existing != nullptr && existing->meta().location.has_value()) {
    where = absl::StrCat(" (first defined at ", existing->meta().location->line,
                         ":", existing->meta().location->column, ")");
  }
  return ErrorAt(name,
                 absl::StrCat("duplicate node name '%", name.text, "'", where));
}

absl::Status TextParser::ParseReturn(Graph& graph) {
  Token keyword = Take();
  absl::StatusOr<Argument> value;
  if (At(TokenKind::kLParen)) {
    // The top-level tuple of several outputs.
    Take();
    absl::StatusOr<ArgumentList> list =
        ParseSequence(graph, TokenKind::kRParen, 0, true);
    if (!list.ok()) return list.status();
    value = Argument(*std::move(list));
  } else {
    value = ParseValue(graph, 0, true);
    if (!value.ok()) return value.status();
  }
  Node* output = graph.Output(*std::move(value));
  output->meta().location = Location(keyword);
  return absl::OkStatus();
}

// Product of the dims, or -1 on overflow.
int64_t CheckedNumElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

absl::Status TextParser::ParseTensor(Module& module) {
  Take();  // tensor
  Token name_token = tok_;
  absl::StatusOr<std::string> name = ParseName("a tensor name");
  if (!name.ok()) return name.status();
  if (module.FindTensor(*name) != nullptr) {
    return ErrorAt(name_token, absl::StrCat("duplicate tensor '", *name, "'"));
  }
  RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' and the tensor's type"));
  Token type_token = tok_;
  TensorType type;
  RETURN_IF_ERROR(ParseTensorType(&type));
  if (!IsStatic(type.shape)) {
    return ErrorAt(type_token, absl::StrCat("tensor '", *name,
                                            "' needs a static shape, got ",
                                            type.ToString()));
  }
  RETURN_IF_ERROR(Expect(TokenKind::kEquals, "'='"));
  std::string init;
  absl::StatusOr<Tensor> value = ParseTensorData(
      *name, type.dtype, StaticDims(type.shape), type_token, &init);
  if (!value.ok()) return value.status();
  module.SetTensor(*std::move(name), *std::move(value), std::move(init));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> TextParser::ParseTensorData(
    absl::string_view name, DType dtype, const std::vector<int64_t>& dims,
    const Token& type_token, std::string* init) {
  const int64_t count = CheckedNumElements(dims);
  const int64_t size = DTypeSize(dtype);
  if (count < 0 || count > options_.max_tensor_bytes / size) {
    return ErrorAt(
        type_token,
        absl::StrCat("tensor '", name, "' is larger than the limit of ",
                     options_.max_tensor_bytes, " bytes"));
  }
  try {
    if (AtWord("zeros")) {
      Take();
      *init = "zeros";
      return Tensor(dtype, dims);
    }
    if (AtWord("random")) {
      Take();
      RETURN_IF_ERROR(Expect(TokenKind::kLParen, "'('"));
      RETURN_IF_ERROR(ExpectWord("seed"));
      RETURN_IF_ERROR(Expect(TokenKind::kEquals, "'='"));
      if (!At(TokenKind::kInt)) return Expected("an integer seed");
      absl::StatusOr<int64_t> seed = ParseInt(Take());
      if (!seed.ok()) return seed.status();
      RETURN_IF_ERROR(Expect(TokenKind::kRParen, "')'"));
      *init = absl::StrCat("random(seed=", *seed, ")");
      return RandomTensor(dtype, dims, static_cast<uint64_t>(*seed));
    }
    if (AtWord("full")) {
      Take();
      RETURN_IF_ERROR(Expect(TokenKind::kLParen, "'('"));
      Token value_token = Take();
      ElementBits bits;
      RETURN_IF_ERROR(ParseElement(value_token, dtype, &bits));
      RETURN_IF_ERROR(Expect(TokenKind::kRParen, "')'"));
      *init = absl::StrCat("full(", value_token.text, ")");
      Tensor t(dtype, dims);
      auto* data = static_cast<char*>(t.raw_data());
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(data + i * size, &bits, size);
      return t;
    }
    if (AtWord("elided")) {
      return ErrorAt(tok_, absl::StrCat("tensor '", name,
                                        "' data is elided in this file; save "
                                        "the model as .gpb to keep its data"));
    }
    if (At(TokenKind::kLBracket))
      return ParseTensorLiteral(name, dtype, dims, count);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        filename_, ":", type_token.line, ":", type_token.column,
        ": out of memory for tensor '", name, "' (", count * size, " bytes)"));
  }
  return Expected(
      "tensor data: zeros, random(seed=N), full(V), [values] or elided");
}

absl::StatusOr<Tensor> TextParser::ParseTensorLiteral(
    absl::string_view name, DType dtype, const std::vector<int64_t>& dims,
    int64_t count) {
  Token open = Take();
  // Values are checked against the count before anything is allocated.
  std::vector<Token> values;
  while (!At(TokenKind::kRBracket)) {
    if (!At(TokenKind::kInt) && !At(TokenKind::kFloat) &&
        !At(TokenKind::kIdent)) {
      return Expected("a number (tensor literals are flat lists, row-major)");
    }
    if (static_cast<int64_t>(values.size()) == count) {
      return ErrorAt(tok_,
                     absl::StrCat("tensor '", name, "' has ", count,
                                  " element(s) but its literal has more"));
    }
    values.push_back(Take());
    if (At(TokenKind::kComma)) {
      Take();
      continue;
    }
    if (!At(TokenKind::kRBracket)) return Expected("',' or ']'");
  }
  Take();
  if (static_cast<int64_t>(values.size()) != count) {
    return ErrorAt(
        open, absl::StrCat("tensor '", name, "' has ", count,
                           " element(s) but its literal has ", values.size()));
  }
  Tensor t(dtype, dims);
  auto* data = static_cast<char*>(t.raw_data());
  const int64_t size = DTypeSize(dtype);
  for (int64_t i = 0; i < count; ++i) {
    ElementBits bits;
    RETURN_IF_ERROR(ParseElement(values[i], dtype, &bits));
    std::memcpy(data + i * size, &bits, size);
  }
  return t;
}

absl::Status TextParser::ParseElement(const Token& t, DType dtype,
                                      ElementBits* out) {
  const absl::string_view type_name = DTypeName(dtype);
  auto out_of_range = [&] {
    return ErrorAt(
        t, absl::StrCat("value ", t.text, " is out of range for ", type_name));
  };
  const bool is_word_float =
      t.kind == TokenKind::kIdent && (t.text == "inf" || t.text == "nan");
  if (IsFloatingPoint(dtype) || IsFloat8(dtype)) {
    if (t.kind != TokenKind::kInt && t.kind != TokenKind::kFloat &&
        !is_word_float) {
      if (t.kind == TokenKind::kError) return ErrorAt(t, t.text);
      return ErrorAt(t, absl::StrCat("expected a number for ", type_name,
                                     ", got ", DescribeToken(t)));
    }
    if (dtype == DType::kF64) {
      if (!ParseFloating(t.text, &out->f64)) return out_of_range();
      return absl::OkStatus();
    }
    if (IsFloat8(dtype)) {
      // Read as double and rounded once; e4m3fn has no infinities, so past
      // 448 is out of range.
      double d;
      if (!ParseFloating(t.text, &d) || std::fabs(d) > 448) return out_of_range();
      out->u8 = DoubleToFloat8E4M3(d);
      return absl::OkStatus();
    }
    float f;
    if (!ParseFloating(t.text, &f)) return out_of_range();
    if (dtype == DType::kF32) {
      out->f32 = f;
    } else {
      out->u16 = dtype == DType::kF16 ? FloatToHalf(f) : FloatToBFloat16(f);
      float back = dtype == DType::kF16 ? HalfToFloat(out->u16)
                                        : BFloat16ToFloat(out->u16);
      if (std::isinf(back) && !std::isinf(f)) return out_of_range();
    }
    return absl::OkStatus();
  }
  if (dtype == DType::kBool) {
    if (t.kind == TokenKind::kIdent &&
        (t.text == "True" || t.text == "False")) {
      out->u8 = t.text == "True" ? 1 : 0;
      return absl::OkStatus();
    }
    if (t.kind == TokenKind::kInt && (t.text == "0" || t.text == "1")) {
      out->u8 = t.text == "1" ? 1 : 0;
      return absl::OkStatus();
    }
    if (t.kind == TokenKind::kError) return ErrorAt(t, t.text);
    return ErrorAt(t, absl::StrCat("expected True or False for bool, got ",
                                   DescribeToken(t)));
  }
  if (t.kind != TokenKind::kInt) {
    if (t.kind == TokenKind::kError) return ErrorAt(t, t.text);
    return ErrorAt(t, absl::StrCat("expected an integer for ", type_name,
                                   ", got ", DescribeToken(t)));
  }
  int64_t v = 0;
  auto [ptr, ec] =
      std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc() || ptr != t.text.data() + t.text.size())
    return out_of_range();
  switch (dtype) {
    case DType::kI8:
      if (v < -128 || v > 127) return out_of_range();
      out->i8 = static_cast<int8_t>(v);
      break;
    case DType::kU8:
      if (v < 0 || v > 255) return out_of_range();
      out->u8 = static_cast<uint8_t>(v);
      break;
    case DType::kI32:
      if (v < std::numeric_limits<int32_t>::min() ||
          v > std::numeric_limits<int32_t>::max()) {
        return out_of_range();
      }
      out->i32 = static_cast<int32_t>(v);
      break;
    default:
      out->i64 = v;
      break;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Module> ParseModule(absl::string_view text,
                                   absl::string_view filename,
                                   const ParseOptions& options) {
  return TextParser(text, filename, options).Run();
}

absl::StatusOr<Module> LoadTextModule(absl::string_view path,
                                      const ParseOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(std::string(path), ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read '", path, "': it is a directory"));
  }
  absl::StatusOr<std::string> text = ReadFile(std::string(path));
  if (!text.ok()) return text.status();
  return ParseModule(*text, path, options);
}

}  // namespace graft
