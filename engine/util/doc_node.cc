#include "engine/util/doc_node.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/util/check.h"

namespace blklab::util {

std::string FormatPos(SourcePos pos) {
  if (!pos.known()) return "";
  return absl::StrCat("line ", pos.line, ", column ", pos.column);
}

DocNode DocNode::Null(SourcePos pos) {
  DocNode n;
  n.pos_ = pos;
  return n;
}

DocNode DocNode::Bool(bool value, SourcePos pos) {
  DocNode n;
  n.kind_ = Kind::kBool;
  n.bool_ = value;
  n.pos_ = pos;
  return n;
}

DocNode DocNode::Number(std::string text, SourcePos pos) {
  DocNode n;
  n.kind_ = Kind::kNumber;
  n.text_ = std::move(text);
  n.pos_ = pos;
  return n;
}

DocNode DocNode::Int(int64_t value, SourcePos pos) { return Number(absl::StrCat(value), pos); }

DocNode DocNode::Double(double value, SourcePos pos) {
  BLKLAB_CHECK(std::isfinite(value));
  // Shortest %g form that reads back to the same double.
  char buf[32];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, value);
    double back = 0;
    if (absl::SimpleAtod(buf, &back) && back == value) break;
  }
  return Number(std::string(buf), pos);
}

DocNode DocNode::String(std::string value, SourcePos pos) {
  DocNode n;
  n.kind_ = Kind::kString;
  n.text_ = std::move(value);
  n.pos_ = pos;
  return n;
}

DocNode DocNode::Map(SourcePos pos) {
  DocNode n;
  n.kind_ = Kind::kMap;
  n.pos_ = pos;
  return n;
}

DocNode DocNode::List(SourcePos pos) {
  DocNode n;
  n.kind_ = Kind::kList;
  n.pos_ = pos;
  return n;
}

bool DocNode::bool_value() const {
  BLKLAB_CHECK(is_bool());
  return bool_;
}

const std::string& DocNode::text() const {
  BLKLAB_CHECK(is_string() || is_number());
  return text_;
}

absl::StatusOr<int64_t> DocNode::AsInt64() const {
  if (!is_number()) {
    return absl::InvalidArgumentError(absl::StrCat("expected an integer, got a ", KindName(kind_)));
  }
  int64_t v = 0;
  if (absl::SimpleAtoi(absl::string_view(text_), &v)) return v;
  // YAML's 0x / 0o forms (the YAML reader only makes numbers of them when
  // every digit is valid).
  if (text_.size() > 2 && text_[0] == '0' && (text_[1] == 'x' || text_[1] == 'o')) {
    const int base = text_[1] == 'x' ? 16 : 8;
    uint64_t u = 0;
    for (size_t i = 2; i < text_.size(); ++i) {
      const char c = text_[i];
      const int digit = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
      if (u > (uint64_t{1} << 63) / base) return absl::InvalidArgumentError(absl::StrCat("integer out of range: ", text_));
      u = u * base + static_cast<uint64_t>(digit);
    }
    if (u > static_cast<uint64_t>(INT64_MAX)) return absl::InvalidArgumentError(absl::StrCat("integer out of range: ", text_));
    return static_cast<int64_t>(u);
  }
  double d = 0;
  if (absl::SimpleAtod(absl::string_view(text_), &d) && std::isfinite(d) && d == std::floor(d) &&
      d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
    return static_cast<int64_t>(d);
  }
  return absl::InvalidArgumentError(absl::StrCat("expected an integer, got ", text_));
}

absl::StatusOr<double> DocNode::AsDouble() const {
  if (!is_number()) {
    return absl::InvalidArgumentError(absl::StrCat("expected a number, got a ", KindName(kind_)));
  }
  double d = 0;
  if (absl::SimpleAtod(absl::string_view(text_), &d) && std::isfinite(d)) return d;
  return absl::InvalidArgumentError(absl::StrCat("number out of range: ", text_));
}

const std::vector<DocMapEntry>& DocNode::entries() const {
  BLKLAB_CHECK(is_map());
  return entries_;
}

