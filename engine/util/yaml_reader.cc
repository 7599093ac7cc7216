#include "engine/util/yaml_reader.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/util/reader_internal.h"
#include "engine/util/status_macros.h"

namespace blklab::util {
namespace {

using internal::LimitError;
using internal::SyntaxError;

constexpr absl::string_view kYamlFormat = "YAML";

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsFlowIndicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// YAML 1.2 core schema number forms: decimal, 0x hexadecimal, 0o octal.
bool IsCoreInt(absl::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    const bool hex = s[1] == 'x';
    for (size_t i = 2; i < s.size(); ++i) {
      if (hex ? !IsHexDigit(s[i]) : (s[i] < '0' || s[i] > '7')) return false;
    }
    return true;
  }
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return false;
  }
  return true;
}

bool IsCoreFloat(absl::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

DocNode ResolvePlain(std::string text, SourcePos pos) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return DocNode::Null(pos);
  }
  if (text == "true" || text == "True" || text == "TRUE") return DocNode::Bool(true, pos);
  if (text == "false" || text == "False" || text == "FALSE") return DocNode::Bool(false, pos);
  if (IsCoreInt(text) || IsCoreFloat(text)) return DocNode::Number(std::move(text), pos);
  return DocNode::String(std::move(text), pos);
}

struct Line {
  size_t begin = 0;  // offset of the first byte
  size_t end = 0;    // offset past the last content byte (before "\r\n" / "\n")
  int indent = 0;    // leading spaces
  bool blank = true;  // empty, whitespace or comment only
};

class YamlReader {
 public:
  YamlReader(absl::string_view text, const ParseLimits& limits) : text_(text), limits_(limits) {}

  absl::StatusOr<DocNode> Parse() {
    if (text_.size() > limits_.max_bytes) {
      return LimitError(kYamlFormat, SourcePos{1, 1},
                        absl::StrCat("document is ", text_.size(), " bytes, limit ", limits_.max_bytes));
    }
    const size_t bom = internal::BomLength(text_);
    size_t bad = internal::FindBadByte(text_);
    if (bad != absl::string_view::npos) {
      return SyntaxError(kYamlFormat, internal::PosOfOffset(text_, bad), "invalid UTF-8 or control character");
    }
    BLKLAB_RETURN_IF_ERROR(SplitLines(bom));

    li_ = 0;
    SkipBlankLines();
    // Directives and the document start marker.
    if (li_ < lines_.size() && Content(li_).substr(0, 1) == "%") {
      return ErrorAt(li_, 0, "directives (%YAML, %TAG) are not supported");
    }
    if (IsMarker(li_, "---")) {
      col_ = 3;
      if (!AtLineEnd()) return Error("content on the '---' line is not supported; start it on the next line");
      ++li_;
      SkipBlankLines();
    }
    DocNode root;
    if (AtEndOfBlocks()) {
      root = DocNode::Null(SourcePos{1, 1});
      BLKLAB_RETURN_IF_ERROR(CountNode());
    } else {
      col_ = static_cast<size_t>(lines_[li_].indent);
      BLKLAB_ASSIGN_OR_RETURN(root, ParseBlockNode(0));
    }
    // After the root: nothing, or "..." then nothing.
    if (li_ < lines_.size() && IsMarker(li_, "...")) {
      col_ = 3;
      if (!AtLineEnd()) return Error("unexpected content after '...'");
      ++li_;
      SkipBlankLines();
    }
    if (li_ < lines_.size()) {
      if (IsMarker(li_, "---")) {
        return ErrorAt(li_, 0, "multiple documents are not supported");
      }
      return ErrorAt(li_, static_cast<size_t>(lines_[li_].indent),
                     "unexpected content (check the indentation)");
    }
    return root;
  }

 private:
  // ---- Lines and cursor -----------------------------------------------------

