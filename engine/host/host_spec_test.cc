#include "engine/host/host_spec.h"

#include <string>
#include <variant>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::host {
namespace {

using ::testing::HasSubstr;

constexpr char kArchitectureExample[] = R"(
name: desktop-7950x
cpus: {count: 32, threads_per_core: 2, cores_per_ccx: 8, sockets: 1}
kernel: {hz: 1000, config: {BLK_CGROUP: false, BLK_DEV_THROTTLING: false}}
devices:
  - name: nullb0
    null_blk: {submit_queues: 1, hw_queue_depth: 64, irqmode: 1, completion_nsec: 10000}
    queue: {scheduler: mq-deadline, nr_requests: 128, iostats: true, rq_affinity: 1}
)";

HostSpec MustParse(const std::string& text, SpecFormat format = SpecFormat::kAuto) {
  absl::StatusOr<HostSpec> spec = ParseHostSpec(text, format);
  EXPECT_TRUE(spec.ok()) << spec.status() << "\n" << text;
  return spec.ok() ? *spec : HostSpec();
}

std::string ErrorOf(const std::string& text, absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  absl::StatusOr<HostSpec> spec = ParseHostSpec(text);
  EXPECT_FALSE(spec.ok()) << "accepted:\n" << text;
  EXPECT_EQ(spec.status().code(), code) << spec.status();
  return std::string(spec.status().message());
}

constexpr char kMinimal[] = "name: h\ndevices:\n  - name: nullb0\n    null_blk: {}\n";

TEST(HostSpecTest, ParsesArchitectureExample) {
  HostSpec spec = MustParse(kArchitectureExample);
  EXPECT_EQ(spec.name, "desktop-7950x");
  EXPECT_EQ(spec.cpus.count, 32);
  EXPECT_EQ(spec.cpus.threads_per_core, 2);
  EXPECT_EQ(spec.cpus.cores_per_ccx, 8);
  EXPECT_EQ(spec.kernel.hz, 1000);
  EXPECT_FALSE(spec.kernel.config.BLK_CGROUP);
  EXPECT_FALSE(spec.knobs.config_blk_cgroup);  // mirrored
  ASSERT_EQ(spec.devices.size(), 1u);
  const DeviceSpec& d = spec.devices[0];
  EXPECT_EQ(d.name, "nullb0");
  ASSERT_TRUE(std::holds_alternative<NullBlkSpec>(d.driver));
  EXPECT_EQ(std::get<NullBlkSpec>(d.driver).irqmode, 1);
  EXPECT_EQ(d.queue.scheduler, Scheduler::kMqDeadline);
  EXPECT_EQ(d.queue.nr_requests, 128);
}

TEST(HostSpecTest, NullBlkDefaultsAreModuleDefaults) {
  HostSpec spec = MustParse(kMinimal);
  const NullBlkSpec& n = std::get<NullBlkSpec>(spec.devices[0].driver);
  EXPECT_EQ(n.queue_mode, 2);
  EXPECT_EQ(n.submit_queues, 1);
  EXPECT_EQ(n.poll_queues, 1);
  EXPECT_EQ(n.hw_queue_depth, 64);
  EXPECT_EQ(n.irqmode, 1);
  EXPECT_EQ(n.completion_nsec, 10000);
  EXPECT_EQ(n.home_node, -1);
  EXPECT_EQ(n.gb, 250);
  EXPECT_EQ(n.bs, 512);
  EXPECT_EQ(n.nr_devices, 1);
  EXPECT_FALSE(n.blocking);
  EXPECT_FALSE(n.shared_tags);
  EXPECT_FALSE(n.memory_backed);
  EXPECT_EQ(n.mbps, 0);
  // Modern-kernel defaults elsewhere.
  EXPECT_EQ(spec.cpus.count, 1);
  EXPECT_EQ(spec.kernel.hz, 1000);
  EXPECT_TRUE(spec.kernel.config.BLK_CGROUP);
  EXPECT_TRUE(spec.knobs.config_blk_cgroup);
  EXPECT_TRUE(spec.knobs.tag_busy_iter_shared_once);
  EXPECT_FALSE(spec.knobs.run_all_hw_queues_on_completion);
  EXPECT_TRUE(spec.knobs.dd_insert_side_lists);
  EXPECT_FALSE(spec.knobs.dd_insert_buckets);
  EXPECT_FALSE(spec.knobs.restart_walks_shared_tag_queues);
  EXPECT_TRUE(spec.devices[0].queue.iostats);
  EXPECT_EQ(spec.devices[0].queue.rq_affinity, 1);
  EXPECT_EQ(spec.devices[0].queue.iosched.fifo_batch, 16);
}