const DocNode* DocNode::Find(absl::string_view key) const {
  BLKLAB_CHECK(is_map());
  for (const DocMapEntry& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

bool DocNode::AddEntry(std::string key, SourcePos key_pos, DocNode value) {
  BLKLAB_CHECK(is_map());
  if (Find(key) != nullptr) return false;
  entries_.push_back(DocMapEntry{std::move(key), key_pos, std::move(value)});
  return true;
}

const std::vector<DocNode>& DocNode::items() const {
  BLKLAB_CHECK(is_list());
  return items_;
}

void DocNode::Append(DocNode item) {
  BLKLAB_CHECK(is_list());
  items_.push_back(std::move(item));
}

size_t DocNode::size() const {
  if (is_map()) return entries_.size();
  if (is_list()) return items_.size();
  return 0;
}

const char* DocNode::KindName(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "bool";
    case Kind::kNumber:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kMap:
      return "map";
    case Kind::kList:
      return "list";
  }
  return "?";
}

bool operator==(const DocNode& a, const DocNode& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case DocNode::Kind::kNull:
      return true;
    case DocNode::Kind::kBool:
      return a.bool_ == b.bool_;
    case DocNode::Kind::kNumber:
    case DocNode::Kind::kString:
      return a.text_ == b.text_;
    case DocNode::Kind::kMap:
      if (a.entries_.size() != b.entries_.size()) return false;
      for (size_t i = 0; i < a.entries_.size(); ++i) {
        if (a.entries_[i].key != b.entries_[i].key || !(a.entries_[i].value == b.entries_[i].value)) {
          return false;
        }
      }
      return true;
    case DocNode::Kind::kList:
      return a.items_ == b.items_;
  }
  return false;
}

namespace {

void AppendJsonString(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out->append(buf);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

// Iterative depth is bounded by the tree the readers built (ParseLimits), so
// plain recursion is fine here.
void WriteJsonTo(const DocNode& node, int indent, int level, std::string* out) {
  auto newline = [&](int lvl) {
    if (indent <= 0) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(indent) * static_cast<size_t>(lvl), ' ');
  };
  switch (node.kind()) {
    case DocNode::Kind::kNull:
      out->append("null");
      return;
    case DocNode::Kind::kBool:
      out->append(node.bool_value() ? "true" : "false");
      return;
    case DocNode::Kind::kNumber: {
      // YAML allows "+3", ".5", "1." and "007"; normalise to JSON grammar.
      const std::string& t = node.text();
      absl::StatusOr<int64_t> i = node.AsInt64();
      bool plain_int = i.ok() && absl::StrCat(*i) == t;
      if (plain_int) {
        out->append(t);
      } else if (i.ok() && t.find_first_of(".eE") == std::string::npos) {
        out->append(absl::StrCat(*i));
      } else {
        absl::StatusOr<double> d = node.AsDouble();
        out->append(d.ok() ? DocNode::Double(*d).text() : "0");
      }
      return;
    }
    case DocNode::Kind::kString:
      AppendJsonString(node.text(), out);
      return;
    case DocNode::Kind::kMap: {
      if (node.size() == 0) {
        out->append("{}");
        return;
      }
      out->push_back('{');
      bool first = true;
      for (const DocMapEntry& e : node.entries()) {
        if (!first) out->push_back(',');
        first = false;
        newline(level + 1);
        AppendJsonString(e.key, out);
        out->append(indent > 0 ? ": " : ":");
        WriteJsonTo(e.value, indent, level + 1, out);
      }
      newline(level);
      out->push_back('}');
      return;
    }
    case DocNode::Kind::kList: {
      if (node.size() == 0) {
        out->append("[]");
        return;
      }
      out->push_back('[');
      bool first = true;
      for (const DocNode& item : node.items()) {
        if (!first) out->push_back(',');
        first = false;
        newline(level + 1);
        WriteJsonTo(item, indent, level + 1, out);
      }
      newline(level);
      out->push_back(']');
      return;
    }
  }
}

}  // namespace

std::string WriteJson(const DocNode& node, int indent) {
  std::string out;
  WriteJsonTo(node, indent, 0, &out);
  return out;
}

}  // namespace blklab::util
