#include "graph/lexer.h"

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "graph/dtype.h"

namespace graft {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Long lexemes (a 10 kB string) are cut in messages.
std::string Shorten(absl::string_view text) {
  constexpr size_t kMax = 40;
  if (text.size() <= kMax) return std::string(text);
  return absl::StrCat(text.substr(0, kMax), "...");
}

}  // namespace

bool IsValueKeyword(absl::string_view word) {
  return word == "True" || word == "False" || word == "None" || word == "inf" ||
         word == "nan" || ParseDType(word).has_value();
}

bool IsBareName(absl::string_view name) {
  size_t i = 0;
  while (true) {
    if (i >= name.size() || !IsIdentStart(name[i])) return false;
    while (i < name.size() && IsIdentChar(name[i])) ++i;
    if (i == name.size()) return true;
    if (name.substr(i, 2) != "::") return false;
    i += 2;
  }
}

// Inlined into Next(): both run for every token of a file.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void Lexer::SkipSpaceAndComments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      return;
    }
  }
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline Token Lexer::Make(TokenKind kind, size_t begin,
                                                     size_t end) const {
  return Token{kind, absl::string_view(text_.data() + begin, end - begin),
               line_, Column(begin)};
}

Token Lexer::Error(absl::string_view message, size_t at) const {
  return Token{TokenKind::kError, message, line_, Column(at)};
}

Token Lexer::Next() {
  SkipSpaceAndComments();
  if (pos_ >= text_.size()) return Make(TokenKind::kEof, pos_, pos_);
  size_t begin = pos_;
  char c = text_[pos_];
  auto punct = [&](TokenKind kind) {
    ++pos_;
    return Make(kind, begin, pos_);
  };
  switch (c) {
    case '(':
      return punct(TokenKind::kLParen);
    case ')':
      return punct(TokenKind::kRParen);
    case '[':
      return punct(TokenKind::kLBracket);
    case ']':
      return punct(TokenKind::kRBracket);
    case '{':
      return punct(TokenKind::kLBrace);
    case '}':
      return punct(TokenKind::kRBrace);
    case ',':
      return punct(TokenKind::kComma);
    case ':':
      return punct(TokenKind::kColon);
    case '=':
      return punct(TokenKind::kEquals);
    case '"':
      return LexString(begin);
    case '%': {
      size_t end = pos_ + 1;
      if (end >= text_.size() || !IsIdentStart(text_[end])) {
        ++pos_;
        return Error("expected a node name after '%'", begin);
      }
      while (end < text_.size() && IsIdentChar(text_[end])) ++end;
      pos_ = end;
      Token t = Make(TokenKind::kNodeRef, begin + 1, end);
      t.column = Column(begin);
      return t;
    }
    default:
      break;
  }
  if (IsDigit(c) || c == '-') return LexNumber(begin);
  if (IsIdentStart(c)) return LexIdentifier(begin);
  return UnexpectedCharacter(begin);
}

ABSL_ATTRIBUTE_NOINLINE Token Lexer::UnexpectedCharacter(size_t at) {
  pos_ = at + 1;
  const char c = text_[at];
  auto u = static_cast<unsigned char>(c);
  error_messages_.push_back(
      u >= 0x20 && u < 0x7f
          ? absl::StrCat("unexpected character '", absl::string_view(&c, 1),
                         "'")
          : absl::StrCat("unexpected byte 0x", absl::Hex(u, absl::kZeroPad2)));
  return Error(error_messages_.back(), at);
}

Token Lexer::LexIdentifier(size_t begin) {
  size_t end = begin;
  while (true) {
    while (end < text_.size() && IsIdentChar(text_[end])) ++end;
    // "ns::op": a namespaced op name is one identifier.
    if (end + 2 < text_.size() && text_[end] == ':' && text_[end + 1] == ':' &&
        IsIdentStart(text_[end + 2])) {
      end += 2;
      continue;
    }
    break;
  }
  pos_ = end;
  return Make(TokenKind::kIdent, begin, end);
}

