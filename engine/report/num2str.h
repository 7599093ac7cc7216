// engine/report/num2str.h
//
// Num2Str reproduces fio's short-number formatting of normal output
// (docs/fio-compatibility.md c.7): "1512k", "5906MiB/s", "11.5GiB", "1089.1k", "4096B".
// A value is divided by 1000 (SI) or 1024 (IEC) while it has more digits
// than `max_digits`; the integer part is then printed with as many decimals
// of the last remainder as still fit (at least two spare positions needed),
// else rounded to the nearest integer.
//
// Thread-safety: stateless. Cost: a few divisions and one small string.
#ifndef BLKLAB_ENGINE_REPORT_NUM2STR_H_
#define BLKLAB_ENGINE_REPORT_NUM2STR_H_

#include <cstdint>
#include <string>

namespace blklab::report {

enum class NumUnit {
  kNone,         // IOPS, latencies: "1512k"
  kBytes,        // "11.5GiB"
  kBytesPerSec,  // "5906MiB/s"
  kBitsPerSec,   // value in bytes, printed in bits: "47.2Gibit/s"
};

// `iec` selects 1024 and Ki/Mi/... prefixes, else 1000 and k/M/...
std::string Num2Str(uint64_t value, int max_digits, bool iec, NumUnit unit);

// How many decimal digits `v` prints with (1 for 0).
int DecimalDigits(uint64_t v);

}  // namespace blklab::report

#endif  // BLKLAB_ENGINE_REPORT_NUM2STR_H_
