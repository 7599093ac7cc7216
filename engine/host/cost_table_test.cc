#include "engine/host/cost_table.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace blklab::host {
namespace {

TEST(CostTableTest, EntriesMatchDefaultsAndAreUnique) {
  CostTable table;
  std::set<std::string> names;
  for (const CostEntryInfo& e : CostEntries()) {
    EXPECT_TRUE(names.insert(std::string(e.name)).second) << e.name;
    EXPECT_EQ(table.*(e.field), e.default_ns) << e.name;
    EXPECT_GE(e.default_ns, 0) << e.name;
    EXPECT_FALSE(e.description.empty()) << e.name;
  }
  EXPECT_EQ(table.ktime_get_ns, 17);
  EXPECT_EQ(table.line_transfer_llc, 40);
}

TEST(CostTableTest, SetCostByName) {
  CostTable table;
  ASSERT_TRUE(SetCost(table, "ktime_get_ns", 25).ok());
  EXPECT_EQ(table.ktime_get_ns, 25);
  absl::Status unknown = SetCost(table, "no_such_entry", 1);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.message(), "costs.no_such_entry: unknown cost table entry");
  absl::Status negative = SetCost(table, "ktime_get_ns", -1);
  EXPECT_EQ(negative.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table.ktime_get_ns, 25);
}

TEST(CostTableTest, SourceTags) {
  EXPECT_EQ(CostSourceTag(CostSource::kSrc), "src");
  EXPECT_EQ(CostSourceTag(CostSource::kDerived), "derived");
  EXPECT_EQ(CostSourceTag(CostSource::kGuess), "guess");
}

}  // namespace
}  // namespace blklab::host
