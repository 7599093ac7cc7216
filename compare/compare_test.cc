#include "compare/compare.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace blklab::compare {
namespace {

// Files and variables from maps: what a server's bundle gives.
Inputs MapInputs(const std::map<std::string, std::string>* files, const std::map<std::string, std::string>* vars) {
  Inputs in;
  in.read_file = [files](const std::string& path) -> absl::StatusOr<std::string> {
    auto it = files->find(path);
    if (it == files->end()) return absl::NotFoundError(path + ": not in the bundle");
    return it->second;
  };
  in.lookup_var = [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars->find(name);
    if (it == vars->end()) return std::nullopt;
    return it->second;
  };
  return in;
}

const std::map<std::string, std::string> kFiles = {
    {"specs/cmp.yaml",
     "host: nvme-8cpu\n"
     "fio: [job.fio]\n"
     "seed: 3\n"
     "variants:\n"
     "  before: {}\n"
     "  none: {devices.nvme0n1.queue.scheduler: none}\n"
     "matrix:\n"
     "  fio.iodepth: [1, 4]\n"},
    {"specs/job.fio",
     "[t]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=${DEPTH}\nruntime=5ms\ntime_based=1\n"},
};
const std::map<std::string, std::string> kVars = {{"DEPTH", "2"}};

TEST(Compare, ParsesASpecThroughItsInputs) {
  absl::StatusOr<Comparison> c = ParseComparison({"specs/cmp.yaml"}, MapInputs(&kFiles, &kVars), "default");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host_label, "nvme-8cpu");
  ASSERT_EQ(c->variants.size(), 2u);
  EXPECT_EQ(c->variants[1].name, "none");
  EXPECT_EQ(Cells(*c).size(), 4u);  // 2 points x 2 variants
  // Job files are read relative to the spec.
  ASSERT_EQ(c->tool_args.size(), 1u);
  EXPECT_EQ(c->tool_args[0], "specs/job.fio");
}

TEST(Compare, ErrorsNameWhatIsWrong) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  absl::Status s = ParseComparison({"missing.yaml"}, in, "default").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("missing.yaml"), std::string::npos) << s;
  s = ParseComparison({"--bogus", "--", "--name=t"}, in, "default").status();
  EXPECT_NE(s.message().find("--bogus"), std::string::npos) << s;
  s = ParseComparison({"--variant", "x:devices.nvme9.queue.scheduler=none", "--", "--name=t"}, in, "nvme-8cpu")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("variant x"), std::string::npos) << s;
  s = ParseComparison({"--samples=1000", "--matrix", "fio.iodepth=1,2,4,8,16", "--", "--name=t"}, in, "default")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  // Axes whose product wraps a 64-bit count are refused, not wrapped to 0.
  std::string wide = "fio.iodepth=1";
  for (int i = 2; i <= 65536; ++i) wide += "," + std::to_string(i);
  s = ParseComparison({"--matrix", wide, "--matrix", wide, "--matrix", wide, "--matrix", wide, "--", "--name=t"}, in,
                      "default")
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s.message().substr(0, 100);
  // How the command line is written is a usage error; what it says is not.
  EXPECT_TRUE(IsUsageError(ParseComparison({"--bogus", "--", "--name=t"}, in, "default").status()));
  s = ParseComparison({"--varient", "a:fio.iodepth=2", "--", "--name=t"}, in, "default").status();
  EXPECT_NE(s.message().find("unknown option '--varient'; did you mean --variant?"), std::string::npos) << s;
  EXPECT_TRUE(IsUsageError(ParseComparison({"--seed"}, in, "default").status()));
  EXPECT_FALSE(IsUsageError(ParseComparison({"--samples=0", "--", "--name=t"}, in, "default").status()));
}

// t/io_uring as the tool: RC2's comparison. CONFIG_BLK_CGROUP costs a
// polled core IOPS, and the cgroup association shows in the profile only
// where it is on.
std::vector<std::string> IoUringComparison(const std::vector<std::string>& tool) {
  std::vector<std::string> args = {"--host=rc2-io_uring-core", "--tool=io_uring", "--variant",
                                   "shaved:kernel.config.BLK_DEV_THROTTLING=false,kernel.config.BLK_CGROUP=false",
                                   "--variant", "blk_cgroup:", "--baseline=shaved", "--"};
  args.insert(args.end(), tool.begin(), tool.end());
  return args;
}

