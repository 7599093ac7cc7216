// engine/util/yaml_reader.h
//
// A reader for the subset of YAML 1.2 that configuration files use, producing
// the same DocNode tree as the JSON reader (so a decoder handles both):
//   * block mappings and block sequences by indentation (spaces only), with
//     compact forms ("- key: value", "- - x") and sequences indented at the
//     level of their parent key;
//   * flow mappings and sequences, possibly spanning lines:
//     {a: 1, b: [x, y]}; JSON is accepted as flow style;
//   * plain scalars on one line; 'single-quoted' and "double-quoted" scalars
//     (double quotes take the YAML escapes: \n \t \\ \" \xXX \uXXXX
//     \UXXXXXXXX ...), which may span lines as values (a break folds to a
//     space, empty lines to newlines, a double-quoted "\" at the end of a
//     line joins it to the next: what PyYAML's dump writes for long strings);
//   * "#" comments, an optional "---" document start and "..." document end.
// Plain scalars resolve by the YAML 1.2 core schema: null/~/empty -> null,
// true/false (any case form the schema allows) -> bool, decimal ints and
// floats -> number, anything else (including yes/no/on/off, 0x10, .inf)
// -> string.
//
// Rejected with a clear "YAML line L, column C: ..." InvalidArgument: anchors
// (&), aliases (*), tags (!), directives (%), explicit keys (?), block scalars
// (| and >), multi-line plain scalars, quoted keys spanning lines, several
// documents, duplicate keys, tabs in indentation, invalid UTF-8, control
// characters. ParseLimits
// bounds size, nesting depth and node count (ResourceExhausted).
//
// Thread-safety: stateless; safe to call concurrently.
// Cost: O(input size) time and memory; recursion depth <= 2 * max_depth.
// Intended for untrusted input: never aborts, never loops.
#ifndef BLKLAB_ENGINE_UTIL_YAML_READER_H_
#define BLKLAB_ENGINE_UTIL_YAML_READER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/util/doc_node.h"

namespace blklab::util {

// An empty document (only comments/whitespace) yields a null node.
absl::StatusOr<DocNode> ParseYaml(absl::string_view text, const ParseLimits& limits = {});

}  // namespace blklab::util

#endif  // BLKLAB_ENGINE_UTIL_YAML_READER_H_