TEST(HostSpecTest, DefaultSchedulerFollowsElevatorGetDefault) {
  // submit queue + default poll queue = 2 hw queues -> none, depth 64.
  HostSpec spec = MustParse(kMinimal);
  EXPECT_EQ(spec.devices[0].queue.scheduler, Scheduler::kNone);
  EXPECT_EQ(spec.devices[0].queue.nr_requests, 64);
  // One hw queue -> mq-deadline with 2 * min(64, 128) requests.
  spec = MustParse("name: h\ndevices:\n  - name: nullb0\n    null_blk: {poll_queues: 0}\n");
  EXPECT_EQ(spec.devices[0].queue.scheduler, Scheduler::kMqDeadline);
  EXPECT_EQ(spec.devices[0].queue.nr_requests, 128);
  // no_sched -> none.
  spec = MustParse("name: h\ndevices:\n  - name: nullb0\n    null_blk: {poll_queues: 0, no_sched: true}\n");
  EXPECT_EQ(spec.devices[0].queue.scheduler, Scheduler::kNone);
  // NVMe with a queue per CPU -> none, depth 1023.
  spec = MustParse("name: h\ncpus: {count: 4}\ndevices:\n  - name: nvme0n1\n    nvme: {}\n");
  EXPECT_EQ(spec.devices[0].queue.scheduler, Scheduler::kNone);
  EXPECT_EQ(spec.devices[0].queue.nr_requests, 1023);
  EXPECT_EQ(HardwareQueues(spec.devices[0], spec.cpus), 4);
}

TEST(HostSpecTest, JsonInput) {
  HostSpec spec = MustParse(
      R"({"name": "j", "devices": [{"name": "nullb0", "null_blk": {"irqmode": 2, "completion_nsec": 5000}}]})");
  EXPECT_EQ(std::get<NullBlkSpec>(spec.devices[0].driver).irqmode, 2);
  EXPECT_EQ(std::get<NullBlkSpec>(spec.devices[0].driver).completion_nsec, 5000);
  // Strict JSON is used for '{' documents in auto mode.
  EXPECT_THAT(ErrorOf("{name: j}"), HasSubstr("JSON line 1, column 2"));
}

