// engine/util/json_reader.h
//
// A strict RFC 8259 JSON reader producing a DocNode tree. Accepts exactly one
// value (any type) surrounded by optional whitespace; an optional UTF-8 BOM is
// skipped. Rejects: trailing commas, comments, single quotes, NaN/Infinity,
// leading zeros, lone surrogates in \u escapes, invalid UTF-8, control
// characters in strings, duplicate object keys and trailing content.
//
// Errors: InvalidArgument "JSON line L, column C: <what>" for bad syntax;
// ResourceExhausted with the same shape when a ParseLimits bound is exceeded.
// Thread-safety: stateless; safe to call concurrently.
// Cost: O(input size) time and memory; recursion depth <= limits.max_depth.
// Intended for untrusted input (network requests, fuzzing): it never aborts
// and never loops.
#ifndef BLKLAB_ENGINE_UTIL_JSON_READER_H_
#define BLKLAB_ENGINE_UTIL_JSON_READER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/util/doc_node.h"

namespace blklab::util {

absl::StatusOr<DocNode> ParseJson(absl::string_view text, const ParseLimits& limits = {});

}  // namespace blklab::util

#endif  // BLKLAB_ENGINE_UTIL_JSON_READER_H_
