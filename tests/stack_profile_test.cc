// tests/stack_profile_test.cc
//
// Call stacks of the simulated kernel (RunRequest::collect_stacks, the flame
// graphs): recording them changes no result; every nanosecond of busy CPU
// time lands in exactly one stack; the stacks say where the time went, with
// the callers the kernel has (RC4's dd->lock spin under the dispatch, the
// insert and the merge probe; a hardirq on top of what it interrupted); and
// the flame graph and its differential form are well-formed SVG.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "engine/report/flame_graph.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using namespace ::blklab::testing_support;  // NOLINT: test helpers
using ::testing::HasSubstr;

// RC4's "before": 8 submitters on one mq-deadline queue of null_blk.
const char kHost[] =
    "name: dd\n"
    "cpus: {count: 8}\n"
    "kernel: {hz: 1000}\n"
    "knobs: {dd_serialize_dispatch: false, dd_insert_side_lists: false, dd_skip_merge_if_contended: false}\n"
    "devices:\n"
    "  - name: nullb0\n"
    "    null_blk: {submit_queues: 1, irqmode: 1}\n"
    "    queue: {scheduler: mq-deadline}\n";

const std::vector<std::string> kJob = {"--name=dd", "--ioengine=io_uring", "--rw=randread", "--bs=512",
                                       "--iodepth=4", "--iodepth_batch_submit=4", "--iodepth_batch_complete=4",
                                       "--direct=1", "--numjobs=8", "--thread", "--cpus_allowed_policy=split",
                                       "--runtime=20ms", "--time_based=1"};

absl::StatusOr<RunResult> RunDd(bool stacks) {
  absl::StatusOr<ParsedFio> parsed = ParseFio(kJob, HostFromYaml(kHost), nullptr, nullptr);
  if (!parsed.ok()) return parsed.status();
  RunRequest req;
  req.host = HostFromYaml(kHost);
  req.jobs = parsed->jobs;
  req.collect_stacks = stacks;
  return RunFio(req);
}

int64_t StackNs(const stats::KernelReport& k, const std::string& needle) {
  int64_t ns = 0;
  for (const stats::StackRow& s : k.stacks) {
    if (absl::StrContains(s.stack, needle)) ns += s.ns;
  }
  return ns;
}

TEST(StackProfile, RecordingChangesNoResultAndCoversEveryBusyNanosecond) {
  absl::StatusOr<RunResult> plain = RunDd(false);
  absl::StatusOr<RunResult> with = RunDd(true);
  ASSERT_TRUE(plain.ok() && with.ok()) << plain.status() << with.status();
  EXPECT_TRUE(plain->kernel.stacks.empty());
  EXPECT_EQ(TotalIos(*plain), TotalIos(*with));
  EXPECT_EQ(plain->kernel.busy_ns, with->kernel.busy_ns);
  EXPECT_EQ(plain->kernel.events, with->kernel.events);
  ASSERT_EQ(plain->kernel.profile.size(), with->kernel.profile.size());
  for (size_t i = 0; i < plain->kernel.profile.size(); ++i) {
    EXPECT_EQ(plain->kernel.profile[i].function, with->kernel.profile[i].function);
    EXPECT_EQ(plain->kernel.profile[i].self_ns, with->kernel.profile[i].self_ns);
  }
  int64_t sum = 0;
  for (const stats::StackRow& s : with->kernel.stacks) {
    EXPECT_GT(s.ns, 0) << s.stack;
    sum += s.ns;
  }
  EXPECT_EQ(sum, with->kernel.busy_ns);
  // Sorted and unique: the folded text is deterministic.
  for (size_t i = 1; i < with->kernel.stacks.size(); ++i) {
    EXPECT_LT(with->kernel.stacks[i - 1].stack, with->kernel.stacks[i].stack);
  }
}