TEST(HostSpecTest, ValidationErrorsNameTheFieldPath) {
  const std::string devices_prefix = "name: h\ndevices:\n  - name: nullb0\n    null_blk: {}\n  - name: nullb1\n";
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {irqmode: 3}\n"),
              HasSubstr("devices[1].null_blk.irqmode: must be 0, 1 or 2, got 3 (line 6, column 25)"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {bs: 1000}\n"),
              HasSubstr("devices[1].null_blk.bs: must be a power of two, got 1000"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {hw_queue_depth: 0}\n"),
              HasSubstr("devices[1].null_blk.hw_queue_depth: must be in [1, 4096], got 0"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {blocking: yes}\n"),
              HasSubstr("devices[1].null_blk.blocking: expected true or false, got string \"yes\""));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {irqmode: 1.5}\n"),
              HasSubstr("devices[1].null_blk.irqmode: expected an integer"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {}\n    queue: {scheduler: cfq}\n"),
              HasSubstr("devices[1].queue.scheduler: must be one of none, mq-deadline, kyber, bfq, got \"cfq\""));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {}\n    queue: {scheduler: bfq, iosched: {read_expire: 10}}\n"),
              HasSubstr("devices[1].queue.iosched.read_expire: a mq-deadline tunable, but the queue's scheduler is bfq"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {}\n    queue: {scheduler: kyber, iosched: {slice_idle: 0}}\n"),
              HasSubstr("devices[1].queue.iosched.slice_idle: a bfq tunable, but the queue's scheduler is kyber"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {}\ncgroups: {a: {bfq_weight: 0}}\n"),
              HasSubstr("cgroups.a.bfq_weight: must be"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {}\ncgroups: {a: {weight: 10}}\n"),
              HasSubstr("cgroups.a"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {}\ncgroups: {\"../x\": {}}\n"),
              HasSubstr("a cgroup path is"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {}\n    queue: {rq_affinity: 5}\n"),
              HasSubstr("devices[1].queue.rq_affinity: must be 0, 1 or 2, got 5"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {}\n    queue: {nr_requests: 2}\n"),
              HasSubstr("devices[1].queue.nr_requests: must be 0 (default) or >= 4, got 2"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {home_node: 1}\n"),
              HasSubstr("devices[1].null_blk.home_node: must be -1 or a NUMA node below 1, got 1"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {poll_queues: 0}\n    queue: {io_poll: true}\n"),
              HasSubstr("devices[1].queue.io_poll: needs poll queues"));
  EXPECT_THAT(ErrorOf(devices_prefix + "    null_blk: {no_sched: true}\n    queue: {scheduler: mq-deadline}\n"),
              HasSubstr("devices[1].queue.scheduler: mq-deadline conflicts with null_blk.no_sched"));
}

TEST(HostSpecTest, StructuralErrors) {
  EXPECT_THAT(ErrorOf("name: h\nbogus: 1\ndevices: []\n"),
              HasSubstr("bogus: unknown field; expected one of: name, description"));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: nullb0\n    null_blk: {irq_mode: 1}\n"),
              HasSubstr("devices[0].null_blk.irq_mode: unknown field"));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: nullb0\n"),
              HasSubstr("devices[0]: exactly one driver block (null_blk, nvme, scsi_debug or hba) is required, got 0"));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: x\n    null_blk: {}\n    nvme: {}\n"),
              HasSubstr("got 2"));
  EXPECT_THAT(ErrorOf("devices: []\n"), HasSubstr("name: required"));
  EXPECT_THAT(ErrorOf("name: h\ndevices: []\n"), HasSubstr("devices: at least one device is required"));
  EXPECT_THAT(ErrorOf("- a\n"), HasSubstr("expected a map at the top level"));
  EXPECT_THAT(ErrorOf("name: h\ndevices: {a: 1}\n"), HasSubstr("devices: expected a list"));
  EXPECT_THAT(ErrorOf("name: \"bad name\"\ndevices:\n  - name: nullb0\n    null_blk: {}\n"), HasSubstr("name: must be"));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: a\n    null_blk: {}\n  - name: a\n    null_blk: {}\n"),
              HasSubstr("devices[1].name: duplicate device name \"a\""));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: nullb0\n    null_blk: {}\ncosts: {no_such: 3}\n"),
              HasSubstr("costs.no_such: unknown cost table entry"));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: nullb0\n    null_blk: {}\ncosts: {ktime_get_ns: -3}\n"),
              HasSubstr("costs.ktime_get_ns: must be in"));
  EXPECT_THAT(ErrorOf(std::string(kMinimal) + "kernel: {hz: 200}\n"),
              HasSubstr("kernel.hz: must be 100, 250, 300 or 1000, got 200"));
  EXPECT_THAT(ErrorOf(std::string(kMinimal) + "cpus: {count: 3, threads_per_core: 2}\n"),
              HasSubstr("cpus.count: must be a multiple of threads_per_core"));
  EXPECT_THAT(ErrorOf(std::string(kMinimal) + "a: [1, \n"), HasSubstr("YAML line 5"));
}

TEST(HostSpecTest, KnobsAndKconfig) {
  HostSpec spec = MustParse(std::string(kMinimal) + "knobs: {config_blk_cgroup: false}\n");
  EXPECT_FALSE(spec.kernel.config.BLK_CGROUP);
  EXPECT_FALSE(spec.kernel.config.BLK_DEV_THROTTLING);  // dependent forced off
  spec = MustParse(std::string(kMinimal) + "kernel: {config: {BLK_CGROUP: false}}\n");
  EXPECT_FALSE(spec.knobs.config_blk_cgroup);
  EXPECT_FALSE(spec.kernel.config.BLK_CGROUP_IOCOST);
  EXPECT_THAT(ErrorOf(std::string(kMinimal) +
                      "kernel: {config: {BLK_CGROUP: false}}\nknobs: {config_blk_cgroup: true}\n"),
              HasSubstr("knobs.config_blk_cgroup: contradicts kernel.config.BLK_CGROUP"));
  EXPECT_THAT(ErrorOf(std::string(kMinimal) + "kernel: {config: {BLK_CGROUP: false, BLK_DEV_THROTTLING: true}}\n"),
              HasSubstr("kernel.config.BLK_DEV_THROTTLING: requires BLK_CGROUP"));
  EXPECT_THAT(ErrorOf(std::string(kMinimal) + "knobs: {dd_insert_buckets: true}\n"),
              HasSubstr("knobs.dd_insert_buckets: cannot be combined with dd_insert_side_lists"));
  spec = MustParse(std::string(kMinimal) + "knobs: {dd_insert_buckets: true, dd_insert_side_lists: false}\n");
  EXPECT_TRUE(spec.knobs.dd_insert_buckets);
  spec = MustParse(std::string(kMinimal) + "kernel: {version: 6.8}\n");
  EXPECT_EQ(spec.kernel.version, "6.8");
}

TEST(HostSpecTest, ResourceLimits) {
  EXPECT_THAT(ErrorOf(std::string(kMinimal) + "cpus: {count: 2048}\n", absl::StatusCode::kResourceExhausted),
              HasSubstr("cpus.count: 2048 CPUs exceed the limit of 1024"));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: n\n    null_blk: {submit_queues: 1024, poll_queues: 8}\n",
                      absl::StatusCode::kResourceExhausted),
              HasSubstr("hardware queues exceed the limit of 1024"));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: n\n    null_blk: {submit_queues: 1000, hw_queue_depth: 4096}\n",
                      absl::StatusCode::kResourceExhausted),
              HasSubstr("preallocated requests"));
  // Scheduler tags count even with scheduler none: fio's ioscheduler= may
  // add them (1000 x 1900 driver tags fit, plus 1000 x 256 do not).
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: n\n    null_blk: {submit_queues: 1000, hw_queue_depth: 1900}\n"
                      "    queue: {scheduler: none}\n",
                      absl::StatusCode::kResourceExhausted),
              HasSubstr("preallocated requests"));
  EXPECT_THAT(ErrorOf("name: h\ndevices:\n  - name: s\n    scsi_debug: {add_host: 16, num_tgts: 4, max_luns: 8}\n",
                      absl::StatusCode::kResourceExhausted),
              HasSubstr("block devices (after nr_devices and LUNs) exceed the limit of 256"));
  HostLimits small;
  small.max_cpus = 8;
  EXPECT_EQ(ParseHostSpec(std::string(kMinimal) + "cpus: {count: 16}\n", SpecFormat::kAuto, small).status().code(),
            absl::StatusCode::kResourceExhausted);
  small = HostLimits();
  small.max_document_bytes = 16;
  EXPECT_EQ(ParseHostSpec(kMinimal, SpecFormat::kAuto, small).status().code(), absl::StatusCode::kResourceExhausted);
  std::string deep = "name: h\nx: ";
  for (int i = 0; i < 100; ++i) deep += "[";
  EXPECT_EQ(ParseHostSpec(deep).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(HostSpecTest, CostOverrides) {
  HostSpec spec = MustParse(std::string(kMinimal) + "costs:\n  ktime_get_ns: 25\n  line_transfer_die: 120\n");
  absl::StatusOr<CostTable> table = BuildCostTable(spec);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->ktime_get_ns, 25);
  EXPECT_EQ(table->line_transfer_die, 120);
  EXPECT_EQ(table->line_transfer_llc, CostTable().line_transfer_llc);
}

