// SortTree: order, lower bound, the red-black invariants, and the shape
// properties the cost model relies on (descents as short as the kernel's
// rb-tree gives, few nodes rewritten per update).
#include "engine/model/sched/sort_tree.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace blklab::model {
namespace {

// Checks the red-black invariants below `n` and returns its black height.
int CheckSubtree(const Request* n, const Request* parent) {
  if (n == nullptr) return 1;
  EXPECT_EQ(n->rb_parent, parent);
  if (n->rb_red && parent != nullptr) {
    EXPECT_FALSE(parent->rb_red) << "red node under a red parent";
  }
  if (n->rb_left != nullptr) {
    EXPECT_LT(SortTree::KeyOf(n->rb_left), SortTree::KeyOf(n));
  }
  if (n->rb_right != nullptr) {
    EXPECT_LT(SortTree::KeyOf(n), SortTree::KeyOf(n->rb_right));
  }
  const int left = CheckSubtree(n->rb_left, n);
  const int right = CheckSubtree(n->rb_right, n);
  EXPECT_EQ(left, right) << "black heights differ";
  return left + (n->rb_red ? 0 : 1);
}

void CheckRedBlack(const SortTree& tree) {
  if (tree.root() == nullptr) return;
  EXPECT_FALSE(tree.root()->rb_red) << "red root";
  CheckSubtree(tree.root(), nullptr);
}

// A deterministic stream of sector numbers.
class Sectors {
 public:
  uint64_t Next() {
    x_ = x_ * 6364136223846793005ull + 1442695040888963407ull;
    return x_ >> 40;
  }

 private:
  uint64_t x_ = 12345;
};

TEST(SortTreeTest, KeepsOrderAndFindsLowerBounds) {
  std::vector<Request> rqs(1000);
  SortTree tree;
  std::set<SortTree::Key> keys;
  Sectors sectors;
  int max_reads = 0;
  int64_t writes = 0;
  for (size_t i = 0; i < rqs.size(); ++i) {
    rqs[i].sector = sectors.Next();
    rqs[i].sched_seq = i + 1;
    int reads = 0;
    tree.Insert(
        &rqs[i], [&](Request*, SortTree::Visit v) { reads += v == SortTree::Visit::kDescend ? 1 : 0; },
        [&](Request*) { ++writes; });
    max_reads = std::max(max_reads, reads);
    keys.insert(SortTree::KeyOf(&rqs[i]));
  }
  EXPECT_EQ(tree.size(), rqs.size());
  CheckRedBlack(tree);
  // No leaf deeper than 2 log2(n + 1) ~ 20, plus the uncles a rebalance reads.
  EXPECT_LT(max_reads, 30);
  // An insert rewrites the parent plus a few recoloured or rotated nodes.
  EXPECT_LT(static_cast<double>(writes) / static_cast<double>(rqs.size()), 8.0);
  for (const Request& r : rqs) {
    const SortTree::Key probe{r.sector, 0};
    Request* got = tree.LowerBound(probe, [](Request*, SortTree::Visit) {});
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(SortTree::KeyOf(got), *keys.lower_bound(probe));
  }
  // Erase every other request; the rest stay ordered, balanced and findable.
  for (size_t i = 0; i < rqs.size(); i += 2) {
    tree.Erase(&rqs[i], [](Request*, SortTree::Visit) {}, [](Request*) {});
    keys.erase(SortTree::KeyOf(&rqs[i]));
    if (i % 64 == 0) CheckRedBlack(tree);
  }
  EXPECT_EQ(tree.size(), keys.size());
  CheckRedBlack(tree);
  for (size_t i = 1; i < rqs.size(); i += 2) {
    Request* got = tree.LowerBound(SortTree::KeyOf(&rqs[i]), [](Request*, SortTree::Visit) {});
    EXPECT_EQ(got, &rqs[i]);
  }
  for (size_t i = 1; i < rqs.size(); i += 2) {
    tree.Erase(&rqs[i], [](Request*, SortTree::Visit) {}, [](Request*) {});
  }
  EXPECT_TRUE(tree.empty());
  EXPECT_EQ(tree.LowerBound(SortTree::Key{0, 0}, [](Request*, SortTree::Visit) {}), nullptr);
}

// The scheduler's steady state: a queue of n requests where each dispatch
// erases the next one in sector order and each insert adds a random sector.
// A descent visits about log2(n) nodes, as in the kernel's rb-tree; a random
// binary search tree (or a treap) would visit about 1.39 log2(n).
TEST(SortTreeTest, DescentsAreAsShortAsTheKernelsRbTree) {
  for (const size_t n : {64u, 256u, 1024u}) {
    std::vector<Request> rqs(n * 8);
    SortTree tree;
    Sectors sectors;
    size_t next = 0;
    auto insert = [&] {
      Request* rq = &rqs[next % rqs.size()];
      rq->sector = sectors.Next();
      rq->sched_seq = ++next;
      tree.Insert(rq, [](Request*, SortTree::Visit) {}, [](Request*) {});
    };
    for (size_t i = 0; i < n; ++i) insert();
    uint64_t pos = 0;
    int64_t reads = 0;
    int64_t descents = 0;
    int64_t writes = 0;
    for (size_t round = 0; round < rqs.size() - n; ++round) {
      // deadline_from_pos, then erase what it found (wrapping at the end).
      Request* rq = tree.LowerBound(SortTree::Key{pos, 0}, [&](Request*, SortTree::Visit) { ++reads; });
      ++descents;
      if (rq == nullptr) rq = tree.LowerBound(SortTree::Key{0, 0}, [](Request*, SortTree::Visit) {});
      pos = rq->sector + 1;
      // The distinct lines an erase stores to (the root pointer included).
      std::set<const Request*> written;
      tree.Erase(rq, [](Request*, SortTree::Visit) {}, [&](Request* w) { written.insert(w); });
      writes += static_cast<int64_t>(written.size());
      insert();
    }
    CheckRedBlack(tree);
    const double per_descent = static_cast<double>(reads) / static_cast<double>(descents);
    const double log2n = std::log2(static_cast<double>(n));
    EXPECT_LT(per_descent, log2n + 1.0) << "n=" << n;
    EXPECT_GT(per_descent, log2n - 1.0) << "n=" << n;
    const double writes_per_erase = static_cast<double>(writes) / static_cast<double>(descents);
    EXPECT_LT(writes_per_erase, 9.0) << "n=" << n;
    std::printf("n=%zu: %.2f nodes per descent (log2 n = %.2f), %.2f lines written per erase\n", n, per_descent,
                log2n, writes_per_erase);
  }
}

}  // namespace
}  // namespace blklab::model