  absl::Status SplitLines(size_t start) {
    size_t pos = start;
    while (pos <= text_.size()) {
      size_t nl = text_.find('\n', pos);
      size_t stop = nl == absl::string_view::npos ? text_.size() : nl;
      Line line;
      line.begin = pos;
      line.end = stop;
      if (line.end > line.begin && text_[line.end - 1] == '\r') --line.end;
      for (size_t i = line.begin; i < line.end; ++i) {
        if (text_[i] == '\r') {
          return SyntaxError(kYamlFormat, SourcePos{static_cast<int>(lines_.size()) + 1, static_cast<int>(i - pos) + 1},
                             "carriage return not followed by a line feed");
        }
      }
      size_t i = line.begin;
      while (i < line.end && text_[i] == ' ') ++i;
      line.indent = static_cast<int>(i - line.begin);
      size_t j = i;
      while (j < line.end && IsBlank(text_[j])) ++j;
      line.blank = j == line.end || text_[j] == '#';
      if (!line.blank && i < line.end && text_[i] == '\t') {
        return SyntaxError(kYamlFormat, SourcePos{static_cast<int>(lines_.size()) + 1, line.indent + 1},
                           "tab in indentation (indent with spaces)");
      }
      lines_.push_back(line);
      if (nl == absl::string_view::npos) break;
      pos = nl + 1;
    }
    return absl::OkStatus();
  }

  absl::string_view Content(size_t li) const {
    const Line& l = lines_[li];
    return text_.substr(l.begin, l.end - l.begin).substr(static_cast<size_t>(l.indent));
  }
  absl::string_view LineText(size_t li) const {
    const Line& l = lines_[li];
    return text_.substr(l.begin, l.end - l.begin);
  }
  // Text of the current line from the cursor.
  absl::string_view Rest() const {
    if (li_ >= lines_.size()) return absl::string_view();
    absl::string_view line = LineText(li_);
    return col_ >= line.size() ? absl::string_view() : line.substr(col_);
  }
  char Peek() const {
    absl::string_view r = Rest();
    return r.empty() ? '\0' : r[0];
  }
  char PeekAt(size_t k) const {
    absl::string_view r = Rest();
    return k < r.size() ? r[k] : '\0';
  }
  SourcePos Pos() const { return SourcePos{static_cast<int>(li_) + 1, static_cast<int>(col_) + 1}; }
  absl::Status Error(absl::string_view message) const { return SyntaxError(kYamlFormat, Pos(), message); }
  absl::Status ErrorAt(size_t li, size_t col, absl::string_view message) const {
    return SyntaxError(kYamlFormat, SourcePos{static_cast<int>(li) + 1, static_cast<int>(col) + 1}, message);
  }

  bool IsMarker(size_t li, absl::string_view marker) const {
    if (li >= lines_.size()) return false;
    absl::string_view t = LineText(li);
    return t.substr(0, 3) == marker && (t.size() == 3 || IsBlank(t[3]));
  }
  bool AtEndOfBlocks() const { return li_ >= lines_.size() || IsMarker(li_, "---") || IsMarker(li_, "..."); }

  void SkipBlankLines() {
    while (li_ < lines_.size() && lines_[li_].blank) ++li_;
  }
  // Moves to the first content line after the current one; col_ = its indent.
  void NextContentLine() {
    ++li_;
    SkipBlankLines();
    col_ = li_ < lines_.size() ? static_cast<size_t>(lines_[li_].indent) : 0;
  }
  int CurrentIndent() const { return lines_[li_].indent; }

  void SkipSpaces() {
    while (IsBlank(Peek())) ++col_;
  }
  // A '#' starts a comment at the line start or after whitespace.
  bool AtComment() const {
    if (Peek() != '#') return false;
    if (col_ == 0) return true;
    return IsBlank(LineText(li_)[col_ - 1]);
  }
  // Skips spaces; true if only a comment or nothing is left on the line.
  bool AtLineEnd() {
    SkipSpaces();
    return Rest().empty() || AtComment();
  }
  absl::Status ExpectLineEnd() {
    if (!AtLineEnd()) return Error(absl::StrCat("unexpected text '", Clip(Rest()), "' after the value"));
    return absl::OkStatus();
  }
  static std::string Clip(absl::string_view s) {
    return s.size() <= 20 ? std::string(s) : absl::StrCat(s.substr(0, 20), "...");
  }

