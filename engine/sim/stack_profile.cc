#include "engine/sim/stack_profile.h"

#include <algorithm>

#include "engine/sim/machine.h"

namespace blklab::sim {

StackProfile::StackProfile() {
  // Node 0: the empty stack, labelled by no function.
  parent_.push_back(0);
  label_.push_back(~uint64_t{0});
  ns_.push_back(0);
}

StackProfile::Slot StackProfile::NewSlot(Node node) {
  slots_.push_back(node);
  return static_cast<Slot>(slots_.size() - 1);
}

StackProfile::Node StackProfile::ChildLabel(Node parent, uint64_t label) {
  const uint64_t key = (static_cast<uint64_t>(parent) << 33) ^ label;
  auto [it, inserted] = children_.try_emplace(key, static_cast<Node>(parent_.size()));
  if (inserted) {
    parent_.push_back(parent);
    label_.push_back(label);
    ns_.push_back(0);
  }
  return it->second;
}

StackProfile::Node StackProfile::ChildNamed(Node parent, const std::string& name) {
  auto [it, inserted] = name_index_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) names_.push_back(name);
  return ChildLabel(parent, kNamed | it->second);
}

std::vector<std::pair<std::string, int64_t>> StackProfile::Folded(const FunctionRegistry& functions) const {
  std::vector<std::pair<std::string, int64_t>> out;
  std::vector<const std::string*> path;
  for (Node n = 1; n < ns_.size(); ++n) {
    if (ns_[n] == 0) continue;
    path.clear();
    for (Node p = n; p != 0; p = parent_[p]) {
      const uint64_t l = label_[p];
      path.push_back((l & kNamed) != 0 ? &names_[l & (kNamed - 1)] : &functions.name(static_cast<FnId>(l)));
    }
    std::string stack;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      if (!stack.empty()) stack += ';';
      stack += **it;
    }
    // A composite function's time: its own share here, each other part a
    // callee (FunctionRegistry::SetParts).
    const uint64_t l = label_[n];
    if ((l & kNamed) == 0 && !functions.parts(static_cast<FnId>(l)).empty()) {
      const FnId whole = static_cast<FnId>(l);
      functions.SplitTime(whole, ns_[n], [&](FnId part, int64_t part_ns) {
        if (part_ns == 0) return;
        out.emplace_back(part == whole ? stack : stack + ';' + functions.name(part), part_ns);
      });
      continue;
    }
    out.emplace_back(std::move(stack), ns_[n]);
  }
  std::sort(out.begin(), out.end());
  // Two nodes may print alike (a function and a name spelt the same): merge.
  size_t w = 0;
  for (size_t r = 0; r < out.size(); ++r) {
    if (w > 0 && out[w - 1].first == out[r].first) {
      out[w - 1].second += out[r].second;
    } else {
      if (w != r) out[w] = std::move(out[r]);
      ++w;
    }
  }
  out.resize(w);
  return out;
}

}  // namespace blklab::sim
