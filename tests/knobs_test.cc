// tests/knobs_test.cc
//
// Every knob of the host spec (host::Knobs, one per kernel patch or era
// switch) either changes a simulated result when flipped from its default,
// or is refused by name: none is accepted and silently ignored. The list of
// knobs comes from the host spec's own field list, so a new knob without a
// case here fails the test.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "engine/host/host_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using ::testing::HasSubstr;
using namespace ::blklab::testing_support;  // NOLINT: test helpers

// Every knob by name.
std::map<std::string, bool host::Knobs::*> KnobFields() {
  std::map<std::string, bool host::Knobs::*> out;
#define BLKLAB_KNOB_INT(name, def, lo, hi, doc)
#define BLKLAB_KNOB_INT64(name, def, lo, hi, doc)
#define BLKLAB_KNOB_BOOL(name, def, lo, hi, doc) out[#name] = &host::Knobs::name;
  BLKLAB_KNOB_FIELDS(BLKLAB_KNOB_INT, BLKLAB_KNOB_INT64, BLKLAB_KNOB_BOOL)
#undef BLKLAB_KNOB_INT
#undef BLKLAB_KNOB_INT64
#undef BLKLAB_KNOB_BOOL
  return out;
}

// One CPU, null_blk with a poll queue, scheduler none; BLK_CGROUP as given.
std::string NullYaml(bool blk_cgroup) {
  return absl::StrCat(
      "name: knob-null\n"
      "cpus: {count: 1}\n"
      "kernel: {config: {BLK_CGROUP: ", blk_cgroup ? "true" : "false", "}}\n"
      "devices:\n"
      "  - name: nullb0\n"
      "    null_blk: {irqmode: 0, submit_queues: 1, poll_queues: 1}\n"
      "    queue: {scheduler: none}\n");
}
// Completions in null_blk's timer interrupt: io_uring task work.
const char kNullTimerYaml[] =
    "name: knob-null-timer\n"
    "cpus: {count: 1}\n"
    "devices:\n"
    "  - name: nullb0\n"
    "    null_blk: {irqmode: 2, completion_nsec: 50000, submit_queues: 1}\n"
    "    queue: {scheduler: none}\n";
const std::vector<std::string> kBatchedJob = {
    "--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=512", "--iodepth=32",
    "--iodepth_batch_submit=8", "--iodepth_batch_complete_min=8", "--runtime=5ms", "--time_based"};
const std::vector<std::string> kPolledJob = {
    "--name=t", "--ioengine=io_uring", "--direct=1", "--hipri=1", "--rw=randread", "--bs=512", "--iodepth=32",
    "--iodepth_batch_submit=8", "--iodepth_batch_complete_min=8", "--runtime=5ms", "--time_based"};

// Eight CPUs submitting to one mq-deadline queue (RC4's shape, small), of
// one hw queue or `submit_queues`.
std::string DeadlineYaml(const std::string& knobs, int submit_queues = 1, int hw_queue_depth = 64) {
  return absl::StrCat(
      "name: knob-dd\n"
      "cpus: {count: 8}\n"
      "knobs: {", knobs, "}\n"
      "devices:\n"
      "  - name: nullb0\n"
      "    null_blk: {irqmode: 1, submit_queues: ", submit_queues, ", poll_queues: 0, hw_queue_depth: ",
      hw_queue_depth, "}\n"
      "    queue: {scheduler: mq-deadline}\n");
}
const std::vector<std::string> kDeadlineJob = {
    "--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=512", "--iodepth=4",
    "--iodepth_batch_submit=4", "--iodepth_batch_complete=4", "--numjobs=8",
    "--cpus_allowed_policy=split", "--runtime=5ms", "--time_based"};

// bfq on a 4-tag null_blk: four clones created together share one queue
// (stable merge) or have four.
constexpr char kBfqYaml[] =
    "name: knob-bfq\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n"
    "    null_blk: {irqmode: 2, completion_nsec: 100000, submit_queues: 1, poll_queues: 0, hw_queue_depth: 4}\n"
    "    queue: {scheduler: bfq}\n";
const std::vector<std::string> kBfqClonesJob = {"--name=t", "--ioengine=psync", "--direct=1", "--rw=randread",
                                                "--numjobs=4", "--runtime=20ms", "--time_based"};

