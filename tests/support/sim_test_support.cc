#include "tests/support/sim_test_support.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/host/presets.h"
#include "gtest/gtest.h"

namespace blklab::testing_support {


host::HostSpec Preset(const std::string& name) {
  absl::StatusOr<host::HostSpec> h = host::GetPreset(name);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *h : host::HostSpec{};
}

// A host of `cpus` CPUs (one LLC) with one null_blk `nullb0`, scheduler none,
// no poll queues unless `null_blk` says otherwise. `null_blk` is the inside
// of a YAML flow mapping of null_blk module parameters.
host::HostSpec NullHost(int cpus, const std::string& null_blk) {
  const std::string yaml = absl::StrCat(
      "name: test-host\n"
      "cpus: {count: ", cpus, "}\n"
      "kernel: {hz: 1000}\n"
      "devices:\n"
      "  - name: nullb0\n"
      "    null_blk: {", null_blk.find("poll_queues") == std::string::npos ? "poll_queues: 0" : "",
      null_blk.empty() || null_blk.find("poll_queues") != std::string::npos ? "" : ", ", null_blk,
      "}\n"
      "    queue: {scheduler: none}\n");
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(yaml);
  EXPECT_TRUE(h.ok()) << h.status() << "\n" << yaml;
  return h.ok() ? *h : host::HostSpec{};
}

// Parses `args` (fio command-line arguments) for `host` and runs them.
RunOutcome RunArgs(const host::HostSpec& host, const std::vector<std::string>& args) {
  RunOutcome r;
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, host, nullptr, nullptr);
  if (!parsed.ok()) {
    r.result = parsed.status();
    return r;
  }
  r.request.host = host;
  r.request.jobs = parsed->jobs;
  // A stall fails within 1 s of virtual time instead of 30 s (a spinning
  // poller would otherwise keep the test busy for a minute of wall time).
  r.request.limits.stall_ns = 1000LL * 1000 * 1000;
  r.result = RunFio(r.request);
  return r;
}

// Runs and requires success.
RunResult MustRun(const host::HostSpec& host, const std::vector<std::string>& args) {
  RunOutcome r = RunArgs(host, args);
  EXPECT_TRUE(r.result.ok()) << r.result.status() << "\nargs: " << absl::StrJoin(args, " ");
  return r.result.ok() ? *std::move(r.result) : RunResult{};
}

uint64_t CounterOf(const stats::KernelReport& k, const std::string& name) {
  for (const auto& c : k.counters) {
    if (c.name == name) return c.count;
  }
  return 0;
}

int64_t ProfileNs(const stats::KernelReport& k, const std::string& fn) {
  int64_t ns = 0;
  for (const auto& row : k.profile) {
    if (row.function == fn) ns += row.self_ns;
  }
  return ns;
}

uint64_t TotalIos(const RunResult& r) {
  uint64_t n = 0;
  for (const auto& c : r.clones) {
    for (const auto& d : c.result.dirs) n += d.total_ios;
  }
  return n;
}

uint64_t TotalIssued(const RunResult& r) {
  uint64_t n = 0;
  for (const auto& c : r.clones) n += c.result.issued[0] + c.result.issued[1] + c.result.issued[2];
  return n;
}

// IOPS of the whole run: completed IOs over the longest clone runtime.
double RunIops(const RunResult& r) {
  int64_t runtime_ms = 0;
  for (const auto& c : r.clones) {
    for (const auto& d : c.result.dirs) runtime_ms = std::max(runtime_ms, d.runtime_ms);
  }
  return runtime_ms > 0 ? 1000.0 * static_cast<double>(TotalIos(r)) / static_cast<double>(runtime_ms)
                        : 0.0;
}

host::HostSpec PageCacheHost() {
  return HostFromYaml(
      "name: page-cache\n"
      "cpus: {count: 2}\n"
      "vm: {memory_mib: 64}\n"
      "devices:\n"
      "  - name: nvme0n1\n"
      "    nvme: {latency_nsec: 80000, max_iops: 800000, max_mbps: 2000, gb: 16}\n"
      "filesystems:\n"
      "  - {path: /mnt, device: nvme0n1}\n");
}

const stats::PageCacheRow& PageCacheOf(const RunResult& r) {
  EXPECT_TRUE(r.kernel.page_cache.has_value()) << "no page cache in the report";
  static const stats::PageCacheRow kNone;
  return r.kernel.page_cache ? *r.kernel.page_cache : kNone;
}

std::string Describe(const RunResult& r) {
  std::string s = absl::StrCat("iops=", RunIops(r), " ios=", TotalIos(r),
                               " elapsed_ns=", r.kernel.elapsed_ns, " busy_ns=", r.kernel.busy_ns,
                               "\ncounters:");
  for (const auto& c : r.kernel.counters) absl::StrAppend(&s, " ", c.name, "=", c.count);
  absl::StrAppend(&s, "\nlocks:");
  for (const auto& l : r.kernel.locks) {
    absl::StrAppend(&s, " ", l.name, "(acq=", l.acquisitions, " cont=", l.contended, ")");
  }
  absl::StrAppend(&s, "\nprofile (top 25):");
  for (size_t i = 0; i < r.kernel.profile.size() && i < 25; ++i) {
    const auto& p = r.kernel.profile[i];
    absl::StrAppend(&s, "\n  ", p.function, " [", stats::CpuModeName(p.mode), "] ", p.self_ns);
  }
  return s;
}

host::HostSpec HostFromYaml(const std::string& yaml) {
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(yaml);
  EXPECT_TRUE(h.ok()) << h.status() << "\n" << yaml;
  return h.ok() ? *h : host::HostSpec{};
}

stats::LockRow LockOf(const stats::KernelReport& k, const std::string& name) {
  for (const auto& l : k.locks) {
    if (l.name == name) return l;
  }
  return stats::LockRow{};
}

}  // namespace blklab::testing_support