  absl::Status CountNode() {
    if (++nodes_ > limits_.max_nodes) {
      return LimitError(kYamlFormat, Pos(), absl::StrCat("more than ", limits_.max_nodes, " nodes"));
    }
    return absl::OkStatus();
  }
  absl::Status CheckDepth(int depth) const {
    if (depth > limits_.max_depth) {
      return LimitError(kYamlFormat, Pos(), absl::StrCat("nesting deeper than ", limits_.max_depth));
    }
    return absl::OkStatus();
  }

  bool AtSequenceEntry() const { return Peek() == '-' && (PeekAt(1) == '\0' || IsBlank(PeekAt(1))); }

  // Errors for YAML features outside the subset, at the start of a node.
  absl::Status CheckUnsupportedStart() const {
    switch (Peek()) {
      case '&':
        return Error("anchors (&) are not supported");
      case '*':
        return Error("aliases (*) are not supported");
      case '!':
        return Error("tags (!) are not supported");
      case '|':
      case '>':
        return Error("block scalars (| and >) are not supported; use a quoted string");
      case '%':
      case '@':
      case '`':
        return Error(absl::StrCat("a plain scalar cannot start with '", std::string(1, Peek()), "'"));
      case '?':
        if (PeekAt(1) == '\0' || IsBlank(PeekAt(1))) return Error("explicit keys (?) are not supported");
        return absl::OkStatus();
      default:
        return absl::OkStatus();
    }
  }

  // ---- Block context ------------------------------------------------------

  // Parses the node starting at the cursor, whose indentation is col_. Leaves
  // the cursor at the start of the next content line (or the end).
  absl::StatusOr<DocNode> ParseBlockNode(int depth) {
    BLKLAB_RETURN_IF_ERROR(CheckUnsupportedStart());
    if (AtSequenceEntry()) return ParseBlockSequence(col_, depth + 1);
    BLKLAB_ASSIGN_OR_RETURN(bool is_key, LooksLikeKey());
    if (is_key) return ParseBlockMapping(col_, depth + 1);
    BLKLAB_ASSIGN_OR_RETURN(DocNode node, ParseInlineNode(depth, /*in_flow=*/false));
    BLKLAB_RETURN_IF_ERROR(ExpectLineEnd());
    NextContentLine();
    return node;
  }

  // Whether the line from the cursor reads "key: ..." (implicit block key).
  absl::StatusOr<bool> LooksLikeKey() {
    absl::string_view r = Rest();
    size_t i = 0;
    if (r.empty()) return false;
    if (r[0] == '"' || r[0] == '\'') {
      const char q = r[0];
      for (i = 1; i < r.size(); ++i) {
        if (q == '"' && r[i] == '\\') {
          ++i;
          continue;
        }
        if (r[i] == q) {
          if (q == '\'' && i + 1 < r.size() && r[i + 1] == '\'') {
            ++i;
            continue;
          }
          break;
        }
      }
      if (i >= r.size()) return false;  // unterminated: reported by the scalar reader
      ++i;
      while (i < r.size() && IsBlank(r[i])) ++i;
      return i < r.size() && r[i] == ':' && (i + 1 == r.size() || IsBlank(r[i + 1]));
    }
    if (r[0] == '[' || r[0] == '{') return false;
    for (i = 0; i < r.size(); ++i) {
      if (r[i] == '#' && i > 0 && IsBlank(r[i - 1])) return false;
      if (r[i] == ':' && (i + 1 == r.size() || IsBlank(r[i + 1]))) return true;
    }
    return false;
  }

