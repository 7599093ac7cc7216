// engine/workload/value_syntax.h
//
// The value syntax of fio job options (fio's parse.c conventions, described in
// docs/fio-compatibility.md a.5): sizes with kb_base-dependent suffixes, percentages,
// times with a per-option default unit, booleans, read/write/trim lists,
// ranges, bssplit lists, colon lists with `\:` escapes and CPU lists.
//
// Every function is a pure function of its arguments: strings in, typed values
// or an InvalidArgument status out. The messages name only the offending
// value; the option table adds the option name, file and line.
//
// Invariants: no function reads the environment or global state.
// Thread-safety: stateless, safe from any thread.
// Cost: linear in the length of the value; allocation only for list results.
#ifndef BLKLAB_ENGINE_WORKLOAD_VALUE_SYNTAX_H_
#define BLKLAB_ENGINE_WORKLOAD_VALUE_SYNTAX_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace blklab::workload {

// A size that may also be written as a percentage of the target's real size
// (`size=50%`). The percentage is resolved once the device size is known.
struct SizeSpec {
  uint64_t bytes = 0;
  double percent = 0.0;  // > 0: a share of the target size in (0, 100].

  bool is_percent() const { return percent > 0.0; }
  // Bytes for a target of `target_bytes`; a percentage is rounded down.
  uint64_t Resolve(uint64_t target_bytes) const;
  bool operator==(const SizeSpec&) const = default;
};

// Result of ParseSize: the value and whether a fio quirk changed its meaning
// (white space after `=` disables the unit suffix: `bs= 8k` is 8 bytes).
struct ParsedSize {
  uint64_t value = 0;
  bool suffix_ignored_quirk = false;
};

// Parses an integer with fio's optional `0x` prefix, optional fraction and
// case-insensitive unit suffix. `kb_base` is 1024 or 1000: `k`/`kb`/`ki` mean
// kb_base, `kib` means the other base; likewise m, g, t, p. `b` and unknown
// trailing letters are ignored. Rejects empty values, signs and overflow.
absl::StatusOr<ParsedSize> ParseSizeDetailed(const std::string& text, uint32_t kb_base);
absl::StatusOr<uint64_t> ParseSize(const std::string& text, uint32_t kb_base);

// A size or `N%` (N in (0,100]).
absl::StatusOr<SizeSpec> ParseSizeOrPercent(const std::string& text, uint32_t kb_base);

// Plain non-negative integer (no unit suffixes beyond fio's ignoring of
// trailing letters); `0x` hex allowed.
absl::StatusOr<uint64_t> ParseUint(const std::string& text);
// Signed integer (e.g. a CPU number of -1).
absl::StatusOr<int64_t> ParseInt(const std::string& text);

// Time units a bare number is read in.
enum class TimeUnit { kMicroseconds, kMilliseconds, kSeconds };

// Parses a time: number plus optional case-insensitive suffix `us`/`usec`,
// `ms`/`msec`, `s`, `m` (minutes), `h`, `d`; a bare number uses
// `default_unit`. Any other suffix (including `sec`) means microseconds, as
// in fio 3.33. Returns nanoseconds.
absl::StatusOr<int64_t> ParseTimeNs(const std::string& text, TimeUnit default_unit);

// `0` or `1` (fio's boolean options take exactly these).
absl::StatusOr<bool> ParseBool(const std::string& text);

// A floating-point number.
absl::StatusOr<double> ParseDouble(const std::string& text);

// Splits a read,write,trim list with fio's rules: a missing later field
// copies the previous one, an empty field keeps the default (nullopt), a
// trailing comma stops the copying. More than three fields is an error.
absl::StatusOr<std::array<std::optional<std::string>, 3>> SplitPerDirection(
    const std::string& text);

// `lo-hi` or `lo:hi` sizes (swapped when reversed); a single value means
// lo == hi.
// `text` for an error message: as is up to 80 bytes, else its first 64
// bytes and its length, so that an error never echoes a huge input.
std::string QuoteForError(absl::string_view text);

struct SizeRange {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const SizeRange&) const = default;
};
absl::StatusOr<SizeRange> ParseSizeRange(const std::string& text, uint32_t kb_base);

// Time range for startdelay (`0-5` seconds by default).
struct TimeRangeNs {
  int64_t lo = 0;
  int64_t hi = 0;
};
absl::StatusOr<TimeRangeNs> ParseTimeRangeNs(const std::string& text, TimeUnit default_unit);

// One bssplit entry: block size and share in percent.
struct BsSplitEntry {
  uint64_t bs = 0;
  uint32_t percent = 0;
  bool operator==(const BsSplitEntry&) const = default;
};
// Parses one direction's `size/percent:size/percent...` list. Entries
// without a percentage share the remainder of 100 equally (integer
// division); percentages above 100 are clamped; a total above 100 is an
// error; at most 64 entries. The result is sorted by block size.
absl::StatusOr<std::vector<BsSplitEntry>> ParseBsSplitList(const std::string& text,
                                                           uint32_t kb_base);

// Splits on `:`, honouring `\:` as a literal colon. Empty items are dropped.
std::vector<std::string> SplitColonList(const std::string& text);

// `0,5,8-15` style CPU list; returns the sorted, de-duplicated CPU ids.
// CPU ids are bounded by kMaxCpuId.
inline constexpr uint32_t kMaxCpuId = 4095;
absl::StatusOr<std::vector<uint32_t>> ParseCpuList(const std::string& text);

// Float list separated by `:` (percentile_list), at most `max_items` values,
// each in (0, 100].
absl::StatusOr<std::vector<double>> ParsePercentileList(const std::string& text,
                                                        size_t max_items);

// Levenshtein distance (for "did you mean" suggestions). Bounded: strings
// longer than 64 characters are compared on their first 64 characters.
size_t EditDistance(const std::string& a, const std::string& b);

// fio's data pattern syntax (buffer_pattern=, lib/pattern.c) as the bytes
// it fills a buffer with: 0x hex (two digits a byte, an odd count gets a
// leading 0; 0xff0x14 is two numbers), a "quoted string", or a decimal C
// int (as few little-endian bytes as hold it), one after another. fio's
// '...' (a file's contents) and %o (the block's offset) are refused by
// name.
absl::StatusOr<std::string> ParseFioPattern(const std::string& text);

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_VALUE_SYNTAX_H_
