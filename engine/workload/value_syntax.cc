#include "engine/workload/value_syntax.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace blklab::workload {
namespace {

absl::Status BadValue(const std::string& text, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("bad value '", QuoteForError(text), "': ", why));
}

// Reads the numeric prefix of `s` starting at `*pos`: hex with 0x, or decimal
// with an optional fraction. Returns false when no digit is present.
bool ReadNumber(const std::string& s, size_t* pos, long double* out) {
  size_t i = *pos;
  if (i + 1 < s.size() && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    size_t j = i + 2;
    long double v = 0;
    size_t digits = 0;
    while (j < s.size() && std::isxdigit(static_cast<unsigned char>(s[j])) && digits < 32) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[j])));
      v = v * 16 + (c <= '9' ? c - '0' : c - 'a' + 10);
      ++j;
      ++digits;
    }
    if (digits == 0) return false;
    *out = v;
    *pos = j;
    return true;
  }
  long double v = 0;
  size_t digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && digits < 40) {
    v = v * 10 + (s[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0) return false;
  if (i + 1 < s.size() && s[i] == '.' && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
    ++i;
    long double scale = 0.1L;
    size_t frac_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (frac_digits++ < 18) v += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  *out = v;
  *pos = i;
  return true;
}

// Multiplier of a size suffix (already lower-cased), fio's rules.
long double SizeMultiplier(const std::string& suffix, uint32_t kb_base) {
  if (suffix.empty()) return 1;
  static constexpr char kPrefixes[] = "kmgtpe";
  const char* p = std::strchr(kPrefixes, suffix[0]);
  if (p == nullptr || suffix[0] == '\0') return 1;  // `b` and unknown letters
  const int power = static_cast<int>(p - kPrefixes) + 1;
  long double base = kb_base;
  if (suffix.size() >= 3 && suffix[1] == 'i' && suffix[2] == 'b') {
    base = (kb_base == 1000) ? 1024 : 1000;
  }
  return std::pow(base, power);
}

std::string Trim(const std::string& s) {
  return std::string(absl::StripAsciiWhitespace(s));
}

}  // namespace

uint64_t SizeSpec::Resolve(uint64_t target_bytes) const {
  if (!is_percent()) return bytes;
  const long double v = static_cast<long double>(target_bytes) * percent / 100.0L;
  return static_cast<uint64_t>(v);
}

absl::StatusOr<ParsedSize> ParseSizeDetailed(const std::string& text, uint32_t kb_base) {
  ParsedSize out;
  size_t pos = 0;
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) {
    ++pos;
    out.suffix_ignored_quirk = true;
  }
  long double v = 0;
  if (!ReadNumber(text, &pos, &v)) return BadValue(text, "not a number");
  std::string suffix = absl::AsciiStrToLower(Trim(text.substr(pos)));
  if (!suffix.empty() && suffix[0] == '%') return BadValue(text, "a percentage is not allowed here");
  if (!suffix.empty() && (suffix[0] == '-' || suffix[0] == ':' || suffix[0] == ',')) {
    return BadValue(text, "trailing characters");
  }
  const long double mult = out.suffix_ignored_quirk ? 1 : SizeMultiplier(suffix, kb_base);
  const long double total = std::floor(v * mult);
  if (!(total < 18446744073709551615.0L)) return BadValue(text, "too large");
  out.value = static_cast<uint64_t>(total);
  return out;
}

absl::StatusOr<uint64_t> ParseSize(const std::string& text, uint32_t kb_base) {
  auto r = ParseSizeDetailed(text, kb_base);
  if (!r.ok()) return r.status();
  return r->value;
}

absl::StatusOr<SizeSpec> ParseSizeOrPercent(const std::string& text, uint32_t kb_base) {
  const std::string t = Trim(text);
  if (!t.empty() && t.back() == '%') {
    size_t pos = 0;
    long double v = 0;
    if (!ReadNumber(t, &pos, &v) || pos != t.size() - 1) return BadValue(text, "bad percentage");
    if (v <= 0 || v > 100) return BadValue(text, "percentage must be in (0,100]");
    SizeSpec s;
    s.percent = static_cast<double>(v);
    return s;
  }
  auto r = ParseSize(text, kb_base);
  if (!r.ok()) return r.status();
  SizeSpec s;
  s.bytes = *r;
  return s;
}

