#ifndef GRAFT_GRAPH_LEXER_H_
#define GRAFT_GRAPH_LEXER_H_

#include <array>
#include <cstdint>
#include <deque>
#include <string>

#include "absl/strings/string_view.h"

namespace graft {

enum class TokenKind : uint8_t {
  kEof,
  kError,    // text: the lexer's message ("unterminated string").
  kIdent,    // relu, f32, ns::gelu, layer1.weight
  kNodeRef,  // %name; text holds the name without '%'.
  kInt,      // 3, -7
  kFloat,    // 2.5, -1e-3, -inf (inf and nan alone are identifiers)
  kString,   // "a\"b"; text holds the raw lexeme with its quotes.
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kComma,
  kColon,
  kEquals,
};

// One token of the text format. `text` views the lexed buffer (or, for
// kError, a message the lexer keeps as long as it lives), so tokens are
// cheap to copy.
struct Token {
  TokenKind kind = TokenKind::kEof;
  absl::string_view text;
  int line = 1;
  int column = 1;
};

// Splits the text format into tokens. Hand-written over one buffer (no
// regex, no copies): the parser has to keep up with million-node files.
// Whitespace and `#` comments separate tokens; lines and columns count from
// 1, columns in bytes. Never fails: bad input yields a kError token.
class Lexer {
 public:
  explicit Lexer(absl::string_view text) : text_(text) {}

  Token Next();

 private:
  void SkipSpaceAndComments();
  Token Make(TokenKind kind, size_t begin, size_t end) const;
  Token Error(absl::string_view message, size_t at) const;
  // Out of line: its message building would otherwise make Next() keep a
  // large stack frame for every token.
  Token UnexpectedCharacter(size_t at);
  Token LexNumber(size_t begin);
  Token LexString(size_t begin);
  Token LexIdentifier(size_t begin);
  int Column(size_t at) const { return static_cast<int>(at - line_start_) + 1; }

  absl::string_view text_;
  // Messages viewed by kError tokens; a deque so that earlier tokens'
  // views stay valid.
  std::deque<std::string> error_messages_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
};

// "identifier 'relu'", "integer 3", "'('", "end of file": how error
// messages name a token.
std::string DescribeToken(const Token& token);

// The bytes of a kString token's lexeme, escapes resolved. The lexer has
// already checked the escapes.
std::string DecodeString(absl::string_view lexeme);

// Appends `value` as a double-quoted literal that DecodeString reverses:
// `\\`, `\"`, `\n`, `\t`, `\r`, and `\xHH` for other control bytes.
void AppendQuoted(std::string* out, absl::string_view value);

namespace lexer_internal {

// Bit 0: may start an identifier ([A-Za-z_]); bit 1: may continue one
// ([A-Za-z0-9_.]). A table: the lexer asks for every byte of the file.
constexpr std::array<uint8_t, 256> MakeCharClass() {
  std::array<uint8_t, 256> table{};
  for (int c = 0; c < 256; ++c) {
    bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool rest = start || (c >= '0' && c <= '9') || c == '.';
    table[c] = static_cast<uint8_t>((start ? 1 : 0) | (rest ? 2 : 0));
  }
  return table;
}
inline constexpr std::array<uint8_t, 256> kCharClass = MakeCharClass();

}  // namespace lexer_internal

inline bool IsIdentStart(char c) {
  return lexer_internal::kCharClass[static_cast<unsigned char>(c)] & 1;
}
inline bool IsIdentChar(char c) {
  return lexer_internal::kCharClass[static_cast<unsigned char>(c)] & 2;
}

// Words that stand for values where a value is expected: True, False, None,
// inf, nan and the dtype names. A node with such a name is written with its
// '%' even in `return`, where node names are otherwise bare.
bool IsValueKeyword(absl::string_view word);

// True if `name` lexes as one identifier token: names joined by "::"
// ("relu", "ns::gelu", "layer1.weight"). Other names are written quoted.
bool IsBareName(absl::string_view name);

}  // namespace graft

#endif  // GRAFT_GRAPH_LEXER_H_