// cpus.speed_permille: core work scales, the machine's latencies and ratios
// do not, and a host's own rows are taken as given.
TEST(HostSpecTest, CoreSpeedScalesCoreWorkOnly) {
  const CostTable base = CalibratedCostTable();
  HostSpec spec = MustParse(std::string(kMinimal) + "cpus: {count: 1, speed_permille: 1250}\n" +
                            "costs:\n  ktime_get_ns: 25\n");
  absl::StatusOr<CostTable> table = BuildCostTable(spec);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->context_switch, (base.context_switch * 1000 + 625) / 1250);
  EXPECT_EQ(table->try_to_wake_up, (base.try_to_wake_up * 1000 + 625) / 1250);
  EXPECT_LT(table->syscall_entry_exit, base.syscall_entry_exit);
  EXPECT_GE(table->rcu_read_section, 1);  // a 1 ns row stays priced
  EXPECT_EQ(table->ktime_get_ns, 25);     // the host's own figure
  EXPECT_EQ(table->line_transfer_die, base.line_transfer_die);
  EXPECT_EQ(table->ipi_delivery_latency, base.ipi_delivery_latency);
  EXPECT_EQ(table->smt_spin_permille, base.smt_spin_permille);
  EXPECT_EQ(table->lock_handoff_permille, base.lock_handoff_permille);
  absl::StatusOr<HostSpec> bad = ParseHostSpec(std::string(kMinimal) + "cpus: {count: 1, speed_permille: 0}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("speed_permille"), std::string::npos) << bad.status();
}

