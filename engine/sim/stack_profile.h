// engine/sim/stack_profile.h
//
// StackProfile records CPU time by call stack: what `perf record -g` folds
// into a flame graph. A stack is a path in a trie whose root children are the
// contexts' names (a thread's comm, "swapper/N" for an idle CPU taken by an
// interrupt) and whose other nodes are functions (FnIds of the Machine's
// registry) or the markers "[hardirq]" / "[softirq]". Model code opens a
// frame with StackFrame around the work a kernel function does; a Charge
// lands on the running context's current node, as a leaf child named by the
// charged function (or on the node itself when that is the same function).
// An interrupt's stack continues the stack it interrupted, as perf shows it.
//
// StackFrame (cpu.h) opens a frame. Each context (a thread, a CPU's softirq
// and hardirq levels) has a slot
// holding its current node; StackFrame saves and restores the slot by index,
// so a coroutine frame destroyed at teardown never writes into a freed
// Thread or Cpu (the profile is destroyed after them).
//
// Invariants: node 0 is the empty stack; the sum of Folded()'s times equals
//  the CPU time charged while the profile was enabled; node ids are assigned
//  in first-use order, which is deterministic, and Folded() sorts by stack.
// Thread-safety: thread-compatible; part of one Machine.
// Cost: disabled (the default), one predictable branch per Charge; enabled,
//  a hash lookup per Charge and per frame.
#ifndef BLKLAB_ENGINE_SIM_STACK_PROFILE_H_
#define BLKLAB_ENGINE_SIM_STACK_PROFILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace blklab::sim {

class Cpu;
class FunctionRegistry;
using FnId = uint32_t;

class StackProfile {
 public:
  using Node = uint32_t;
  using Slot = uint32_t;

  StackProfile();

  // A new context slot, holding `node`.
  Slot NewSlot(Node node);
  Node& slot(Slot s) { return slots_[s]; }

  // The child of `parent` labelled by a registry function / by a name of
  // the profile's own (a comm, an interrupt marker).
  Node Child(Node parent, FnId fn) { return ChildLabel(parent, fn); }
  // Child(parent, fn), or `parent` itself when it is already `fn` (a frame
  // opened again inside itself adds no level).
  Node Enter(Node parent, FnId fn) { return label_[parent] == fn ? parent : ChildLabel(parent, fn); }
  Node ChildNamed(Node parent, const std::string& name);

  // `ns` of CPU time charged to `fn` while `node` is current.
  void Add(Node node, FnId fn, int64_t ns) {
    const Node leaf = label_[node] == fn ? node : ChildLabel(node, fn);
    ns_[leaf] += ns;
  }

  // "comm;f1;f2;leaf" and its time, for every stack with time; sorted by
  // the stack text. A composite function's time (FunctionRegistry::
  // SetParts) is split: its own part on its stack, the others one level
  // below it, as perf's call graph shows callees.
  std::vector<std::pair<std::string, int64_t>> Folded(const FunctionRegistry& functions) const;

 private:
  static constexpr uint64_t kNamed = uint64_t{1} << 32;
  Node ChildLabel(Node parent, uint64_t label);

  std::vector<Node> parent_;
  std::vector<uint64_t> label_;  // a FnId, or kNamed | index into names_
  std::vector<int64_t> ns_;
  absl::flat_hash_map<uint64_t, Node> children_;  // (parent, label) -> node; lookup only, never iterated
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, uint32_t> name_index_;  // lookup only
  std::vector<Node> slots_;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_STACK_PROFILE_H_
