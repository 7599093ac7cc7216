// engine/report/num2str.cc
#include "engine/report/num2str.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace blklab::report {

namespace {

uint64_t Pow10(int n) {
  uint64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

}  // namespace

std::string Num2Str(uint64_t value, int max_digits, bool iec, NumUnit unit) {
  static const char* const kSi[] = {"", "k", "M", "G", "T", "P", "E"};
  static const char* const kIec[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  const char* suffix = "";
  switch (unit) {
    case NumUnit::kNone:
      break;
    case NumUnit::kBytes:
      suffix = "B";
      break;
    case NumUnit::kBytesPerSec:
      suffix = "B/s";
      break;
    case NumUnit::kBitsPerSec:
      suffix = "bit/s";
      value *= 8;
      break;
  }
  if (max_digits < 1) max_digits = 1;
  const uint64_t divisor = iec ? 1024 : 1000;
  uint64_t remainder = 0;
  int prefix = 0;
  while (DecimalDigits(value) > max_digits && prefix < 6) {
    remainder = value % divisor;
    value /= divisor;
    ++prefix;
  }
  const char* const* prefixes = iec ? kIec : kSi;
  if (prefix == 0) return absl::StrCat(value, suffix);

  const int int_digits = DecimalDigits(value);
  const int spare = max_digits - int_digits;
  if (spare < 2) {
    if (remainder * 2 >= divisor) ++value;
    return absl::StrCat(value, prefixes[prefix], suffix);
  }
  // Decimals of the last remainder, rounded; a carry moves into the integer.
  const int decimals = spare - 1;
  const uint64_t scale = Pow10(decimals);
  uint64_t frac = (remainder * scale * 2 + divisor) / (divisor * 2);
  if (frac >= scale) {
    ++value;
    frac -= scale;
  }
  return absl::StrCat(value, ".", absl::StrFormat("%0*d", decimals, frac), prefixes[prefix],
                      suffix);
}

int DecimalDigits(uint64_t v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}

}  // namespace blklab::report