TEST(HostSpecTest, FilesystemsDecodeValidateAndRoundTrip) {
  const std::string base = "name: h\ndevices:\n  - name: nvme0n1\n    nvme: {}\n";
  absl::StatusOr<HostSpec> h = ParseHostSpec(
      base + "filesystems:\n  - {path: /mnt/data, device: nvme0n1, type: xfs}\n  - {path: /, device: nvme0n1}\n");
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->filesystems.size(), 2u);
  EXPECT_EQ(h->filesystems[0].path, "/mnt/data");
  EXPECT_EQ(h->filesystems[0].type, "xfs");
  EXPECT_EQ(h->filesystems[1].type, "ext4");  // the default
  absl::StatusOr<HostSpec> back = ParseHostSpec(HostSpecToJson(*h));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *h);
  EXPECT_THAT(ErrorOf(base + "filesystems:\n  - {path: mnt, device: nvme0n1}\n"),
              HasSubstr("filesystems[0].path: \"mnt\": a mount point is an absolute path"));
  EXPECT_THAT(ErrorOf(base + "filesystems:\n  - {path: /a/../b, device: nvme0n1}\n"),
              HasSubstr("filesystems[0].path"));
  EXPECT_THAT(ErrorOf(base + "filesystems:\n  - {path: /a/, device: nvme0n1}\n"), HasSubstr("filesystems[0].path"));
  EXPECT_THAT(ErrorOf(base + "filesystems:\n  - {path: /a, device: nvme0n1}\n  - {path: /a, device: nvme0n1}\n"),
              HasSubstr("filesystems[1].path: \"/a\" is mounted twice"));
  EXPECT_THAT(ErrorOf(base + "filesystems:\n  - {path: /a, device: nvme0n1, type: btrfs}\n"),
              HasSubstr("filesystems[0].type: \"btrfs\": ext4 or xfs"));
  EXPECT_THAT(ErrorOf(base + "filesystems:\n  - {path: /a}\n"), HasSubstr("filesystems[0].device: required"));
  EXPECT_THAT(ErrorOf(base + "filesystems:\n  - {path: /a, device: nvme0n1, size: 3}\n"),
              HasSubstr("filesystems[0]"));
  EXPECT_THAT(ErrorOf(base + "filesystems: {a: 1}\n"), HasSubstr("filesystems: expected a list"));
}

