// engine/model/sched/sort_tree.h
//
// SortTree is a scheduler's sector-sorted tree of requests (the elv_rb_*
// helpers over `rq->rb_node` in block/elevator.c): a red-black tree, balanced
// as lib/rbtree.c balances it, linked through the requests themselves, so that
// a descent visits real nodes whose cachelines (Request::line) were written by
// other CPUs, and an insert or erase rewrites only the nodes the kernel's
// rb_insert_color / rb_erase rewrite (the parent link, recoloured and rotated
// nodes, the successor moved into an erased node's place).
//
// Every operation reports the nodes it reads and writes, so the caller can
// price them: `read(rq, Visit::kDescend)` for a node on a pointer chase (a
// descent, the successor search), whose next step waits for the load;
// `read(rq, Visit::kColour)` for the uncle and nephew colours the rebalancing
// checks, loads whose only use is a predicted branch, so they overlap the
// work that follows (the sibling is a chase: its links lead to the nephews);
// `write(rq)` for a node whose links or colour change (a null target means
// the root pointer, rb_root, in the caller's own structure).
//
// Invariants: in-order traversal is sorted by (sector, sched_seq); the root is
//  black, no red node has a red child, and every path from a node to its
//  leaves passes the same number of black nodes, so no leaf is deeper than
//  2 log2(n + 1) and an average descent visits about log2(n) nodes.
// Thread-safety: thread-compatible.
// Cost: O(log n) per operation; no allocation.
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
  enum class Visit { kDescend, kColour };

  static Key KeyOf(const Request* rq) { return Key{rq->sector, rq->sched_seq}; }

  bool empty() const { return root_ == nullptr; }
  size_t size() const { return size_; }

  // elv_rb_find / deadline_from_pos: the first request whose key is not
  // below `key`, or null.
  template <typename Read>
  Request* LowerBound(Key key, Read&& read) const {
    Request* best = nullptr;
    for (Request* n = root_; n != nullptr;) {
      read(n, Visit::kDescend);
      if (KeyOf(n) < key) {
        n = n->rb_right;
      } else {
        best = n;
        n = n->rb_left;
      }
    }
    return best;
  }

  // elv_rb_add: descend, link a red leaf under the last node visited, then
  // rb_insert_color.
  template <typename Read, typename Write>
  void Insert(Request* rq, Read&& read, Write&& write) {
    rq->rb_left = rq->rb_right = nullptr;
    const Key key = KeyOf(rq);
    Request* parent = nullptr;
    int dir = 0;
    for (Request* n = root_; n != nullptr;) {
      read(n, Visit::kDescend);
      parent = n;
      dir = KeyOf(n) < key ? 1 : 0;
      n = Child(n, dir);
    }
    rq->rb_parent = parent;
    rq->rb_red = true;
    write(parent);  // rb_link_node: the parent's child link (or the root)
    if (parent == nullptr) {
      root_ = rq;
    } else {
      Child(parent, dir) = rq;
    }
    ++size_;
    InsertColor(rq, read, write);
  }

  // elv_rb_del: rb_erase, with its successor splice and rebalancing.
  template <typename Read, typename Write>
  void Erase(Request* rq, Read&& read, Write&& write) {
    Request* const left = rq->rb_left;
    Request* const right = rq->rb_right;
    Request* rebalance = nullptr;
    if (left == nullptr || right == nullptr) {
      // At most one child: a lone child is red under a black node and
      // takes its place in black.
      Request* only = left != nullptr ? left : right;
      Replace(rq, only, write);
      if (only != nullptr) {
        only->rb_red = false;
        write(only);
      } else if (!rq->rb_red) {
        rebalance = rq->rb_parent;
      }
    } else {
      // Two children: the leftmost node of the right subtree takes rq's
      // place and colour.
      Request* succ = right;
      read(succ, Visit::kDescend);
      while (succ->rb_left != nullptr) {
        succ = succ->rb_left;
        read(succ, Visit::kDescend);
      }
      Request* const child2 = succ->rb_right;
      Request* parent = succ;
      if (succ != right) {
        parent = succ->rb_parent;
        parent->rb_left = child2;
        write(parent);
        succ->rb_right = right;
        right->rb_parent = succ;
        write(right);
      }
      succ->rb_left = left;
      left->rb_parent = succ;
      write(left);
      Replace(rq, succ, write);
      write(succ);
      const bool succ_was_red = succ->rb_red;
      succ->rb_red = rq->rb_red;
      if (child2 != nullptr) {
        child2->rb_parent = parent;
        child2->rb_red = false;
        write(child2);
      } else if (!succ_was_red) {
        rebalance = parent;
      }
    }
    rq->rb_left = rq->rb_right = rq->rb_parent = nullptr;
    rq->rb_red = false;
    --size_;
    if (rebalance != nullptr) EraseColor(rebalance, read, write);
  }

  // The root, for inspection (tests walk the tree to check its invariants).
  const Request* root() const { return root_; }

 private:
  static Request*& Child(Request* n, int dir) { return dir == 0 ? n->rb_left : n->rb_right; }
  static bool IsRed(const Request* n) { return n != nullptr && n->rb_red; }

  // rb_insert_color: while the new red node has a red parent, recolour
  // (red uncle) or rotate once or twice (black uncle).
  template <typename Read, typename Write>
  void InsertColor(Request* node, Read&& read, Write&& write) {
    for (;;) {
      Request* parent = node->rb_parent;
      if (parent == nullptr) {
        node->rb_red = false;
        write(node);
        return;
      }
      if (!parent->rb_red) return;
      Request* gparent = parent->rb_parent;  // a red node is never the root
      const int pdir = gparent->rb_left == parent ? 0 : 1;
      Request* uncle = Child(gparent, 1 - pdir);
      if (uncle != nullptr) read(uncle, Visit::kColour);
      if (IsRed(uncle)) {
        uncle->rb_red = false;
        parent->rb_red = false;
        gparent->rb_red = true;
        write(uncle);
        write(parent);
        write(gparent);
        node = gparent;
        continue;
      }
      if (Child(parent, 1 - pdir) == node) {
        // The inner grandchild: rotate it above its parent first.
        Rotate(node, write);
        parent = node;
      }
      Rotate(parent, write);
      parent->rb_red = false;
      gparent->rb_red = true;
      return;
    }
  }

  // rb_erase's ____rb_erase_color: `parent` lost a black node on one side
  // (`node`, null at first, is the side that is one black short).
  template <typename Read, typename Write>
  void EraseColor(Request* parent, Read&& read, Write&& write) {
    Request* node = nullptr;
    for (;;) {
      // A null node is on the side whose link is null (the sibling cannot
      // be null: it carries the black height the node's side lost).
      const int dir = parent->rb_right == node ? 1 : 0;
      Request* sibling = Child(parent, 1 - dir);
      read(sibling, Visit::kDescend);
      if (sibling->rb_red) {
        Rotate(sibling, write);
        sibling->rb_red = false;
        parent->rb_red = true;
        sibling = Child(parent, 1 - dir);
        read(sibling, Visit::kDescend);
      }
      Request* far = Child(sibling, 1 - dir);
      Request* near = Child(sibling, dir);
      if (far != nullptr) read(far, Visit::kColour);
      if (!IsRed(far)) {
        if (near != nullptr) read(near, Visit::kColour);
        if (!IsRed(near)) {
          sibling->rb_red = true;
          write(sibling);
          if (parent->rb_red) {
            parent->rb_red = false;
            write(parent);
            return;
          }
          node = parent;
          parent = node->rb_parent;
          if (parent == nullptr) return;
          continue;
        }
        Rotate(near, write);
        far = sibling;
        sibling = near;
      }
      Rotate(sibling, write);
      sibling->rb_red = parent->rb_red;
      parent->rb_red = false;
      far->rb_red = false;
      write(far);
      return;
    }
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