double ProfileShare(const CellResult& r, const std::string& fn) {
  int64_t total = 0, mine = 0;
  for (const stats::ProfileRow& p : r.profile) {
    total += p.self_ns;
    if (p.function == fn) mine += p.self_ns;
  }
  return total == 0 ? 0 : static_cast<double>(mine) / static_cast<double>(total);
}

// The baseline is the variant named, else the first one; only a comparison
// without variants gets a row of its own. No row the user did not ask for.
TEST(Compare, TheBaselineIsNamedOrTheFirstVariant) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  auto names = [&in](std::vector<std::string> args) {
    args.insert(args.end(), {"--", "--name=t"});
    absl::StatusOr<Comparison> c = ParseComparison(args, in, "nvme-8cpu");
    std::vector<std::string> out;
    if (!c.ok()) return std::vector<std::string>{std::string(c.status().message())};
    for (const Variant& v : c->variants) out.push_back(v.name);
    return out;
  };
  const std::vector<std::string> two = {"--variant", "dl:fio.ioscheduler=mq-deadline", "--variant",
                                        "kyber:fio.ioscheduler=kyber"};
  EXPECT_EQ(names(two), (std::vector<std::string>{"dl", "kyber"}));
  std::vector<std::string> named = two;
  named.push_back("--baseline=kyber");
  EXPECT_EQ(names(named), (std::vector<std::string>{"kyber", "dl"}));
  EXPECT_EQ(names({"--matrix", "fio.iodepth=1,2"}), (std::vector<std::string>{"baseline"}));
  EXPECT_EQ(names({"--baseline=zz", "--matrix", "fio.iodepth=1,2"}),
            (std::vector<std::string>{"baseline 'zz': no variant of that name"}));
}

TEST(Compare, RunsTIoUringAsTheTool) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  absl::StatusOr<Comparison> c = ParseComparison(
      IoUringComparison({"--cpus=0", "-b512", "-d128", "-s32", "-c32", "-p1", "-B1", "-F1", "-n1", "-r2",
                         "/dev/nvme0n1", "/dev/nvme1n1"}),
      in, "default");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tool, Tool::kIoUring);
  ASSERT_EQ(Cells(*c).size(), 2u);
  absl::StatusOr<CellResult> shaved = RunCell(*c, Cells(*c)[0], in);
  absl::StatusOr<CellResult> cgroup = RunCell(*c, Cells(*c)[1], in);
  ASSERT_TRUE(shaved.ok()) << shaved.status();
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  EXPECT_GT(cgroup->iops, 0);
  EXPECT_GT(shaved->iops, 1.1 * cgroup->iops);
  EXPECT_EQ(ProfileShare(*shaved, "bio_associate_blkg"), 0);
  EXPECT_GT(ProfileShare(*cgroup, "bio_associate_blkg"), 0.02);
  Results res;
  res.cells = Cells(*c);
  res.results = {*shaved, *cgroup};
  Summarize(*c, res);
  const std::string table = Render(*c, res, Format::kTable);
  EXPECT_NE(table.find("io_uring: --cpus=0 -b512"), std::string::npos) << table;
  EXPECT_NE(Render(*c, res, Format::kJson).find("\"io_uring_args\""), std::string::npos);
  absl::StatusOr<std::string> dry = DryRunText(*c, in);
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_NE(dry->find("t/io_uring, 1 submitter on rc2-io_uring-core"), std::string::npos) << *dry;
  // The aio mode drops what aio cannot do, as the tool (and `blklab io_uring`) does.
  absl::StatusOr<Comparison> aio = ParseComparison(IoUringComparison({"-a1", "-p1", "-B1", "-F1", "-r2", "/dev/nvme0n1"}), in, "default");
  ASSERT_TRUE(aio.ok()) << aio.status();
  absl::StatusOr<IoUringRunRequest> aio_req = PrepareIoUringCell(*aio, Cells(*aio)[0]);
  ASSERT_TRUE(aio_req.ok()) << aio_req.status();
  EXPECT_FALSE(aio_req->spec.polled);
  EXPECT_FALSE(aio_req->spec.fixedbufs);
  EXPECT_FALSE(aio_req->spec.register_files);
}

