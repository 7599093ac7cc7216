// engine/model/sched/sort_tree.h
//
// SortTree is a scheduler's sector-sorted tree of requests (the elv_rb_*
// helpers over `rq->rb_node` in block/elevator.c): a binary search tree
// linked through the requests themselves, so that a descent visits real
// nodes whose cachelines (Request::line) were written by other CPUs, and an
// insert or erase rewrites only the nodes around it. It is a treap (heap
// order on a hash of the insertion sequence): expected depth about
// 1.4 log2(n), at most two rotations per update on average, and a shape that
// stays put where nothing changes — the properties of the kernel's rb-tree
// that matter for which lines a descent meets. The priority hash is a fixed
// function, so the shape is deterministic.
//
// Every operation reports the nodes it reads (`read(rq)`) and writes
// (`write(rq)`), so the caller can price them; a null write target means the
// root pointer (rb_root, in the caller's own structure).
//
// Invariants: in-order traversal is sorted by (sector, sched_seq); each node
//  has a higher or equal priority than its children.
// Thread-safety: thread-compatible.
// Cost: O(depth) per operation; no allocation.
#ifndef BLKLAB_ENGINE_MODEL_SCHED_SORT_TREE_H_
#define BLKLAB_ENGINE_MODEL_SCHED_SORT_TREE_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "engine/model/request.h"
#include "engine/util/check.h"

namespace blklab::model {

class SortTree {
 public:
  using Key = std::pair<uint64_t, uint64_t>;  // (sector, sched_seq)

  static Key KeyOf(const Request* rq) { return Key{rq->sector, rq->sched_seq}; }

  bool empty() const { return root_ == nullptr; }
  size_t size() const { return size_; }

  // elv_rb_find / deadline_from_pos: the first request whose key is not
  // below `key`, or null.
  template <typename Read>
  Request* LowerBound(Key key, Read&& read) const {
    Request* best = nullptr;
    for (Request* n = root_; n != nullptr;) {
      read(n);
      if (KeyOf(n) < key) {
        n = n->rb_right;
      } else {
        best = n;
        n = n->rb_left;
      }
    }
    return best;
  }

  // elv_rb_add: descend, link under the last node visited, rebalance.
  template <typename Read, typename Write>
  void Insert(Request* rq, Read&& read, Write&& write) {
    rq->rb_left = rq->rb_right = nullptr;
    const Key key = KeyOf(rq);
    Request* parent = nullptr;
    for (Request* n = root_; n != nullptr;) {
      read(n);
      parent = n;
      n = KeyOf(n) < key ? n->rb_right : n->rb_left;
    }
    rq->rb_parent = parent;
    write(parent);  // the parent's child link (or the root)
    if (parent == nullptr) {
      root_ = rq;
    } else if (KeyOf(parent) < key) {
      parent->rb_right = rq;
    } else {
      parent->rb_left = rq;
    }
    ++size_;
    while (rq->rb_parent != nullptr && Priority(rq) > Priority(rq->rb_parent)) Rotate(rq, write);
  }

  // elv_rb_del: rotate the node down to a leaf, then unlink it.
  template <typename Write>
  void Erase(Request* rq, Write&& write) {
    for (;;) {
      Request* child = nullptr;
      if (rq->rb_left != nullptr && rq->rb_right != nullptr) {
        child = Priority(rq->rb_left) > Priority(rq->rb_right) ? rq->rb_left : rq->rb_right;
      } else {
        child = rq->rb_left != nullptr ? rq->rb_left : rq->rb_right;
      }
      if (child == nullptr) break;
      if (rq->rb_left == nullptr || rq->rb_right == nullptr) {
        // One child: splice it into the parent's link.
        Replace(rq, child, write);
        write(child);
        rq->rb_left = rq->rb_right = rq->rb_parent = nullptr;
        --size_;
        return;
      }
      Rotate(child, write);
    }
    Replace(rq, nullptr, write);
    rq->rb_parent = nullptr;
    --size_;
  }

 private:
  // A fixed mix of the insertion sequence (splitmix64's finaliser).
  static uint64_t Priority(const Request* rq) {
    uint64_t z = rq->sched_seq + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Puts `with` (may be null) where `rq` hangs from its parent.
  template <typename Write>
  void Replace(Request* rq, Request* with, Write&& write) {
    Request* p = rq->rb_parent;
    write(p);
    if (p == nullptr) {
      root_ = with;
    } else if (p->rb_left == rq) {
      p->rb_left = with;
    } else {
      p->rb_right = with;
    }
    if (with != nullptr) with->rb_parent = p;
  }

  // Rotates `n` above its parent; writes the nodes whose links change.
  template <typename Write>
  void Rotate(Request* n, Write&& write) {
    Request* p = n->rb_parent;
    BLKLAB_CHECK(p != nullptr);
    Replace(p, n, write);
    write(n);
    write(p);
    Request* moved = p->rb_left == n ? n->rb_right : n->rb_left;  // changes parent
    if (moved != nullptr) {
      write(moved);
      moved->rb_parent = p;
    }
    if (p->rb_left == n) {
      p->rb_left = moved;
      n->rb_right = p;
    } else {
      p->rb_right = moved;
      n->rb_left = p;
    }
    p->rb_parent = n;
  }

  Request* root_ = nullptr;
  size_t size_ = 0;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_SCHED_SORT_TREE_H_