absl::StatusOr<uint64_t> ParseUint(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  long double v = 0;
  if (!ReadNumber(text, &pos, &v)) return BadValue(text, "not a number");
  const std::string rest = Trim(text.substr(pos));
  if (!rest.empty() && !std::isalpha(static_cast<unsigned char>(rest[0]))) {
    return BadValue(text, "trailing characters");
  }
  if (!(v < 18446744073709551615.0L)) return BadValue(text, "too large");
  return static_cast<uint64_t>(v);
}

absl::StatusOr<int64_t> ParseInt(const std::string& text) {
  std::string t = Trim(text);
  bool neg = false;
  if (!t.empty() && t[0] == '-') {
    neg = true;
    t = t.substr(1);
  }
  auto r = ParseUint(t);
  if (!r.ok()) return BadValue(text, "not an integer");
  if (*r > static_cast<uint64_t>(INT64_MAX)) return BadValue(text, "too large");
  return neg ? -static_cast<int64_t>(*r) : static_cast<int64_t>(*r);
}

absl::StatusOr<int64_t> ParseTimeNs(const std::string& text, TimeUnit default_unit) {
  size_t pos = 0;
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  long double v = 0;
  if (!ReadNumber(text, &pos, &v)) return BadValue(text, "not a time");
  const std::string suffix = absl::AsciiStrToLower(Trim(text.substr(pos)));
  long double mult_ns = 1e3L;
  if (suffix.empty()) {
    switch (default_unit) {
      case TimeUnit::kMicroseconds: mult_ns = 1e3L; break;
      case TimeUnit::kMilliseconds: mult_ns = 1e6L; break;
      case TimeUnit::kSeconds: mult_ns = 1e9L; break;
    }
  } else if (suffix == "us" || suffix == "usec") {
    mult_ns = 1e3L;
  } else if (suffix == "ms" || suffix == "msec") {
    mult_ns = 1e6L;
  } else if (suffix == "s") {
    mult_ns = 1e9L;
  } else if (suffix == "m") {
    mult_ns = 60e9L;
  } else if (suffix == "h") {
    mult_ns = 3600e9L;
  } else if (suffix == "d") {
    mult_ns = 86400e9L;
  } else if (suffix[0] == '-' || suffix[0] == ':' || suffix[0] == ',') {
    return BadValue(text, "trailing characters");
  } else {
    mult_ns = 1e3L;  // fio 3.33 quirk: unknown suffix (even `sec`) = µs.
  }
  const long double ns = std::floor(v * mult_ns);
  if (!(ns < 9.2e18L)) return BadValue(text, "time too large");
  return static_cast<int64_t>(ns);
}

absl::StatusOr<bool> ParseBool(const std::string& text) {
  const std::string t = Trim(text);
  if (t == "0") return false;
  if (t == "1") return true;
  return BadValue(text, "expected 0 or 1");
}

absl::StatusOr<double> ParseDouble(const std::string& text) {
  const std::string t = Trim(text);
  if (t.empty() || t.size() > 64) return BadValue(text, "not a number");
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0' || !std::isfinite(v)) return BadValue(text, "not a number");
  return v;
}

absl::StatusOr<std::array<std::optional<std::string>, 3>> SplitPerDirection(
    const std::string& text) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    fields.push_back(text.substr(start, comma == std::string::npos ? std::string::npos
                                                                   : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
    if (fields.size() > 3) break;
  }
  if (fields.size() > 3) return BadValue(text, "more than three read,write,trim values");
  std::array<std::optional<std::string>, 3> out;
  for (size_t i = 0; i < 3; ++i) {
    if (i < fields.size()) {
      if (!fields[i].empty()) out[i] = fields[i];
    } else {
      out[i] = out[i - 1];
    }
  }
  return out;
}

