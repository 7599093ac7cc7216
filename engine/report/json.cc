// engine/report/json.cc
#include "engine/report/json.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace blklab::report {

Json Json::Str(std::string s) {
  Json j(Kind::kString);
  j.str_ = std::move(s);
  return j;
}
Json Json::Int(int64_t v) {
  Json j(Kind::kInt);
  j.int_ = v;
  return j;
}
Json Json::Uint(uint64_t v) {
  Json j(Kind::kUint);
  j.uint_ = v;
  return j;
}
Json Json::Double(double v) {
  Json j(Kind::kDouble);
  j.double_ = v;
  return j;
}

Json& Json::Add(std::string key, Json value) {
  keys_.push_back(std::move(key));
  values_.push_back(std::move(value));
  return *this;
}

Json& Json::Push(Json value) {
  values_.push_back(std::move(value));
  return *this;
}

namespace {

void Indent(std::string* out, int depth) { out->append(static_cast<size_t>(depth) * 2, ' '); }

// fio escapes '"' and '\\' only; control characters are escaped as well, as
// RFC 8259 requires (a kernel section's multi-line text, a description with
// a newline), so the output always parses.
void Quote(std::string* out, const std::string& s) {
  out->push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (u < 0x20) {
      absl::StrAppendFormat(out, "\\u%04x", u);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

}  // namespace

void Json::PrintTo(std::string* out, int depth) const {
  switch (kind_) {
    case Kind::kString:
      Quote(out, str_);
      return;
    case Kind::kInt:
      absl::StrAppend(out, int_);
      return;
    case Kind::kUint:
      absl::StrAppend(out, uint_);
      return;
    case Kind::kDouble:
      absl::StrAppend(out, absl::StrFormat("%f", double_));
      return;
    case Kind::kObject:
      out->append("{\n");
      for (size_t i = 0; i < values_.size(); ++i) {
        if (i > 0) out->append(",\n");
        Indent(out, depth + 1);
        Quote(out, keys_[i]);
        out->append(" : ");
        values_[i].PrintTo(out, depth + 1);
      }
      out->push_back('\n');
      Indent(out, depth);
      out->push_back('}');
      return;
    case Kind::kArray:
      out->append("[\n");
      for (size_t i = 0; i < values_.size(); ++i) {
        if (i > 0) out->append(",\n");
        Indent(out, depth + 1);
        values_[i].PrintTo(out, depth + 1);
      }
      if (!values_.empty()) out->push_back('\n');
      Indent(out, depth);
      out->push_back(']');
      return;
  }
}

std::string Json::Print() const {
  std::string out;
  PrintTo(&out, 0);
  return out;
}

}  // namespace blklab::report
