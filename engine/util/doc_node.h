// engine/util/doc_node.h
//
// DocNode is the value tree produced by the JSON and YAML-subset readers
// (json_reader.h, yaml_reader.h) and consumed by typed decoders such as the
// host spec (engine/host/host_spec.h). It models the JSON data model: null,
// bool, number, string, an ordered map with unique string keys, and a list.
// Every node carries the line:column where it started, so a decoder can point
// at the offending text.
//
// Numbers are kept as their source text (JSON grammar, or a YAML 1.2 core
// schema int/float) and converted on request by AsInt64 / AsDouble, so no
// precision is lost between reading and decoding.
//
// Invariants: map keys are unique (AddEntry refuses a duplicate); map entries
//   keep insertion (document) order; a node's kind never changes after it is
//   built.
// Thread-safety: a plain value type; const access from several threads is safe.
// Cost: Find is a linear scan (maps in config documents are small); copies are
//   deep.
#ifndef BLKLAB_ENGINE_UTIL_DOC_NODE_H_
#define BLKLAB_ENGINE_UTIL_DOC_NODE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace blklab::util {

// 1-based line and column (in bytes) of a node in its source text; 0:0 when a
// node was built in code.
struct SourcePos {
  int line = 0;
  int column = 0;
  bool known() const { return line > 0; }
};

// "line 3, column 7" (or "" when unknown).
std::string FormatPos(SourcePos pos);

struct DocMapEntry;

class DocNode {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kMap, kList };

  DocNode() = default;  // null

  static DocNode Null(SourcePos pos = {});
  static DocNode Bool(bool value, SourcePos pos = {});
  // REQUIRES: `text` is a number in JSON grammar or a YAML core-schema
  // int/float (the readers guarantee it; Int/Double build a valid text).
  static DocNode Number(std::string text, SourcePos pos = {});
  static DocNode Int(int64_t value, SourcePos pos = {});
  static DocNode Double(double value, SourcePos pos = {});
  static DocNode String(std::string value, SourcePos pos = {});
  static DocNode Map(SourcePos pos = {});
  static DocNode List(SourcePos pos = {});

  Kind kind() const { return kind_; }
  SourcePos pos() const { return pos_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_map() const { return kind_ == Kind::kMap; }
  bool is_list() const { return kind_ == Kind::kList; }

  // REQUIRES: is_bool().
  bool bool_value() const;
  // The string value (kString) or the number's source text (kNumber).
  // REQUIRES: is_string() || is_number().
  const std::string& text() const;

  // Number as a signed 64-bit integer. Accepts integral texts ("42", "-7",
  // "+3") and integral floats within range ("1e3", "64.0"). InvalidArgument
  // otherwise, or when the node is not a number.
  absl::StatusOr<int64_t> AsInt64() const;
  // Number as a double (finite). InvalidArgument when not a number.
  absl::StatusOr<double> AsDouble() const;

  // Map access. REQUIRES: is_map().
  const std::vector<DocMapEntry>& entries() const;
  // The value for `key`, or nullptr. REQUIRES: is_map().
  const DocNode* Find(absl::string_view key) const;
  // Appends an entry; returns false (and changes nothing) if `key` exists.
  // REQUIRES: is_map().
  bool AddEntry(std::string key, SourcePos key_pos, DocNode value);

  // List access. REQUIRES: is_list().
  const std::vector<DocNode>& items() const;
  void Append(DocNode item);  // REQUIRES: is_list().

  // Number of entries (map) or items (list); 0 for scalars.
  size_t size() const;

  // "null", "bool", "number", "string", "map", "list".
  static const char* KindName(Kind kind);

  // Structural equality; positions are ignored, numbers compare by text.
  friend bool operator==(const DocNode& a, const DocNode& b);

 private:
  Kind kind_ = Kind::kNull;
  SourcePos pos_;
  bool bool_ = false;
  std::string text_;
  std::vector<DocMapEntry> entries_;
  std::vector<DocNode> items_;
};

struct DocMapEntry {
  std::string key;
  SourcePos key_pos;
  DocNode value;
};

// Writes `node` as JSON. With indent > 0, maps and lists are written one entry
// per line with that many spaces per level; empty containers stay "{}"/"[]".
// Strings are escaped per RFC 8259 (control characters as \u00XX); the output
// is valid UTF-8 if the strings are.
std::string WriteJson(const DocNode& node, int indent = 0);

// Limits on an untrusted document. The readers stop with ResourceExhausted
// (naming the limit and the position) as soon as one is exceeded, so neither
// time nor memory grows past O(max_bytes).
struct ParseLimits {
  size_t max_bytes = 1 << 20;   // input size
  int max_depth = 64;           // nesting of maps/lists
  size_t max_nodes = 200000;    // total nodes, scalars included
};

}  // namespace blklab::util

#endif  // BLKLAB_ENGINE_UTIL_DOC_NODE_H_
