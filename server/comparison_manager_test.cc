#include "server/comparison_manager.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/job_manager.h"
#include "server/store.h"

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

// A server's jobs (a store in a fresh directory, its workers): where the
// cells that run here become jobs.
class Jobs {
 public:
  explicit Jobs(const JobLimitsConfig& limits = {}) {
    char tmpl[] = "/tmp/blklab_comparison_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir_);
    EXPECT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    JobManagerOptions options;
    options.workers = 2;
    options.limits = limits;
    manager_ = std::make_unique<JobManager>(store_.get(), options);
    EXPECT_TRUE(manager_->Start().ok());
  }
  ~Jobs() {
    manager_->Shutdown();
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  ComparisonConfig Config(int local_workers = 2) {
    ComparisonConfig c;
    c.jobs = &manager_->queue();
    c.local_workers = local_workers;
    return c;
  }
  Store& store() { return *store_; }

 private:
  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
};

// The comparison once it has ended (or the error of a wait).
absl::StatusOr<v1::Comparison> WaitEnd(const ComparisonManager& m, const std::string& name) {
  int64_t version = -1;
  while (true) {
    absl::StatusOr<v1::Comparison> now = m.WaitChange(name, &version, absl::Now() + absl::Seconds(60));
    if (!now.ok() || now->state() != v1::Comparison::RUNNING) return now;
  }
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
  Jobs jobs;
  ComparisonConfig config = jobs.Config();
  config.max_comparisons = 3;
  ComparisonManager m(config);
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<v1::Comparison> c = m.Create(Bundle("2ms"), "");
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<v1::Comparison> now = WaitEnd(m, c->name());
    ASSERT_TRUE(now.ok()) << now.status();
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
  absl::StatusOr<v1::ComparisonOutput> table = m.Output(names[3], "table");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_NE(table->text().find("blklab compare: host nvme-8cpu, 4 cells"), std::string::npos) << table->text();
  absl::StatusOr<v1::ComparisonOutput> charts = m.Output(names[3], "charts");
  ASSERT_TRUE(charts.ok()) << charts.status();
  ASSERT_GE(charts->files_size(), 6);
  EXPECT_EQ(charts->files(0).name(), "iops.svg");
  EXPECT_EQ(charts->files(5).name(), "report.html");
  EXPECT_EQ(m.Output(names[3], "yaml").status().code(), absl::StatusCode::kInvalidArgument);
}

// Each cell that runs here is an ordinary job: stored with its comparison,
// cell and host, with fio's outputs, and with the cell's figures exactly as
// the in-process run gives them.
TEST(ComparisonManager, CellsAreOrdinaryJobs) {
  Jobs jobs;
  ComparisonManager m(jobs.Config());
  const v1::ComparisonBundle b = Bundle("2ms");
  absl::StatusOr<v1::Comparison> c = m.Create(b, "cells");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<v1::Comparison> now = WaitEnd(m, c->name());
  ASSERT_TRUE(now.ok()) << now.status();
  ASSERT_EQ(now->state(), v1::Comparison::SUCCEEDED) << now->error();
  const compare::Inputs in = BundleInputs(&b);
  absl::StatusOr<compare::Comparison> parsed = compare::ParseComparison({b.args().begin(), b.args().end()}, in, "default");
  ASSERT_TRUE(parsed.ok());
  const std::vector<compare::Cell> cells = compare::Cells(*parsed);
  ASSERT_EQ(now->cells_size(), static_cast<int>(cells.size()));
  for (int i = 0; i < now->cells_size(); ++i) {
    const v1::ComparisonCell& cell = now->cells(i);
    ASSERT_EQ(cell.job().rfind("jobs/", 0), 0u) << cell.job();
    absl::StatusOr<v1::Job> job = jobs.store().GetJob(cell.job().substr(5), /*full=*/true);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state(), v1::Job::SUCCEEDED);
    EXPECT_EQ(job->comparison_cell().comparison(), "comparisons/cells");
    EXPECT_EQ(job->comparison_cell().cell(), i);
    EXPECT_EQ(job->comparison_cell().label(), cell.label());
    EXPECT_EQ(job->resolved_host().name(), "nvme-8cpu");
    EXPECT_NE(job->result().fio_json().find("\"jobs\""), std::string::npos);
    absl::StatusOr<compare::CellResult> direct = compare::RunCell(*parsed, cells[static_cast<size_t>(i)], in);
    ASSERT_TRUE(direct.ok()) << direct.status();
    EXPECT_EQ(job->result().comparison_cell().SerializeAsString(), CellResultToProto(*direct).SerializeAsString())
        << cell.label();
    EXPECT_EQ(job->result().comparison_cell().iops(), cell.iops());
  }
}

