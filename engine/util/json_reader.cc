#include "engine/util/json_reader.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/util/reader_internal.h"
#include "engine/util/status_macros.h"

namespace blklab::util {
namespace {

using internal::LimitError;
using internal::SyntaxError;

constexpr absl::string_view kJsonFormat = "JSON";

class JsonReader {
 public:
  JsonReader(absl::string_view text, const ParseLimits& limits) : text_(text), limits_(limits) {}

  absl::StatusOr<DocNode> Parse() {
    if (text_.size() > limits_.max_bytes) {
      return LimitError(kJsonFormat, SourcePos{1, 1},
                        absl::StrCat("document is ", text_.size(), " bytes, limit ", limits_.max_bytes));
    }
    pos_ = internal::BomLength(text_);
    line_start_ = pos_;
    size_t bad = internal::FindBadByte(text_);
    if (bad != absl::string_view::npos) {
      return SyntaxError(kJsonFormat, internal::PosOfOffset(text_, bad),
                         "invalid UTF-8 or control character");
    }
    SkipWhitespace();
    if (AtEnd()) return Error("empty document, expected a value");
    BLKLAB_ASSIGN_OR_RETURN(DocNode root, ParseValue(0));
    SkipWhitespace();
    if (!AtEnd()) return Error("unexpected content after the top-level value");
    return root;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  SourcePos Pos() const {
    // Columns count bytes from the line start (strings hold no raw newlines).
    return SourcePos{line_, static_cast<int>(pos_ - line_start_) + 1};
  }
  absl::Status Error(absl::string_view message) const { return SyntaxError(kJsonFormat, Pos(), message); }

  void SkipWhitespace() {
    while (!AtEnd()) {
      char c = Peek();
      if (c == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }

  absl::Status CountNode() {
    if (++nodes_ > limits_.max_nodes) {
      return LimitError(kJsonFormat, Pos(), absl::StrCat("more than ", limits_.max_nodes, " nodes"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<DocNode> ParseValue(int depth) {
    BLKLAB_RETURN_IF_ERROR(CountNode());
    if (AtEnd()) return Error("unexpected end of input, expected a value");
    const SourcePos start = Pos();
    char c = Peek();
    switch (c) {
      case '{':
      case '[':
        if (depth >= limits_.max_depth) {
          return LimitError(kJsonFormat, start, absl::StrCat("nesting deeper than ", limits_.max_depth));
        }
        return c == '{' ? ParseObject(depth + 1) : ParseArray(depth + 1);
      case '"': {
        BLKLAB_ASSIGN_OR_RETURN(std::string s, ParseString());
        return DocNode::String(std::move(s), start);
      }
      case 't':
        return ParseLiteral("true", DocNode::Bool(true, start));
      case 'f':
        return ParseLiteral("false", DocNode::Bool(false, start));
      case 'n':
        return ParseLiteral("null", DocNode::Null(start));
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
        return Error(absl::StrCat("unexpected character '", std::string(1, c), "', expected a value"));
    }
  }

  absl::StatusOr<DocNode> ParseLiteral(absl::string_view word, DocNode node) {
    if (text_.substr(pos_, word.size()) != word) return Error("invalid literal");
    pos_ += word.size();
    if (!AtEnd() && (absl::ascii_isalnum(static_cast<unsigned char>(Peek())) || Peek() == '_')) {
      return Error("invalid literal");
    }
    return node;
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  absl::StatusOr<DocNode> ParseNumber() {
    const SourcePos start = Pos();
    const size_t begin = pos_;
    if (Peek() == '-') ++pos_;
    if (AtEnd() || !IsDigit(Peek())) return Error("invalid number: expected a digit");
    if (Peek() == '0') {
      ++pos_;
      if (!AtEnd() && IsDigit(Peek())) return Error("invalid number: leading zero");
    } else {
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    if (!AtEnd() && Peek() == '.') {
      ++pos_;
      if (AtEnd() || !IsDigit(Peek())) return Error("invalid number: expected a digit after '.'");
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      ++pos_;
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) ++pos_;
      if (AtEnd() || !IsDigit(Peek())) return Error("invalid number: expected an exponent digit");
      while (!AtEnd() && IsDigit(Peek())) ++pos_;
    }
    return DocNode::Number(std::string(text_.substr(begin, pos_ - begin)), start);
  }

  absl::StatusOr<uint32_t> ParseHex4() {
    if (text_.size() - pos_ < 4) return Error("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_ + static_cast<size_t>(i)];
      uint32_t d;
      if (h >= '0' && h <= '9') {
        d = static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        d = static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        d = static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return Error("invalid hex digit in \\u escape");
      }
      v = v * 16 + d;
    }
    pos_ += 4;
    return v;
  }

  // REQUIRES: Peek() == '"'.
  absl::StatusOr<std::string> ParseString() {
    ++pos_;
    std::string out;
    while (true) {
      if (AtEnd()) return Error("unterminated string");
      const char c = Peek();
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        out.push_back(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (AtEnd()) return Error("unterminated escape");
      const char e = Peek();
      ++pos_;
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          BLKLAB_ASSIGN_OR_RETURN(uint32_t cp, ParseHex4());
          if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("lone low surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") return Error("high surrogate without a low surrogate");
            pos_ += 2;
            BLKLAB_ASSIGN_OR_RETURN(uint32_t lo, ParseHex4());
            if (lo < 0xDC00 || lo > 0xDFFF) return Error("high surrogate without a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          internal::AppendUtf8(cp, &out);
          break;
        }
        default:
          return Error("invalid escape");
      }
    }
  }

  absl::StatusOr<DocNode> ParseObject(int depth) {
    DocNode map = DocNode::Map(Pos());
    ++pos_;  // '{'
    SkipWhitespace();
    if (!AtEnd() && Peek() == '}') {
      ++pos_;
      return map;
    }
    while (true) {
      SkipWhitespace();
      if (AtEnd() || Peek() != '"') return Error("expected a string key");
      const SourcePos key_pos = Pos();
      BLKLAB_ASSIGN_OR_RETURN(std::string key, ParseString());
      SkipWhitespace();
      if (AtEnd() || Peek() != ':') return Error("expected ':' after the key");
      ++pos_;
      SkipWhitespace();
      BLKLAB_ASSIGN_OR_RETURN(DocNode value, ParseValue(depth));
      std::string key_copy = key;
      if (!map.AddEntry(std::move(key), key_pos, std::move(value))) {
        return SyntaxError(kJsonFormat, key_pos, absl::StrCat("duplicate key \"", key_copy, "\""));
      }
      SkipWhitespace();
      if (AtEnd()) return Error("unterminated object, expected ',' or '}'");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return map;
      }
      return Error("expected ',' or '}'");
    }
  }

  absl::StatusOr<DocNode> ParseArray(int depth) {
    DocNode list = DocNode::List(Pos());
    ++pos_;  // '['
    SkipWhitespace();
    if (!AtEnd() && Peek() == ']') {
      ++pos_;
      return list;
    }
    while (true) {
      SkipWhitespace();
      BLKLAB_ASSIGN_OR_RETURN(DocNode item, ParseValue(depth));
      list.Append(std::move(item));
      SkipWhitespace();
      if (AtEnd()) return Error("unterminated array, expected ',' or ']'");
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return list;
      }
      return Error("expected ',' or ']'");
    }
  }

  absl::string_view text_;
  const ParseLimits& limits_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  size_t nodes_ = 0;
};

}  // namespace

absl::StatusOr<DocNode> ParseJson(absl::string_view text, const ParseLimits& limits) {
  return JsonReader(text, limits).Parse();
}

}  // namespace blklab::util