constexpr char kDeadlineNrRequestsYaml[] =
    "name: knob-dd-nr\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n"
    "    null_blk: {irqmode: 2, completion_nsec: 100000, submit_queues: 1, poll_queues: 0, hw_queue_depth: 2}\n"
    "    queue: {scheduler: mq-deadline, nr_requests: 64}\n";

const std::vector<std::string> kDeadlineWriteJob = {
    "--name=t", "--ioengine=libaio", "--direct=1", "--rw=randwrite", "--bs=4k", "--iodepth=128",
    "--runtime=5ms", "--time_based"};

// Eight hctxs racing on one 5.16-style mq-deadline: dispatches that find
// nothing and delay the queue's re-runs.
const std::vector<std::string> kSqHctxJob = {
    "--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=8",
    "--iodepth_batch_submit=4", "--iodepth_batch_complete_min=1", "--norandommap=1", "--numjobs=8",
    "--cpus_allowed_policy=split", "--cpus_allowed=0-7", "--runtime=20ms", "--time_based"};

// A 4-CPU SCSI host with LUNs sdb, sdc, ...: `knobs` the knobs: map's
// entries, `hba` the hba: map's, `scheduler` the queue's.
std::string HbaYaml(const std::string& name, const std::string& knobs, const std::string& hba,
                    const std::string& scheduler) {
  return absl::StrCat("name: ", name, "\ncpus: {count: 4}\nknobs: {", knobs, "}\ndevices:\n  - name: sdb\n    hba: {",
                      hba, "}\n    queue: {scheduler: ", scheduler, "}\n");
}

// Host-wide tags and 4 LUNs, slow enough for 7 s of virtual time (one
// timeout walk per queue, about 6 s in); mq-deadline. extra_knobs: more
// knobs, ", "-prefixed.
std::string HbaWalkYaml(const std::string& extra_knobs) {
  return HbaYaml("knob-hba-walk", "tag_busy_iter_shared_once: false" + extra_knobs,
                 "lld: 1, can_queue: 128, nr_hw_queues: 4, host_tagset: true, virtual_drives: 4, cmd_per_lun: 64, "
                 "firmware_nsec: 1000, max_iops: 20000, drives: 2, drive_latency_nsec: 100000, gb: 4",
                 "mq-deadline");
}
const std::vector<std::string> kHbaWalkJob = {
    "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=16", "--runtime=7s", "--time_based",
    "--name=a", "--filename=/dev/sdb", "--name=b", "--filename=/dev/sdc"};

// A SCSI host exposing 8 hw queues (RC3's shape, small), scheduler none.
std::string HbaQueuesYaml(const std::string& knobs) {
  return HbaYaml("knob-hba-queues", knobs,
                 "lld: 0, can_queue: 256, nr_hw_queues: 8, host_tagset: true, virtual_drives: 1, cmd_per_lun: 256, "
                 "firmware_nsec: 1000, drives: 4, drive_latency_nsec: 20000",
                 "none");
}
const std::vector<std::string> kHbaQueuesJob = {
    "--name=t", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=32", "--numjobs=2",
    "--runtime=5ms", "--time_based"};

// scsi_debug: 4 LUNs on one shared tag set of 64 tags, 1 ms responses, so
// the tags run out and hctxs are marked for restart.
const char kSdebugSharedYaml[] =
    "name: knob-sdebug\n"
    "cpus: {count: 4}\n"
    "devices:\n"
    "  - name: sdb\n"
    "    scsi_debug: {ndelay: 1000000, max_queue: 64, max_luns: 4}\n"
    "    queue: {scheduler: mq-deadline}\n";
const std::vector<std::string> kSdebugSharedJob = {
    "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=32", "--runtime=20ms", "--time_based",
    "--name=a", "--filename=/dev/sdb", "--name=b", "--filename=/dev/sdc",
    "--name=c", "--filename=/dev/sdd", "--name=d", "--filename=/dev/sde"};

// scsi_debug answering TASK SET FULL whenever a LUN's queue is nearly full,
// 4.14 era: the LUN is blocked and the command requeued.
const char kSdebugTsfYaml[] =
    "name: knob-sdebug-tsf\n"
    "cpus: {count: 4}\n"
    "knobs: {scsi_debug_qfull_did_ok: true, run_all_hw_queues_on_completion: true}\n"
    "devices:\n"
    "  - name: sdb\n"
    "    scsi_debug: {ndelay: 1000000, max_queue: 32, every_nth: 1, opts: 0x800}\n";
const std::vector<std::string> kSdebugTsfJob = {
    "--name=t", "--filename=/dev/sdb", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=64",
    "--runtime=20ms", "--time_based"};