absl::StatusOr<SizeRange> ParseSizeRange(const std::string& text, uint32_t kb_base) {
  const size_t sep = text.find_first_of("-:", 1);
  SizeRange r;
  if (sep == std::string::npos) {
    auto v = ParseSize(text, kb_base);
    if (!v.ok()) return v.status();
    r.lo = r.hi = *v;
    return r;
  }
  auto lo = ParseSize(text.substr(0, sep), kb_base);
  if (!lo.ok()) return lo.status();
  auto hi = ParseSize(text.substr(sep + 1), kb_base);
  if (!hi.ok()) return hi.status();
  r.lo = std::min(*lo, *hi);
  r.hi = std::max(*lo, *hi);
  return r;
}

absl::StatusOr<TimeRangeNs> ParseTimeRangeNs(const std::string& text, TimeUnit default_unit) {
  const size_t sep = text.find_first_of("-:", 1);
  TimeRangeNs r;
  if (sep == std::string::npos) {
    auto v = ParseTimeNs(text, default_unit);
    if (!v.ok()) return v.status();
    r.lo = r.hi = *v;
    return r;
  }
  auto lo = ParseTimeNs(text.substr(0, sep), default_unit);
  if (!lo.ok()) return lo.status();
  auto hi = ParseTimeNs(text.substr(sep + 1), default_unit);
  if (!hi.ok()) return hi.status();
  r.lo = std::min(*lo, *hi);
  r.hi = std::max(*lo, *hi);
  return r;
}

absl::StatusOr<std::vector<BsSplitEntry>> ParseBsSplitList(const std::string& text,
                                                           uint32_t kb_base) {
  constexpr size_t kMaxEntries = 64;
  std::vector<BsSplitEntry> entries;
  std::vector<bool> open;
  uint32_t total = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t colon = text.find(':', start);
    if (colon == std::string::npos) colon = text.size();
    const std::string item = Trim(text.substr(start, colon - start));
    start = colon + 1;
    if (item.empty()) continue;
    if (entries.size() >= kMaxEntries) return BadValue(text, "more than 64 bssplit entries");
    const size_t slash = item.find('/');
    auto bs = ParseSize(item.substr(0, slash), kb_base);
    if (!bs.ok()) return bs.status();
    if (*bs == 0) return BadValue(text, "zero block size");
    BsSplitEntry e;
    e.bs = *bs;
    bool is_open = true;
    if (slash != std::string::npos && slash + 1 < item.size()) {
      auto pct = ParseUint(item.substr(slash + 1));
      if (!pct.ok()) return BadValue(text, "bad percentage");
      e.percent = static_cast<uint32_t>(std::min<uint64_t>(*pct, 100));
      total += e.percent;
      is_open = false;
    }
    entries.push_back(e);
    open.push_back(is_open);
  }
  if (entries.empty()) return BadValue(text, "empty bssplit");
  const size_t n_open = static_cast<size_t>(std::count(open.begin(), open.end(), true));
  if (total > 100) return BadValue(text, "bssplit percentages add up to more than 100");
  if (n_open > 0) {
    const uint32_t share = (100 - total) / static_cast<uint32_t>(n_open);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (open[i]) entries[i].percent = share;
    }
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const BsSplitEntry& a, const BsSplitEntry& b) { return a.bs < b.bs; });
  return entries;
}

std::vector<std::string> SplitColonList(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == ':') {
      cur.push_back(':');
      ++i;
    } else if (text[i] == ':') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(text[i]);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

