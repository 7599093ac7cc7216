// engine/stats/job_log_test.cc
#include "engine/stats/job_log.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace blklab::stats {
namespace {

constexpr int64_t kMs = 1'000'000;

// Runs job 06's shape: reads at 2000 IO/s and writes at 1000 IO/s, 4 KiB,
// for 2 s, with all logs enabled.
std::vector<LogFile> RunLogs(JobLogConfig config) {
  JobLogger logger(std::move(config));
  JobStatsCollector c;
  c.set_logger(&logger);
  c.Start(5 * kMs);
  for (int i = 1; i <= 6000; ++i) {
    const int64_t t = 5 * kMs + i * kMs / 3;
    c.RecordCompletion(t, i % 3 == 0 ? Dir::kWrite : Dir::kRead, 4096, 500, 1500 + (i % 7));
  }
  c.Finish(5 * kMs + 2000 * kMs);
  return logger.TakeFiles();
}

TEST(JobLoggerTest, AveragedLogsMatchFioLayout) {
  JobLogConfig cfg;
  cfg.bw_prefix = cfg.iops_prefix = cfg.lat_prefix = cfg.hist_prefix = "logs";
  cfg.avg_msec = 500;
  cfg.hist_msec = 500;
  const std::vector<LogFile> files = RunLogs(cfg);
  ASSERT_EQ(files.size(), 6u);
  EXPECT_EQ(files[0].name, "logs_bw.1.log");
  EXPECT_EQ(files[1].name, "logs_iops.1.log");
  EXPECT_EQ(files[2].name, "logs_lat.1.log");
  EXPECT_EQ(files[3].name, "logs_slat.1.log");
  EXPECT_EQ(files[4].name, "logs_clat.1.log");
  EXPECT_EQ(files[5].name, "logs_clat_hist.1.log");
  const std::vector<std::string> bw = absl::StrSplit(files[0].contents, '\n', absl::SkipEmpty());
  ASSERT_GE(bw.size(), 6u);
  EXPECT_EQ(bw[0], "500, 8000, 0, 0, 0");  // 1000 reads * 4 KiB / 0.5 s
  EXPECT_EQ(bw[1], "500, 3992, 1, 0, 0");  // 499 writes before t=500 ms
  const std::vector<std::string> iops =
      absl::StrSplit(files[1].contents, '\n', absl::SkipEmpty());
  EXPECT_EQ(iops[0], "500, 2000, 0, 0, 0");
  // Latency logs get the final partial window at 2000 ms.
  const std::vector<std::string> clat =
      absl::StrSplit(files[4].contents, '\n', absl::SkipEmpty());
  EXPECT_EQ(clat.back().substr(0, 6), "2000, ");
  // Histogram lines: TIME, DIR, BS + 1856 counts.
  const std::vector<std::string> hist =
      absl::StrSplit(files[5].contents, '\n', absl::SkipEmpty());
  ASSERT_FALSE(hist.empty());
  const std::vector<std::string> fields = absl::StrSplit(hist[0], ", ");
  EXPECT_EQ(fields.size(), 1859u);
  EXPECT_EQ(fields[0], "500");
  EXPECT_EQ(fields[2], "4096");
}

TEST(JobLoggerTest, PerIoLogsAndOffsets) {
  JobLogConfig cfg;
  cfg.iops_prefix = "x";
  cfg.lat_prefix = "x";
  cfg.log_offset = true;
  cfg.per_job_logs = false;
  const std::vector<LogFile> files = RunLogs(cfg);
  ASSERT_EQ(files.size(), 4u);
  EXPECT_EQ(files[0].name, "x_iops.log");
  const std::vector<std::string> lines =
      absl::StrSplit(files[0].contents, '\n', absl::SkipEmpty());
  EXPECT_EQ(lines.size(), 6000u);
  EXPECT_EQ(lines[0], "0, 1, 0, 4096, 0, 0");
}

TEST(JobLoggerTest, NoLoggerNoCost) {
  JobStatsCollector c;  // no logger attached: nothing to take, nothing breaks
  c.Start(0);
  c.RecordCompletion(1, Dir::kRead, 1, 1, 1);
  EXPECT_EQ(c.Finish(2).dir(Dir::kRead).total_ios, 1u);
}

// log_hist_coarseness N sums 2^N adjacent buckets: 1856 >> N bins that add
// up to the same samples.
TEST(JobLoggerTest, HistCoarsenessMergesBuckets) {
  JobLogConfig cfg;
  cfg.hist_prefix = "h";
  cfg.hist_msec = 500;
  const std::vector<LogFile> fine = RunLogs(cfg);
  cfg.hist_coarseness = 3;
  const std::vector<LogFile> coarse = RunLogs(cfg);
  ASSERT_EQ(fine.size(), 1u);
  ASSERT_EQ(coarse.size(), 1u);
  const std::vector<std::string> a = absl::StrSplit(fine[0].contents, '\n', absl::SkipEmpty());
  const std::vector<std::string> b = absl::StrSplit(coarse[0].contents, '\n', absl::SkipEmpty());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<std::string> fa = absl::StrSplit(a[i], ", ");
    const std::vector<std::string> fb = absl::StrSplit(b[i], ", ");
    ASSERT_EQ(fb.size(), 3u + 1856 / 8);
    for (size_t bin = 0; bin < 1856 / 8; ++bin) {
      uint64_t sum = 0;
      for (size_t k = 0; k < 8; ++k) sum += std::stoull(fa[3 + bin * 8 + k]);
      EXPECT_EQ(std::stoull(fb[3 + bin]), sum) << "line " << i << " bin " << bin;
    }
  }
}

// The last column: 1 for the realtime class, or with log_prio the raw
// ioprio in hex; log_max_value logs a window's maximum latency.
TEST(JobLoggerTest, PrioColumnAndMaxValue) {
  JobLogConfig cfg;
  cfg.lat_prefix = "l";
  cfg.avg_msec = 500;
  cfg.ioprio = 1 << 13 | 4;  // RT, level 4
  std::vector<LogFile> f = RunLogs(cfg);
  ASSERT_EQ(f.size(), 3u);
  std::vector<std::string> clat = absl::StrSplit(f[2].contents, '\n', absl::SkipEmpty());
  EXPECT_EQ(clat[0], "500, 1503, 0, 0, 1");  // mean of 1500 + i % 7
  cfg.log_prio = true;
  cfg.max_value = true;
  f = RunLogs(cfg);
  clat = absl::StrSplit(f[2].contents, '\n', absl::SkipEmpty());
  EXPECT_EQ(clat[0], "500, 1506, 0, 0, 0x2004");
}

}  // namespace
}  // namespace blklab::stats