Token Lexer::LexNumber(size_t begin) {
  size_t p = begin;
  if (text_[p] == '-') {
    ++p;
    if (text_.substr(p, 3) == "inf" &&
        (p + 3 >= text_.size() || !IsIdentChar(text_[p + 3]))) {
      pos_ = p + 3;
      return Make(TokenKind::kFloat, begin, pos_);
    }
    if (p >= text_.size() || !IsDigit(text_[p])) {
      pos_ = p;
      return Error("expected a number after '-'", begin);
    }
  }
  bool is_float = false;
  while (p < text_.size() && IsDigit(text_[p])) ++p;
  if (p < text_.size() && text_[p] == '.') {
    is_float = true;
    ++p;
    while (p < text_.size() && IsDigit(text_[p])) ++p;
  }
  if (p < text_.size() && (text_[p] == 'e' || text_[p] == 'E')) {
    is_float = true;
    ++p;
    if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
    if (p >= text_.size() || !IsDigit(text_[p])) {
      pos_ = p;
      return Error("malformed number", begin);
    }
    while (p < text_.size() && IsDigit(text_[p])) ++p;
  }
  if (p < text_.size() && IsIdentChar(text_[p])) {
    // "12abc", "1.5.2": skip the rest so the error names one token.
    while (p < text_.size() && IsIdentChar(text_[p])) ++p;
    pos_ = p;
    return Error("malformed number", begin);
  }
  pos_ = p;
  return Make(is_float ? TokenKind::kFloat : TokenKind::kInt, begin, p);
}

Token Lexer::LexString(size_t begin) {
  size_t p = begin + 1;
  while (p < text_.size()) {
    char c = text_[p];
    if (c == '"') {
      pos_ = p + 1;
      return Make(TokenKind::kString, begin, pos_);
    }
    if (c == '\n') break;
    if (c == '\\') {
      if (p + 1 >= text_.size()) break;
      char e = text_[p + 1];
      if (e == 'x') {
        if (p + 3 >= text_.size() || HexValue(text_[p + 2]) < 0 ||
            HexValue(text_[p + 3]) < 0) {
          pos_ = p + 2;
          return Error("malformed \\x escape: expected two hex digits", p);
        }
        p += 4;
        continue;
      }
      if (e != '\\' && e != '"' && e != 'n' && e != 't' && e != 'r') {
        pos_ = p + 2;
        return Error(
            "unknown escape in string (known: \\\\ \\\" \\n \\t \\r \\xHH)", p);
      }
      p += 2;
      continue;
    }
    ++p;
  }
  pos_ = p;
  return Error("unterminated string", begin);
}

std::string DescribeToken(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEof:
      return "end of file";
    case TokenKind::kError:
      return std::string(token.text);
    case TokenKind::kIdent:
      return absl::StrCat("'", Shorten(token.text), "'");
    case TokenKind::kNodeRef:
      return absl::StrCat("'%", Shorten(token.text), "'");
    case TokenKind::kInt:
      return absl::StrCat("integer ", Shorten(token.text));
    case TokenKind::kFloat:
      return absl::StrCat("float ", Shorten(token.text));
    case TokenKind::kString:
      return absl::StrCat("string ", Shorten(token.text));
    default:
      return absl::StrCat("'", token.text, "'");
  }
}

std::string DecodeString(absl::string_view lexeme) {
  std::string out;
  if (lexeme.size() < 2) return out;
  absl::string_view body = lexeme.substr(1, lexeme.size() - 2);
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      continue;
    }
    char e = body[++i];
    switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'x':
        if (i + 2 < body.size() && HexValue(body[i + 1]) >= 0 &&
            HexValue(body[i + 2]) >= 0) {
          out.push_back(static_cast<char>(HexValue(body[i + 1]) * 16 +
                                          HexValue(body[i + 2])));
          i += 2;
        }
        break;
      default:
        out.push_back(e);
        break;  // '\\' and '"'.
    }
  }
  return out;
}

void AppendQuoted(std::string* out, absl::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '"':
        out->append("\\\"");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out->append("\\x");
          out->push_back(kHex[u >> 4]);
          out->push_back(kHex[u & 15]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace graft