// Cancelling a comparison cancels the job its cell runs as.
TEST(ComparisonManager, CancelStopsTheCellsJob) {
  Jobs jobs;
  ComparisonManager m(jobs.Config(1));
  absl::StatusOr<v1::Comparison> c = m.Create(Bundle("60s"), "long");
  ASSERT_TRUE(c.ok()) << c.status();
  int64_t version = -1;
  std::string job;
  while (job.empty()) {
    absl::StatusOr<v1::Comparison> now = m.WaitChange(c->name(), &version, absl::Now() + absl::Seconds(60));
    ASSERT_TRUE(now.ok()) << now.status();
    // A comparison that ends before its cell became a job never will.
    ASSERT_NE(now->state(), v1::Comparison::FAILED) << now->error();
    ASSERT_NE(now->state(), v1::Comparison::SUCCEEDED);
    job = now->cells(0).job();
  }
  ASSERT_TRUE(m.Cancel(c->name()).ok());
  absl::StatusOr<v1::Job> stored;
  for (int i = 0; i < 600; ++i) {
    stored = jobs.store().GetJob(job.substr(5), false);
    ASSERT_TRUE(stored.ok()) << stored.status();
    if (stored->state() == v1::Job::CANCELLED) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(stored->state(), v1::Job::CANCELLED);
}

TEST(ComparisonManager, RefusesWhatItCannotRun) {
  Jobs jobs;
  ComparisonManager m(jobs.Config(0));
  EXPECT_EQ(m.Create(Bundle("1ms"), "").status().code(), absl::StatusCode::kFailedPrecondition);
  ComparisonManager no_queue(ComparisonConfig{});  // workers but no job queue: none here
  EXPECT_EQ(no_queue.Create(Bundle("1ms"), "").status().code(), absl::StatusCode::kFailedPrecondition);
  ComparisonConfig small = jobs.Config();
  small.max_bundle_bytes = 100;
  ComparisonManager m2(small);
  EXPECT_EQ(m2.Create(Bundle("1ms"), "").status().code(), absl::StatusCode::kResourceExhausted);
  ComparisonManager m3(jobs.Config());
  EXPECT_EQ(m3.Create(Bundle("1ms"), "Bad_Id").status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<compare::CellResult> out_of_range = m3.RunCellHere(Bundle("1ms"), 99, "comparisons/x", nullptr);
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsCellError(out_of_range.status()));
  // Cells are the queue's fio jobs: a t/io_uring comparison is refused by name.
  v1::ComparisonBundle tio;
  for (const char* a : {"--host=rc2-io_uring-core", "--tool=io_uring", "--", "-r2", "/dev/nvme0n1"}) tio.add_args(a);
  const absl::Status refused = m3.Create(tio, "").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnimplemented) << refused;
  EXPECT_NE(refused.message().find("blklabd runs fio comparisons only"), std::string::npos) << refused;
}

// A cell that reaches the server's per-job limits fails as the cell's own
// error (a fleet caller does not retry it elsewhere); a server that cannot
// take cells says UNAVAILABLE (the caller does).
TEST(ComparisonManager, MarksTheCellsOwnFailures) {
  JobLimitsConfig limits;
  limits.max_simulated_ios = 100;
  Jobs tight_jobs(limits);
  ComparisonManager m(tight_jobs.Config());
  absl::StatusOr<compare::CellResult> r = m.RunCellHere(Bundle("500ms"), 0, "comparisons/x", nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsCellError(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("jobs/j-"), std::string::npos) << r.status();
  Jobs jobs;
  ComparisonManager idle(jobs.Config(0));
  absl::StatusOr<compare::CellResult> u = idle.RunCellHere(Bundle("1ms"), 0, "comparisons/x", nullptr);
  EXPECT_EQ(u.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(IsCellError(u.status()));
  // A wait for a worker ends with the cancel.
  ComparisonManager busy(jobs.Config(1));
  std::atomic<bool> cancel{true};
  EXPECT_EQ(busy.RunCellHere(Bundle("1ms"), 0, "comparisons/x", &cancel).status().code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace blklab::server
