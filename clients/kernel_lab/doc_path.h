// clients/kernel_lab/doc_path.h
//
// A node of a parsed YAML/JSON document by its path of map keys: what the
// kernel lab reads from host specs as written (guest_plan) and from fio's
// JSON output (scenario metrics).
//
// Pure; thread-compatible. Cost: one linear map lookup per step.
#ifndef BLKLAB_CLIENTS_KERNEL_LAB_DOC_PATH_H_
#define BLKLAB_CLIENTS_KERNEL_LAB_DOC_PATH_H_

#include <initializer_list>

#include "absl/strings/string_view.h"
#include "engine/util/doc_node.h"

namespace blklab::kernel_lab {

// The node at `keys` under `doc`, or nullptr when a step is missing or
// reaches something that is not a map.
inline const util::DocNode* DocPath(const util::DocNode& doc, std::initializer_list<absl::string_view> keys) {
  const util::DocNode* n = &doc;
  for (absl::string_view key : keys) {
    if (n == nullptr || !n->is_map()) return nullptr;
    n = n->Find(key);
  }
  return n;
}

}  // namespace blklab::kernel_lab

#endif  // BLKLAB_CLIENTS_KERNEL_LAB_DOC_PATH_H_