  absl::StatusOr<DocNode> ParseBlockSequence(size_t indent, int depth) {
    BLKLAB_RETURN_IF_ERROR(CheckDepth(depth));
    BLKLAB_RETURN_IF_ERROR(CountNode());
    DocNode list = DocNode::List(Pos());
    while (true) {
      // Cursor at the '-' of an entry, col_ == indent.
      ++col_;
      if (AtLineEnd()) {
        NextContentLine();
        if (!AtEndOfBlocks() && static_cast<size_t>(CurrentIndent()) > indent) {
          BLKLAB_ASSIGN_OR_RETURN(DocNode item, ParseBlockNode(depth));
          list.Append(std::move(item));
        } else {
          BLKLAB_RETURN_IF_ERROR(CountNode());
          list.Append(DocNode::Null(Pos()));
        }
      } else {
        BLKLAB_ASSIGN_OR_RETURN(DocNode item, ParseBlockNode(depth));
        list.Append(std::move(item));
      }
      if (AtEndOfBlocks()) return list;
      const size_t ind = static_cast<size_t>(CurrentIndent());
      if (ind > indent) return Error("unexpected indentation in a sequence");
      if (ind < indent || !AtSequenceEntry()) return list;
    }
  }

  absl::StatusOr<std::string> ParseKey() {
    if (Peek() == '"' || Peek() == '\'') {
      BLKLAB_ASSIGN_OR_RETURN(DocNode k, ParseQuoted(/*multi_line=*/false));
      return k.text();
    }
    if (Peek() == '[' || Peek() == '{') return Error("flow collections as keys are not supported");
    BLKLAB_RETURN_IF_ERROR(CheckUnsupportedStart());
    absl::string_view r = Rest();
    size_t i = 0;
    for (; i < r.size(); ++i) {
      if (r[i] == '#' && i > 0 && IsBlank(r[i - 1])) break;
      if (r[i] == ':' && (i + 1 == r.size() || IsBlank(r[i + 1]))) break;
    }
    size_t end = i;
    while (end > 0 && IsBlank(r[end - 1])) --end;
    if (end == 0) return Error("empty key");
    std::string key(r.substr(0, end));
    col_ += end;
    return key;
  }

  absl::StatusOr<DocNode> ParseBlockMapping(size_t indent, int depth) {
    BLKLAB_RETURN_IF_ERROR(CheckDepth(depth));
    BLKLAB_RETURN_IF_ERROR(CountNode());
    DocNode map = DocNode::Map(Pos());
    while (true) {
      // Cursor at the start of a key, col_ == indent.
      if (AtSequenceEntry()) return Error("expected a mapping key, found a sequence entry");
      const SourcePos key_pos = Pos();
      BLKLAB_ASSIGN_OR_RETURN(std::string key, ParseKey());
      SkipSpaces();
      if (Peek() != ':') return Error("expected ':' after the key");
      ++col_;
      DocNode value;
      if (AtLineEnd()) {
        const SourcePos empty_pos = Pos();
        NextContentLine();
        if (AtEndOfBlocks()) {
          BLKLAB_RETURN_IF_ERROR(CountNode());
          value = DocNode::Null(empty_pos);
        } else if (static_cast<size_t>(CurrentIndent()) > indent) {
          BLKLAB_ASSIGN_OR_RETURN(value, ParseBlockNode(depth));
        } else if (static_cast<size_t>(CurrentIndent()) == indent && AtSequenceEntry()) {
          BLKLAB_ASSIGN_OR_RETURN(value, ParseBlockSequence(indent, depth + 1));
        } else {
          BLKLAB_RETURN_IF_ERROR(CountNode());
          value = DocNode::Null(empty_pos);
        }
      } else {
        if (AtSequenceEntry()) return Error("a block sequence cannot start on the line of its key");
        BLKLAB_ASSIGN_OR_RETURN(value, ParseInlineNode(depth, /*in_flow=*/false));
        BLKLAB_RETURN_IF_ERROR(ExpectLineEnd());
        NextContentLine();
      }
      std::string key_copy = key;
      if (!map.AddEntry(std::move(key), key_pos, std::move(value))) {
        return SyntaxError(kYamlFormat, key_pos, absl::StrCat("duplicate key \"", key_copy, "\""));
      }
      if (AtEndOfBlocks()) return map;
      const size_t ind = static_cast<size_t>(CurrentIndent());
      if (ind > indent) {
        return Error("unexpected indentation (multi-line plain scalars are not supported)");
      }
      if (ind < indent) return map;
    }
  }

