#include "server/comparison_manager.h"

#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace blklab::server {
namespace {

v1::ComparisonBundle Bundle(const std::string& runtime) {
  v1::ComparisonBundle b;
  for (const char* a : {"--host=nvme-8cpu", "--variant", "before:", "--variant",
                        "none:devices.nvme0n1.queue.scheduler=none", "--matrix", "fio.iodepth=1,4", "--",
                        "--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
                        "--time_based=1"}) {
    b.add_args(a);
  }
  b.add_args("--runtime=" + runtime);
  return b;
}

// What a fleet server sends back is what the comparison summarises: a
// cell's figures survive the proto both ways bit for bit.
TEST(ComparisonManager, CellFiguresRoundTripExactly) {
  const v1::ComparisonBundle b = Bundle("5ms");
  const compare::Inputs in = BundleInputs(&b);
  absl::StatusOr<compare::Comparison> c =
      compare::ParseComparison({b.args().begin(), b.args().end()}, in, "default");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<compare::CellResult> r = compare::RunCell(*c, compare::Cells(*c)[1], in);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->profile.empty());
  absl::StatusOr<compare::CellResult> back = CellResultFromProto(CellResultToProto(*r));
  ASSERT_TRUE(back.ok()) << back.status();
  compare::Results one, two;
  one.cells = two.cells = {compare::Cells(*c)[0], compare::Cells(*c)[1]};
  one.results = {*r, *r};
  two.results = {*r, *back};
  // Only the first point's cells (baseline, variant) are given: summarise
  // that much.
  c->axes.clear();
  compare::Summarize(*c, one);
  compare::Summarize(*c, two);
  EXPECT_EQ(compare::Render(*c, one, compare::Format::kJson), compare::Render(*c, two, compare::Format::kJson));
  EXPECT_EQ(back->iops, r->iops);
  EXPECT_EQ(back->profile.size(), r->profile.size());
  EXPECT_EQ(back->locks.size(), r->locks.size());
}

TEST(ComparisonManager, RunsListsAndPagesLocally) {
  ComparisonConfig config;
  config.local_workers = 2;
  config.max_comparisons = 3;
  ComparisonManager m(config);
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<v1::Comparison> c = m.Create(Bundle("2ms"), "");
    ASSERT_TRUE(c.ok()) << c.status();
    int64_t version = -1;
    absl::StatusOr<v1::Comparison> now;
    do {
      now = m.WaitChange(c->name(), &version, absl::Now() + absl::Seconds(60));
      ASSERT_TRUE(now.ok()) << now.status();
    } while (now->state() == v1::Comparison::RUNNING);
    EXPECT_EQ(now->state(), v1::Comparison::SUCCEEDED) << now->error();
    EXPECT_EQ(now->cells_done(), 4);
    names.push_back(c->name());
  }
  // At most 3 kept: the oldest finished one was forgotten.
  EXPECT_EQ(m.Get(names[0], false).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<v1::ListComparisonsResponse> page = m.List(2, "");
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->comparisons_size(), 2);
  EXPECT_EQ(page->comparisons(0).name(), names[3]);  // newest first
  ASSERT_FALSE(page->next_page_token().empty());
  absl::StatusOr<v1::ListComparisonsResponse> rest = m.List(2, page->next_page_token());
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->comparisons_size(), 1);
  EXPECT_EQ(rest->comparisons(0).name(), names[1]);
  EXPECT_TRUE(rest->next_page_token().empty());
  absl::StatusOr<std::string> table = m.Output(names[3], "table");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_NE(table->find("blklab compare: host nvme-8cpu, 4 cells"), std::string::npos) << *table;
  EXPECT_EQ(m.Output(names[3], "yaml").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ComparisonManager, RefusesWhatItCannotRun) {
  ComparisonConfig none;
  none.local_workers = 0;
  ComparisonManager m(none);
  EXPECT_EQ(m.Create(Bundle("1ms"), "").status().code(), absl::StatusCode::kFailedPrecondition);
  ComparisonConfig small;
  small.max_bundle_bytes = 100;
  ComparisonManager m2(small);
  EXPECT_EQ(m2.Create(Bundle("1ms"), "").status().code(), absl::StatusCode::kResourceExhausted);
  ComparisonManager m3(ComparisonConfig{});
  EXPECT_EQ(m3.Create(Bundle("1ms"), "Bad_Id").status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<compare::CellResult> out_of_range = m3.RunCellHere(Bundle("1ms"), 99, nullptr);
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsCellError(out_of_range.status()));
}

// A cell that reaches the server's per-job limits fails as the cell's own
// error (a fleet caller does not retry it elsewhere); a server that cannot
// take cells says UNAVAILABLE (the caller does).
TEST(ComparisonManager, MarksTheCellsOwnFailures) {
  ComparisonConfig tight;
  tight.limits.run.max_ios = 100;
  ComparisonManager m(tight);
  absl::StatusOr<compare::CellResult> r = m.RunCellHere(Bundle("500ms"), 0, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsCellError(r.status())) << r.status();
  ComparisonConfig none;
  none.local_workers = 0;
  ComparisonManager idle(none);
  absl::StatusOr<compare::CellResult> u = idle.RunCellHere(Bundle("1ms"), 0, nullptr);
  EXPECT_EQ(u.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(IsCellError(u.status()));
  // A wait for a worker ends with the cancel.
  ComparisonConfig one;
  one.local_workers = 1;
  ComparisonManager busy(one);
  std::atomic<bool> cancel{true};
  EXPECT_EQ(busy.RunCellHere(Bundle("1ms"), 0, &cancel).status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace blklab::server