TEST(Compare, AnIoUringComparisonRefusesWhatItCannotRun) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  auto error = [&in](const std::vector<std::string>& args) {
    return std::string(ParseComparison(args, in, "default").status().message());
  };
  // t/io_uring prints every second but the last: -r1 would report nothing,
  // -r0 never ends.
  EXPECT_NE(error(IoUringComparison({"-r1", "/dev/nvme0n1"})).find("-r2 or more"), std::string::npos);
  EXPECT_NE(error(IoUringComparison({"-r0", "/dev/nvme0n1"})).find("-r2 or more"), std::string::npos);
  EXPECT_NE(error(IoUringComparison({"--bs=4k", "-r2", "/dev/nvme0n1"})).find("unknown option '--bs=4k'"),
            std::string::npos);
  EXPECT_NE(error(IoUringComparison({"--cpus=x", "-r2", "/dev/nvme0n1"})).find("--cpus"), std::string::npos);
  EXPECT_NE(error(IoUringComparison({"-r2"})).find("io_uring: No files specified"), std::string::npos);
  EXPECT_EQ(error(IoUringComparison({"-r2"})).find("IO Depth"), std::string::npos);  // not the usage
  std::vector<std::string> with_fio = IoUringComparison({"-r2", "/dev/nvme0n1"});
  with_fio.insert(with_fio.begin(), {"--matrix", "fio.iodepth=1,2"});
  EXPECT_NE(error(with_fio).find("fio.iodepth: fio options do not apply to t/io_uring"), std::string::npos);
  EXPECT_TRUE(IsUsageError(ParseComparison({"--tool=spdk", "--", "-r2"}, in, "default").status()));
  // A spec gives one tool.
  const std::map<std::string, std::string> both = {
      {"both.yaml", "host: default\nfio: [--name=t]\nio_uring: [-r2, /dev/nvme0n1]\n"}};
  const absl::Status s = ParseComparison({"both.yaml"}, MapInputs(&both, &kVars), "default").status();
  EXPECT_NE(s.message().find("not both"), std::string::npos) << s;
}

// A cell that runs at the NVMe drive's max_iops says so; one below it does
// not. Without the ceiling check every cell of a saturated comparison
// reads the cap and nothing tells it from the kernel's cost.
TEST(Compare, ACellAtADevicesCeilingNamesIt) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  auto bound = [&in](const std::vector<std::string>& depth) {
    std::vector<std::string> args = {"--variant", "base:", "--", "--name=t", "--filename=/dev/nvme0n1",
                                     "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
                                     "--runtime=10ms", "--time_based", "--cpus_allowed_policy=split"};
    args.insert(args.end(), depth.begin(), depth.end());
    absl::StatusOr<Comparison> c = ParseComparison(args, in, "nvme-8cpu");
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return std::string("?");
    absl::StatusOr<CellResult> r = RunCell(*c, Cells(*c)[0], in);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->bound : std::string("?");
  };
  EXPECT_EQ(bound({"--numjobs=8", "--iodepth=32"}), "nvme0n1 max_iops=800000");
  EXPECT_EQ(bound({"--iodepth=1"}), "");
}

TEST(Compare, ACellsResultDoesNotDependOnOrder) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  absl::StatusOr<Comparison> c = ParseComparison({"specs/cmp.yaml"}, in, "default");
  ASSERT_TRUE(c.ok()) << c.status();
  auto run = [&](bool reversed) {
    Results res;
    res.cells = Cells(*c);
    res.results.resize(res.cells.size());
    for (size_t k = 0; k < res.cells.size(); ++k) {
      const size_t i = reversed ? res.cells.size() - 1 - k : k;
      absl::StatusOr<CellResult> r = RunCell(*c, res.cells[i], in);
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) res.results[i] = *r;
    }
    Summarize(*c, res);
    return Render(*c, res, Format::kJson);
  };
  const std::string forward = run(false);
  EXPECT_EQ(forward, run(true));
  EXPECT_NE(forward.find("\"iops\""), std::string::npos);
}