  // ---- Inline nodes (scalars and flow collections) ----------------------------

  absl::StatusOr<DocNode> ParseInlineNode(int depth, bool in_flow) {
    BLKLAB_RETURN_IF_ERROR(CountNode());
    BLKLAB_RETURN_IF_ERROR(CheckUnsupportedStart());
    const char c = Peek();
    if (c == '[') return ParseFlowSequence(depth + 1);
    if (c == '{') return ParseFlowMapping(depth + 1);
    if (c == '"' || c == '\'') return ParseQuoted();
    if (c == ']' || c == '}' || c == ',') {
      return Error(absl::StrCat("unexpected '", std::string(1, c), "'"));
    }
    if (c == '-' && (PeekAt(1) == '\0' || IsBlank(PeekAt(1)))) {
      return Error("a block sequence entry is not allowed here");
    }
    return ParsePlain(in_flow);
  }

  absl::StatusOr<DocNode> ParsePlain(bool in_flow) {
    const SourcePos start = Pos();
    absl::string_view r = Rest();
    size_t i = 0;
    for (; i < r.size(); ++i) {
      const char c = r[i];
      if (c == '#' && i > 0 && IsBlank(r[i - 1])) break;
      if (c == ':' && (i + 1 == r.size() || IsBlank(r[i + 1]) || (in_flow && IsFlowIndicator(r[i + 1])))) {
        if (in_flow) break;
        return SyntaxError(kYamlFormat, SourcePos{start.line, start.column + static_cast<int>(i)},
                           "mapping values are not allowed here (quote the string, or nest the mapping on "
                           "its own lines)");
      }
      if (in_flow && IsFlowIndicator(c)) break;
    }
    size_t end = i;
    while (end > 0 && IsBlank(r[end - 1])) --end;
    col_ += end;
    return ResolvePlain(std::string(r.substr(0, end)), start);
  }