TEST(HostSpecTest, ExistingFilesDecodeValidateAndRoundTrip) {
  const std::string base = "name: h\ndevices:\n  - name: nvme0n1\n    nvme: {}\nfilesystems:\n  - path: /mnt\n"
                           "    device: nvme0n1\n    files:\n";
  absl::StatusOr<HostSpec> h = ParseHostSpec(base + "      - {path: /mnt/a, mib: 64}\n      - {path: /mnt/d/b, mib: 1}\n");
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->filesystems[0].files.size(), 2u);
  EXPECT_EQ(h->filesystems[0].files[0].path, "/mnt/a");
  EXPECT_EQ(h->filesystems[0].files[0].mib, 64);
  absl::StatusOr<HostSpec> back = ParseHostSpec(HostSpecToJson(*h));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *h);
  EXPECT_THAT(ErrorOf(base + "      - {path: /other/a, mib: 1}\n"),
              HasSubstr("filesystems[0].files[0].path: \"/other/a\": an absolute file path under /mnt"));
  EXPECT_THAT(ErrorOf(base + "      - {path: /mnt/../a, mib: 1}\n"), HasSubstr("filesystems[0].files[0].path"));
  EXPECT_THAT(ErrorOf(base + "      - {path: /mnt/a, mib: 0}\n"), HasSubstr("filesystems[0].files[0].mib"));
  EXPECT_THAT(ErrorOf(base + "      - {path: /mnt/a}\n"), HasSubstr("filesystems[0].files[0].mib: required"));
  EXPECT_THAT(ErrorOf(base + "      - {path: /mnt/a, mib: 1}\n      - {path: /mnt/a, mib: 2}\n"),
              HasSubstr("filesystems[0].files[1].path: \"/mnt/a\" is listed twice"));
  EXPECT_THAT(ErrorOf(base + "      - {path: /mnt/a, gib: 1}\n"), HasSubstr("files[0].gib: unknown field"));
}

TEST(HostSpecTest, JsonRoundTripIsCanonical) {
  HostSpec spec = MustParse(std::string(kArchitectureExample) +
                            "  - name: nvme0n1\n    nvme: {poll_queues: 2}\n    queue: {io_poll: true}\n"
                            "  - name: sdb\n    scsi_debug: {max_luns: 2, ndelay: 5000}\n"
                            "  - name: nvme1n1\n    nvme: {}\n    queue: {scheduler: bfq, iosched: {slice_idle: 0}}\n"
                            "costs: {ktime_get_ns: 20}\ndescription: a test host\n"
                            "cgroups: {fast: {bfq_weight: 300}, \"fio/slow\": {}}\n");
  EXPECT_EQ(spec.cgroups.at("fast").bfq_weight, 300);
  EXPECT_EQ(spec.cgroups.at("fio/slow").bfq_weight, 100);
  const std::string json = HostSpecToJson(spec);
  absl::StatusOr<HostSpec> back = ParseHostSpec(json);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << json;
  EXPECT_EQ(*back, spec);
  EXPECT_EQ(HostSpecToJson(*back), json);
  EXPECT_EQ(HostSpecToJson(*back, 0).find('\n'), std::string::npos);
  EXPECT_THAT(json, HasSubstr("\"scheduler\": \"mq-deadline\""));
  EXPECT_THAT(json, HasSubstr("\"BLK_CGROUP\": false"));
  // The canonical JSON is also valid YAML input.
  absl::StatusOr<HostSpec> as_yaml = ParseHostSpec(json, SpecFormat::kYaml);
  ASSERT_TRUE(as_yaml.ok()) << as_yaml.status();
  EXPECT_EQ(*as_yaml, spec);
}

