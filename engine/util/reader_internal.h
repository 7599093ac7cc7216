// engine/util/reader_internal.h
//
// Helpers shared by json_reader.cc and yaml_reader.cc. Not part of the public
// API. Thread-safety: stateless functions.
#ifndef BLKLAB_ENGINE_UTIL_READER_INTERNAL_H_
#define BLKLAB_ENGINE_UTIL_READER_INTERNAL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/util/doc_node.h"

namespace blklab::util::internal {

// InvalidArgument "<format> line L, column C: <message>".
absl::Status SyntaxError(absl::string_view format, SourcePos pos, absl::string_view message);
// ResourceExhausted "<format> line L, column C: <message>".
absl::Status LimitError(absl::string_view format, SourcePos pos, absl::string_view message);

// Position of byte `offset` in `text` (1-based line and byte column). O(offset).
SourcePos PosOfOffset(absl::string_view text, size_t offset);

// Checks that `text` is well-formed UTF-8 (no overlongs, no surrogates, <=
// U+10FFFF) and holds no C0 control character other than tab, LF and CR.
// Returns the offset of the first bad byte, or npos.
size_t FindBadByte(absl::string_view text);

// Appends code point `cp` (REQUIRES: valid scalar value) as UTF-8.
void AppendUtf8(uint32_t cp, std::string* out);

// Skips a UTF-8 byte order mark.
inline size_t BomLength(absl::string_view text) {
  return (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF &&
          static_cast<unsigned char>(text[1]) == 0xBB && static_cast<unsigned char>(text[2]) == 0xBF)
             ? 3
             : 0;
}

}  // namespace blklab::util::internal

#endif  // BLKLAB_ENGINE_UTIL_READER_INTERNAL_H_