// One CPU, an NVMe drive with a poll queue.
const char kNvmeYaml[] =
    "name: knob-nvme\n"
    "cpus: {count: 1}\n"
    "devices:\n"
    "  - name: nvme0n1\n"
    "    nvme: {poll_queues: 1, latency_nsec: 5000}\n"
    "    queue: {scheduler: none}\n";

// A CPU idling 200 us per IO (null_blk's timer completions) with two
// cpuidle states: C2 (30 us) only when iowait does not limit the latency.
const char kCpuidleYaml[] =
    "name: knob-cpuidle\n"
    "cpus: {count: 1, cpuidle_state1_exit_latency_ns: 2000, cpuidle_state2_exit_latency_ns: 30000}\n"
    "devices:\n"
    "  - name: nullb0\n"
    "    null_blk: {irqmode: 2, completion_nsec: 200000, submit_queues: 1}\n"
    "    queue: {scheduler: none}\n";
const std::vector<std::string> kQd1Job = {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread",
                                          "--bs=4k", "--iodepth=1", "--runtime=20ms", "--time_based"};

struct KnobCase {
  std::string yaml;
  std::vector<std::string> args;
  bool refused = false;  // flipping it is refused (not modelled yet)
};

std::map<std::string, KnobCase> Cases() {
  return {
      {"tag_busy_iter_shared_once", {HbaWalkYaml(""), kHbaWalkJob}},
      {"busy_iter_takes_tags_lock", {HbaWalkYaml(""), kHbaWalkJob}},
      {"blk_timeout_relaxed_rounding", {HbaWalkYaml(", timer_wheel_granularity: false"), kHbaWalkJob}},
      {"timer_wheel_granularity", {HbaWalkYaml(""), kHbaWalkJob}},
      {"config_blk_cgroup", {NullYaml(true), kBatchedJob}},
      {"throttle_fast_path_inline", {NullYaml(true), kBatchedJob}},
      {"cgroup_inherit_bio_start_time", {NullYaml(true), kBatchedJob}},
      {"run_all_hw_queues_on_completion", {HbaQueuesYaml(""), kHbaQueuesJob}},
      {"skip_run_queues_without_elevator",
       {HbaQueuesYaml("run_all_hw_queues_on_completion: true"), kHbaQueuesJob}},
      {"dd_serialize_dispatch", {DeadlineYaml(""), kDeadlineJob}},
      // 128 writes in flight on 128 scheduler tags: 3/4 of each word holds
      // them to 96 before the fix, all 128 after it.
      {"dd_async_depth_scaled", {DeadlineYaml("", 1, 64), kDeadlineWriteJob}},
      // nr_requests written above mq-deadline's own (4 on 2 tags): writes
      // keep async_depth 4, one bit of each sched-tags word.
      {"dd_async_depth_old_nr_requests", {kDeadlineNrRequestsYaml, kDeadlineWriteJob}},
      {"bfq_stable_merge", {kBfqYaml, kBfqClonesJob}},
      {"dd_insert_buckets", {DeadlineYaml("dd_insert_side_lists: false"), kDeadlineJob}},
      {"dd_insert_side_lists", {DeadlineYaml(""), kDeadlineJob}},
      {"dd_skip_merge_if_contended", {DeadlineYaml(""), kDeadlineJob}},
      {"sched_batch_dispatch", {DeadlineYaml(""), kDeadlineJob}},
      // 16 driver tags for 32 requests: dispatches run out of tags.
      {"dispatch_busy_with_scheduler", {DeadlineYaml("", 1, 16), kDeadlineJob}},
      {"dispatch_loop_checks_dispatch_list", {DeadlineYaml("dd_serialize_dispatch: false", 1, 16), kDeadlineJob}},
      // Eight CPUs dispatch at once onto 16 driver tags: several park at a time.
      {"dispatch_leftovers_at_tail", {DeadlineYaml("dd_serialize_dispatch: false", 1, 16), kDeadlineJob}},
      // CFS's wake-ups set need_resched while a dispatch loop runs.
      {"dispatch_loop_time_limit", {DeadlineYaml("sched_eevdf: false"), kDeadlineJob}},
      {"sq_sched_runs_own_hctx",
       {DeadlineYaml("dd_serialize_dispatch: false, dd_insert_side_lists: false, dd_skip_merge_if_contended: false", 8),
        kSqHctxJob}},
      {"restart_walks_shared_tag_queues", {kSdebugSharedYaml, kSdebugSharedJob}},
      {"scsi_budget_idle_delay_run", {kSdebugTsfYaml, kSdebugTsfJob}},
      {"blk_mq_budget_contention_rerun", {kSdebugTsfYaml, kSdebugTsfJob}},
      // Turned off (the 5.17+ DID_ABORT), RARE_TSF is refused by name.
      {"scsi_debug_qfull_did_ok", {kSdebugTsfYaml, kSdebugTsfJob, true}},
      // Off (4.14's cmd_per_lun 255), a LUN never holds queue_depth - 1
      // commands behind 32 tags: no TASK SET FULL.
      {"scsi_debug_cmd_per_lun_max_queue", {kSdebugTsfYaml, kSdebugTsfJob}},
      {"scsi_atomic_device_busy", {kSdebugSharedYaml, kSdebugSharedJob}},
      {"scsi_atomic_host_busy", {kSdebugSharedYaml, kSdebugSharedJob}},
      {"sbitmap_deferred_clear", {NullYaml(true), kBatchedJob}},
      {"plug_request_cache", {NullYaml(true), kBatchedJob}},
      {"batched_completion", {NullYaml(true), kPolledJob}},
      {"plug_cache_time", {NullYaml(false), kBatchedJob}},
      {"bio_alloc_cache", {NullYaml(true), kBatchedJob}},
      {"queue_rqs", {kNvmeYaml, kPolledJob}},
      {"io_uring_lazy_wake", {kNullTimerYaml, kBatchedJob}},
      {"hrtimer_rt_no_slack", {HbaWalkYaml(""), kHbaWalkJob}},
      {"sched_eevdf", {DeadlineYaml(""), kDeadlineJob}},
      {"menu_iowait_latency_limit", {kCpuidleYaml, kQd1Job}},
  };
}

