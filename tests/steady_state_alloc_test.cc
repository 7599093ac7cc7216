// tests/steady_state_alloc_test.cc
//
// The engine allocates no memory per IO in steady state (the speed issue's
// "no per-IO allocation"): coroutine frames come from FramePool, requests,
// bios and io_us from fixed pools, events from the heaps' reused slots. This
// binary replaces the global operator new with a counting one and runs each
// scenario for two lengths of virtual time; the allocations the longer run
// adds must stay far below the IOs it adds. It fails as soon as something on
// the per-IO path allocates once per IO or once per few IOs: an ordered
// container or a std::deque without sim::PoolAllocator (before the pools,
// mq-deadline's FIFO and merge hash and the lock waiter queues made three
// allocations per IO on RC4's desktop), a buffer handed over and dropped
// instead of kept.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "engine/host/host_spec.h"
#include "engine/host/presets.h"
#include "gtest/gtest.h"

// The replacements below (every form: plain, array, aligned, nothrow, so
// that no allocation reaches the default one and comes back to ours, or the
// reverse) pair malloc with free by design.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return ::operator new(size); }
void* operator new(size_t size, std::align_val_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const size_t a = static_cast<size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size, std::align_val_t align) { return ::operator new(size, align); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& nt) noexcept { return ::operator new(size, nt); }
void* operator new(size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const size_t a = static_cast<size_t>(align);
  return std::aligned_alloc(a, (size + a - 1) / a * a);
}
void* operator new[](size_t size, std::align_val_t align, const std::nothrow_t& nt) noexcept {
  return ::operator new(size, align, nt);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace blklab {
namespace {

struct Counted {
  uint64_t allocations = 0;
  uint64_t ios = 0;
};

// Allocations made inside RunFio (the parse and the report are outside) and
// the IOs completed, for `args` plus --runtime=`runtime` on `preset`.
Counted RunCounted(const std::string& preset, std::vector<std::string> args, const std::string& runtime) {
  absl::StatusOr<host::HostSpec> host = host::GetPreset(preset);
  EXPECT_TRUE(host.ok()) << host.status();
  args.push_back("--runtime=" + runtime);
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, *host, nullptr, nullptr);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  RunRequest req;
  req.host = *host;
  req.jobs = parsed->jobs;
  req.seed = 7;
  Counted c;
  const uint64_t before = g_allocations.load();
  absl::StatusOr<RunResult> run = RunFio(req);
  c.allocations = g_allocations.load() - before;
  EXPECT_TRUE(run.ok()) << run.status();
  if (run.ok()) c.ios = run->kernel.total_ios;
  return c;
}

struct Scenario {
  const char* name;
  const char* preset;
  std::vector<std::string> args;
  const char* shorter;
  const char* longer;
};

// At most one allocation per this many IOs that the longer run adds (what
// is left is per unit of time, not per IO: tens over 30 ms of a 32-CPU
// host, against thousands per millisecond before the pools).
constexpr uint64_t kIosPerAllocation = 100;

TEST(SteadyStateAllocTest, TheLongerRunAllocatesAlmostNothingPerIo) {
  const std::vector<Scenario> scenarios = {
      {"one CPU, null_blk, io_uring QD32 (the speed benchmark's scenario)", "null-1cpu",
       {"--name=t", "--filename=/dev/nullb0", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
        "--iodepth=32", "--size=1g", "--time_based", "--norandommap"},
       "20ms", "60ms"},
      {"RC4's desktop: 32 io_uring threads on mq-deadline, softirq and IPI completions", "rc4-desktop-7950x",
       {"--name=t", "--filename=/dev/nullb0", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=512",
        "--iodepth=4", "--iodepth_batch_submit=4", "--iodepth_batch_complete=4", "--numjobs=32", "--thread",
        "--cpus_allowed_policy=split", "--norandommap", "--time_based"},
       "10ms", "40ms"},
      {"RC5's SCSI host: libaio on 8 LUNs of one shared tag set, kblockd runs, hrtimer responses",
       "rc5-scsi_debug-luns",
       {"--name=t", "--filename=/dev/sdb", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
        "--iodepth=64", "--numjobs=2", "--norandommap", "--time_based"},
       "10ms", "40ms"},
      {"RC1's HBA: libaio through mpi3mr's shared host tags, reply queues polled by irq threads",
       "rc1-mpi3mr-64vd",
       {"--name=t", "--filename=/dev/sdb", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
        "--iodepth=32", "--numjobs=16", "--norandommap", "--time_based"},
       "10ms", "40ms"},
  };
  for (const Scenario& s : scenarios) {
    SCOPED_TRACE(s.name);
    // A first run fills the thread's pools (sim::FramePool) to what the
    // scenario holds at its peak; then both runs make the same set-up
    // allocations, and what the longer adds is per IO.
    RunCounted(s.preset, s.args, s.longer);
    const Counted shorter = RunCounted(s.preset, s.args, s.shorter);
    const Counted longer = RunCounted(s.preset, s.args, s.longer);
    ASSERT_GT(longer.ios, shorter.ios + 10000) << "the longer run must add IOs for the check to mean anything";
    const uint64_t added_ios = longer.ios - shorter.ios;
    const uint64_t added = longer.allocations > shorter.allocations ? longer.allocations - shorter.allocations : 0;
    EXPECT_LE(added * kIosPerAllocation, added_ios)
        << added << " more allocations for " << added_ios << " more IOs (" << shorter.allocations << " in the "
        << s.shorter << " run, " << longer.allocations << " in the " << s.longer << " run)";
  }
}

}  // namespace
}  // namespace blklab