absl::StatusOr<std::vector<uint32_t>> ParseCpuList(const std::string& text) {
  std::vector<uint32_t> cpus;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = Trim(text.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) continue;
    const size_t dash = item.find('-');
    auto lo = ParseUint(item.substr(0, dash));
    if (!lo.ok()) return BadValue(text, "bad CPU number");
    uint64_t hi = *lo;
    if (dash != std::string::npos) {
      auto h = ParseUint(item.substr(dash + 1));
      if (!h.ok()) return BadValue(text, "bad CPU range");
      hi = *h;
    }
    if (hi < *lo || hi > kMaxCpuId) return BadValue(text, "bad CPU range");
    for (uint64_t c = *lo; c <= hi; ++c) cpus.push_back(static_cast<uint32_t>(c));
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

absl::StatusOr<std::vector<double>> ParsePercentileList(const std::string& text,
                                                        size_t max_items) {
  std::vector<double> out;
  for (const std::string& item : SplitColonList(text)) {
    if (out.size() >= max_items) return BadValue(text, "too many percentiles");
    auto v = ParseDouble(item);
    if (!v.ok()) return v.status();
    if (*v <= 0 || *v > 100) return BadValue(text, "percentile outside (0,100]");
    out.push_back(*v);
  }
  if (out.empty()) return BadValue(text, "empty list");
  return out;
}

size_t EditDistance(const std::string& a_in, const std::string& b_in) {
  const std::string a = a_in.substr(0, 64);
  const std::string b = b_in.substr(0, 64);
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string QuoteForError(absl::string_view text) {
  if (text.size() <= 80) return std::string(text);
  return absl::StrCat(text.substr(0, 64), "... (", text.size(), " bytes)");
}

absl::StatusOr<std::string> ParseFioPattern(const std::string& text) {
  std::string out;
  size_t i = 0;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t') {
      ++i;
    } else if (c == '\'') {
      return absl::UnimplementedError("'...' names a file whose contents fill the buffer; reading it is not modelled");
    } else if (c == '"') {
      const size_t end = text.find(c, i + 1);
      if (end == std::string::npos) return absl::InvalidArgumentError("a quoted string without its closing quote");
      out.append(text, i + 1, end - i - 1);
      i = end + 1;
    } else if (c == '0' && i + 1 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'X')) {
      size_t j = i + 2;
      while (j < text.size() && hex(text[j]) >= 0) ++j;
      // 0xff0x14 is two numbers: the 0 before the next x starts the second.
      if (j < text.size() && (text[j] == 'x' || text[j] == 'X') && j - (i + 2) > 1 && text[j - 1] == '0') --j;
      if (j == i + 2) return absl::InvalidArgumentError("0x without hex digits");
      std::string digits = text.substr(i + 2, j - i - 2);
      if (digits.size() % 2 == 1) digits.insert(digits.begin(), '0');
      for (size_t k = 0; k < digits.size(); k += 2) {
        out.push_back(static_cast<char>(hex(digits[k]) * 16 + hex(digits[k + 1])));
      }
      i = j;
    } else if ((c >= '0' && c <= '9') || (c == '-' && i + 1 < text.size() && text[i + 1] >= '0' &&
                                          text[i + 1] <= '9')) {
      // fio's parse_number: a decimal int up to the next "0x", stored in
      // as few little-endian bytes as hold it (0: one zero byte).
      const bool negative = c == '-';
      size_t j = negative ? i + 1 : i;
      uint64_t v = 0;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
        if (text[j] == '0' && j + 1 < text.size() && (text[j + 1] == 'x' || text[j + 1] == 'X') &&
            j > (negative ? i + 1 : i)) {
          break;
        }
        v = v * 10 + static_cast<uint64_t>(text[j] - '0');
        if (v > (negative ? uint64_t{1} << 31 : uint64_t{INT32_MAX})) {
          return absl::InvalidArgumentError("a decimal number outside a C int");
        }
        ++j;
      }
      uint32_t word = negative ? static_cast<uint32_t>(-static_cast<int64_t>(v)) : static_cast<uint32_t>(v);
      if (word == 0) out.push_back(0);
      for (; word != 0; word >>= 8) out.push_back(static_cast<char>(word & 0xff));
      i = j;
    } else if (c == '%') {
      return absl::UnimplementedError("fio's %o (each block's offset in its data) is not modelled");
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("'", std::string(1, c), "' is not part of a pattern (0x hex, a quoted string, a number)"));
    }
    if (out.size() > 4096) return absl::InvalidArgumentError("a pattern longer than 4096 bytes");
  }
  if (out.empty()) return absl::InvalidArgumentError("an empty pattern");
  return out;
}

}  // namespace blklab::workload