  absl::StatusOr<uint32_t> ParseHexDigits(absl::string_view r, size_t at, int n) {
    if (r.size() < at + static_cast<size_t>(n)) return Error("truncated escape");
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      const char h = r[at + static_cast<size_t>(k)];
      uint32_t d;
      if (h >= '0' && h <= '9') {
        d = static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        d = static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        d = static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return Error("invalid hex digit in escape");
      }
      v = v * 16 + d;
    }
    return v;
  }

  // A quoted scalar; leaves the cursor after the closing quote. Unless it is
  // a key it may span lines (YAML 1.2 flow folding): a line break and the
  // blanks around it become one space, or one newline per empty line it
  // spans; a double-quoted backslash before the break joins the lines.
  absl::StatusOr<DocNode> ParseQuoted(bool multi_line = true) {
    const SourcePos start = Pos();
    const char q = Peek();
    absl::string_view r = Rest();
    std::string out;
    size_t keep = 0;  // out up to its last character a fold does not trim
    bool escaped_break = false;
    size_t i = 1;
    while (true) {
      if (i >= r.size()) {
        if (!multi_line) {
          return SyntaxError(kYamlFormat, start, "unterminated quoted scalar (a quoted key must end on its line)");
        }
        BLKLAB_ASSIGN_OR_RETURN(r, FoldQuotedLineBreak(start, escaped_break, keep, &out, &i));
        escaped_break = false;
        keep = out.size();
        continue;
      }
      const char c = r[i];
      if (q == '\'') {
        if (c == '\'') {
          if (i + 1 < r.size() && r[i + 1] == '\'') {
            out.push_back('\'');
            keep = out.size();
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        out.push_back(c);
        if (!IsBlank(c)) keep = out.size();
        ++i;
        continue;
      }
      if (c == '"') {
        ++i;
        break;
      }
      if (c != '\\') {
        out.push_back(c);
        if (!IsBlank(c)) keep = out.size();
        ++i;
        continue;
      }
      if (i + 1 >= r.size()) {
        // An escaped line break: the check at the top refuses it in a key.
        escaped_break = true;
        keep = out.size();
        i = r.size();
        continue;
      }
      const char e = r[i + 1];
      i += 2;
      uint32_t cp = 0;
      int hex = 0;
      switch (e) {
        case '0': out.push_back('\0'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 't':
        case '\t': out.push_back('\t'); break;
        case 'n': out.push_back('\n'); break;
        case 'v': out.push_back('\v'); break;
        case 'f': out.push_back('\f'); break;
        case 'r': out.push_back('\r'); break;
        case 'e': out.push_back('\x1b'); break;
        case ' ': out.push_back(' '); break;
        case '"': out.push_back('"'); break;
        case '/': out.push_back('/'); break;
        case '\\': out.push_back('\\'); break;
        case 'N': internal::AppendUtf8(0x85, &out); break;
        case '_': internal::AppendUtf8(0xA0, &out); break;
        case 'L': internal::AppendUtf8(0x2028, &out); break;
        case 'P': internal::AppendUtf8(0x2029, &out); break;
        case 'x': hex = 2; break;
        case 'u': hex = 4; break;
        case 'U': hex = 8; break;
        default:
          col_ += i - 2;
          return Error(absl::StrCat("invalid escape '\\", std::string(1, e), "'"));
      }
      if (hex > 0) {
        BLKLAB_ASSIGN_OR_RETURN(cp, ParseHexDigits(r, i, hex));
        if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
          col_ += i - 2;
          return Error("escape is not a valid Unicode scalar value");
        }
        internal::AppendUtf8(cp, &out);
        i += static_cast<size_t>(hex);
      }
      keep = out.size();
    }
    col_ += i;
    return DocNode::String(std::move(out), start);
  }

  // At the end of a line inside a quoted scalar: drops the blanks before the
  // break (out beyond `keep`, unless the break was escaped), moves to the
  // next line with text, appends the fold (one space, or a newline per empty
  // line) and returns that line's text with *i after its leading blanks.
  absl::StatusOr<absl::string_view> FoldQuotedLineBreak(SourcePos start, bool escaped_break, size_t keep,
                                                        std::string* out, size_t* i) {
    if (!escaped_break) out->resize(keep);
    int empty_lines = 0;
    while (true) {
      ++li_;
      col_ = 0;
      if (li_ >= lines_.size()) return SyntaxError(kYamlFormat, start, "unterminated quoted scalar");
      if (IsMarker(li_, "---") || IsMarker(li_, "...")) {
        return SyntaxError(kYamlFormat, start, "unterminated quoted scalar before a document marker");
      }
      absl::string_view r = LineText(li_);
      size_t k = 0;
      while (k < r.size() && IsBlank(r[k])) ++k;
      if (k < r.size()) {
        *i = k;
        if (empty_lines > 0) {
          out->append(static_cast<size_t>(empty_lines), '\n');
        } else if (!escaped_break) {
          out->push_back(' ');
        }
        return r;
      }
      ++empty_lines;
    }
  }

  // Skips whitespace, comments and line breaks inside a flow collection.
  absl::Status SkipFlowSpace(SourcePos open) {
    while (true) {
      if (AtLineEnd()) {
        ++li_;
        col_ = 0;
        if (li_ >= lines_.size()) return SyntaxError(kYamlFormat, open, "unterminated flow collection");
        if (IsMarker(li_, "---") || IsMarker(li_, "...")) {
          return SyntaxError(kYamlFormat, open, "unterminated flow collection before a document marker");
        }
        continue;
      }
      return absl::OkStatus();
    }
  }

  absl::StatusOr<DocNode> ParseFlowSequence(int depth) {
    BLKLAB_RETURN_IF_ERROR(CheckDepth(depth));
    const SourcePos open = Pos();
    DocNode list = DocNode::List(open);
    ++col_;  // '['
    while (true) {
      BLKLAB_RETURN_IF_ERROR(SkipFlowSpace(open));
      if (Peek() == ']') {
        ++col_;
        return list;
      }
      BLKLAB_ASSIGN_OR_RETURN(DocNode item, ParseInlineNode(depth, /*in_flow=*/true));
      list.Append(std::move(item));
      BLKLAB_RETURN_IF_ERROR(SkipFlowSpace(open));
      if (Peek() == ':') return Error("mappings inside flow sequences need braces: [{a: 1}]");
      if (Peek() == ',') {
        ++col_;
        continue;
      }
      if (Peek() == ']') {
        ++col_;
        return list;
      }
      return Error("expected ',' or ']' in a flow sequence");
    }
  }

  absl::StatusOr<DocNode> ParseFlowMapping(int depth) {
    BLKLAB_RETURN_IF_ERROR(CheckDepth(depth));
    const SourcePos open = Pos();
    DocNode map = DocNode::Map(open);
    ++col_;  // '{'
    while (true) {
      BLKLAB_RETURN_IF_ERROR(SkipFlowSpace(open));
      if (Peek() == '}') {
        ++col_;
        return map;
      }
      const SourcePos key_pos = Pos();
      std::string key;
      if (Peek() == '"' || Peek() == '\'') {
        BLKLAB_ASSIGN_OR_RETURN(DocNode k, ParseQuoted(/*multi_line=*/false));
        key = k.text();
      } else {
        if (Peek() == '[' || Peek() == '{') return Error("flow collections as keys are not supported");
        if (Peek() == ',' || Peek() == ':') return Error("expected a key");
        BLKLAB_RETURN_IF_ERROR(CheckUnsupportedStart());
        const size_t key_col = col_;
        BLKLAB_RETURN_IF_ERROR(ParsePlain(/*in_flow=*/true).status());
        key = std::string(LineText(li_).substr(key_col, col_ - key_col));
        if (key.empty()) return SyntaxError(kYamlFormat, key_pos, "empty key");
      }
      SkipSpaces();
      if (Peek() != ':') return Error("expected ':' after the key (a plain key needs a space after ':')");
      ++col_;
      BLKLAB_RETURN_IF_ERROR(SkipFlowSpace(open));
      DocNode value;
      if (Peek() == ',' || Peek() == '}') {
        BLKLAB_RETURN_IF_ERROR(CountNode());
        value = DocNode::Null(Pos());
      } else {
        BLKLAB_ASSIGN_OR_RETURN(value, ParseInlineNode(depth, /*in_flow=*/true));
      }
      std::string key_copy = key;
      if (!map.AddEntry(std::move(key), key_pos, std::move(value))) {
        return SyntaxError(kYamlFormat, key_pos, absl::StrCat("duplicate key \"", key_copy, "\""));
      }
      BLKLAB_RETURN_IF_ERROR(SkipFlowSpace(open));
      if (Peek() == ',') {
        ++col_;
        continue;
      }
      if (Peek() == '}') {
        ++col_;
        return map;
      }
      return Error("expected ',' or '}' in a flow mapping");
    }
  }

  absl::string_view text_;
  const ParseLimits& limits_;
  std::vector<Line> lines_;
  size_t li_ = 0;
  size_t col_ = 0;
  size_t nodes_ = 0;
};

}  // namespace

absl::StatusOr<DocNode> ParseYaml(absl::string_view text, const ParseLimits& limits) {
  return YamlReader(text, limits).Parse();
}

}  // namespace blklab::util