TEST(HostSpecTest, ValidateAcceptsProgrammaticSpec) {
  HostSpec spec;
  spec.name = "code";
  spec.devices.push_back(DeviceSpec{"nullb0", NullBlkSpec{}, QueueSpec{}});
  EXPECT_TRUE(ValidateHostSpec(spec).ok());
  spec.devices[0].queue.rq_affinity = 7;
  EXPECT_EQ(ValidateHostSpec(spec).message(), "devices[0].queue.rq_affinity: must be 0, 1 or 2, got 7");
}

}  // namespace
}  // namespace blklab::host

namespace blklab::host {
namespace {

TEST(HostSpecTest, HbaEntryDecodesValidatesAndNamesItsLuns) {
  absl::StatusOr<HostSpec> h = ParseHostSpec(
      "name: h\ncpus: {count: 8}\ndevices:\n  - name: sdb\n"
      "    hba: {can_queue: 4096, nr_hw_queues: 8, virtual_drives: 64, drives: 16}\n");
  ASSERT_TRUE(h.ok()) << h.status();
  const DeviceSpec& d = h->devices[0];
  const auto* hba = std::get_if<HbaSpec>(&d.driver);
  ASSERT_NE(hba, nullptr);
  EXPECT_TRUE(hba->host_tagset);
  EXPECT_EQ(DeviceInstances(d), 64);
  EXPECT_EQ(HardwareQueues(d, h->cpus), 8);
  // Host-wide tags: the kernel picks mq-deadline; nr_requests 2 x min(depth, 128).
  EXPECT_EQ(d.queue.scheduler, Scheduler::kMqDeadline);
  EXPECT_EQ(d.queue.nr_requests, 256);
  EXPECT_EQ(DeviceInstanceName(d, 0), "sdb");
  EXPECT_EQ(DeviceInstanceName(d, 24), "sdz");
  EXPECT_EQ(DeviceInstanceName(d, 25), "sdaa");
  EXPECT_EQ(DeviceInstanceName(d, 63), "sdbm");
  DeviceSpec other = d;
  other.name = "raid";
  EXPECT_EQ(DeviceInstanceName(other, 3), "raid-3");
  // Round trip through the canonical JSON.
  absl::StatusOr<HostSpec> again = ParseHostSpec(HostSpecToJson(*h));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *h);
}

TEST(HostSpecTest, HbaErrorsNameTheField) {
  const std::string prefix = "name: h\ndevices:\n  - name: sdb\n";
  absl::StatusOr<HostSpec> h = ParseHostSpec(prefix + "    hba: {nr_hw_queues: 129}\n");
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("devices[0].hba.nr_hw_queues"));
  h = ParseHostSpec(prefix + "    hba: {stripe_kb: 48}\n");
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("devices[0].hba.stripe_kb: must be a power of two"));
  h = ParseHostSpec(prefix + "    hba: {irq_poll_sleep_min_us: 20, irq_poll_sleep_max_us: 10}\n");
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(std::string(h.status().message()),
              HasSubstr("devices[0].hba.irq_poll_sleep_max_us: must be at least irq_poll_sleep_min_us (20), got 10"));
  h = ParseHostSpec(prefix + "    hba: {raid_level: 5}\n");
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("devices[0].hba.raid_level: unknown field"));
}

}  // namespace
}  // namespace blklab::host
