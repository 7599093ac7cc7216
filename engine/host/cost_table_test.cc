#include "engine/host/cost_table.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
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
  EXPECT_EQ(table.line_transfer_llc, 23);
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

// The fitted groups scale guessed rows only, each row at most once, by a
// multiplier a fit may reach (docs/calibration.md: outside constants are never
// fitted); every other row of the calibrated table is its default.
TEST(CostTableTest, CalibratedTableScalesOnlyTheGroupsGuessedRows) {
  const CostTable& calibrated = CalibratedCostTable();
  std::set<std::string> grouped;
  ASSERT_FALSE(CostGroups().empty());
  for (const CostGroupInfo& g : CostGroups()) {
    EXPECT_GE(g.multiplier_permille, 250) << g.name;
    EXPECT_LE(g.multiplier_permille, 4000) << g.name;
    EXPECT_FALSE(g.step.empty()) << g.name;
    const std::vector<std::string> rows = absl::StrSplit(std::string(g.rows), ' ', absl::SkipEmpty());
    for (const std::string& row : rows) {
      const CostEntryInfo* entry = nullptr;
      for (const CostEntryInfo& e : CostEntries()) {
        if (e.name == row) entry = &e;
      }
      ASSERT_NE(entry, nullptr) << g.name << " names an unknown row " << row;
      EXPECT_EQ(entry->source, CostSource::kGuess) << row << " is an outside constant";
      EXPECT_TRUE(grouped.insert(std::string(row)).second) << row << " is in two groups";
      EXPECT_EQ(calibrated.*(entry->field), (entry->default_ns * g.multiplier_permille + 500) / 1000) << row;
    }
  }
  for (const CostEntryInfo& e : CostEntries()) {
    if (!grouped.contains(std::string(e.name))) {
      EXPECT_EQ(calibrated.*(e.field), e.default_ns) << e.name;
    }
  }
}

TEST(CostTableTest, SourceTags) {
  EXPECT_EQ(CostSourceTag(CostSource::kSrc), "src");
  EXPECT_EQ(CostSourceTag(CostSource::kDerived), "derived");
  EXPECT_EQ(CostSourceTag(CostSource::kGuess), "guess");
}

}  // namespace
}  // namespace blklab::host
