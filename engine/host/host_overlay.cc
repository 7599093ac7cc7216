#include "engine/host/host_overlay.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/util/doc_node.h"
#include "engine/util/yaml_reader.h"

namespace blklab::host {
namespace {

using util::DocNode;

// The value of an override: a YAML scalar or flow collection; text YAML
// cannot read whole (or reads as a document with several lines) stays a
// string.
DocNode ParseValue(const std::string& text) {
  absl::StatusOr<DocNode> v = util::ParseYaml(text);
  if (!v.ok() || v->is_null() != (text == "null" || text == "~")) return DocNode::String(text);
  if (v->is_map() && text.find('{') == std::string::npos) return DocNode::String(text);
  return *std::move(v);
}

// A copy of `node` with the value at keys[i..] replaced by `value`.
absl::StatusOr<DocNode> SetAt(const DocNode& node, const std::vector<std::string>& keys, size_t i,
                              const DocNode& value) {
  if (i == keys.size()) return value;
  const std::string& key = keys[i];
  const std::string where = absl::StrJoin(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(i), ".");
  if (node.is_list()) {
    const std::vector<DocNode>& items = node.items();
    size_t target = items.size();
    size_t index = 0;
    if (absl::SimpleAtoi(key, &index) && index < items.size()) {
      target = index;
    } else {
      for (size_t k = 0; k < items.size(); ++k) {
        const DocNode* name = items[k].is_map() ? items[k].Find("name") : nullptr;
        if (name != nullptr && name->is_string() && name->text() == key) {
          target = k;
          break;
        }
      }
    }
    if (target == items.size()) {
      std::string names;
      for (const DocNode& item : items) {
        const DocNode* name = item.is_map() ? item.Find("name") : nullptr;
        if (name != nullptr && name->is_string()) absl::StrAppend(&names, names.empty() ? "" : ", ", name->text());
      }
      return absl::InvalidArgumentError(absl::StrCat(where, ": no item '", key, "' (", items.size(), " items",
                                                     names.empty() ? "" : ": " + names, ")"));
    }
    DocNode out = DocNode::List(node.pos());
    for (size_t k = 0; k < items.size(); ++k) {
      if (k != target) {
        out.Append(items[k]);
        continue;
      }
      absl::StatusOr<DocNode> item = SetAt(items[k], keys, i + 1, value);
      if (!item.ok()) return item.status();
      out.Append(*std::move(item));
    }
    return out;
  }
  if (!node.is_map() && !node.is_null()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": a ", DocNode::KindName(node.kind()), ", not a map: cannot set '", key, "' in it"));
  }
  DocNode out = DocNode::Map(node.pos());
  bool found = false;
  if (node.is_map()) {
    for (const util::DocMapEntry& e : node.entries()) {
      if (e.key != key) {
        out.AddEntry(e.key, e.key_pos, e.value);
        continue;
      }
      absl::StatusOr<DocNode> v = SetAt(e.value, keys, i + 1, value);
      if (!v.ok()) return v.status();
      out.AddEntry(e.key, e.key_pos, *std::move(v));
      found = true;
    }
  }
  if (!found) {
    absl::StatusOr<DocNode> v = SetAt(DocNode::Null(), keys, i + 1, value);
    if (!v.ok()) return v.status();
    out.AddEntry(key, {}, *std::move(v));
  }
  return out;
}

}  // namespace

absl::StatusOr<HostOverride> ParseHostOverride(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': expected PATH=VALUE (e.g. cpus.count=64)"));
  }
  HostOverride o{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  for (absl::string_view step : absl::StrSplit(o.path, '.')) {
    if (step.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "': empty step in the path '", o.path, "'"));
    }
  }
  return o;
}

absl::StatusOr<HostSpec> ApplyHostOverrides(const DocNode& written, const std::vector<HostOverride>& overrides) {
  DocNode doc = written;
  for (const HostOverride& o : overrides) {
    const std::vector<std::string> keys = absl::StrSplit(o.path, '.');
    absl::StatusOr<DocNode> next = SetAt(doc, keys, 0, ParseValue(o.value));
    if (!next.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(o.path, "=", o.value, ": ", next.status().message()));
    }
    doc = *std::move(next);
    // Each override is checked on its own, so an error names the one at fault.
    absl::StatusOr<HostSpec> checked = HostSpecFromDoc(doc);
    if (!checked.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(o.path, "=", o.value, ": ", checked.status().message()));
    }
  }
  return HostSpecFromDoc(doc);
}

}  // namespace blklab::host
