// SortTree: order, lower bound, and the shape properties the cost model
// relies on (logarithmic descents, few nodes rewritten per update).
#include "engine/model/sched/sort_tree.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace blklab::model {
namespace {

TEST(SortTreeTest, KeepsOrderAndFindsLowerBounds) {
  std::vector<Request> rqs(1000);
  SortTree tree;
  std::set<SortTree::Key> keys;
  uint64_t x = 12345;
  int max_reads = 0;
  int64_t writes = 0;
  for (size_t i = 0; i < rqs.size(); ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    rqs[i].sector = x >> 40;
    rqs[i].sched_seq = i + 1;
    int reads = 0;
    tree.Insert(&rqs[i], [&](Request*) { ++reads; }, [&](Request*) { ++writes; });
    max_reads = std::max(max_reads, reads);
    keys.insert(SortTree::KeyOf(&rqs[i]));
  }
  EXPECT_EQ(tree.size(), rqs.size());
  // Expected depth about 1.4 log2(n) ~ 14 for 1000 nodes; well under n.
  EXPECT_LT(max_reads, 40);
  // An insert rewrites the parent plus about two rotations' nodes on average.
  EXPECT_LT(static_cast<double>(writes) / static_cast<double>(rqs.size()), 8.0);
  for (const Request& r : rqs) {
    const SortTree::Key probe{r.sector, 0};
    Request* got = tree.LowerBound(probe, [](Request*) {});
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(SortTree::KeyOf(got), *keys.lower_bound(probe));
  }
  // Erase every other request; the rest stay ordered and findable.
  for (size_t i = 0; i < rqs.size(); i += 2) {
    tree.Erase(&rqs[i], [](Request*) {});
    keys.erase(SortTree::KeyOf(&rqs[i]));
  }
  EXPECT_EQ(tree.size(), keys.size());
  for (size_t i = 1; i < rqs.size(); i += 2) {
    Request* got = tree.LowerBound(SortTree::KeyOf(&rqs[i]), [](Request*) {});
    EXPECT_EQ(got, &rqs[i]);
  }
  for (size_t i = 1; i < rqs.size(); i += 2) tree.Erase(&rqs[i], [](Request*) {});
  EXPECT_TRUE(tree.empty());
  EXPECT_EQ(tree.LowerBound(SortTree::Key{0, 0}, [](Request*) {}), nullptr);
}

}  // namespace
}  // namespace blklab::model