TEST(StackProfile, StacksCarryTheKernelsCallers) {
  absl::StatusOr<RunResult> r = RunDd(true);
  ASSERT_TRUE(r.ok()) << r.status();
  const stats::KernelReport& k = *&r->kernel;
  const int64_t slowpath = ProfileNs(k, "native_queued_spin_lock_slowpath");
  ASSERT_GT(slowpath, 0) << Describe(*r);
  // The spin sits under _raw_spin_lock, under the three dd->lock takers.
  const int64_t dispatch = StackNs(k, "dd_dispatch_request;_raw_spin_lock;native_queued_spin_lock_slowpath");
  const int64_t insert = StackNs(k, "dd_insert_requests;_raw_spin_lock;native_queued_spin_lock_slowpath");
  const int64_t merge = StackNs(k, "dd_bio_merge;_raw_spin_lock;native_queued_spin_lock_slowpath");
  EXPECT_GT(dispatch, 0);
  EXPECT_GT(insert, 0);
  EXPECT_GT(merge, 0);
  EXPECT_GT(dispatch + insert + merge, slowpath * 9 / 10) << dispatch << " " << insert << " " << merge;
  // The submission path as the kernel nests it, under the fio thread.
  EXPECT_GT(StackNs(k, "fio/dd;__x64_sys_io_uring_enter;blk_mq_submit_bio;dd_bio_merge"), 0);
  EXPECT_GT(StackNs(k, "blk_mq_flush_plug_list;blk_mq_run_hw_queue;blk_mq_sched_dispatch_requests;"
                       "blk_mq_do_dispatch_sched;dd_dispatch_request"),
            0);
  // Interrupts sit on top of what they interrupted: the tick lands on fio
  // threads deep in the submission path too.
  int64_t tick_on_fio_ns = 0;
  for (const stats::StackRow& s : k.stacks) {
    if (absl::StartsWith(s.stack, "fio/dd;") && absl::StrContains(s.stack, ";[hardirq];tick_sched_timer")) {
      tick_on_fio_ns += s.ns;
    }
  }
  EXPECT_GT(tick_on_fio_ns, 0);
  EXPECT_GT(StackNs(k, "native_queued_spin_lock_slowpath;[hardirq];tick_sched_timer") +
                StackNs(k, "_raw_spin_lock;[hardirq];tick_sched_timer"),
            0);
}

TEST(StackProfile, FlameGraphsAreWellFormedSvg) {
  absl::StatusOr<RunResult> r = RunDd(true);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string svg = report::FlameGraphSvg(r->kernel.stacks, "a <title> & more");
  EXPECT_TRUE(absl::StartsWith(svg, "<?xml")) << svg.substr(0, 100);
  EXPECT_THAT(svg, HasSubstr("a &lt;title&gt; &amp; more"));
  EXPECT_THAT(svg, HasSubstr(">dd_dispatch_request<"));
  EXPECT_TRUE(absl::EndsWith(svg, "</svg>\n"));
  const std::string folded = report::FoldedStacks(r->kernel.stacks);
  EXPECT_THAT(folded, HasSubstr("fio/dd;__x64_sys_io_uring_enter;"));
  // The same profile against itself: nothing changed, every frame white.
  const std::string same = report::DiffFlameGraphSvg(r->kernel.stacks, r->kernel.stacks, "same");
  EXPECT_THAT(same, ::testing::Not(HasSubstr("rgb(250,0,0)")));
  EXPECT_THAT(same, HasSubstr("rgb(250,250,250)"));
  // One stack doubled against the rest: it turns red.
  std::vector<stats::StackRow> grown = r->kernel.stacks;
  size_t biggest = 0;
  for (size_t i = 0; i < grown.size(); ++i) {
    if (grown[i].ns > grown[biggest].ns) biggest = i;
  }
  grown[biggest].ns *= 4;
  const std::string diff = report::DiffFlameGraphSvg(r->kernel.stacks, grown, "grown");
  EXPECT_THAT(diff, HasSubstr("rgb(250,0,0)"));
}

}  // namespace
}  // namespace blklab
