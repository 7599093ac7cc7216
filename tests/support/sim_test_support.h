// tests/support/sim_test_support.h
//
// Helpers for the cross-component tests that run whole simulations through
// the engine facade: hosts from presets or YAML, fio arguments parsed and
// run, and the figures tests read back (counters, profile, lock rows, IOPS).
// Test-only; links the engine.
#ifndef BLKLAB_TESTS_SUPPORT_SIM_TEST_SUPPORT_H_
#define BLKLAB_TESTS_SUPPORT_SIM_TEST_SUPPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "engine/host/host_spec.h"

namespace blklab::testing_support {

// A preset by name (a test failure if unknown).
host::HostSpec Preset(const std::string& name);
// A host of `cpus` CPUs (one LLC) with one null_blk `nullb0`, scheduler none,
// no poll queues unless `null_blk` says otherwise. `null_blk` is the inside
// of a YAML flow mapping of null_blk module parameters.
host::HostSpec NullHost(int cpus, const std::string& null_blk);
// A host from YAML text (a test failure if it does not parse).
host::HostSpec HostFromYaml(const std::string& yaml);

struct RunOutcome {
  RunRequest request;
  absl::StatusOr<RunResult> result = absl::UnknownError("not run");
};
// Parses `args` (fio command-line arguments) for `host` and runs them; a
// stall fails within 1 s of virtual time.
RunOutcome RunArgs(const host::HostSpec& host, const std::vector<std::string>& args);
// Runs and requires success.
RunResult MustRun(const host::HostSpec& host, const std::vector<std::string>& args);

uint64_t CounterOf(const stats::KernelReport& k, const std::string& name);
int64_t ProfileNs(const stats::KernelReport& k, const std::string& fn);
// The lockstat row of the lock named `name` (all zero if absent).
stats::LockRow LockOf(const stats::KernelReport& k, const std::string& name);
uint64_t TotalIos(const RunResult& r);
uint64_t TotalIssued(const RunResult& r);
// IOPS of the whole run: completed IOs over the longest clone runtime.
double RunIops(const RunResult& r);
// The page-cache tests' host: 64 MiB of page cache over one NVMe
// namespace (80 us reads, a 2,000 MB/s ceiling) with ext4 at /mnt.
host::HostSpec PageCacheHost();
// The run's page-cache report (a test failure, and all zeros, if none).
const stats::PageCacheRow& PageCacheOf(const RunResult& r);
// A summary for failure messages.
std::string Describe(const RunResult& r);

}  // namespace blklab::testing_support

#endif  // BLKLAB_TESTS_SUPPORT_SIM_TEST_SUPPORT_H_