// What a flip must change: IOs, CPU time, counters, the profile, the locks.
std::string Digest(const RunResult& r) {
  std::string s = absl::StrCat("ios=", TotalIos(r), " busy=", r.kernel.busy_ns, "\n");
  for (const auto& c : r.kernel.counters) absl::StrAppend(&s, c.name, "=", c.count, " ");
  for (const auto& p : r.kernel.profile) absl::StrAppend(&s, "\n", p.function, " ", p.self_ns);
  for (const auto& l : r.kernel.locks) absl::StrAppend(&s, "\n", l.name, " ", l.acquisitions, " ", l.wait_ns);
  return s;
}

TEST(Knobs, EveryKnobChangesAResultOrIsRefusedByName) {
  const std::map<std::string, KnobCase> cases = Cases();
  for (const auto& [name, field] : KnobFields()) {
    SCOPED_TRACE(name);
    auto it = cases.find(name);
    ASSERT_NE(it, cases.end()) << "knob " << name << " has no case in knobs_test.cc";
    const KnobCase& kc = it->second;
    host::HostSpec base = HostFromYaml(kc.yaml);
    host::HostSpec flipped = base;
    flipped.knobs.*field = !(base.knobs.*field);
    if (name == "config_blk_cgroup") {
      // The knob mirrors kernel.config.BLK_CGROUP (and its dependants).
      flipped.kernel.config.BLK_CGROUP = flipped.knobs.config_blk_cgroup;
      flipped.kernel.config.BLK_DEV_THROTTLING = flipped.knobs.config_blk_cgroup;
      flipped.kernel.config.BLK_CGROUP_IOCOST = flipped.knobs.config_blk_cgroup;
    }
    RunOutcome b = RunArgs(base, kc.args);
    ASSERT_TRUE(b.result.ok()) << b.result.status();
    RunOutcome f = RunArgs(flipped, kc.args);
    if (kc.refused) {
      ASSERT_FALSE(f.result.ok()) << "flipping " << name << " was accepted";
      EXPECT_EQ(f.result.status().code(), absl::StatusCode::kUnimplemented);
      EXPECT_THAT(f.result.status().message(), HasSubstr(name));
      continue;
    }
    ASSERT_TRUE(f.result.ok()) << f.result.status();
    EXPECT_NE(Digest(*b.result), Digest(*f.result)) << "flipping " << name << " changed nothing";
  }
  for (const auto& [name, kc] : cases) {
    EXPECT_TRUE(KnobFields().count(name)) << "case for unknown knob " << name;
  }
}

}  // namespace
}  // namespace blklab