// The clat histogram holds every measured IO, in bins that agree with the
// percentiles: the bin where the running share reaches P holds pP.
TEST(Compare, TheLatencyHistogramAgreesWithThePercentiles) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  absl::StatusOr<Comparison> c = ParseComparison({"specs/cmp.yaml"}, in, "default");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<CellResult> r = RunCell(*c, Cells(*c)[0], in);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->clat_histogram.empty());
  uint64_t total = 0;
  for (size_t i = 0; i < r->clat_histogram.size(); ++i) {
    const CellResult::HistogramBin& b = r->clat_histogram[i];
    EXPECT_GT(b.count, 0u);
    EXPECT_LT(b.lower_ns, b.upper_ns);
    if (i > 0) {
      EXPECT_GE(b.lower_ns, r->clat_histogram[i - 1].upper_ns);
    }
    total += b.count;
  }
  for (const auto& [p, ns] : r->clat_percentiles) {
    uint64_t below = 0;
    for (const CellResult::HistogramBin& b : r->clat_histogram) {
      if (ns >= b.lower_ns && ns < b.upper_ns) {
        EXPECT_LT(static_cast<double>(below), p / 100.0 * static_cast<double>(total)) << "p" << p;
        EXPECT_GE(static_cast<double>(below + b.count), p / 100.0 * static_cast<double>(total)) << "p" << p;
      }
      below += b.count;
    }
  }
}

// fio's averaged logs become the cell's time series: the iops log summed
// over two jobs averages to the cell's IOPS, the clat log to its mean clat.
TEST(Compare, AveragedLogsBecomeTimeSeries) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  absl::StatusOr<Comparison> c = ParseComparison(
      {"--host=nvme-8cpu", "--", "--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
       "--iodepth=8", "--numjobs=2", "--runtime=100ms", "--time_based=1", "--write_iops_log=l", "--write_lat_log=l",
       "--log_avg_msec=10"},
      in, "default");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<CellResult> r = RunCell(*c, Cells(*c)[0], in);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> kinds;
  for (const CellResult::LogSeries& ls : r->log_series) kinds.push_back(ls.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"iops", "lat", "slat", "clat"}));
  auto mean = [&](const std::string& kind) {
    double sum = 0;
    size_t n = 0;
    for (const CellResult::LogSeries& ls : r->log_series) {
      if (ls.kind != kind) continue;
      EXPECT_GE(ls.points.size(), 9u) << kind;
      EXPECT_LE(ls.points.size(), 11u) << kind;
      for (const auto& [t, v] : ls.points) {
        sum += v;
        ++n;
      }
    }
    return n == 0 ? 0.0 : sum / static_cast<double>(n);
  };
  EXPECT_NEAR(mean("iops"), r->iops, 0.05 * r->iops);
  EXPECT_NEAR(mean("clat"), r->clat_mean_ns, 0.1 * r->clat_mean_ns);
  // Per-IO logs (no log_avg_msec) are no time series.
  absl::StatusOr<Comparison> per_io = ParseComparison(
      {"--host=nvme-8cpu", "--", "--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread",
       "--runtime=10ms", "--time_based=1", "--write_iops_log=l"},
      in, "default");
  ASSERT_TRUE(per_io.ok()) << per_io.status();
  absl::StatusOr<CellResult> r2 = RunCell(*per_io, Cells(*per_io)[0], in);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_TRUE(r2->log_series.empty());
}

TEST(Compare, CancelStopsACell) {
  const Inputs in = MapInputs(&kFiles, &kVars);
  absl::StatusOr<Comparison> c = ParseComparison({"specs/cmp.yaml"}, in, "default");
  ASSERT_TRUE(c.ok()) << c.status();
  std::atomic<bool> cancel{true};
  EXPECT_EQ(RunCell(*c, Cells(*c)[0], in, &cancel).status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace blklab::compare
